//! Channel state: the in-flight messages an unaligned checkpoint persists for a subtask
//! (docs/design.md §6), encoded as store entries and decoded back for the input gate.
//!
//! One entry per message: state [`IN_FLIGHT`], key `port ‖ upstream subtask ‖ sequence`
//! (big-endian `u32`, `u32`, `u64`, so the store's key order is the channel's order), value
//! a tag byte and the message: a batch (its records), a watermark, idle or end of stream.
//! Barriers are never channel state.

use std::collections::BTreeMap;

use weir_store::StateEntry;

use super::message::Message;
use crate::record::{Batch, Entry};

/// The state name of channel-state entries.
pub const IN_FLIGHT: &str = "in-flight";

const BATCH: u8 = 0;
const WATERMARK: u8 = 1;
const IDLE: u8 = 2;
const END: u8 = 3;
/// On the wire only ([`encode_wire`]).
const BARRIER: u8 = 4;

/// The in-flight messages of one input channel of a subtask, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChannelMessages {
    /// The input port (upstream edge) of the channel.
    pub port: u32,
    /// The upstream subtask.
    pub upstream: u32,
    /// The messages, oldest first.
    pub messages: Vec<Message>,
}

/// Why stored channel state cannot be restored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the checkpoint's channel state (in-flight data) cannot be restored: {0}")]
pub struct ChannelStateError(pub String);

/// Encodes channel state as store entries; returns them and their bytes (keys and values).
pub fn encode(channels: &[ChannelMessages]) -> (Vec<StateEntry>, u64) {
    let mut entries = Vec::new();
    let mut bytes = 0u64;
    let mut seq = 0u64;
    for c in channels {
        for m in &c.messages {
            let mut key = Vec::with_capacity(16);
            key.extend_from_slice(&c.port.to_be_bytes());
            key.extend_from_slice(&c.upstream.to_be_bytes());
            key.extend_from_slice(&seq.to_be_bytes());
            seq += 1;
            let value = encode_message(m);
            bytes += (key.len() + value.len()) as u64;
            entries.push(StateEntry { state: IN_FLIGHT.to_owned(), key, value: Some(value) });
        }
    }
    (entries, bytes)
}

fn encode_message(m: &Message) -> Vec<u8> {
    let mut v = Vec::new();
    encode_into(m, &mut v);
    v
}

/// Appends the encoding of `m` (not a barrier) to `v`.
fn encode_into(m: &Message, v: &mut Vec<u8>) {
    match m {
        Message::Batch(b) => {
            v.reserve(5 + b.len() * 16 + b.byte_len());
            v.push(BATCH);
            v.extend_from_slice(&(b.len() as u32).to_le_bytes());
            for e in &b.entries {
                let mut head = [0u8; 16];
                head[0..4].copy_from_slice(&e.key_len.to_le_bytes());
                head[4..8].copy_from_slice(&e.value_len.to_le_bytes());
                head[8..16].copy_from_slice(&e.timestamp.to_le_bytes());
                v.extend_from_slice(&head);
            }
            v.extend_from_slice(&b.data);
        }
        Message::Watermark(w) => {
            v.push(WATERMARK);
            v.extend_from_slice(&w.to_le_bytes());
        }
        Message::Idle => v.push(IDLE),
        Message::EndOfStream => v.push(END),
        Message::Barrier(_) => unreachable!("a barrier is never channel state"),
    }
}

/// Appends `m` as the data plane sends it to another worker: channel state's encoding,
/// plus barriers (id, the time since their trigger in µs — an `Instant` means nothing in
/// another process —, flags, and when they may switch to unaligned).
pub fn encode_wire(m: &Message, v: &mut Vec<u8>) {
    let Message::Barrier(b) = m else { return encode_into(m, v) };
    v.push(BARRIER);
    v.extend_from_slice(&b.id.to_le_bytes());
    let age = u64::try_from(b.triggered.elapsed().as_micros()).unwrap_or(u64::MAX);
    v.extend_from_slice(&age.to_le_bytes());
    let flags =
        u8::from(b.is_final) | u8::from(b.unaligned) << 1 | u8::from(b.unaligned_after.is_some()) << 2;
    v.push(flags);
    let after = b.unaligned_after.map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    v.extend_from_slice(&after.to_le_bytes());
}

/// Decodes a message written by [`encode_wire`]; `None` if it does not decode. A barrier
/// arrives with `overtaken` 0 (the receiving end counts what it overtakes there).
pub fn decode_wire(v: &[u8]) -> Option<Message> {
    if v.first() != Some(&BARRIER) {
        return decode_message(v);
    }
    if v.len() != 26 || v[17] > 0b111 {
        return None;
    }
    let u64_at = |at: usize| u64::from_le_bytes(v[at..at + 8].try_into().expect("8 bytes"));
    let (id, age, flags, after) = (u64_at(1), u64_at(9), v[17], u64_at(18));
    let now = std::time::Instant::now();
    let triggered = now.checked_sub(std::time::Duration::from_micros(age)).unwrap_or(now);
    let unaligned_after = (flags & 4 != 0).then(|| std::time::Duration::from_micros(after));
    let mut barrier = super::message::Barrier::new(id, triggered, flags & 1 != 0, unaligned_after);
    barrier.unaligned = flags & 2 != 0;
    Some(Message::Barrier(barrier))
}

