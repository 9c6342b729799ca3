//! The pickle transcoders against real CPython (`python3`, which CI installs too; a missing
//! interpreter fails these tests) and weirpy's own MessagePack codec
//! (examples/python/weirpy/msgpack.py, loaded by path).

use std::process::Command;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rmpv::Value;

use super::super::super::bindings::{Batch, Entry};
use super::super::{BatchFormat, DecodeError, decode_batch, encode_batch};
use super::{Shape, batch_of, pack, random_batch};

const WEIRPY_MSGPACK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/python/weirpy/msgpack.py");

/// Python helpers shared by both scripts: weirpy's msgpack, a framing reader and writer,
/// and an exact comparison (types, float bits, dict order).
const PRELUDE: &str = r#"
import importlib.util, pickle, struct, sys
spec = importlib.util.spec_from_file_location("weirpy_msgpack", sys.argv[1])
mp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mp)

def read_items(path):
    data = open(path, "rb").read()
    pos, items = 0, []
    while pos < len(data):
        (n,) = struct.unpack_from("<I", data, pos)
        items.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return items

def frame(b):
    return struct.pack("<I", len(b)) + bytes(b)

def same(a, b):
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return same(list(a.items()), list(b.items()))
    return a == b
"#;

/// Host → guest: checks each pickle document loads as weirpy's decoding of its batch.
/// Items: per batch, the entries (key_len, value_len, timestamp as <IIq each), the data,
/// the document.
const CHECK_HOST_PICKLES: &str = r#"
items = read_items(sys.argv[2])
checked = 0
for i in range(0, len(items), 3):
    entries, data, doc = items[i], items[i + 1], items[i + 2]
    expected, pos = [], 0
    for (key_len, value_len, ts) in struct.iter_unpack("<IIq", entries):
        key = data[pos:pos + key_len]
        value = mp.unpackb(data[pos + key_len:pos + key_len + value_len])
        pos += key_len + value_len
        expected.append((key, value, ts))
    got = pickle.loads(doc)
    if not same(got, expected):
        sys.exit("batch %d: pickle.loads gave %r, weirpy %r" % (i // 3, got, expected))
    checked += 1
print("checked", checked)
"#;

fn python(script: &str, args: &[&str]) -> String {
    let output = Command::new("python3")
        .arg("-c")
        .arg(format!("{PRELUDE}{script}"))
        .arg(WEIRPY_MSGPACK)
        .args(args)
        .output()
        .expect("python3 must be installed to test the pickle transcoders (CI installs it)");
    assert!(
        output.status.success(),
        "python3 failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn framed(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

fn read_framed(mut data: &[u8]) -> Vec<Vec<u8>> {
    let mut items = Vec::new();
    while !data.is_empty() {
        let n = u32::from_le_bytes(data[..4].try_into().unwrap()) as usize;
        items.push(data[4..4 + n].to_vec());
        data = &data[4 + n..];
    }
    items
}

#[test]
fn host_pickles_load_in_cpython_as_weirpy_decodes_the_batch() {
    let seed: u64 = rand::random();
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut batches: Vec<Batch> = (0..300).map(|_| random_batch(&mut rng, Shape { json: false })).collect();
    // weirpy cannot decode array map keys (it would make unhashable lists): the fast path
    // makes them tuples. Those batches are checked against literals below instead.
    batches.retain(|batch| !has_array_key(batch));
    let extremes = Value::Array(vec![
        Value::from(u64::MAX),
        Value::from(i64::MIN),
        Value::from(1u64 << 31),
        Value::from(-(1i64 << 31) - 1),
        Value::F64(f64::NAN),
        Value::F64(f64::NEG_INFINITY),
        Value::F64(-0.0),
        Value::from("x".repeat(70_000)),
        Value::Binary(vec![0; 300]),
        Value::Map(vec![(Value::from(1), Value::from(1)), (Value::Boolean(true), Value::from(2))]),
    ]);
    batches.push(batch_of(&[
        (vec![0xff; 300], pack(&extremes), i64::MIN),
        (vec![], vec![0xca, 0x3d, 0xcc, 0xcc, 0xcd], 0),
    ]));
    let mut file = Vec::new();
    for batch in &batches {
        let entries: Vec<u8> = batch
            .entries
            .iter()
            .flat_map(|e| {
                [&e.key_len.to_le_bytes()[..], &e.value_len.to_le_bytes(), &e.timestamp.to_le_bytes()]
                    .concat()
            })
            .collect();
        let mut doc = Vec::new();
        encode_batch(BatchFormat::Pickle, batch, &mut doc).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        framed(&mut file, &entries);
        framed(&mut file, &batch.data);
        framed(&mut file, &doc);
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("batches");
    std::fs::write(&path, file).unwrap();
    let out = python(CHECK_HOST_PICKLES, &[path.to_str().unwrap()]);
    assert_eq!(out.trim(), format!("checked {}", batches.len()), "seed {seed}");

    // Array keys as tuples, at any depth of the key.
    let value = Value::Map(vec![
        (Value::Array(vec![]), Value::from(1)),
        (
            Value::Array(vec![Value::from("a"), Value::Array(vec![Value::Nil, Value::Binary(vec![1])])]),
            Value::Array(vec![]),
        ),
    ]);
    let mut doc = Vec::new();
    encode_batch(BatchFormat::Pickle, &batch_of(&[(vec![0x01], pack(&value), 7)]), &mut doc).unwrap();
    let path = dir.path().join("tuple-keys");
    std::fs::write(&path, doc).unwrap();
    let check = "got = pickle.loads(open(sys.argv[2], 'rb').read())\n\
                 want = [(b'\\x01', {(): 1, ('a', (None, b'\\x01')): []}, 7)]\n\
                 assert same(got, want), got\nprint('ok')";
    assert_eq!(python(check, &[path.to_str().unwrap()]).trim(), "ok");
}

fn has_array_key(batch: &Batch) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::Array(items) => items.iter().any(walk),
            Value::Map(pairs) => {
                pairs.iter().any(|(k, v)| matches!(k, Value::Array(_)) || walk(k) || walk(v))
            }
            _ => false,
        }
    }
    let mut pos = 0;
    batch.entries.iter().any(|e| {
        let start = pos + e.key_len as usize;
        pos = start + e.value_len as usize;
        walk(&rmpv::decode::read_value(&mut &batch.data[start..pos]).unwrap())
    })
}

/// Guest → host: Python pickles random records with protocols 2 to 5, memoized and fast,
/// and writes per document: the document, then weirpy's packb of each record as entries
/// and data (as above), or b"malformed" for the documents that must be refused.
const GUEST_PICKLES: &str = r#"
import io, os, random
seed = int(sys.argv[3])
rng = random.Random(seed)
shared_str = "shared-" + "s" * 10
shared_list = [1, "two", 3.0]

def text():
    return "".join(rng.choice(["a", "é", "€", "😀", "\x00", "\"", "\u2028", chr(rng.randrange(0x20, 0x3000))])
                   for _ in range(rng.choice([0, 1, 5, 40, 300])))

def value(depth):
    kinds = ["none", "bool", "int", "bigint", "float", "str", "bytes", "bytearray", "shared"]
    if depth > 0:
        kinds += ["list", "tuple", "dict", "dict"]
    k = rng.choice(kinds)
    if k == "none": return None
    if k == "bool": return rng.random() < 0.5
    if k == "int": return rng.choice([0, 1, 127, 128, 255, 256, 65535, 65536, -1, -32, -33, -128, -129,
                                      2**31 - 1, 2**31, -2**31, -2**31 - 1, rng.randrange(-2**40, 2**40)])
    if k == "bigint": return rng.choice([2**63 - 1, 2**63, 2**64 - 1, -2**63, rng.randrange(-2**63, 2**64)])
    if k == "float": return rng.choice([0.0, -0.0, 1.5, 1e300, float("inf"), float("-inf"), rng.random() * 1e6])
    if k == "str": return text()
    if k == "bytes": return bytes(rng.randrange(256) for _ in range(rng.choice([0, 3, 300])))
    if k == "bytearray": return bytearray(rng.randrange(256) for _ in range(rng.choice([0, 3, 300])))
    if k == "shared": return rng.choice([shared_str, shared_list])
    n = rng.choice([0, 1, 3, 16, 70]) if rng.random() < 0.3 else rng.randrange(0, 4)
    if k == "list": return [value(depth - 1) for _ in range(n)]
    if k == "tuple": return tuple(value(depth - 1) for _ in range(n))
    return {rng.choice([text(), rng.randrange(-5, 1000), None, 2.5, b"k", (1, "t")]): value(depth - 1) for _ in range(n)}

def records():
    recs = []
    for _ in range(rng.randrange(0, 12)):
        key = rng.choice([b"", mp.packb(rng.randrange(0, 10**6)), mp.packb(text()), bytearray(b"\x92\x01\x02")])
        ts = rng.choice([0, -1, 2**63 - 1, -2**63, rng.randrange(0, 2**41)])
        rec = (key, value(rng.randrange(0, 4)), ts)
        recs.append(rec if rng.random() < 0.5 else list(rec))
    return recs if rng.random() < 0.8 else tuple(recs)

def dumps(obj, protocol, fast):
    f = io.BytesIO()
    p = pickle.Pickler(f, protocol)
    p.fast = fast
    p.dump(obj)
    return f.getvalue()

out = bytearray()
count = 0
for i in range(int(sys.argv[4])):
    recs = records()
    entries, data = bytearray(), bytearray()
    for key, val, ts in recs:
        packed = mp.packb(val)
        entries += struct.pack("<IIq", len(key), len(packed), ts)
        data += key + packed
    for protocol in (2, 3, 4, 5):
        for fast in (False, True):
            out += frame(dumps(recs, protocol, fast)) + frame(entries) + frame(data)
            count += 1

class Point:
    def __init__(self): self.x = 1
class Evil:
    def __reduce__(self): return (os.system, ("true",))
for bad in ([(b"", {1, 2}, 0)], [(b"", frozenset([1]), 0)], [(b"", Point(), 0)], [(b"", Evil(), 0)],
            [(b"", 2**64, 0)], [(b"", -2**63 - 1, 0)], [(b"", 1, 2**63)], [("key", 1, 0)], [(b"", 1, 1.5)],
            [(b"", 1)], {b"": 1}, [(b"", [1] * 2 + [[1]], 0, 0)], [(b"", range(3), 0)], [(b"", 1j, 0)]):
    for protocol in (2, 3, 4, 5):
        for fast in (False, True):
            out += frame(dumps(bad, protocol, fast)) + frame(b"malformed") + frame(b"")
            count += 1
open(sys.argv[2], "wb").write(out)
print(count)
"#;

#[test]
fn cpython_pickles_decode_to_weirpy_packb() {
    let seed: u32 = rand::random();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pickles");
    let count = python(GUEST_PICKLES, &[path.to_str().unwrap(), &seed.to_string(), "200"]);
    let items = read_framed(&std::fs::read(&path).unwrap());
    assert_eq!(items.len() / 3, count.trim().parse::<usize>().unwrap(), "seed {seed}");
    let mut decoded = 0;
    for (i, case) in items.chunks(3).enumerate() {
        let [doc, entries, data] = case else { unreachable!() };
        let got = decode_batch(BatchFormat::Pickle, doc, usize::MAX);
        if entries == b"malformed" {
            assert!(
                matches!(got, Err(DecodeError::Malformed(_))),
                "seed {seed} case {i}: {got:?} for {doc:?}"
            );
            continue;
        }
        let entries = entries
            .chunks(16)
            .map(|e| Entry {
                key_len: u32::from_le_bytes(e[..4].try_into().unwrap()),
                value_len: u32::from_le_bytes(e[4..8].try_into().unwrap()),
                timestamp: i64::from_le_bytes(e[8..].try_into().unwrap()),
            })
            .collect();
        let expected = Batch { data: data.clone(), entries };
        assert_eq!(got.as_ref(), Ok(&expected), "seed {seed} case {i}: document {doc:?}");
        decoded += 1;
    }
    assert!(decoded >= 1000, "seed {seed}: only {decoded} documents decoded");
}
