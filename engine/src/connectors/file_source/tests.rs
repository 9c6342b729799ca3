//! Tests of the file source: splits, positions, rescaling, line numbers.

use super::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn values(source: &mut FileSource) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    while let Some(b) = source.next_batch().unwrap() {
        for r in b.iter() {
            out.push(crate::record::msgpack_to_json(r.value));
        }
    }
    out
}

fn config(path: &Path, split_bytes: u64) -> FileSourceConfig {
    FileSourceConfig { split_bytes, ..FileSourceConfig::new(path) }
}

#[test]
fn reads_partitions_records_offsets_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    for f in 0..3 {
        let lines: String =
            (0..5).map(|i| format!("{{\"f\": {f}, \"i\": {i}, \"ts\": {}}}\n", 10 * i)).collect();
        std::fs::write(dir.path().join(format!("in-{f}.jsonl")), lines).unwrap();
    }
    std::fs::write(dir.path().join(".hidden"), "not json").unwrap();
    let config = FileSourceConfig {
        key_field: Some("f".into()),
        timestamp_field: Some("ts".into()),
        ..FileSourceConfig::new(dir.path())
    };
    // Small files are one split each: subtask 0 of 2 owns files 0 and 2.
    let mut s = FileSource::open(&config, 2, 0, 2).unwrap();
    let first = s.next_batch().unwrap().unwrap();
    let r: Vec<_> = first.iter().collect();
    assert_eq!((r[1].timestamp, crate::record::msgpack_to_json(r[1].key)), (10, serde_json::json!(0)));
    let position = s.positions();
    assert_eq!(serde_json::to_value(&position).unwrap(), s.position());
    let offset = position[0].offset;
    let text = std::fs::read_to_string(dir.path().join("in-0.jsonl")).unwrap();
    let two_lines: usize = text.lines().take(2).map(|l| l.len() + 1).sum();
    assert_eq!(offset, two_lines as u64, "the offset is just past the two lines read");
    assert_eq!((position[0].start, position[0].end, position[0].line), (0, text.len() as u64, 2));
    let rest = values(&mut s);
    assert_eq!(rest.len(), 8);
    assert!(rest.iter().all(|v| v["f"] != 1));

    // A new subtask resumed at the recorded offset reads exactly the rest.
    let mut resumed = FileSource::open(&config, 2, 0, 2).unwrap();
    resumed.seek(&position);
    assert_eq!(values(&mut resumed), rest);
}

#[test]
fn a_malformed_line_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"a\": 1}\n{oops\n").unwrap();
    let config = FileSourceConfig::new(&path);
    let mut s = FileSource::open(&config, 10, 0, 1).unwrap();
    let e = s.next_batch().unwrap_err().to_string();
    assert!(e.contains("bad.jsonl:2: not valid JSON"), "{e}");

    // Resumed past the first line (a position of before splits: the whole file), the error
    // still names line 2.
    let mut resumed = FileSource::open(&config, 10, 0, 1).unwrap();
    let old: Vec<FilePosition> =
        serde_json::from_value(serde_json::json!([{ "file": config.path, "offset": 9, "line": 1 }])).unwrap();
    resumed.seek(&old);
    let e = resumed.next_batch().unwrap_err().to_string();
    assert!(e.contains("bad.jsonl:2: not valid JSON"), "{e}");
}

#[test]
fn a_malformed_line_in_a_later_split_names_its_line_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let mut text: String = (0..40).map(|i| format!("{{\"i\": {i}}}\n")).collect();
    text.push_str("\n{oops\n{\"i\": 41}\n");
    std::fs::write(&path, &text).unwrap();
    // 16-byte splits: the bad line (line 42) is read by a split far from 0.
    let config = config(&path, 16);
    let mut errors = Vec::new();
    for index in 0..3 {
        let mut s = FileSource::open(&config, 1000, index, 3).unwrap();
        if let Err(e) = s.next_batch() {
            errors.push(e.to_string());
        }
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("bad.jsonl:42: not valid JSON"), "{errors:?}");
}

#[test]
fn a_line_that_is_not_utf8_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin.jsonl");
    std::fs::write(&path, b"{\"a\": 1}\n\xff\xfe\n").unwrap();
    let mut s = FileSource::open(&FileSourceConfig::new(&path), 10, 0, 1).unwrap();
    let e = s.next_batch().unwrap_err().to_string();
    assert!(e.contains("bin.jsonl:2: not valid UTF-8"), "{e}");
}

