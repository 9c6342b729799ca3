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
use crate::record::Batch;

/// The state name of channel-state entries.
pub const IN_FLIGHT: &str = "in-flight";

const BATCH: u8 = 0;
const WATERMARK: u8 = 1;
const IDLE: u8 = 2;
const END: u8 = 3;

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
    match m {
        Message::Batch(b) => {
            let mut v = Vec::with_capacity(5 + b.len() * 16 + b.byte_len());
            v.push(BATCH);
            v.extend_from_slice(&(b.len() as u32).to_le_bytes());
            for r in b.iter() {
                v.extend_from_slice(&(r.key.len() as u32).to_le_bytes());
                v.extend_from_slice(&(r.value.len() as u32).to_le_bytes());
                v.extend_from_slice(&r.timestamp.to_le_bytes());
            }
            v.extend_from_slice(&b.data);
            v
        }
        Message::Watermark(w) => {
            let mut v = vec![WATERMARK];
            v.extend_from_slice(&w.to_le_bytes());
            v
        }
        Message::Idle => vec![IDLE],
        Message::EndOfStream => vec![END],
        Message::Barrier(_) => unreachable!("a barrier is never channel state"),
    }
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
            let n = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?) as usize;
            let heads = rest.get(4..4 + n.checked_mul(16)?)?;
            let mut data = rest.get(4 + n * 16..)?;
            let mut batch = Batch::with_capacity(n, data.len());
            for h in heads.chunks_exact(16) {
                let key_len = u32::from_le_bytes(h[0..4].try_into().ok()?) as usize;
                let value_len = u32::from_le_bytes(h[4..8].try_into().ok()?) as usize;
                let ts = i64::from_le_bytes(h[8..16].try_into().ok()?);
                let key = data.get(..key_len)?;
                let value = data.get(key_len..key_len.checked_add(value_len)?)?;
                batch.push(key, value, ts);
                data = &data[key_len + value_len..];
            }
            if !data.is_empty() {
                return None;
            }
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
}
