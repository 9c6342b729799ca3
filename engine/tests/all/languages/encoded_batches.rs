//! The `encoded-batches` fast path (issue 20, `wit/encoded.wit`), through real components and
//! real wasmtime: Nexmark q1 written on a language SDK's batch API (the host hands it pickled
//! or JSON batches) gives the same output bytes as the same query on the per-record API and as
//! the Rust operator; batches the document format cannot carry go through the plain
//! `process`, and both Python variants then fail alike.

use rand::rngs::SmallRng;
use rand::{Rng as _, SeedableRng as _};
use rmpv::Value;
use weir::connectors::nexmark::{KeyField, NexmarkSourceConfig, push_keyed_event};
use weir::guest::bindings::Context;
use weir::guest::{
    ENCODED_BATCHES, ENCODED_FALLBACK_BATCHES, GuestError, GuestHost, InstanceLimits, OperatorError,
    OperatorInstance,
};
use weir::record::Batch;

fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value).expect("vec");
    out
}

fn s(text: &str) -> Value {
    Value::from(text)
}

/// A bid as Rust's serde writes it: a map of the seven fields, in order.
fn bid(rng: &mut SmallRng, i: u64) -> Vec<(Value, Value)> {
    let price = match i % 5 {
        0 => u64::MAX,
        1 => 0,
        _ => {
            let bits = rng.gen_range(1..63);
            rng.gen_range(0..1u64 << bits)
        }
    };
    vec![
        (s("auction"), Value::from(1000 + rng.gen_range(0..500u64))),
        (s("bidder"), Value::from(rng.gen_range(0..1u64 << 40))),
        (s("price"), Value::from(price)),
        (s("channel"), s(["web", "app", "ünï€😀", ""][(i % 4) as usize])),
        (s("url"), s(&"u".repeat(rng.gen_range(0..300)))),
        (s("date_time"), Value::from(1_700_000_000_000u64 + i)),
        (s("extra"), s("")),
    ]
}

/// Batches of bids in every shape q1 accepts: maps, maps with unknown fields (bin, floats,
/// nested maps with array keys), arrays of the seven fields; keys absent, compact or not.
fn bid_batches(seed: u64) -> Vec<Batch> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut batches = Vec::new();
    let mut i = 0u64;
    for size in [1usize, 7, 300, 1024, 2] {
        let mut batch = Batch::with_capacity(size, size * 128);
        for _ in 0..size {
            let mut fields = bid(&mut rng, i);
            let value = match i % 6 {
                0 => Value::Array(fields.into_iter().map(|(_, v)| v).collect()),
                1 => {
                    fields.push((s("blob"), Value::Binary(vec![0, 255, 7])));
                    fields.push((s("ratio"), Value::F64(0.1)));
                    let nested = vec![(Value::Array(vec![Value::from(1), Value::Array(vec![])]), Value::Nil)];
                    fields.insert(2, (s("nested"), Value::Map(nested)));
                    Value::Map(fields)
                }
                _ => Value::Map(fields),
            };
            let key: Vec<u8> = match i % 3 {
                0 => Vec::new(),
                1 => encode(&Value::from(i)),
                // Not the compact form of 5: passed through byte for byte all the same.
                _ => vec![0xcf, 0, 0, 0, 0, 0, 0, 0, 5],
            };
            batch.push(&key, &encode(&value), i as i64 - 3);
            i += 1;
        }
        batches.push(batch);
    }
    batches
}