/// A file of `n` numbered lines of random lengths (some longer than a split), with empty and
/// blank lines between them, the last without `\n` when `seed` is odd; `f` is the file name.
fn random_file(path: &Path, n: u64, seed: u64) {
    let tag = path.file_name().unwrap().to_string_lossy();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut text = String::new();
    for i in 0..n {
        match rng.gen_range(0..6) {
            0 => text.push('\n'),
            1 => text.push_str("  \r\n"),
            _ => {}
        }
        let pad = "x".repeat(rng.gen_range(0..60));
        text.push_str(&format!("{{\"f\": \"{tag}\", \"i\": {i}, \"pad\": \"{pad}\"}}"));
        if i + 1 < n || seed.is_multiple_of(2) {
            text.push('\n');
        }
    }
    std::fs::write(path, text).unwrap();
}

fn ids(values: &[serde_json::Value]) -> Vec<u64> {
    let mut ids: Vec<u64> = values.iter().map(|v| v["i"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    ids
}

/// Files written with `seed`: one large file and two small ones.
fn random_dir(dir: &Path, seed: u64) -> u64 {
    random_file(&dir.join("a.jsonl"), 300, seed);
    random_file(&dir.join("b.jsonl"), 3, seed + 1);
    random_file(&dir.join("c.jsonl"), 50, seed + 2);
    300 + 3 + 50
}

#[test]
fn every_line_is_read_exactly_once_whatever_the_parallelism_and_split_size() {
    for seed in 0..4u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        random_file(&path, 200, seed);
        for parallelism in 1..=5u32 {
            for split_bytes in [1, 7, 33, 100, 1000, DEFAULT_SPLIT_BYTES] {
                let config = config(&path, split_bytes);
                let mut all = Vec::new();
                for index in 0..parallelism {
                    let mut s = FileSource::open(&config, 17, index, parallelism).unwrap();
                    all.extend(values(&mut s));
                }
                assert!(
                    ids(&all).into_iter().eq(0..200),
                    "seed {seed}, parallelism {parallelism}, split_bytes {split_bytes}: {} lines",
                    all.len()
                );
            }
        }
    }
}

#[test]
fn a_large_file_gives_every_subtask_work() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let line = format!("{{\"pad\": \"{}\"}}\n", "y".repeat(1000));
    std::fs::write(&path, line.repeat(5 * 1024)).unwrap(); // 5 MiB: 5 splits of at least 1 MiB
    for index in 0..4 {
        let s = FileSource::open(&FileSourceConfig::new(&path), 10, index, 4).unwrap();
        assert!(!s.positions().is_empty(), "subtask {index} of 4 has no split");
    }
}

/// Reads `batches` batches from each subtask (all when `None`); returns what they read.
fn read_some(sources: &mut [FileSource], batches: Option<usize>) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for s in sources.iter_mut() {
        let mut n = 0;
        while batches.is_none_or(|b| n < b) {
            let Some(b) = s.next_batch().unwrap() else { break };
            out.extend(b.iter().map(|r| crate::record::msgpack_to_json(r.value)));
            n += 1;
        }
    }
    out
}

#[test]
fn a_rescale_reassigns_and_recuts_splits_without_losing_or_repeating_a_line() {
    for seed in 0..4u64 {
        let dir = tempfile::tempdir().unwrap();
        let total = random_dir(dir.path(), 10 * seed);
        for (from, to, split_bytes) in [(1, 5, 64), (2, 3, 1), (5, 1, 40), (3, 4, 300), (4, 2, 5000)] {
            let config = config(dir.path(), split_bytes);
            let tag =
                |v: &serde_json::Value| (v["f"].as_str().unwrap().to_string(), v["i"].as_u64().unwrap());
            let mut first: Vec<FileSource> =
                (0..from).map(|i| FileSource::open(&config, 7, i, from).unwrap()).collect();
            let mut seen = read_some(&mut first, Some(seed as usize + 1));
            let old: Vec<Option<serde_json::Value>> = first.iter().map(|s| Some(s.position())).collect();
            let positions = rescale(&config, &old, to).unwrap();
            assert_eq!(positions.len(), to as usize);
            // Rescaled once more (to → from) before reading anything: still the same lines.
            let again = rescale(&config, &positions, from).unwrap();
            let back = rescale(&config, &again, to).unwrap();
            let mut second: Vec<FileSource> = (0..to)
                .map(|i| {
                    let mut s = FileSource::open(&config, 7, i, to).unwrap();
                    Source::seek(&mut s, back[i as usize].as_ref().unwrap()).unwrap();
                    s
                })
                .collect();
            seen.extend(read_some(&mut second, None));
            let mut tags: Vec<_> = seen.iter().map(tag).collect();
            tags.sort_unstable();
            let before = tags.len();
            tags.dedup();
            assert_eq!(
                (before, tags.len() as u64),
                (total as usize, total),
                "seed {seed}, {from} → {to} subtasks, split_bytes {split_bytes}: a line lost or repeated"
            );
        }
    }
}

