extern crate std;

use alloc::vec;
use alloc::vec::Vec;
use std::string::ToString;

use proptest::prelude::*;

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    key_len: u32,
    value_len: u32,
    timestamp: i64,
}
impl_record_entry!(Entry);

/// A state-delta entry: lengths only.
struct Lengths {
    key_len: u32,
    value_len: u32,
}
impl_flat_entry!(Lengths);

type Record = (Vec<u8>, Vec<u8>, i64);

fn write(records: &[Record]) -> (Vec<u8>, Vec<Entry>) {
    let (mut data, mut entries) = (Vec::new(), Vec::new());
    let mut writer = Writer::new(&mut data, &mut entries);
    for (key, value, timestamp) in records {
        writer.push(key, value, *timestamp);
    }
    (data, entries)
}

fn read(data: &[u8], entries: &[Entry]) -> Result<Vec<Record>, Overrun> {
    Reader::new(data, entries)
        .map(|r| r.map(|(key, value, entry)| (key.to_vec(), value.to_vec(), entry.timestamp())))
        .collect()
}

fn entry(key_len: u32, value_len: u32) -> Entry {
    Entry { key_len, value_len, timestamp: 0 }
}

#[test]
fn the_writers_agree() {
    let (mut data, mut entries) = (Vec::new(), Vec::<Entry>::new());
    let mut writer = Writer::new(&mut data, &mut entries);
    writer.push(b"k", b"v", 1);
    writer.push_with(b"key", 2, |buf| buf.extend_from_slice(b"value"));
    writer
        .try_push_with::<()>(3, |buf| {
            buf.extend_from_slice(b"ab");
            buf.extend_from_slice(b"cde");
            Ok(2)
        })
        .unwrap();
    assert_eq!(
        writer.try_push_with(4, |buf| {
            buf.extend_from_slice(b"partial");
            Err("refused")
        }),
        Err("refused")
    );
    assert_eq!(data, b"kvkeyvalueabcde");
    assert_eq!(entries, [Entry::new(1, 1, 1), Entry::new(3, 5, 2), Entry::new(2, 3, 3)]);
    assert_eq!(
        read(&data, &entries).unwrap(),
        [
            (b"k".to_vec(), b"v".to_vec(), 1),
            (b"key".to_vec(), b"value".to_vec(), 2),
            (b"ab".to_vec(), b"cde".to_vec(), 3)
        ]
    );
}

#[test]
fn an_overrun_names_the_entry_and_ends_the_walk() {
    let entries = [entry(1, 1), entry(2, 2), entry(0, 0)];
    let mut reader = Reader::new(b"abcde", &entries);
    assert_eq!(reader.len(), 3);
    assert!(reader.next().unwrap().is_ok());
    assert_eq!(reader.offset(), 2);
    let overrun = reader.next().unwrap().unwrap_err();
    assert_eq!(overrun, Overrun { index: 1, data_len: 5 });
    assert_eq!(overrun.to_string(), "entry 1 runs past the end of the data (5 bytes)");
    assert!(reader.next().is_none());
}

#[test]
fn lengths_that_overflow_are_refused() {
    let entries = [entry(1, 0), entry(u32::MAX, u32::MAX)];
    assert_eq!(read(b"a", &entries).unwrap_err().index, 1);
    let e = validate(b"a", &entries).unwrap_err();
    assert_eq!(e, Mismatch { described: 1 + 2 * u64::from(u32::MAX), held: 1 });
    assert_eq!(e.to_string(), "entries describe 8589934591 bytes but the data holds 1 bytes");
}

#[test]
fn state_entries_are_read_by_length_alone() {
    let entries = [Lengths { key_len: 2, value_len: 0 }, Lengths { key_len: 0, value_len: 3 }];
    let read: Vec<_> = Reader::new(b"kkvvv", &entries).map(|r| r.map(|(k, v, _)| (k, v)).unwrap()).collect();
    assert_eq!(read, [(&b"kk"[..], &b""[..]), (&b""[..], &b"vvv"[..])]);
    validate(b"kkvvv", &entries).unwrap();
    assert!(validate(b"kkvv", &entries).is_err());
}

/// Every combination of up to three entries with lengths 0..=2 over data of 0..=7 bytes:
/// `validate` accepts exactly the ones whose lengths sum to the data's length, and the
/// reader overruns exactly when a running sum passes it.
#[test]
fn exhaustive_small_cases() {
    let lengths: Vec<(u32, u32)> = (0..3).flat_map(|k| (0..3).map(move |v| (k, v))).collect();
    let mut level: Vec<Vec<Entry>> = vec![vec![]];
    let mut sets = level.clone();
    for _ in 0..3 {
        level = level
            .iter()
            .flat_map(|s| {
                lengths.iter().map(move |&(k, v)| {
                    let mut s = s.clone();
                    s.push(entry(k, v));
                    s
                })
            })
            .collect();
        sets.extend(level.iter().cloned());
    }
    assert_eq!(sets.len(), 1 + 9 + 81 + 729);
    let data: Vec<u8> = (0..7).collect();
    for entries in &sets {
        let sum: usize = entries.iter().map(|e| (e.key_len + e.value_len) as usize).sum();
        for len in 0..=data.len() {
            let data = &data[..len];
            assert_eq!(validate(data, entries).is_ok(), sum == len, "{entries:?} over {len} bytes");
            let mut running = 0;
            let first_past = entries.iter().position(|e| {
                running += (e.key_len + e.value_len) as usize;
                running > len
            });
            match read(data, entries) {
                Ok(records) => {
                    assert_eq!(first_past, None);
                    let mut offset = 0;
                    for (record, e) in records.iter().zip(entries) {
                        let (k, v) = (e.key_len as usize, e.value_len as usize);
                        assert_eq!(record.0, data[offset..offset + k]);
                        assert_eq!(record.1, data[offset + k..offset + k + v]);
                        offset += k + v;
                    }
                }
                Err(overrun) => assert_eq!(Some(overrun.index), first_past, "{entries:?} over {len} bytes"),
            }
        }
    }
}

fn records() -> impl Strategy<Value = Vec<Record>> {
    let bytes = || proptest::collection::vec(any::<u8>(), 0..12);
    proptest::collection::vec((bytes(), bytes(), any::<i64>()), 0..20)
}

proptest! {
    #[test]
    fn the_reader_inverts_the_writer(records in records()) {
        let (data, entries) = write(&records);
        prop_assert!(validate(&data, &entries).is_ok());
        prop_assert_eq!(read(&data, &entries).unwrap(), records);
    }

    #[test]
    fn validate_rejects_a_changed_length_or_extra_or_missing_bytes(
        records in records().prop_filter("a record", |r| !r.is_empty()),
        pick in any::<prop::sample::Index>(),
        delta in prop_oneof![Just(-1i64), 1i64..5],
        change_data in any::<bool>(),
    ) {
        let (mut data, mut entries) = write(&records);
        if change_data {
            if delta < 0 {
                prop_assume!(!data.is_empty());
                data.pop();
            } else {
                data.extend(core::iter::repeat_n(0, delta as usize));
            }
        } else {
            let e = &mut entries[pick.index(records.len())];
            let len = if delta < 0 { &mut e.value_len } else { &mut e.key_len };
            prop_assume!(*len > 0 || delta > 0);
            *len = (i64::from(*len) + delta) as u32;
        }
        prop_assert!(validate(&data, &entries).is_err());
    }
}
