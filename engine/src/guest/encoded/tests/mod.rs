//! Round trips over random values and every refusal, without Python (see [`python`]), and
//! the helpers the other test modules share: guest documents ([`decode`]), state documents
//! ([`state_documents`]), real CPython ([`python`]).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rmpv::Value;

use super::super::bindings::{Batch, Entry};
use super::{
    BatchFormat, MAX_DEPTH, MAX_GROWTH, RECORD_OVERHEAD, Unrepresentable, decode_batch, encode_batch,
};

mod decode;
mod python;
mod state_documents;

/// Which values a generator may produce.
#[derive(Clone, Copy)]
pub(super) struct Shape {
    /// JSON: no bin, str map keys, ints within ±(2^53 − 1).
    pub(super) json: bool,
}

pub(super) fn random_string(rng: &mut SmallRng) -> String {
    let len = match rng.gen_range(0..10) {
        0 => rng.gen_range(32..300),
        _ => rng.gen_range(0..12),
    };
    (0..len)
        .map(|_| match rng.gen_range(0..8) {
            0 => char::from(rng.gen_range(0u8..0x20)),
            1 => ['"', '\\', '/', 'é', '\u{7f}', '\u{2028}', '€', '😀'][rng.gen_range(0..8)],
            2 => rng.gen_range('\u{80}'..'\u{10ffff}'),
            _ => char::from(rng.gen_range(b'a'..=b'z')),
        })
        .collect()
}

