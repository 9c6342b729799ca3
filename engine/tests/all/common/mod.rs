//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod event_time;
pub mod fake_kafka;
pub mod kafka;
pub mod languages;
pub mod nexmark_ref;
pub mod s3;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use weir::guest::{GuestHost, OperatorModule};
use weir::plan::{JobSpec, LoadError, ModuleLoader, Plan, PlanError};
use weir::runtime::{JobError, JobReport};

/// A Tansu Kafka-protocol broker for the Kafka tests.
pub mod tansu;

/// One engine per test binary (compiled modules are cached in it).
pub fn host() -> Arc<GuestHost> {
    static HOST: OnceLock<Arc<GuestHost>> = OnceLock::new();
    HOST.get_or_init(|| GuestHost::new(None).expect("engine")).clone()
}

/// Path of a guest component built by the build script.
pub fn guest_path(name: &str) -> PathBuf {
    PathBuf::from(match name {
        "faulty" => env!("WEIR_GUEST_FAULTY"),
        "other-world" => env!("WEIR_GUEST_OTHER_WORLD"),
        "tokenizer" => env!("WEIR_GUEST_TOKENIZER"),
        "wordcount" => env!("WEIR_GUEST_WORDCOUNT"),
        "nexmark-q1" => env!("WEIR_GUEST_NEXMARK_Q1"),
        "nexmark-q2" => env!("WEIR_GUEST_NEXMARK_Q2"),
        "nexmark-q17" => env!("WEIR_GUEST_NEXMARK_Q17"),
        "tumbling-window" => env!("WEIR_GUEST_TUMBLING_WINDOW"),
        "window" => env!("WEIR_GUEST_WINDOW"),
        "join" => env!("WEIR_GUEST_JOIN"),
        "nexmark" => env!("WEIR_GUEST_NEXMARK"),
        "counter" => env!("WEIR_GUEST_COUNTER"),
        "wordcount-v2" => env!("WEIR_GUEST_WORDCOUNT_V2"),
        "wordcount-v3" => env!("WEIR_GUEST_WORDCOUNT_V3"),
        "slow-describe" => env!("WEIR_GUEST_SLOW_DESCRIBE"),
        "slow-migrate" => env!("WEIR_GUEST_SLOW_MIGRATE"),
        other => panic!("no guest {other}"),
    })
}

/// Loads `builtin:` modules from the binary, `test:<name>` from the build's guests, and
/// anything else as a path.
pub struct TestModules;

impl ModuleLoader for TestModules {
    fn load(&self, reference: &str) -> Result<Arc<OperatorModule>, LoadError> {
        if let Some(name) = reference.strip_prefix("test:") {
            let bytes = std::fs::read(guest_path(name))?;
            return Ok(host().load(reference, &bytes)?);
        }
        weir::modules::LocalModules::new(host(), ".").load(reference)
    }
}

/// Parses and plans a job.
pub fn plan_json(spec: serde_json::Value) -> Result<Plan, PlanError> {
    let spec: JobSpec = serde_json::from_value(spec).map_err(|e| PlanError::Json(e.to_string()))?;
    weir::plan::plan(&spec, &TestModules)
}

/// Plans and runs a job on a fresh multi-threaded runtime.
pub fn run(spec: serde_json::Value) -> Result<JobReport, JobError> {
    let plan = plan_json(spec)?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(weir::runtime::run_job(&plan))
}

/// Every line of every `part-*.jsonl` file in `dir`, parsed, file by file in name order.
pub fn read_output(dir: &Path) -> Vec<serde_json::Value> {
    read_committed(dir)
}

/// Runs a job with checkpoints in `data_dir` (the store is `data_dir/weir.redb`);
/// `configure` may add faults or wrap the storage. Returns the result and the store.
pub fn run_checkpointed(
    spec: serde_json::Value,
    data_dir: &Path,
    job_id: &str,
    configure: impl FnOnce(weir::runtime::RunEnv) -> weir::runtime::RunEnv,
) -> (Result<JobReport, JobError>, weir_store::Store) {
    let plan = plan_json(spec).expect("plan");
    std::fs::create_dir_all(data_dir).unwrap();
    let store = weir_store::Store::open(&data_dir.join("weir.redb")).expect("store");
    let env = configure(weir::runtime::RunEnv::new(job_id, store.clone()));
    let result = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(weir::runtime::run_job_checkpointed(&plan, &env));
    (result, store)
}

/// Every committed line of a file sink directory (`part-*` files in name order; pending ones,
/// under `.pending/`, excluded).
pub fn read_committed(dir: &Path) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().unwrap().to_string_lossy().starts_with("part-"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            out.push(serde_json::from_str(line).unwrap());
        }
    }
    out
}