/// Decodes entries written by [`encode`] (in the store's key order) into per-channel
/// message lists keyed by `(port, upstream subtask)`.
pub fn decode(entries: &[StateEntry]) -> Result<BTreeMap<(u32, u32), Vec<Message>>, ChannelStateError> {
    let mut channels: BTreeMap<(u32, u32), Vec<Message>> = BTreeMap::new();
    let mut last_seq: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for e in entries {
        let bad = |what: &str| ChannelStateError(format!("entry {:?}: {what}", e.key));
        if e.state != IN_FLIGHT || e.key.len() != 16 {
            return Err(bad("not a channel-state entry"));
        }
        let port = u32::from_be_bytes(e.key[0..4].try_into().expect("4 bytes"));
        let upstream = u32::from_be_bytes(e.key[4..8].try_into().expect("4 bytes"));
        let seq = u64::from_be_bytes(e.key[8..16].try_into().expect("8 bytes"));
        if last_seq.insert((port, upstream), seq).is_some_and(|prev| prev >= seq) {
            return Err(bad("out of order"));
        }
        let value = e.value.as_deref().ok_or_else(|| bad("a tombstone"))?;
        let message = decode_message(value).ok_or_else(|| bad("does not decode"))?;
        channels.entry((port, upstream)).or_default().push(message);
    }
    Ok(channels)
}

fn decode_message(v: &[u8]) -> Option<Message> {
    let (&tag, rest) = v.split_first()?;
    Some(match tag {
        BATCH => {
            // The entries and the bytes as they are: two bulk copies, then one check that
            // the entries describe exactly the bytes (as a guest's batch is checked).
            let n = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?) as usize;
            let heads = rest.get(4..4usize.checked_add(n.checked_mul(16)?)?)?;
            let data = rest.get(4 + n * 16..)?;
            let entries = heads
                .chunks_exact(16)
                .map(|h| Entry {
                    key_len: u32::from_le_bytes(h[0..4].try_into().expect("4 bytes")),
                    value_len: u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")),
                    timestamp: i64::from_le_bytes(h[8..16].try_into().expect("8 bytes")),
                })
                .collect();
            let batch = Batch { data: data.to_vec(), entries };
            batch.validate().ok()?;
            Message::Batch(batch)
        }
        WATERMARK => Message::Watermark(i64::from_le_bytes(rest.try_into().ok()?)),
        IDLE if rest.is_empty() => Message::Idle,
        END if rest.is_empty() => Message::EndOfStream,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_channel_order() {
        let mut b = Batch::empty();
        b.push(b"k", b"v1", 5);
        b.push(b"", b"value two", -3);
        let channels = vec![
            ChannelMessages {
                port: 1,
                upstream: 0,
                messages: vec![Message::Batch(b.clone()), Message::Watermark(7), Message::Idle],
            },
            ChannelMessages { port: 0, upstream: 2, messages: vec![Message::EndOfStream] },
        ];
        let (mut entries, bytes) = encode(&channels);
        assert!(bytes > 0);
        // The store returns entries in key order.
        entries.sort_by(|a, b| a.key.cmp(&b.key));
        let back = decode(&entries).unwrap();
        assert_eq!(back[&(1, 0)], channels[0].messages);
        assert_eq!(back[&(0, 2)], channels[1].messages);
        entries[0].value.as_mut().unwrap().push(0);
        assert!(decode(&entries).unwrap_err().to_string().contains("does not decode"));
    }

    #[test]
    fn messages_and_barriers_cross_the_wire() {
        use std::time::{Duration, Instant};

        use crate::runtime::message::Barrier;
        let mut b = Batch::empty();
        b.push(b"k", b"v", 1);
        let mut unaligned = Barrier::new(9, Instant::now(), true, Some(Duration::from_millis(250)));
        unaligned.unaligned = true;
        unaligned.overtaken = 3;
        let aligned = Barrier::new(10, Instant::now(), false, None);
        for m in [Message::Batch(b), Message::Watermark(-4), Message::Idle, Message::EndOfStream] {
            let mut v = Vec::new();
            encode_wire(&m, &mut v);
            assert_eq!(decode_wire(&v), Some(m));
        }
        for sent in [unaligned, aligned] {
            let mut v = Vec::new();
            encode_wire(&Message::Barrier(sent), &mut v);
            let Some(Message::Barrier(got)) = decode_wire(&v) else { panic!("not a barrier") };
            assert_eq!(
                (got.id, got.is_final, got.unaligned, got.unaligned_after, got.overtaken),
                (sent.id, sent.is_final, sent.unaligned, sent.unaligned_after, 0)
            );
            assert!(
                got.triggered <= Instant::now() && got.triggered + Duration::from_secs(5) > sent.triggered
            );
            v.push(0);
            assert_eq!(decode_wire(&v), None, "a longer barrier");
        }
    }

    #[test]
    fn a_batch_whose_entries_do_not_describe_its_bytes_does_not_decode() {
        let mut b = Batch::empty();
        b.push(b"key", b"value", 1);
        b.push(b"", b"v2", 2);
        let mut v = Vec::new();
        encode_wire(&Message::Batch(b.clone()), &mut v);
        assert_eq!(decode_wire(&v), Some(Message::Batch(b)));
        // The first entry's key length (after the tag and the count) one too long, and one
        // byte too few or too many at the end.
        let mut longer_key = v.clone();
        longer_key[5] += 1;
        assert_eq!(decode_wire(&longer_key), None);
        assert_eq!(decode_wire(&v[..v.len() - 1]), None);
        let mut more = v.clone();
        more.push(0);
        assert_eq!(decode_wire(&more), None);
        // A count past the frame.
        let mut count = v;
        count[1..5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode_wire(&count), None);
    }
}