fn random_int(rng: &mut SmallRng, shape: Shape) -> Value {
    const SAFE: i64 = (1 << 53) - 1;
    let v: i128 = match rng.gen_range(0..6) {
        0 => i128::from(rng.gen_range(-40i64..200)),
        1 => i128::from(rng.gen_range(-70_000i64..70_000)),
        2 => i128::from(rng.r#gen::<i32>()),
        3 => i128::from(
            [0, 127, 128, 255, 256, 65535, 65536, -32, -33, -128, -129, -32768, -32769][rng.gen_range(0..13)],
        ),
        4 if shape.json => i128::from([SAFE, -SAFE, 1 << 40][rng.gen_range(0..3)]),
        4 => i128::from([u64::MAX, 1 << 63, u64::from(u32::MAX) + 1][rng.gen_range(0..3)]),
        _ if shape.json => i128::from(rng.gen_range(-SAFE..=SAFE)),
        _ if rng.r#gen() => i128::from(rng.r#gen::<i64>()),
        _ => i128::from(rng.r#gen::<u64>()),
    };
    if v >= 0 { Value::from(v as u64) } else { Value::from(v as i64) }
}

fn random_float(rng: &mut SmallRng) -> f64 {
    match rng.gen_range(0..6) {
        0 => [0.0, -0.0, 1.5, 0.1, 1e300, -1e-300, 5e-324, f64::MAX, f64::MIN_POSITIVE, 1e16, 1e15, 1e-7]
            [rng.gen_range(0..12)],
        1 => f64::from(rng.r#gen::<f32>()),
        2 => rng.gen_range(-1e6..1e6f64).round(),
        _ => loop {
            let v = f64::from_bits(rng.r#gen());
            if v.is_finite() {
                break v;
            }
        },
    }
}

/// A random value, containers at most `depth` deep; `in_key`: a (pickle) map key, so no
/// maps.
pub(super) fn random_value(rng: &mut SmallRng, shape: Shape, depth: usize, in_key: bool) -> Value {
    let choices = if depth == 0 { 7 } else { 9 };
    match rng.gen_range(0..choices) {
        0 => Value::Nil,
        1 => Value::Boolean(rng.r#gen()),
        2 => random_int(rng, shape),
        3 => Value::F64(random_float(rng)),
        4 | 5 => Value::from(random_string(rng)),
        6 if shape.json => Value::from(random_string(rng)),
        6 => Value::Binary((0..rng.gen_range(0..300)).map(|_| rng.r#gen()).collect()),
        7 => {
            let n = if rng.gen_range(0..8) == 0 { rng.gen_range(16..40) } else { rng.gen_range(0..5) };
            Value::Array((0..n).map(|_| random_value(rng, shape, depth - 1, in_key)).collect())
        }
        _ if in_key => Value::Nil,
        _ => {
            let n = if rng.gen_range(0..8) == 0 { rng.gen_range(16..40) } else { rng.gen_range(0..5) };
            Value::Map(
                (0..n)
                    .map(|_| {
                        let key = if shape.json {
                            Value::from(random_string(rng))
                        } else {
                            random_value(rng, shape, depth - 1, true)
                        };
                        (key, random_value(rng, shape, depth - 1, false))
                    })
                    .collect(),
            )
        }
    }
}

pub(super) fn pack(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value).expect("write to a Vec");
    out
}

/// A batch of `(key, value, timestamp)` records given as bytes.
pub(super) fn batch_of(records: &[(Vec<u8>, Vec<u8>, i64)]) -> Batch {
    let mut batch = Batch { data: Vec::new(), entries: Vec::new() };
    for (key, value, timestamp) in records {
        batch.data.extend_from_slice(key);
        batch.data.extend_from_slice(value);
        batch.entries.push(Entry {
            key_len: key.len() as u32,
            value_len: value.len() as u32,
            timestamp: *timestamp,
        });
    }
    batch
}

pub(super) fn random_batch(rng: &mut SmallRng, shape: Shape) -> Batch {
    const SAFE: i64 = (1 << 53) - 1;
    let records: Vec<_> = (0..rng.gen_range(0..20))
        .map(|_| {
            let key = match rng.gen_range(0..4) {
                0 => Vec::new(),
                1 => (0..rng.gen_range(0..300)).map(|_| rng.r#gen()).collect(),
                _ => pack(&random_value(rng, Shape { json: true }, 1, true)),
            };
            let depth = rng.gen_range(0..5);
            let value = pack(&random_value(rng, shape, depth, false));
            let timestamp = match rng.gen_range(0..4) {
                0 if shape.json => [SAFE, -SAFE, 0][rng.gen_range(0..3)],
                0 => [i64::MIN, i64::MAX, 0][rng.gen_range(0..3)],
                _ => rng.gen_range(0..2_000_000_000_000),
            };
            (key, value, timestamp)
        })
        .collect();
    batch_of(&records)
}

/// The size of a batch as the output limit counts it.
pub(super) fn cost(batch: &Batch) -> usize {
    batch.data.len() + 16 * batch.entries.len()
}

fn round_trip(format: BatchFormat, batch: &Batch) -> Result<Batch, String> {
    let mut doc = Vec::new();
    encode_batch(format, batch, &mut doc).map_err(|e| format!("encode: {e}"))?;
    let bound = MAX_GROWTH * batch.data.len() + RECORD_OVERHEAD * batch.entries.len() + 8;
    if doc.len() > bound {
        return Err(format!("a document of {} bytes is over its bound {bound}", doc.len()));
    }
    decode_batch(format, &doc, cost(batch))
        .map_err(|e| format!("decode: {e} of {}", String::from_utf8_lossy(&doc)))
}

#[test]
fn compact_batches_survive_a_round_trip_byte_for_byte() {
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        let shape = Shape { json: format == BatchFormat::Json };
        for i in 0..400 {
            let batch = random_batch(&mut rng, shape);
            let back = round_trip(format, &batch)
                .unwrap_or_else(|e| panic!("seed {seed}, {format:?} batch {i}: {e}"));
            assert!(back == batch, "seed {seed}, {format:?} batch {i}: {batch:?} came back as {back:?}");
        }
    }
}

#[test]
fn an_empty_batch_is_an_empty_list() {
    let batch = batch_of(&[]);
    let mut doc = vec![1, 2, 3];
    encode_batch(BatchFormat::Pickle, &batch, &mut doc).unwrap();
    assert_eq!(doc, b"\x80\x05].");
    encode_batch(BatchFormat::Json, &batch, &mut doc).unwrap();
    assert_eq!(doc, b"[]");
    for (format, doc) in [(BatchFormat::Pickle, &b"\x80\x05]."[..]), (BatchFormat::Json, b" [ ] ")] {
        assert_eq!(decode_batch(format, doc, 0).unwrap(), batch);
    }
}

#[test]
fn the_json_document_reads_as_written() {
    let batch = batch_of(&[
        (vec![0x00, b'"', 0xe9, 0xff], pack(&Value::from("a\"\\\n\u{1}é")), 5),
        (
            vec![],
            pack(&Value::Map(vec![
                (Value::from("x"), Value::F64(2.0)),
                (Value::from("y"), Value::F64(1e-7)),
            ])),
            -1,
        ),
        (
            vec![0x92],
            pack(&Value::Array(vec![Value::Nil, Value::Boolean(false), Value::from(-3), Value::F64(-0.0)])),
            0,
        ),
    ]);
    let mut doc = Vec::new();
    encode_batch(BatchFormat::Json, &batch, &mut doc).unwrap();
    let expected = "[[\"\\u0000\\\"\u{e9}\u{ff}\",\"a\\\"\\\\\\n\\u0001é\",5],[\"\",{\"x\":2.0,\"y\":1e-7},-1],\
                    [\"\u{92}\",[null,false,-3,-0.0],0]]";
    assert_eq!(String::from_utf8(doc.clone()).unwrap(), expected);
    // serde_json reads it as the same text.
    let parsed: serde_json::Value = serde_json::from_slice(&doc).unwrap();
    assert_eq!(
        parsed[0][0].as_str().unwrap().chars().map(u32::from).collect::<Vec<_>>(),
        [0, 0x22, 0xe9, 0xff]
    );
    assert_eq!(parsed[1][1]["y"].as_f64(), Some(1e-7));
}

fn encode_err(format: BatchFormat, value: &[u8]) -> String {
    let batch = batch_of(&[(vec![0xa1, b'k'], pack(&Value::Nil), 0), (vec![], value.to_vec(), 0)]);
    match encode_batch(format, &batch, &mut Vec::new()) {
        Ok(()) => panic!("{format:?} accepted {value:02x?}"),
        Err(Unrepresentable(why)) => {
            assert!(why.starts_with("record 1: "), "{why}");
            why
        }
    }
}

fn nested(depth: usize, leaf: Value) -> Value {
    (0..depth).fold(leaf, |v, _| Value::Array(vec![v]))
}

#[test]
fn values_no_format_carries_exactly_are_refused() {
    let str_key_map_of_map_key = Value::Map(vec![(Value::Map(vec![]), Value::Nil)]);
    let array_key_holding_map =
        Value::Map(vec![(Value::Array(vec![Value::from(1), Value::Map(vec![])]), Value::Nil)]);
    for format in [BatchFormat::Pickle, BatchFormat::Json] {
        assert!(encode_err(format, b"").contains("empty"));
        assert!(encode_err(format, &[0x92, 0x01]).contains("truncated"));
        assert!(encode_err(format, &[0xdb, 0xff, 0xff, 0xff, 0xff, b'a']).contains("truncated"));
        assert!(encode_err(format, &[0x01, 0x02]).contains("trailing"));
        assert!(encode_err(format, &[0xc1]).contains("reserved"));
        // ext types: fixext 1, ext 8 and the timestamp ext (-1).
        for ext in [&[0xd4, 0x01, 0x00][..], &[0xc7, 0x01, 0x05, 0x00], &[0xd6, 0xff, 0, 0, 0, 1]] {
            assert!(encode_err(format, ext).contains("ext"));
        }
        assert!(encode_err(format, &[0xa2, 0xc3, 0x28]).contains("UTF-8"));
        assert!(encode_err(format, &pack(&nested(MAX_DEPTH + 1, Value::Nil))).contains("deeper"));
        assert!(encode_err(format, &pack(&str_key_map_of_map_key)).contains("map"));
        assert!(encode_err(format, &pack(&array_key_holding_map)).contains("map"));
        // Exactly MAX_DEPTH containers pass.
        let batch = batch_of(&[(vec![], pack(&nested(MAX_DEPTH, Value::Nil)), 0)]);
        assert_eq!(round_trip(format, &batch), Ok(batch));
    }
    let json = BatchFormat::Json;
    assert!(encode_err(json, &pack(&Value::Binary(vec![1]))).contains("bin"));
    assert!(
        encode_err(json, &pack(&Value::Map(vec![(Value::from(1), Value::Nil)]))).contains("not a string")
    );
    assert!(encode_err(json, &pack(&Value::F64(f64::NAN))).contains("NaN"));
    assert!(encode_err(json, &pack(&Value::F64(f64::INFINITY))).contains("inf"));
    assert!(encode_err(json, &[0xca, 0x7f, 0x80, 0, 0]).contains("inf"));
    assert!(encode_err(json, &pack(&Value::from(1u64 << 53))).contains("2^53"));
    assert!(encode_err(json, &pack(&Value::from(-(1i64 << 53)))).contains("2^53"));
    assert!(encode_err(json, &pack(&Value::from(u64::MAX))).contains("2^53"));
    for timestamp in [1 << 53, -(1 << 53), i64::MIN] {
        let batch = batch_of(&[(vec![], vec![0xc0], timestamp)]);
        let why = encode_batch(json, &batch, &mut Vec::new()).unwrap_err().0;
        assert!(why.contains("timestamp"), "{why}");
    }
    // The worst growth passes the bound: control bytes in keys and strings, -1s.
    let worst = [
        (vec![0x01; 100], pack(&Value::from("\u{1}".repeat(100))), -(1 << 53) + 1),
        (vec![0x00; 3], pack(&Value::Array(vec![Value::from(-1); 100])), i64::MIN),
        (vec![], pack(&Value::Array(vec![Value::Map(vec![]); 100])), 0),
    ];
    for format in [BatchFormat::Pickle, json] {
        for record in &worst {
            let batch = batch_of(std::slice::from_ref(record));
            if let Err(why) = round_trip(format, &batch) {
                assert!(!why.contains("bound") && why.contains("timestamp"), "{format:?}: {why}");
            }
        }
    }
    // Entries that run past the data are refused, not a panic.
    let mut batch = batch_of(&[(vec![], vec![0xc0], 0)]);
    batch.entries[0].value_len = 2;
    assert!(encode_batch(json, &batch, &mut Vec::new()).is_err());
}

#[test]
fn pickle_keeps_what_python_reads_exactly() {
    // Array map keys become tuples; bin stays bytes; f32 becomes the same double; a short
    // string in a key goes into the memo.
    let value = Value::Map(vec![
        (Value::Array(vec![]), Value::Nil),
        (Value::Array(vec![Value::from(1), Value::Array(vec![Value::from("a")])]), Value::Binary(vec![7])),
    ]);
    let batch = batch_of(&[(vec![], pack(&value), 1 << 40), (vec![1], vec![0xca, 0x3f, 0xc0, 0, 0], -1)]);
    let mut doc = Vec::new();
    encode_batch(BatchFormat::Pickle, &batch, &mut doc).unwrap();
    assert_eq!(
        doc,
        [
            &b"\x80\x05](C\x00}()N(K\x01(\x8c\x01a\x94ttC\x01\x07u\x8a\x06\x00\x00\x00\x00\x00\x01\x87"[..],
            b"C\x01\x01G\x3f\xf8\x00\x00\x00\x00\x00\x00J\xff\xff\xff\xff\x87e."
        ]
        .concat()
    );
}

#[test]
fn long_ints_use_the_minimal_twos_complement_bytes() {
    let long_bytes = |v: i128| {
        let (bytes, n) = super::to_pickle::long_bytes(v);
        bytes[..n].to_vec()
    };
    assert_eq!(long_bytes(255), [0xff, 0x00]);
    assert_eq!(long_bytes(1 << 31), [0, 0, 0, 0x80, 0]);
    assert_eq!(long_bytes(-(1 << 31) - 1), [0xff, 0xff, 0xff, 0x7f, 0xff]);
    assert_eq!(long_bytes(-128), [0x80]);
    assert_eq!(long_bytes(-256), [0x00, 0xff]);
    assert_eq!(long_bytes(i128::from(u64::MAX)), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]);
    assert_eq!(long_bytes(i128::from(i64::MIN)), [0, 0, 0, 0, 0, 0, 0, 0x80]);
    assert_eq!(long_bytes(i128::from(i64::MIN) - 1), [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0xff]);
    assert_eq!(long_bytes(1 << 40), [0, 0, 0, 0, 0, 1]);
    assert_eq!(long_bytes(127), [0x7f]);
    assert_eq!(long_bytes(0), [0]);
}

#[test]
fn map_key_strings_are_written_once_and_then_referenced() {
    let bid = |price: u64| {
        pack(&Value::Map(vec![
            (Value::from("price"), Value::from(price)),
            (Value::from("url"), Value::from("price")),
        ]))
    };
    let batch = batch_of(&[(vec![], bid(1), 0), (vec![], bid(2), 0)]);
    let mut doc = Vec::new();
    encode_batch(BatchFormat::Pickle, &batch, &mut doc).unwrap();
    let text = String::from_utf8_lossy(&doc).to_string();
    // "price" as a key: once, memoized; as a value: every time (values are not memoized).
    assert_eq!(text.matches("price").count(), 3, "{doc:?}");
    assert_eq!(doc.iter().filter(|&&b| b == 0x94).count(), 2, "two keys memoized: {doc:?}");
    assert!(doc.windows(2).any(|w| w == [b'h', 0]) && doc.windows(2).any(|w| w == [b'h', 1]), "{doc:?}");
    let back = round_trip(BatchFormat::Pickle, &batch);
    assert!(back.is_ok(), "{back:?}");
}
