//! State documents: a restore document read back as a snapshot document gives the chunk
//! byte for byte (kinds 0 and 2 mean the same both ways); deletes, shapes, the size limit
//! and hostile input.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::super::super::bindings::{ChangeKind, StateDelta, StateEntry};
use super::super::{BatchFormat, DecodeError, ValueForm, decode_state, encode_state};
use super::{Shape, pack, random_value};

const LIMIT: usize = 1 << 20;

type Flat = (Vec<String>, Vec<u8>, Vec<(u32, bool, u32, u32)>);

fn flat(delta: &StateDelta) -> Flat {
    let entries = delta
        .entries
        .iter()
        .map(|e| (e.state, matches!(e.kind, ChangeKind::Put), e.key_len, e.value_len))
        .collect();
    (delta.names.clone(), delta.data.clone(), entries)
}

/// One change: `(state, key, value)`, `None` for a delete.
type Change = (u32, Vec<u8>, Option<Vec<u8>>);

/// A chunk of changes.
fn chunk(names: &[&str], entries: &[Change]) -> StateDelta {
    let mut delta = StateDelta {
        names: names.iter().map(|n| n.to_string()).collect(),
        data: Vec::new(),
        entries: Vec::new(),
    };
    for (state, key, value) in entries {
        delta.data.extend_from_slice(key);
        let value = value.as_deref();
        delta.data.extend_from_slice(value.unwrap_or_default());
        delta.entries.push(StateEntry {
            state: *state,
            kind: if value.is_some() { ChangeKind::Put } else { ChangeKind::Delete },
            key_len: key.len() as u32,
            value_len: value.map_or(0, <[u8]>::len) as u32,
        });
    }
    delta
}

fn cost(delta: &StateDelta) -> usize {
    delta.data.len() + 16 * delta.entries.len()
}

