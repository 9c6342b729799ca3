//! Guest documents: what is read, what is refused, the output limit, hostile input.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rmpv::Value;

use super::super::{BatchFormat, DecodeError, MAX_GROWTH, RECORD_OVERHEAD, decode_batch, encode_batch};
use super::{Shape, batch_of, cost, pack, random_batch};

const LIMIT: usize = 1 << 20;

fn malformed(format: BatchFormat, doc: &[u8]) -> String {
    match decode_batch(format, doc, LIMIT) {
        Err(DecodeError::Malformed(why)) => why,
        other => panic!("{format:?} {:?} gave {other:?}", String::from_utf8_lossy(doc)),
    }
}

fn pickle_malformed(doc: &[u8]) -> String {
    malformed(BatchFormat::Pickle, doc)
}

fn json_malformed(doc: &str) -> String {
    malformed(BatchFormat::Json, doc.as_bytes())
}

/// The value of the only record of a JSON document `[["", VALUE, 0]]`.
fn json_value(value: &str) -> Vec<u8> {
    let batch = decode_batch(BatchFormat::Json, format!("[[\"\",{value},0]]").as_bytes(), LIMIT)
        .unwrap_or_else(|e| panic!("{value}: {e}"));
    assert_eq!(batch.entries.len(), 1);
    batch.data
}

#[test]
fn pickle_refuses_everything_but_plain_values() {
    let cases: &[(&[u8], &str)] = &[
        (b"\x80\x05\x8f.", "EMPTY_SET"),
        (b"\x80\x05](C\x00\x8f\x94(K\x01\x90K\x00\x87e.", "EMPTY_SET"),
        (b"cos\nsystem\n(X\x02\x00\x00\x00lstR.", "GLOBAL (os.system)"),
        (b"\x80\x04\x8c\x02os\x8c\x06system\x93\x8c\x02ls\x85R.", "STACK_GLOBAL (os.system)"),
        (b"\x80\x04\x8c\x08__main__\x8c\x01A\x93)\x81.", "STACK_GLOBAL (__main__.A)"),
        (b"\x80\x02)\x81.", "NEWOBJ"),
        (b"\x80\x02}b.", "BUILD"),
        (b"(lp0\nI1\na.", "LIST"),
        (b"\x80\x02I1\n.", "INT"),
        (b"\x80\x02P1\n.", "PERSID"),
        (b"\x80\x02N0.", "POP"),
        (b"\x80\x02\xff.", "unknown"),
        // The callables of bytes pickles, called with other arguments.
        (b"c__builtin__\nbytes\n(K\x01tR.", "REDUCE"),
        (b"c_codecs\nencode\n(X\x01\x00\x00\x00aX\x05\x00\x00\x00utf-8tR.", "REDUCE"),
        (b"c_codecs\nencode\n(X\x02\x00\x00\x00\xc4\x80X\x06\x00\x00\x00latin1tR.", "REDUCE"),
        (b"K\x01)R.", "REDUCE"),
    ];
    for (doc, name) in cases {
        let why = pickle_malformed(doc);
        assert!(why.contains(name), "{doc:?}: {why}");
    }
    assert!(pickle_malformed(b"\x80\x02\x8f.").contains("only plain values"));
    assert!(pickle_malformed(b"\x80\x06].").contains("protocol 6"));
}