/// The live entries of operator `node`'s keyed state in the job's latest completed
/// checkpoint (which must be the final one), keys and values decoded from MessagePack (for
/// host keyed state, the record key of each entry).
pub fn final_state(
    store: &weir_store::Store,
    job: &str,
    node: &str,
) -> Result<Vec<(rmpv::Value, rmpv::Value)>, String> {
    use weir_store::CheckpointStorage as _;
    let (meta, manifest) = store.latest_completed(job).map_err(|e| e.to_string())?.ok_or("no checkpoint")?;
    if !meta.is_final {
        return Err(format!("the latest checkpoint {} is not the final one", meta.id));
    }
    let mut state = Vec::new();
    for sub in manifest.get(node).ok_or(format!("no state of {node}"))?.values() {
        for chain in sub.chains.values() {
            for e in store.read_chain(job, chain).map_err(|e| e.to_string())? {
                // Host keyed state (`@host/<name>`): the record key is inside the entry's key.
                let key = weir::local_state::record_key(&e.state, &e.key);
                let key = rmpv::decode::read_value(&mut &key[..]).map_err(|e| e.to_string())?;
                let value = e.value.ok_or("a tombstone among live entries")?;
                let value = rmpv::decode::read_value(&mut &value[..]).map_err(|e| e.to_string())?;
                state.push((key, value));
            }
        }
    }
    Ok(state)
}

/// The counter guest's final counts per u64 key.
pub fn final_counts(
    store: &weir_store::Store,
    job: &str,
    node: &str,
) -> Result<std::collections::BTreeMap<u64, u64>, String> {
    let mut out = std::collections::BTreeMap::new();
    for (key, value) in final_state(store, job, node)? {
        let count = value
            .as_map()
            .and_then(|m| m.iter().find(|(k, _)| k.as_str() == Some("count")))
            .and_then(|(_, v)| v.as_u64())
            .ok_or(format!("bad state value {value}"))?;
        let key = key.as_u64().ok_or(format!("bad key {key}"))?;
        if out.insert(key, count).is_some() {
            return Err(format!("{node}: key {key} twice"));
        }
    }
    Ok(out)
}

/// Keeps the panics that tests inject on purpose (`injected panic ...`) out of the output;
/// every other panic is reported as usual.
pub fn quiet_injected_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload_as_str().is_some_and(|m| m.starts_with("injected panic")) {
                return;
            }
            default(info);
        }));
    });
}

/// The open context of a standalone word-count instance ("count", no config, 128 key groups).
pub fn count_context(restored: bool) -> weir::guest::bindings::Context {
    weir::guest::bindings::Context {
        restored,
        ..weir::guest::bindings::Context::standalone("count", "{}", 128)
    }
}

/// A batch of words as the tokenizer emits them: key = the word, value = 1, time = the index.
pub fn word_batch(ws: &[&str]) -> weir::record::Batch {
    let mut b = weir::record::Batch::empty();
    for (i, w) in ws.iter().enumerate() {
        b.push(&weir::record::to_msgpack(w), &weir::record::to_msgpack(&1u64), i as i64);
    }
    b
}

/// Runs job `id` of `plan` until its second checkpoint completed, then stops it with a pinned
/// final checkpoint (a stop for a savepoint); returns that checkpoint's id.
pub async fn run_and_stop(plan: &Plan, store: &weir_store::Store, id: &str) -> u64 {
    use weir::runtime::{JobEvent, RunEnv, StopMode};
    let env = Arc::new(RunEnv::new(id, store.clone()));
    let mut events = env.subscribe();
    let stopper = env.clone();
    tokio::spawn(async move {
        let mut completed = 0;
        while let Ok(event) = events.recv().await {
            if let JobEvent::CheckpointCompleted { .. } = event {
                completed += 1;
                if completed == 2 {
                    stopper.stop_with(StopMode::Suspend, true);
                    return;
                }
            }
        }
    });
    let report = weir::runtime::run_job_checkpointed(plan, &env).await.expect("job runs");
    assert!(report.stopped, "the job ended before it was stopped");
    report.final_checkpoint.expect("a final checkpoint")
}

/// Copies the pinned checkpoint `checkpoint` of `job` (run from `spec`) into savepoint
/// `sp-<job>` and unpins it.
pub fn savepoint(
    store: &weir_store::Store,
    spec: &serde_json::Value,
    job: &str,
    checkpoint: u64,
) -> weir_store::SavepointInfo {
    use weir_store::CheckpointStorage as _;
    let spec: JobSpec = serde_json::from_value(spec.clone()).unwrap();
    let (meta, manifest) = store.checkpoint(job, checkpoint).unwrap().unwrap();
    assert!(meta.pinned, "a savepoint's checkpoint is pinned");
    let manifest = manifest.unwrap();
    let description = weir::savepoint::Description::of(&spec, &manifest).unwrap();
    let info = weir_store::SavepointInfo {
        id: format!("sp-{job}"),
        owner: "tests".into(),
        job: job.into(),
        checkpoint,
        created_ms: 0,
        bytes: 0,
        entries: 0,
        origin: None,
        description: serde_json::to_value(description).unwrap(),
    };
    let info = store.create_savepoint(info, &manifest).unwrap();
    store.unpin(job, checkpoint).unwrap();
    info
}

/// A `tracing` writer into a buffer the test reads (`kafka::captured_logs`, or a test's own
/// subscriber).
#[derive(Clone, Default)]
pub(crate) struct Logs(Arc<std::sync::Mutex<Vec<u8>>>);

impl Logs {
    /// Everything logged so far.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