async fn instance(host: &GuestHost, name: &str, bytes: &[u8]) -> OperatorInstance {
    let module = host.load(name, bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut inst = OperatorInstance::new(&module, name, 0, InstanceLimits::default()).await.unwrap();
    inst.open(&Context::standalone(name, "{}", 128)).await.unwrap();
    inst
}

fn records(batch: &Batch) -> Vec<(Vec<u8>, Vec<u8>, i64)> {
    batch.iter().map(|r| (r.key.to_vec(), r.value.to_vec(), r.timestamp)).collect()
}

fn counter(inst: &OperatorInstance, name: &str) -> u64 {
    inst.counters().get(name).copied().unwrap_or(0)
}

fn invalid_input(result: Result<Batch, GuestError>) -> String {
    match result {
        Err(GuestError::Operator { error: OperatorError::InvalidInput(message), .. }) => message,
        other => panic!("expected invalid-input, got {:?}", other.map(|b| b.len())),
    }
}

/// q1 of `lang` on its batch API and on its per-record API, against the Rust q1.
/// `all_carried`: whether the language's document format carries every batch of
/// [`bid_batches`] (pickle does; JSON not the u64::MAX prices, bin or array map keys, which
/// go through the plain `process`).
async fn q1_paths_agree(lang: &str, seed: u64, all_carried: bool) {
    eprintln!("{lang}: seed {seed}");
    let built = crate::common::languages::build(lang);
    let host = GuestHost::new(None).unwrap();
    let read = |name: &str| std::fs::read(built.join(format!("{name}.wasm"))).unwrap();
    let mut rust = instance(&host, "rust", weir::builtin::get("nexmark-q1").unwrap()).await;
    let mut fast = instance(&host, "batch-api", &read("nexmark-q1")).await;
    let mut plain = instance(&host, "record-api", &read("nexmark-q1-records")).await;
    assert!(fast.batch_format().is_some(), "{lang} q1 asks for a document format");
    assert!(plain.batch_format().is_none(), "{lang} per-record q1 asks for none");

    let batches = bid_batches(seed);
    for (n, batch) in batches.iter().enumerate() {
        let expected = records(&rust.process(0, batch).await.unwrap());
        assert_eq!(expected.len(), batch.len());
        let by_batch = records(&fast.process(0, batch).await.unwrap());
        let by_record = records(&plain.process(0, batch).await.unwrap());
        assert!(by_batch == expected, "{lang} batch API differs from Rust on batch {n} (seed {seed})");
        assert!(by_record == expected, "{lang} per-record API differs from Rust on batch {n} (seed {seed})");
    }
    let encoded = counter(&fast, ENCODED_BATCHES);
    let fallback = counter(&fast, ENCODED_FALLBACK_BATCHES);
    assert_eq!(encoded + fallback, batches.len() as u64);
    if all_carried {
        assert_eq!(fallback, 0, "every batch took the fast path");
    }

    // A batch the document cannot carry (an ext value) goes through `process`: the SDK's
    // own decoder refuses it, as the per-record operator's does.
    let mut odd = Batch::with_capacity(2, 64);
    odd.push(&[], batches[0].iter().next().unwrap().value, 1);
    odd.push(&[], &encode(&Value::Ext(1, vec![1, 2])), 2);
    let a = invalid_input(fast.process(0, &odd).await);
    let b = invalid_input(plain.process(0, &odd).await);
    assert_eq!(counter(&fast, ENCODED_FALLBACK_BATCHES), fallback + 1, "the ext batch fell back");
    assert!(!a.is_empty() && !b.is_empty(), "{a} / {b}");

    // A bid whose fields have the wrong types fails both alike, on either path.
    let mut fields = bid(&mut SmallRng::seed_from_u64(seed), 3);
    fields[2].1 = Value::from(-1);
    let mut wrong = Batch::with_capacity(1, 128);
    wrong.push(&[], &encode(&Value::Map(fields)), 0);
    let a = invalid_input(fast.process(0, &wrong).await);
    let b = invalid_input(plain.process(0, &wrong).await);
    assert_eq!(a, b, "the same error on both paths");
    assert_eq!(counter(&fast, ENCODED_BATCHES), encoded + 1, "the wrong bid went encoded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_q1_batch_api_equals_per_record_api_and_rust() {
    let seed = std::env::var("WEIR_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    q1_paths_agree("python", seed, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn javascript_q1_batch_api_equals_per_record_api_and_rust() {
    let seed = std::env::var("WEIR_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(21);
    q1_paths_agree("js", seed, false).await;
    javascript_q1_json_path().await;
}

/// `n` Nexmark bids in batches of `size`, keyed by auction when `keyed`.
fn nexmark_bids(n: usize, size: usize, keyed: bool) -> Vec<Batch> {
    let config: NexmarkSourceConfig =
        serde_json::from_value(serde_json::json!({ "event_type": "bid", "count": n })).unwrap();
    let mut events = config.generator(0, 1);
    let key = keyed.then_some(KeyField::Auction);
    let mut out = Vec::new();
    for _ in 0..n.div_ceil(size) {
        let mut batch = Batch::with_capacity(size, size * 200);
        for _ in 0..size {
            push_keyed_event(&mut batch, &events.next().expect("endless"), key);
        }
        out.push(batch);
    }
    out
}

/// JavaScript q1 on Nexmark bids, which JSON carries: every batch goes through the JSON path
/// and gives the per-record fixture's and the Rust q1's bytes. Then bids of other shapes
/// (Rust reads these otherwise): a u64 price past 2^53 and a timestamp past 2^53, which JSON
/// cannot carry (the plain `process` takes them), and a price written as a float, which it
/// can; the two JavaScript q1 agree on each.
async fn javascript_q1_json_path() {
    let built = crate::common::languages::build("js");
    let host = GuestHost::new(None).unwrap();
    let read = |name: &str| std::fs::read(built.join(format!("{name}.wasm"))).unwrap();
    let mut rust = instance(&host, "rust", weir::builtin::get("nexmark-q1").unwrap()).await;
    let mut fast = instance(&host, "batch-api", &read("nexmark-q1")).await;
    let mut plain = instance(&host, "record-api", &read("nexmark-q1-records")).await;
    let mut batches = nexmark_bids(3000, 512, true);
    batches.extend(nexmark_bids(700, 700, false));
    for (n, batch) in batches.iter().enumerate() {
        let expected = rust.process(0, batch).await.unwrap();
        assert_eq!(expected.len(), batch.len());
        assert!(fast.process(0, batch).await.unwrap() == expected, "JSON path vs Rust on batch {n}");
        assert!(plain.process(0, batch).await.unwrap() == expected, "per-record q1 vs Rust on batch {n}");
    }
    assert_eq!(counter(&fast, ENCODED_BATCHES), batches.len() as u64, "every Nexmark batch went as JSON");
    assert_eq!(counter(&fast, ENCODED_FALLBACK_BATCHES), 0);

    let bid = |price: Value| {
        let mut fields = bid(&mut SmallRng::seed_from_u64(1), 2);
        fields[2].1 = price;
        encode(&Value::Map(fields))
    };
    for (key, price, timestamp, json) in [
        (encode(&Value::from(7)), Value::from(1u64 << 60), 1, false),
        (Vec::new(), Value::from(5), i64::MAX, false),
        (Vec::new(), Value::F64(12345.0), 2, true),
    ] {
        let mut batch = Batch::with_capacity(1, 128);
        batch.push(&key, &bid(price), timestamp);
        let before = counter(&fast, ENCODED_BATCHES);
        let by_batch = fast.process(0, &batch).await.unwrap();
        assert_eq!(counter(&fast, ENCODED_BATCHES) - before, u64::from(json), "JSON carries it: {json}");
        assert!(by_batch == plain.process(0, &batch).await.unwrap(), "the two JavaScript q1 differ");
        assert_eq!(by_batch.len(), 1);
    }
}