#[test]
fn a_rescale_gives_every_new_subtask_a_split_of_a_large_remainder() {
    let position =
        serde_json::json!([{ "file": "/in", "start": 0, "end": 100 << 20, "offset": 10, "line": 1 }]);
    let config = FileSourceConfig::new("/in");
    let positions = rescale(&config, &[Some(position)], 4).unwrap();
    let splits: Vec<Vec<FilePosition>> =
        positions.iter().map(|p| serde_json::from_value(p.clone().unwrap()).unwrap()).collect();
    assert!(splits.iter().all(|s| s.len() == 1), "{splits:?}");
    let mut all: Vec<FilePosition> = splits.into_iter().flatten().collect();
    all.sort_by_key(|s| s.start);
    assert_eq!((all[0].start, all[0].offset, all[0].line), (0, 10, 1), "the first keeps its progress");
    for w in all.windows(2) {
        assert_eq!(w[0].end, w[1].start, "{all:?}");
    }
    assert_eq!(all[3].end, 100 << 20);

    let e = rescale(&config, &[None], 2).unwrap_err().to_string();
    assert!(e.contains("subtask 0 recorded no file position"), "{e}");
    let overlap = serde_json::json!([{ "file": "/in", "start": 0, "end": 10, "offset": 0, "line": 0 },
        { "file": "/in", "start": 5, "end": 20, "offset": 5, "line": 0 }]);
    let e = rescale(&config, &[Some(overlap)], 2).unwrap_err().to_string();
    assert!(e.contains("overlap"), "{e}");
}

#[test]
fn split_bytes_is_checked_when_the_job_is_planned() {
    let parse = |config| crate::connectors::SourceConfig::parse("file", &config);
    let e = parse(serde_json::json!({ "path": "/in", "split_bytes": 0 })).unwrap_err().to_string();
    assert!(e.contains("split_bytes must be at least 1"), "{e}");
    let ok = parse(serde_json::json!({ "path": "/in" })).unwrap();
    assert!(
        matches!(&ok.kind, crate::connectors::SourceKind::File(c) if c.split_bytes == DEFAULT_SPLIT_BYTES),
        "{ok:?}"
    );
}

#[test]
fn keys_times_and_values_are_those_of_the_json_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.jsonl");
    let first = r#"{"z": [1, {"y": 2, "x": "é"}], "id": {"b": 1, "a": -7}, "ts": 1700000000000}"#;
    std::fs::write(&path, format!("{first}\n  \n{{\"id\": 3}}\n{{\"ts\": 1.5}}\n")).unwrap();
    let config = FileSourceConfig {
        key_field: Some("id".into()),
        timestamp_field: Some("ts".into()),
        ..FileSourceConfig::new(path)
    };
    let mut s = FileSource::open(&config, 2, 0, 1).unwrap();
    let batch = s.next_batch().unwrap().unwrap();
    let r: Vec<_> = batch.iter().collect();
    let value: serde_json::Value = serde_json::from_str(first).unwrap();
    assert_eq!(r[0].value, &crate::record::to_msgpack(&value)[..]);
    assert_eq!(r[0].key, &crate::record::to_msgpack(&value["id"])[..]);
    assert_eq!((r[0].timestamp, r[1].timestamp, r[1].key), (1_700_000_000_000, 0, &[3u8][..]));
    let e = s.next_batch().unwrap_err().to_string();
    assert!(e.contains("in.jsonl:4: field `ts` is not an integer: 1.5"), "{e}");
}

#[test]
fn lines_that_cannot_be_read_are_left_out_with_where_they_came_from_when_rejecting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.jsonl");
    std::fs::write(&path, b"{\"i\": 1}\n{oops\n{\"i\": 2, \"t\": \"noon\"}\n\xff\n{\"i\": 3}\n").unwrap();
    let config = FileSourceConfig { timestamp_field: Some("t".into()), ..FileSourceConfig::new(&path) };
    let mut s = FileSource::open(&config, 10, 0, 1).unwrap();
    s.reject_bad_records();
    let good = values(&mut s);
    assert_eq!(good, vec![serde_json::json!({ "i": 1 }), serde_json::json!({ "i": 3 })]);
    let rejected = s.take_rejected();
    let got: Vec<(&str, u64, &[u8])> = rejected
        .iter()
        .map(|r| match &r.origin {
            Origin::File { line, .. } => (r.reason.as_str(), *line, r.value.as_slice()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("bad_json", 2, &b"{oops"[..]),
            ("bad_event_time", 3, &b"{\"i\": 2, \"t\": \"noon\"}"[..]),
            ("bad_utf8", 4, &b"\xff"[..]),
        ]
    );
    assert!(rejected[0].error.contains("mixed.jsonl:2: not valid JSON"), "{}", rejected[0].error);
    assert!(s.take_rejected().is_empty(), "taken once");
}