fn random_chunk(rng: &mut SmallRng, json: bool) -> StateDelta {
    let entries: Vec<_> = (0..rng.gen_range(0..40))
        .map(|_| {
            let state = rng.gen_range(0..3);
            let key = match rng.gen_range(0..3) {
                0 => Vec::new(),
                1 => (0..rng.gen_range(0..40)).map(|_| rng.r#gen()).collect(),
                _ => pack(&random_value(rng, Shape { json: true }, 1, true)),
            };
            // State 2 is raw: any bytes at all.
            let value = if state == 2 {
                (0..rng.gen_range(0..60)).map(|_| rng.r#gen()).collect()
            } else {
                let depth = rng.gen_range(0..4);
                pack(&random_value(rng, Shape { json }, depth, false))
            };
            (state, key, Some(value))
        })
        .collect();
    chunk(&["a", "b", "raw"], &entries)
}

const FORMS: [ValueForm; 3] = [ValueForm::Decoded, ValueForm::Decoded, ValueForm::Raw];

#[test]
fn restore_documents_read_back_as_snapshots_byte_for_byte() {
    let seed: u64 = rand::random();
    eprintln!("seed {seed}");
    let mut rng = SmallRng::seed_from_u64(seed);
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        for _ in 0..200 {
            let delta = random_chunk(&mut rng, format == BatchFormat::Json);
            let mut doc = Vec::new();
            encode_state(format, &delta, &FORMS, &mut doc).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            let back = decode_state(format, delta.names.clone(), &doc, cost(&delta))
                .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            assert_eq!(flat(&back), flat(&delta), "seed {seed} {format:?}");
            if cost(&delta) > 0 {
                let over = decode_state(format, delta.names.clone(), &doc, cost(&delta) - 1);
                assert_eq!(
                    over.map(|d| flat(&d)),
                    Err(DecodeError::TooLarge),
                    "seed {seed}: the limit is exact"
                );
            }
        }
    }
}

#[test]
fn deletes_raw_values_and_sections_keep_their_order() {
    let doc = b"[[1,1,[\"k\",\"\"]],[0,0,[[\"\\u00ff\",null],[\"\",{\"x\":[1.5,-2]}]]],[1,2,[[\"k\",\"\\u0000\\u00c0\"]]]]";
    let delta = decode_state(BatchFormat::Json, vec!["a".into(), "b".into()], doc, LIMIT).unwrap();
    let expected = chunk(
        &["a", "b"],
        &[
            (1, b"k".to_vec(), None),
            (1, Vec::new(), None),
            (0, vec![0xff], Some(vec![0xc0])),
            (0, Vec::new(), Some(b"\x81\xa1x\x92\xcb\x3f\xf8\0\0\0\0\0\0\xfe".to_vec())),
            (1, b"k".to_vec(), Some(vec![0, 0xc0])),
        ],
    );
    assert_eq!(flat(&delta), flat(&expected));
    // The same as a pickle: [(1, 1, [b"k", b""]), (0, 0, [(b"\xff", None), (b"", {"x": [1.5, -2]})]),
    // (1, 2, [(b"k", bytearray(b"\0\xc0"))])], protocol 5, as `pickle.dumps` writes it.
    let pickle = b"\x80\x05\x95\x00\x00\x00\x00\x00\x00\x00\x00]\x94(K\x01K\x01]\x94(C\x01k\x94C\x00\x94e\x87\x94K\x00K\x00]\x94(C\x01\xff\x94N\x86\x94C\x00\x94}\x94\x8c\x01x\x94]\x94(G?\xf8\x00\x00\x00\x00\x00\x00J\xfe\xff\xff\xffes\x86\x94e\x87\x94K\x01K\x02]\x94C\x01k\x94\x96\x02\x00\x00\x00\x00\x00\x00\x00\x00\xc0\x94\x86\x94a\x87\x94e.";
    let delta = decode_state(BatchFormat::Pickle, vec!["a".into(), "b".into()], pickle, LIMIT).unwrap();
    assert_eq!(flat(&delta), flat(&expected));
}

#[test]
fn restore_chunks_a_format_cannot_carry_are_refused() {
    let put = |value: Vec<u8>| chunk(&["s"], &[(0, vec![1], Some(value))]);
    let decoded = [ValueForm::Decoded];
    let mut doc = Vec::new();
    for (format, value) in [
        (BatchFormat::Pickle, vec![0xd4, 1, 2]),
        (BatchFormat::Pickle, vec![0x92, 1]),
        (BatchFormat::Pickle, Vec::new()),
        (BatchFormat::Pickle, vec![1, 2]),
        (BatchFormat::Json, pack(&rmpv::Value::Binary(vec![1]))),
        (BatchFormat::Json, pack(&rmpv::Value::from(u64::MAX))),
    ] {
        assert!(
            encode_state(format, &put(value.clone()), &decoded, &mut doc).is_err(),
            "{format:?} {value:?}"
        );
        // Raw, the same bytes pass.
        encode_state(format, &put(value.clone()), &[ValueForm::Raw], &mut doc).unwrap();
        let back = decode_state(format, vec!["s".into()], &doc, LIMIT).unwrap();
        assert_eq!(flat(&back), flat(&put(value)));
    }
    let delete = chunk(&["s"], &[(0, vec![1], None)]);
    assert!(
        encode_state(BatchFormat::Pickle, &delete, &decoded, &mut doc).is_err(),
        "restore has no deletes"
    );
    assert!(
        encode_state(BatchFormat::Pickle, &put(vec![1]), &[], &mut doc).is_err(),
        "a state without a form"
    );
    let mut short = put(vec![1]);
    short.entries[0].value_len = 2;
    assert!(encode_state(BatchFormat::Json, &short, &decoded, &mut doc).is_err(), "entries past the data");
}

fn malformed(format: BatchFormat, doc: &[u8]) -> String {
    match decode_state(format, vec!["s".into()], doc, LIMIT) {
        Err(DecodeError::Malformed(why)) => why,
        other => panic!("{format:?} {:?} gave {:?}", String::from_utf8_lossy(doc), other.map(|d| flat(&d))),
    }
}

#[test]
fn snapshot_documents_must_have_the_section_shape() {
    for (doc, why) in [
        ("{}", "not an array of sections"),
        ("[[0,0]]", "section is not an array"),
        ("[[-1,0,[]]]", "section is not an array"),
        ("[[0,3,[]]]", "section is not an array"),
        ("[[0,0.0,[]]]", "section is not an array"),
        ("[[0,0,[\"k\"]]]", "a put is not an array"),
        ("[[0,0,[[\"k\",1,2]]]]", "a put is not an array"),
        ("[[0,1,[1]]]", "a key is not a string"),
        ("[[0,2,[[\"k\",1]]]]", "a raw value is not a string"),
        ("[[0,2,[[\"k\",\"\\u0100\"]]]]", "above U+00FF"),
        ("[[0,0,[]]] x", "trailing"),
    ] {
        let got = malformed(BatchFormat::Json, doc.as_bytes());
        assert!(got.contains(why), "{doc}: {got}");
    }
    // Pickles: a dict; a 2-tuple section; kind 3; a put that is not a pair; a str key; a
    // raw value that is an int.
    for (doc, why) in [
        (&b"\x80\x05}."[..], "not a list of sections"),
        (b"\x80\x05](K\x00K\x00\x86e.", "section 0 is not"),
        (b"\x80\x05](K\x00K\x03]\x87e.", "section 0 is not"),
        (b"\x80\x05](K\x00J\xff\xff\xff\xff]\x87e.", "section 0 is not"),
        (b"\x80\x05](K\x00K\x00](C\x01ke\x87e.", "not a (key, value) pair"),
        (b"\x80\x05](K\x00K\x01](\x8c\x01ke\x87e.", "the key is not bytes"),
        (b"\x80\x05](K\x00K\x02](C\x01kK\x01\x86e\x87e.", "a raw value is not bytes"),
        (b"\x80\x05](K\x00K\x00](C\x01kcos\nsystem\n\x86e\x87e.", "not allowed"),
    ] {
        let got = malformed(BatchFormat::Pickle, doc);
        assert!(got.contains(why), "{:?}: {got}", String::from_utf8_lossy(doc));
    }
}

#[test]
fn hostile_state_documents_stop_at_the_limit_without_panics() {
    // 10 000 deletes of an empty key through one memoized bytes: 16 bytes each counted.
    let mut doc = b"\x80\x05](K\x00K\x01](C\x00\x94".to_vec();
    for _ in 0..10_000 {
        doc.extend_from_slice(b"h\x00");
    }
    doc.extend_from_slice(b"e\x87e.");
    assert_eq!(decode_state(BatchFormat::Pickle, vec![], &doc, 16 * 10_001).unwrap().entries.len(), 10_001);
    let over = decode_state(BatchFormat::Pickle, vec![], &doc, 16 * 10_001 - 1).map(|d| flat(&d));
    assert_eq!(over, Err(DecodeError::TooLarge));

    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        for _ in 0..40 {
            let delta = random_chunk(&mut rng, format == BatchFormat::Json);
            let mut doc = Vec::new();
            encode_state(format, &delta, &FORMS, &mut doc).unwrap();
            for end in (0..doc.len()).step_by(doc.len() / 100 + 1) {
                let got = decode_state(format, vec![], &doc[..end], LIMIT).map(|d| flat(&d));
                assert!(
                    matches!(got, Err(DecodeError::Malformed(_))),
                    "seed {seed}: prefix {end} gave {got:?}"
                );
            }
            for _ in 0..20 {
                let mut damaged = doc.clone();
                for _ in 0..rng.gen_range(1..4) {
                    let at = rng.gen_range(0..damaged.len());
                    damaged[at] = rng.r#gen();
                }
                if let Ok(delta) = decode_state(format, vec![], &damaged, LIMIT) {
                    assert!(cost(&delta) <= LIMIT, "seed {seed}");
                }
            }
        }
    }
}