#[test]
fn pickle_records_must_be_key_value_timestamp() {
    let cases: &[(&[u8], &str)] = &[
        (b"\x80\x05}.", "not a list of records"),
        (b"\x80\x05K\x01.", "not a list of records"),
        (b"\x80\x05](C\x00N\x86e.", "record 0 is not"),
        (b"\x80\x05](\x85e.", "MARK"),
        (b"\x80\x05](]K\x01\x85e.", "record 0 is not"),
        (b"\x80\x05](C\x00NK\x00\x87\x8c\x00NK\x00\x87e.", "record 1's key is not bytes"),
        (b"\x80\x05](C\x00NG\x00\x00\x00\x00\x00\x00\x00\x00\x87e.", "timestamp is not an int"),
        (b"\x80\x05](C\x00N\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00\x87e.", "timestamp is beyond i64"),
        (b"\x80\x05](C\x00\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01K\x00\x87e.", "64 bits"),
        (b"\x80\x05](C\x00\x8a\x09\xff\xff\xff\xff\xff\xff\xff\x7f\xff\xff\x87e.", "64 bits"),
        (b"\x80\x05](C\x00\x8c\x02\xed\xa0K\x00\x87e.", "UTF-8"),
        (b"\x80\x05](C\x00NK\x00\x87e.N", "follow the pickle's STOP"),
        (b"\x80\x05N](C\x00NK\x00\x87e.", "more than one object"),
        (b"\x80\x05(](C\x00NK\x00\x87e.", "open MARK"),
        (b"\x80\x05h\x00.", "memo reference to nothing"),
        (b"\x80\x05Nq\x05.", "memo index skips"),
        (b"\x80\x05K\x01K\x02a.", "not a list"),
        (b"\x80\x05)K\x01K\x02s.", "not a dict"),
        (b"\x80\x05}(K\x01u.", "odd number"),
        (b"\x80\x05e.", "MARK"),
        (b"\x80\x05a.", "empty stack"),
        (b"\x80\x05\x8b\xff\xff\xff\xff.", "negative length"),
        (b"\x80\x05X\xff\xff\xff\xff.", "truncated"),
        (b"\x80\x05\x8d\xff\xff\xff\xff\xff\xff\xff\xff.", "truncated"),
        (b"\x80\x05\x96\x00\x00\x00\x00\x00\x00\x00\x80.", "truncated"),
        (b"\x80\x05]", "truncated"),
        (b"", "truncated"),
        (b"cos\nsys", "truncated"),
    ];
    for (doc, what) in cases {
        let why = pickle_malformed(doc);
        assert!(why.contains(what), "{doc:?}: expected {what:?}, got {why}");
    }
}

#[test]
fn a_pickle_of_many_small_objects_is_held_to_twice_the_output_limit_in_host_memory() {
    // 4 MiB of `N` (None) opcodes appended to one list: each byte an object, a stack slot
    // and a list slot, ~44 bytes of host memory each, while the output is ~1 byte each.
    let mut doc = b"\x80\x04](C\x00](".to_vec();
    doc.extend(std::iter::repeat_n(b'N', 4 << 20));
    doc.extend_from_slice(b"eK\x00\x87e.");
    let limit = 8 << 20;
    assert_eq!(decode_batch(BatchFormat::Pickle, &doc, limit), Err(DecodeError::HostMemory(2 * limit)));
    // With room for it, the same document decodes.
    let batch = decode_batch(BatchFormat::Pickle, &doc, 128 << 20).expect("decodes");
    assert_eq!(batch.entries.len(), 1);
    // Two-byte opcodes (`K\x00`, an int) from an odd offset: the check does not depend on
    // where in the document an opcode starts.
    let mut doc = b"\x80\x04](C\x00](N".to_vec();
    assert_eq!(doc.len() % 2, 1);
    doc.extend(std::iter::repeat_n(*b"K\x00", 2 << 20).flatten());
    doc.extend_from_slice(b"eK\x00\x87e.");
    assert_eq!(decode_batch(BatchFormat::Pickle, &doc, limit), Err(DecodeError::HostMemory(2 * limit)));
}

#[test]
fn pickle_memo_cycles_and_bombs_stop_cheaply() {
    // A list that holds itself.
    let why = pickle_malformed(b"\x80\x04](C\x00]\x94h\x00aK\x00\x87e.");
    assert!(why.contains("deeper than 64"), "{why}");
    // 30 levels of lists holding the level below ten times: 10^30 leaves.
    let mut doc = b"\x80\x04](C\x00](K\x07\x94".to_vec();
    for level in 0..30u8 {
        doc.extend_from_slice(b"](");
        doc.extend(std::iter::repeat_n([b'h', level], 10).flatten());
        doc.extend_from_slice(b"e\x94");
    }
    doc.extend_from_slice(b"eK\x00\x87e.");
    let started = Instant::now();
    assert_eq!(decode_batch(BatchFormat::Pickle, &doc, LIMIT), Err(DecodeError::TooLarge));
    assert!(started.elapsed().as_secs() < 5, "the bomb took {:?}", started.elapsed());
    // One long str encoded to bytes again and again (protocol 2's way of pickling bytes):
    // each REDUCE would allocate its length.
    let mut doc = b"\x80\x02](c_codecs\nencode\n\x94X\xe8\x03\x00\x00".to_vec();
    doc.extend_from_slice(&[b'a'; 1000]);
    doc.extend_from_slice(b"\x94X\x06\x00\x00\x00latin1\x94");
    for _ in 0..200 {
        doc.extend_from_slice(b"h\x00h\x01h\x02\x86RNK\x00\x87");
    }
    doc.extend_from_slice(b"e.");
    let why = pickle_malformed(&doc);
    assert!(why.contains("over and over"), "{why}");
    // Once is fine (and shared through the memo, it is not copied).
    let once = b"\x80\x02](c_codecs\nencode\nX\x03\x00\x00\x00\xc3\xbfaX\x06\x00\x00\x00latin1\x86R\x94\
                 NK\x00\x87h\x00NK\x01\x87e.";
    let batch = decode_batch(BatchFormat::Pickle, once, LIMIT).unwrap();
    assert_eq!(batch, batch_of(&[(vec![0xff, b'a'], vec![0xc0], 0), (vec![0xff, b'a'], vec![0xc0], 1)]));
}

