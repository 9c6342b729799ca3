//! Helpers for the stream log's integration tests: records, and chunks as earlier versions
//! stored them.
#![allow(dead_code)]

use weir_store::{LogRecord, Store};

/// Records `n` records made from `seed`: mostly small, some of 1–3 KiB, and with `huge` one
/// larger than a chunk's byte bound.
pub fn made(n: usize, seed: u64, huge: bool) -> Vec<LogRecord> {
    (0..n as u64)
        .map(|i| {
            let x = seed.wrapping_mul(6364136223846793005).wrapping_add(i.wrapping_mul(1442695040888963407));
            let len = match x % 16 {
                0 => 1000 + (x >> 8) as usize % 2000,
                1 => 0,
                _ => (x >> 8) as usize % 120,
            };
            let len = if huge && i == n as u64 / 2 { 40_000 } else { len };
            LogRecord {
                key: if x % 3 == 0 { Vec::new() } else { format!("k{}", x % 1000).into_bytes() },
                value: (0..len).map(|j| (x as usize + j) as u8).collect(),
                timestamp: (x >> 20) as i64 - (1 << 40),
            }
        })
        .collect()
}

pub fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A record as the store encodes it (alone before chunks, concatenated in a chunk).
pub fn old_record(r: &LogRecord) -> Vec<u8> {
    let mut out = Vec::new();
    varint(&mut out, r.key.len() as u64);
    out.extend_from_slice(&r.key);
    varint(&mut out, r.value.len() as u64);
    out.extend_from_slice(&r.value);
    varint(&mut out, ((r.timestamp << 1) ^ (r.timestamp >> 63)) as u64);
    out
}

/// An inline chunk (version 1) of `records`, as every version since chunks writes it.
pub fn inline_chunk<'r>(records: impl IntoIterator<Item = &'r LogRecord>) -> Vec<u8> {
    let mut out = vec![1, 0, 0, 0, 0];
    let mut count = 0u32;
    for r in records {
        out.extend(old_record(r));
        count += 1;
    }
    out[1..5].copy_from_slice(&count.to_le_bytes());
    out
}

/// Stages `records` (partition, record) of `writer` under `epoch` as the version before
/// chunk bodies did: one inline chunk per partition in the staging table, charged to `owner`.
pub fn stage_inline(
    store: &Store,
    name: &str,
    writer: &str,
    epoch: u64,
    records: &[(u32, LogRecord)],
    owner: &str,
) {
    use redb::{ReadableTable, TableDefinition};
    const STAGED: TableDefinition<'_, (&str, &str, u64, u64, u32), &[u8]> =
        TableDefinition::new("weir.log_staged_chunks");
    let db = store.database().unwrap();
    let mut txn = db.begin_write().unwrap();
    txn.set_durability(redb::Durability::None).unwrap();
    {
        let mut staged = txn.open_table(STAGED).unwrap();
        let range = (name, writer, epoch, 0, 0)..=(name, writer, epoch, u64::MAX, u32::MAX);
        let mut seq =
            staged.range(range).unwrap().next_back().map_or(0, |last| last.unwrap().0.value().3 + 1);
        let mut charged = 0;
        for p in 0..=records.iter().map(|(p, _)| *p).max().unwrap_or(0) {
            let mine: Vec<&LogRecord> = records.iter().filter(|(q, _)| *q == p).map(|(_, r)| r).collect();
            if mine.is_empty() {
                continue;
            }
            let chunk = inline_chunk(mine);
            staged.insert((name, writer, epoch, seq, p), chunk.as_slice()).unwrap();
            charged += weir_store::entry_bytes(name.len() + writer.len() + 20, chunk.len());
            seq += 1;
        }
        weir_store::charge_owner(&txn, owner, charged, false).unwrap();
    }
    txn.commit().unwrap();
}
