//! Snapshots and restores as state documents (issue 20, `wit/encoded.wit`: `snapshot-encoded`,
//! `plan-restore`, `restore-encoded`) through the real Python components and real wasmtime:
//! for q17, the word count, the window count and the join, a snapshot taken through the
//! pickled document holds exactly the entries and bytes of the plain `snapshot` (the state
//! layout does not change), and state restored through a document behaves as state restored
//! plainly. A chunk the document cannot carry goes through the plain `restore`, which fails
//! it alike; Rust's q17 state restores into the Python q17 through a document and back.

use rmpv::Value;
use weir::guest::bindings::{ChangeKind, Context, StateDelta};
use weir::guest::{
    ENCODED_FALLBACK_RESTORE_CHUNKS, ENCODED_RESTORE_CHUNKS, ENCODED_SNAPSHOTS, GuestError, GuestHost,
    InstanceLimits, OperatorError, OperatorInstance,
};
use weir::record::Batch;

fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, value).expect("vec");
    out
}

/// A delta as comparable parts: names, data, and (state, put, key length, value length).
type Flat = (Vec<String>, Vec<u8>, Vec<(u32, bool, u32, u32)>);

fn flat(delta: &StateDelta) -> Flat {
    let entries = delta
        .entries
        .iter()
        .map(|e| (e.state, matches!(e.kind, ChangeKind::Put), e.key_len, e.value_len))
        .collect();
    (delta.names.clone(), delta.data.clone(), entries)
}

fn counter(inst: &OperatorInstance, name: &str) -> u64 {
    inst.counters().get(name).copied().unwrap_or(0)
}

fn python(name: &str) -> Vec<u8> {
    let built = crate::common::languages::build("python");
    std::fs::read(built.join(format!("{name}.wasm"))).unwrap()
}

async fn instance(host: &GuestHost, name: &str, bytes: &[u8]) -> OperatorInstance {
    let module = host.load(name, bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    OperatorInstance::new(&module, name, 0, InstanceLimits::default()).await.unwrap()
}

fn context(name: &str, config: &str, inputs: u32, restored: bool) -> Context {
    Context { inputs, restored, ..Context::standalone(name, config, 128) }
}

/// One Python operator's workload: its config, inputs, batches (with their input) in
/// rounds, and the watermark to advance to after each round (firing timers: deletes).
struct Case {
    module: &'static str,
    config: &'static str,
    inputs: u32,
    rounds: Vec<Round>,
}

/// Batches with their input, then the watermark to advance to.
type Round = (Vec<(u32, Batch)>, Option<i64>);

/// Bids on `auctions` auctions from `first` on, one per auction, as Rust's serde writes them.
fn bids(first: u64, auctions: u64, price: u64) -> Batch {
    let mut batch = Batch::with_capacity(auctions as usize, auctions as usize * 64);
    for a in first..first + auctions {
        let bid = Value::Map(vec![
            ("auction".into(), Value::from(a)),
            ("bidder".into(), Value::from(a * 7)),
            ("price".into(), Value::from(price + a * 997 % 2_000_000)),
        ]);
        batch.push(&encode(&Value::from(a)), &encode(&bid), a as i64);
    }
    batch
}

fn words(round: u64) -> Batch {
    let vocabulary = ["a", "weir", "état", "流れ", "", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"];
    let mut batch = Batch::with_capacity(64, 1024);
    for i in 0..64u64 {
        let word = vocabulary[((i * 7 + round) % vocabulary.len() as u64) as usize];
        batch.push(&encode(&Value::from(word)), &encode(&Value::from(i % 5 + round * 1000)), i as i64);
    }
    batch
}

/// Ids keyed by `keys` keys at timestamps from `t0`.
fn ids(keys: u64, t0: i64, n: u64) -> Batch {
    let mut batch = Batch::with_capacity(n as usize, n as usize * 8);
    for i in 0..n {
        batch.push(
            &encode(&Value::from(i % keys)),
            &encode(&Value::from(i * 1_000_003)),
            t0 + (i as i64 % 50) * 7,
        );
    }
    batch
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            module: "nexmark-q17",
            config: "{}",
            inputs: 1,
            rounds: vec![
                (vec![(0, bids(1000, 300, 5))], None),
                (vec![(0, bids(1100, 300, 20_000)), (0, bids(1000, 2, 3_000_000))], None),
            ],
        },
        Case {
            module: "wordcount",
            config: "{}",
            inputs: 1,
            rounds: (0..3).map(|r| (vec![(0, words(r))], None)).collect(),
        },
        Case {
            module: "window-count",
            config: r#"{"window": {"kind": "sliding", "size_ms": 100, "slide_ms": 40}}"#,
            inputs: 1,
            rounds: vec![(vec![(0, ids(9, 0, 200))], Some(150)), (vec![(0, ids(9, 300, 200))], Some(700))],
        },
        Case {
            module: "join-pairs",
            config: r#"{"join": {"kind": "interval", "lower_ms": -10, "upper_ms": 10}}"#,
            inputs: 2,
            rounds: vec![
                (vec![(0, ids(7, 0, 120)), (1, ids(7, 5, 120))], Some(200)),
                (vec![(1, ids(7, 400, 90)), (0, ids(5, 410, 90))], Some(1000)),
            ],
        },
    ]
}