#[test]
fn the_output_limit_is_exact() {
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        for i in 0..200 {
            let batch = random_batch(&mut rng, Shape { json: format == BatchFormat::Json });
            let mut doc = Vec::new();
            encode_batch(format, &batch, &mut doc).unwrap();
            let max = cost(&batch);
            assert_eq!(decode_batch(format, &doc, max).as_ref(), Ok(&batch), "seed {seed} {format:?} {i}");
            for below in [max.saturating_sub(1), rng.gen_range(0..=max)] {
                if below < max {
                    let got = decode_batch(format, &doc, below);
                    assert_eq!(
                        got,
                        Err(DecodeError::TooLarge),
                        "seed {seed} {format:?} {i}: limit {below} < {max}"
                    );
                }
            }
        }
    }
    // Large values: a 100 KB string, 70 000 array items, under a 64 KB limit.
    let long = pack(&Value::from("x".repeat(100_000)));
    let many = pack(&Value::Array(vec![Value::from(1); 70_000]));
    for value in [long, many] {
        let batch = batch_of(&[(vec![], value, 0)]);
        for format in [BatchFormat::Pickle, BatchFormat::Json] {
            let mut doc = Vec::new();
            encode_batch(format, &batch, &mut doc).unwrap();
            assert_eq!(decode_batch(format, &doc, 1 << 16), Err(DecodeError::TooLarge));
            assert_eq!(decode_batch(format, &doc, cost(&batch)), Ok(batch.clone()));
        }
    }
}

#[test]
fn every_truncation_and_random_damage_is_an_error_not_a_panic() {
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        for _ in 0..60 {
            let batch = random_batch(&mut rng, Shape { json: format == BatchFormat::Json });
            let mut doc = Vec::new();
            encode_batch(format, &batch, &mut doc).unwrap();
            for end in (0..doc.len()).step_by(doc.len() / 200 + 1) {
                // A JSON prefix may be complete only when it ends in whitespace; neither
                // format writes any.
                let got = decode_batch(format, &doc[..end], LIMIT);
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
                if let Ok(batch) = decode_batch(format, &damaged, LIMIT) {
                    assert!(cost(&batch) <= LIMIT, "seed {seed}");
                }
            }
        }
    }
}

#[test]
fn json_numbers_become_ints_only_when_exact() {
    assert_eq!(json_value("9007199254740991"), b"\xcf\x00\x1f\xff\xff\xff\xff\xff\xff");
    assert_eq!(json_value("-9007199254740991"), b"\xd3\xff\xe0\x00\x00\x00\x00\x00\x01");
    assert_eq!(json_value("9007199254740992"), pack(&Value::F64(9007199254740992.0)));
    assert_eq!(json_value("-0"), [0x00]);
    assert_eq!(json_value("-0.0"), pack(&Value::F64(-0.0)));
    assert_eq!(json_value("1.5"), pack(&Value::F64(1.5)));
    assert_eq!(json_value("1e300"), pack(&Value::F64(1e300)));
    assert_eq!(json_value("1E2"), pack(&Value::F64(100.0)));
    assert_eq!(json_value("2.5e-3"), pack(&Value::F64(0.0025)));
    assert_eq!(json_value("5e-324"), pack(&Value::F64(5e-324)));
    assert_eq!(json_value("1e-400"), pack(&Value::F64(0.0)));
    assert_eq!(json_value("12345678901234567890123"), pack(&Value::F64(1.2345678901234568e22)));
    assert_eq!(json_value("-33"), [0xd0, 0xdf]);
    assert_eq!(json_value("200"), [0xcc, 200]);
    assert!(json_malformed(r#"[["",1e400,0]]"#).contains("out of the range"));
    assert!(json_malformed(r#"[["",-1e400,0]]"#).contains("out of the range"));
    for bad in
        ["01", "1.", ".5", "+1", "1e", "1e+", "-", "0x10", "NaN", "Infinity", "-Infinity", "1.e5", "--1"]
    {
        json_malformed(&format!(r#"[["",{bad},0]]"#));
    }
}

#[test]
fn json_strings_escapes_and_surrogates() {
    assert_eq!(json_value(r#""\u00e9\n\/\b\f\r\t\"\\""#), pack(&Value::from("é\n/\u{8}\u{c}\r\t\"\\")));
    assert_eq!(json_value(r#""\ud83d\ude00x""#), pack(&Value::from("😀x")));
    assert_eq!(json_value(r#""\uD83D\uDE00""#), pack(&Value::from("😀")));
    assert_eq!(json_value("\"€😀\u{2028}\""), pack(&Value::from("€😀\u{2028}")));
    assert_eq!(json_value(r#""\u0000""#), pack(&Value::from("\0")));
    for bad in [r#""\ud83d""#, r#""\ude00""#, r#""\ud83dx""#, r#""\ud83d\u0041""#, r#""\ud83d\n""#] {
        assert!(json_malformed(&format!(r#"[["",{bad},0]]"#)).contains("surrogate"), "{bad}");
    }
    for bad in [r#""\x""#, r#""\u12""#, r#""\u12g4""#, "\"a\tb\"", "\"a\nb\"", "\"abc", r#""\"#] {
        json_malformed(&format!(r#"[["",{bad},0]]"#));
    }
    assert!(malformed(BatchFormat::Json, b"[[\"\",\"\xff\",0]]").contains("UTF-8"));
    assert!(malformed(BatchFormat::Json, b"[[\"\",\"\xed\xa0\x80\",0]]").contains("UTF-8"));
}

#[test]
fn json_keys_are_one_byte_per_character() {
    let batch =
        decode_batch(BatchFormat::Json, "[[\"\\u00ff\u{e9}a\\u0000\",null,1]]".as_bytes(), LIMIT).unwrap();
    assert_eq!(batch, batch_of(&[(vec![0xff, 0xe9, b'a', 0], vec![0xc0], 1)]));
    for key in [r#""\u0100""#, "\"Ā\"", "\"€\"", r#""\ud83d\ude00""#] {
        let why = json_malformed(&format!("[[{key},null,0]]"));
        assert!(why.contains("above U+00FF"), "{key}: {why}");
    }
}

#[test]
fn json_documents_have_the_record_shape() {
    let ok = |doc: &str| decode_batch(BatchFormat::Json, doc.as_bytes(), LIMIT).unwrap();
    assert_eq!(ok(" \n[ [ \"\" ,\t1 , -9007199254740991 ] ]\r\n").entries[0].timestamp, -9007199254740991);
    let map = ok(r#"[["",{"a":1,"a":2,"":{}},0]]"#);
    assert_eq!(map.data, b"\x83\xa1a\x01\xa1a\x02\xa0\x80");
    let members: String = (0..16).map(|i| format!("\"{i:02}\":{i},")).collect();
    let big = ok(&format!(r#"[["",{{{}}},0]]"#, members.trim_end_matches(',')));
    assert_eq!(&big.data[..3], b"\xde\x00\x10");
    let items = vec!["[]"; 70_000].join(",");
    let big = ok(&format!(r#"[["",[{items}, [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]],0]]"#));
    assert_eq!(&big.data[..5], b"\xdd\x00\x01\x11\x71");
    assert_eq!(&big.data[big.data.len() - 20..big.data.len() - 16], b"\x90\xdc\x00\x10");
    let nested = |n: usize| format!("[[\"\",{}{},0]]", "[".repeat(n), "]".repeat(n));
    assert_eq!(ok(&nested(64)).data.len(), 64);
    assert!(json_malformed(&nested(65)).contains("deeper than 64"));
    assert!(json_malformed(&nested(100_000)).contains("deeper than 64"));
    let cases = [
        ("", "not an array"),
        ("{}", "not an array"),
        ("[[\"\",1,0],]", "record is not"),
        ("[[\"\",1,0,]]", "more than three"),
        ("[[\"\",1]]", "record is not"),
        ("[[\"\",1,0,2]]", "more than three"),
        ("[[1,1,0]]", "key is not a string"),
        ("[[\"\",1,1.0]]", "timestamp"),
        ("[[\"\",1,9007199254740992]]", "timestamp"),
        ("[[\"\",1,\"0\"]]", "number"),
        ("[[\"\",[1,],0]]", "expected a value"),
        ("[[\"\",{\"a\":1,},0]]", "not a string"),
        ("[[\"\",{1:1},0]]", "not a string"),
        ("[[\"\",{\"a\" 1},0]]", "':'"),
        ("[[\"\",nul,0]]", "expected a value"),
        ("[[\"\",True,0]]", "expected a value"),
        ("[[\"\",1,0]] x", "trailing"),
        ("[[\"\",1,0]][]", "trailing"),
        ("[[\"\",1,0]", "expected ',' or ']'"),
    ];
    for (doc, what) in cases {
        let why = json_malformed(doc);
        assert!(why.contains(what), "{doc}: expected {what:?}, got {why}");
    }
}

/// A Nexmark-bid-like batch: 1024 records, each a map of 7 fields.
fn bids() -> super::super::super::bindings::Batch {
    let records: Vec<_> = (0..1024i64)
        .map(|i| {
            let bid = Value::Map(vec![
                (Value::from("auction"), Value::from(1000 + i % 97)),
                (Value::from("bidder"), Value::from(2000 + i * 7 % 1013)),
                (Value::from("price"), Value::from(100 + i * 31 % 100_000)),
                (
                    Value::from("channel"),
                    Value::from(["Google", "Facebook", "Baidu", "Apple"][(i % 4) as usize]),
                ),
                (
                    Value::from("url"),
                    Value::from(format!("https://www.nexmark.com/item.htm?query=1&channel_id={i}")),
                ),
                (Value::from("date_time"), Value::from(1_700_000_000_000 + i)),
                (Value::from("extra"), Value::from("")),
            ]);
            (pack(&Value::from(1000 + i % 97)), pack(&bid), 1_700_000_000_000 + i)
        })
        .collect();
    batch_of(&records)
}

/// A batch of Nexmark-like bids survives both formats, and the document stays
/// within the bound the decoder is given (speed is in `weir bench languages`).
#[test]
fn a_batch_of_bids_round_trips_in_both_formats() {
    let batch = bids();
    let mut doc = Vec::new();
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        encode_batch(format, &batch, &mut doc).unwrap();
        let back = decode_batch(format, &doc, usize::MAX).unwrap();
        assert!(back == batch, "{format:?} changed the batch");
        let bound = MAX_GROWTH * batch.data.len() + RECORD_OVERHEAD * batch.entries.len() + 8;
        assert!(doc.len() <= bound, "{format:?}: {} bytes > bound {bound}", doc.len());
    }
}

/// The seeds of the `guest_document` fuzz target (engine/fuzz/corpus/guest_document, made
/// with CPython's `pickle.dumps` at protocols 2 to 5 and `json.dumps`) read as the target
/// reads them: the first byte's bit 0 the format, bit 1 a state document, bits 2–4 the
/// limit. All but the one over its 1 KiB limit decode.
#[test]
fn the_fuzz_seeds_decode_as_described() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/guest_document");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let seed = std::fs::read(&path).unwrap();
        let (&mode, doc) = seed.split_first().unwrap();
        let format = if mode & 1 == 0 { BatchFormat::Pickle } else { BatchFormat::Json };
        let limit = 1024usize << ((mode >> 2) & 7);
        let decoded = if mode & 2 == 0 {
            decode_batch(format, doc, limit).map(|b| b.entries.len())
        } else {
            super::super::decode_state(format, Vec::new(), doc, limit).map(|d| d.entries.len())
        };
        match name.as_str() {
            "pickle-batch-small-limit" => assert_eq!(decoded, Err(DecodeError::TooLarge), "{name}"),
            _ => assert!(decoded.as_ref().is_ok_and(|&n| n > 0), "{name}: {decoded:?}"),
        }
        seen += 1;
    }
    assert!(seen >= 10, "{seen} seeds in {}", dir.display());
}