/// Fires the due timers of both instances (the same ones) at `watermark`; their outputs agree.
async fn fire(fast: &mut OperatorInstance, plain: &mut OperatorInstance, watermark: i64) {
    for inst in [&mut *fast, &mut *plain] {
        inst.set_watermarks(watermark, &[watermark]);
    }
    while let Some((ts, key)) = fast.timers().pop_due(watermark) {
        assert_eq!(plain.timers().pop_due(watermark), Some((ts, key.clone())), "the same timers");
        let a = fast.on_timer(&key, ts).await.unwrap();
        assert!(a == plain.on_timer(&key, ts).await.unwrap(), "on_timer outputs differ");
    }
    assert_eq!(plain.timers().pop_due(watermark), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_state_documents_keep_the_plain_snapshot_bytes_and_restore_alike() {
    let host = GuestHost::new(None).unwrap();
    for case in cases() {
        let name = case.module;
        let bytes = python(name);
        let open = |restored| context(name, case.config, case.inputs, restored);
        let mut fast = instance(&host, name, &bytes).await;
        let mut plain = instance(&host, name, &bytes).await;
        fast.open(&open(false)).await.unwrap();
        plain.open(&open(false)).await.unwrap();
        let deletes =
            |d: &StateDelta| d.entries.iter().filter(|e| matches!(e.kind, ChangeKind::Delete)).count();
        let (mut snapshots, mut deleted) = (0, 0);
        for (round, (batches, watermark)) in case.rounds.iter().enumerate() {
            for (input, batch) in batches {
                let a = fast.process(*input, batch).await.unwrap();
                assert!(a == plain.process(*input, batch).await.unwrap(), "{name}: outputs differ");
            }
            if let Some(w) = watermark {
                fire(&mut fast, &mut plain, *w).await;
            }
            let a = fast.snapshot(round as u64 + 1, false).await.unwrap();
            let b = plain.snapshot_plain(round as u64 + 1, false).await.unwrap();
            assert!(!b.entries.is_empty(), "{name}: round {round} changes state");
            assert_eq!(flat(&a), flat(&b), "{name}: incremental snapshot {round}");
            snapshots += 1;
            deleted += deletes(&b);
        }
        if case.rounds.iter().any(|(_, watermark)| watermark.is_some()) {
            assert!(deleted > 0, "{name}: fired timers remove state");
        }
        let full = plain.snapshot_plain(9, true).await.unwrap();
        assert_eq!(flat(&fast.snapshot(9, true).await.unwrap()), flat(&full), "{name}: full snapshot");
        assert_eq!(deletes(&full), 0);
        assert_eq!(
            counter(&fast, ENCODED_SNAPSHOTS),
            snapshots + 1,
            "{name}: every snapshot went as a document"
        );
        assert_eq!(counter(&plain, ENCODED_SNAPSHOTS), 0);

        // Restore the full snapshot through a document and plainly: the same behaviour after.
        let mut a = instance(&host, name, &bytes).await;
        let mut b = instance(&host, name, &bytes).await;
        a.restore(0, &full).await.unwrap();
        b.restore_plain(0, &full).await.unwrap();
        assert_eq!(counter(&a, ENCODED_RESTORE_CHUNKS), 1, "{name}: the chunk went as a document");
        assert_eq!(counter(&a, ENCODED_FALLBACK_RESTORE_CHUNKS), 0);
        a.open(&open(true)).await.unwrap();
        b.open(&open(true)).await.unwrap();
        assert_eq!(flat(&a.snapshot(10, true).await.unwrap()), flat(&full), "{name}: restored state");
        for (input, batch) in &case.rounds[0].0 {
            let out = a.process(*input, batch).await.unwrap();
            assert!(out == b.process(*input, batch).await.unwrap(), "{name}: outputs after restore differ");
        }
        let changed = b.snapshot_plain(11, false).await.unwrap();
        assert_eq!(flat(&a.snapshot(11, false).await.unwrap()), flat(&changed), "{name}: after restore");
        eprintln!(
            "{name}: {} live entries ({} bytes), {deleted} deletes",
            full.entries.len(),
            full.data.len()
        );
    }
}

fn invalid_state(result: Result<(), GuestError>) -> String {
    match result {
        Err(GuestError::Operator { error: OperatorError::InvalidState(message), .. }) => message,
        other => panic!("expected invalid-state, got {other:?}"),
    }
}

/// A chunk whose value the pickle cannot carry (an ext type) goes through the plain
/// `restore`, which refuses it as it would have; a chunk of an unknown state and one of
/// another state version are left to the plain `restore` by the guest's plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_restore_chunks_the_document_cannot_carry_go_plain() {
    let host = GuestHost::new(None).unwrap();
    let bytes = python("nexmark-q17");
    let chunk = |name: &str, value: Vec<u8>| {
        let key = encode(&Value::from(1));
        let mut data = key.clone();
        data.extend_from_slice(&value);
        StateDelta {
            names: vec![name.to_string()],
            data,
            entries: vec![weir::guest::bindings::StateEntry {
                state: 0,
                kind: ChangeKind::Put,
                key_len: key.len() as u32,
                value_len: value.len() as u32,
            }],
        }
    };
    let stats = encode(&Value::Array((1..=7).map(Value::from).collect()));
    let cases = [
        (chunk("stats", encode(&Value::Ext(3, vec![1]))), 0, true),
        (chunk("stats", vec![0x93, 1]), 0, true),
        (chunk("stats", encode(&Value::Array(vec![Value::from(-1); 7]))), 0, false),
        (chunk("nope", stats.clone()), 0, false),
        (chunk("stats", stats.clone()), 3, false),
    ];
    for (n, (chunk, version, fallback)) in cases.into_iter().enumerate() {
        let mut a = instance(&host, "q17", &bytes).await;
        let mut b = instance(&host, "q17", &bytes).await;
        let fast = a.restore(version, &chunk).await;
        let plain = b.restore_plain(version, &chunk).await;
        assert_eq!(invalid_state(fast), invalid_state(plain), "case {n}: the same error");
        assert_eq!(counter(&a, ENCODED_FALLBACK_RESTORE_CHUNKS), u64::from(fallback), "case {n}");
    }
    // A valid value restores through the document.
    let mut a = instance(&host, "q17", &bytes).await;
    a.restore(0, &chunk("stats", stats)).await.unwrap();
    assert_eq!(counter(&a, ENCODED_RESTORE_CHUNKS), 1);
}

/// Rust q17's state restores into the Python q17 through a document, and the Python q17's
/// document snapshot restores into the Rust q17: both then give the same output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_and_python_q17_state_cross_through_documents() {
    let host = GuestHost::new(None).unwrap();
    let rust_bytes = weir::builtin::get("nexmark-q17").unwrap();
    let py_bytes = python("nexmark-q17");
    let ctx = |restored| context("q17", "{}", 1, restored);

    let mut rust = instance(&host, "rust", rust_bytes).await;
    rust.open(&ctx(false)).await.unwrap();
    rust.process(0, &bids(0, 500, 7)).await.unwrap();
    let rust_state = rust.snapshot(1, true).await.unwrap();

    let mut py = instance(&host, "python", &py_bytes).await;
    py.restore(0, &rust_state).await.unwrap();
    assert_eq!(counter(&py, ENCODED_RESTORE_CHUNKS), 1);
    py.open(&ctx(true)).await.unwrap();
    assert_eq!(flat(&py.snapshot(2, true).await.unwrap()), flat(&rust_state), "Rust state through Python");
    let next = bids(250, 500, 40_000);
    assert!(py.process(0, &next).await.unwrap() == rust.process(0, &next).await.unwrap());
    let py_state = py.snapshot(3, true).await.unwrap();
    let mut back = instance(&host, "rust", rust_bytes).await;
    back.restore(0, &py_state).await.unwrap();
    back.open(&ctx(true)).await.unwrap();
    let last = bids(700, 100, 1);
    assert!(back.process(0, &last).await.unwrap() == py.process(0, &last).await.unwrap());
}
