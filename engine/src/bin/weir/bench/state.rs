//! `weir bench state`: keyed state in guest memory versus on the host's local store (issue
//! 21), measured side by side on one `builtin:counter` instance per backend.
//!
//! Per key count and backend (`{"backend": "guest" | "host"}`, values of `pad` bytes):
//!
//! 1. **Load**: one record per key (ids `0..keys` in batches), checkpointed every
//!    `checkpoint_records` records as a job with periodic checkpoints would be; records per
//!    second and per CPU-second of the whole process over the `process` calls (the store's
//!    background thread included), the full size of the state in the checkpoint chains.
//! 2. **Steady**: records on random keys (seeded), then a checkpoint.
//! 3. **1 % changed**: one record on each of 1 % of the keys, then a checkpoint: its sync part
//!    (the guest's `snapshot` and the host store's `checkpoint`), its async part (splitting,
//!    reading the host store's snapshot, `write_subtask`, `complete`) and its bytes.
//! 4. **Restore**: every chain read back (`visit_chains`, the bytes of live state), then
//!    `restore_chains` into a fresh instance (for host state: a rebuilt local store), checked
//!    by counting on after it.
//!
//! A guest that cannot hold the state within its memory limit is reported as failed (the
//! memory-limit error) instead of a figure.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use weir::clock::unix_ms;
use weir::guest::bindings::Context;
use weir::guest::{GuestHost, InstanceLimits, OperatorInstance, OperatorModule};
use weir::local_state::{LocalPlace, LocalStateConfig};
use weir::modules::LocalModules;
use weir::plan::ModuleLoader;
use weir::record::{Batch, to_msgpack};
use weir::runtime::{RESTORE_CHUNK_BYTES, restore_chains, split_into_scopes};
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, ScopeDelta, StateEntry, Store,
    SubtaskWrite,
};

use super::kafka::cpu_seconds;

/// The job name in the bench's stores.
const JOB: &str = "bench-state";
/// Key groups of the instance (it owns all of them).
const MAX_PARALLELISM: u32 = 128;
/// Chains are compacted past this many chunks; high enough that no checkpoint of the bench
/// compacts (compaction rewrites a scope's live state: not what is measured here).
const MAX_CHAIN_LENGTH: usize = 1000;
/// Seed of the steady phase's keys.
const SEED: u64 = 21;
/// Keys whose counts are tracked and checked after the restore.
const CHECKED_KEYS: u64 = 1024;

/// Sizes of the state benchmark.
#[derive(Debug, Clone)]
pub struct StateBenchOptions {
    /// Key counts (distinct keys loaded).
    pub keys: Vec<u64>,
    /// The backends measured (both, for the ratios).
    pub backends: Vec<Backend>,
    /// Runs of each backend per key count (medians are reported).
    pub runs: usize,
    /// Bytes of padding stored with each count (the value is ~`pad` + 14 bytes).
    pub pad: usize,
    /// Records per batch.
    pub batch: usize,
    /// Records of the steady phase (random keys).
    pub steady_records: u64,
    /// The load is checkpointed every this many records (and at its end).
    pub checkpoint_records: u64,
    /// The instance's memory limit, MiB.
    pub memory_mib: usize,
    /// Where the stores go (deleted after each run).
    pub dir: PathBuf,
}

/// Where the counter keeps its counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// `KeyedState`: in guest memory, checkpointed through the guest's `snapshot`.
    Guest,
    /// `HostKeyedState`: the host's local store (fjall).
    Host,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Guest => "guest",
            Backend::Host => "host",
        }
    }
}

/// Work over a phase: records, CPU seconds of the process, wall seconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Work {
    /// Records processed.
    pub records: u64,
    /// CPU seconds of the whole process (every thread) during the `process` calls.
    pub cpu: f64,
    /// Wall-clock seconds of the `process` calls.
    pub wall: f64,
}

impl Work {
    /// Records per CPU-second.
    pub fn per_cpu(&self) -> f64 {
        self.records as f64 / self.cpu.max(0.01)
    }

    /// Records per wall-clock second.
    pub fn rate(&self) -> f64 {
        self.records as f64 / self.wall.max(1e-6)
    }
}

/// One checkpoint of the bench.
#[derive(Debug, Clone, Copy, Default)]
pub struct Checkpoint {
    /// Keys whose state went into it (the guest's entries or the host's changed keys).
    pub keys: u64,
    /// Sync part, ms: the guest's `snapshot` and the host store's `checkpoint`.
    pub sync_ms: f64,
    /// Async part, ms: split by key group, the host values read, written, completed.
    pub async_ms: f64,
    /// Bytes of chunk data written.
    pub bytes: u64,
}

/// One run of one backend.
#[derive(Debug, Clone)]
pub struct StateRun {
    /// The backend.
    pub backend: Backend,
    /// Keys.
    pub keys: u64,
    /// What failed (the guest's memory limit), after how many loaded keys; no figures then.
    pub failed: Option<(u64, String)>,
    /// The load: one record per key.
    pub load: Work,
    /// The load's checkpoints.
    pub load_checkpoints: Vec<Checkpoint>,
    /// The steady phase: random keys.
    pub steady: Work,
    /// The checkpoint after the steady phase.
    pub steady_checkpoint: Checkpoint,
    /// The checkpoint after 1 % of the keys changed.
    pub changed: Checkpoint,
    /// Bytes of live state in the chains (keys + values, each key once).
    pub state_bytes: u64,
    /// The local store's disk use after the steady phase (host backend).
    pub local_disk_bytes: Option<u64>,
    /// Seconds to read every chain (visit the live entries, no copy).
    pub read_seconds: f64,
    /// Seconds of `restore_chains` into a fresh instance.
    pub restore_seconds: f64,
    /// CPU seconds of the process during `restore_chains`.
    pub restore_cpu: f64,
}

impl StateRun {
    fn new(backend: Backend, keys: u64) -> Self {
        StateRun {
            backend,
            keys,
            failed: None,
            load: Work::default(),
            load_checkpoints: Vec::new(),
            steady: Work::default(),
            steady_checkpoint: Checkpoint::default(),
            changed: Checkpoint::default(),
            state_bytes: 0,
            local_disk_bytes: None,
            read_seconds: 0.0,
            restore_seconds: 0.0,
            restore_cpu: 0.0,
        }
    }

    /// Bytes of chunk data the load's checkpoints wrote: the state in full.
    pub fn full_bytes(&self) -> u64 {
        self.load_checkpoints.iter().map(|c| c.bytes).sum()
    }

    /// Restore speed, MiB per wall-clock second.
    pub fn restore_rate(&self) -> f64 {
        mib(self.state_bytes) / self.restore_seconds.max(1e-6)
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A batch of counter records: key and value the id (one key per id).
fn batch_of(ids: impl Iterator<Item = u64>) -> Batch {
    let mut b = Batch::empty();
    for id in ids {
        b.push(&to_msgpack(&id), &to_msgpack(&id), 0);
    }
    b
}

/// One instance of the counter on `backend`, its host state (if any) under `store`'s folder.
async fn instance(
    module: &Arc<OperatorModule>,
    store: &Store,
    limits: InstanceLimits,
) -> anyhow::Result<OperatorInstance> {
    let mut inst = OperatorInstance::new(module, "count", 0, limits).await?;
    inst.keyed_states().set_place(LocalPlace {
        config: LocalStateConfig::beside(store, JOB),
        operator: "count".into(),
        subtask: 0,
        max_parallelism: MAX_PARALLELISM,
        owned: 0..MAX_PARALLELISM,
    });
    Ok(inst)
}

fn context(backend: Backend, pad: usize, restored: bool) -> Context {
    let config = serde_json::json!({ "backend": backend.name(), "pad": pad }).to_string();
    Context { config, restored, ..Context::standalone("count", "{}", MAX_PARALLELISM) }
}

/// The state of one instance across its checkpoints.
struct Checkpointer {
    store: Store,
    chains: BTreeMap<u32, Vec<u64>>,
    next: u64,
}

impl Checkpointer {
    /// Takes a checkpoint of `inst` as the runtime does, but in line: sync part on the task,
    /// async part (on the writer in a job) right after it.
    async fn take(&mut self, inst: &mut OperatorInstance) -> anyhow::Result<Checkpoint> {
        let id = self.next;
        self.next += 1;
        let started = Instant::now();
        let delta = inst.snapshot(id, false).await?;
        let host = inst.keyed_states().checkpoint();
        let sync_ms = started.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        let mut keys = delta.entries.len() as u64;
        let mut scopes = split_into_scopes(&delta, MAX_PARALLELISM, 0)?;
        drop(delta);
        if let Some(host) = host {
            keys += host.len() as u64;
            scopes = join_scopes(scopes, host.into_scopes()?);
        }
        let state = self.store.write_subtask(SubtaskWrite {
            job: JOB.into(),
            checkpoint: id,
            operator: "count".into(),
            subtask: 0,
            full: false,
            scopes: Arc::new(scopes),
            previous: self.chains.clone(),
            blob: Vec::new(),
            max_chain_length: MAX_CHAIN_LENGTH,
            channel_state: Vec::new(),
        })?;
        let mut meta = CheckpointMeta::new(JOB, id, unix_ms());
        meta.status = CheckpointStatus::Completed;
        let mut manifest: Manifest = BTreeMap::new();
        manifest.entry("count".into()).or_default().insert(0, state.clone());
        self.store.complete(&meta, &manifest, 2)?;
        self.chains = state.chains;
        Ok(Checkpoint {
            keys,
            sync_ms,
            async_ms: started.elapsed().as_secs_f64() * 1e3,
            bytes: state.bytes_written,
        })
    }
}

/// The scopes of the guest's and the host's deltas (disjoint states), one per scope.
fn join_scopes(a: Vec<ScopeDelta>, b: Vec<ScopeDelta>) -> Vec<ScopeDelta> {
    if a.is_empty() {
        return b;
    }
    let mut by_scope: BTreeMap<u32, Vec<StateEntry>> = BTreeMap::new();
    for s in a.into_iter().chain(b) {
        by_scope.entry(s.scope).or_default().extend(s.entries);
    }
    by_scope.into_iter().map(|(scope, entries)| ScopeDelta { scope, entries }).collect()
}

/// Long loads print a line every this many records.
const PROGRESS_RECORDS: u64 = 1 << 20;

/// Progress of a long load (stderr): rates since the last line or checkpoint.
struct Progress {
    cpu: f64,
    started: Instant,
    from: u64,
}

impl Progress {
    fn start(from: u64) -> Self {
        Progress { cpu: cpu_seconds("self"), started: Instant::now(), from }
    }

    fn report(&mut self, loaded: u64) {
        let n = (loaded - self.from) as f64;
        eprintln!(
            "    {loaded} keys loaded: {:.0} k records/s, {:.0} k per CPU-s",
            n / self.started.elapsed().as_secs_f64().max(1e-6) / 1e3,
            n / (cpu_seconds("self") - self.cpu).max(0.01) / 1e3,
        );
        *self = Progress::start(loaded);
    }
}

/// A stretch of processing between checkpoints: CPU and wall time are read at its ends only
/// (the process's CPU time comes in 10 ms ticks, too coarse for one batch).
struct Stretch {
    cpu: f64,
    started: Instant,
    records: u64,
}

impl Stretch {
    fn start() -> Self {
        Stretch { cpu: cpu_seconds("self"), started: Instant::now(), records: 0 }
    }

    async fn process(&mut self, inst: &mut OperatorInstance, batch: &Batch) -> anyhow::Result<Batch> {
        let out = inst.process(0, batch).await?;
        self.records += batch.len() as u64;
        Ok(out)
    }

    /// Ends the stretch, adding it to `work`.
    fn end(self, work: &mut Work) {
        work.cpu += cpu_seconds("self") - self.cpu;
        work.wall += self.started.elapsed().as_secs_f64();
        work.records += self.records;
    }
}

/// One run of `backend` with `keys` keys in `dir` (created, and deleted afterwards).
pub async fn run_one(
    module: &Arc<OperatorModule>,
    o: &StateBenchOptions,
    backend: Backend,
    keys: u64,
    dir: &std::path::Path,
) -> anyhow::Result<StateRun> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let result = run_in(module, o, backend, keys, dir).await;
    let _ = std::fs::remove_dir_all(dir);
    result
}

async fn run_in(
    module: &Arc<OperatorModule>,
    o: &StateBenchOptions,
    backend: Backend,
    keys: u64,
    dir: &std::path::Path,
) -> anyhow::Result<StateRun> {
    let store = Store::open(&dir.join("weir.redb"))?;
    // The local store, the chains and the restored store: ~3 copies of the state at most
    // (the local stores compress; the chains do not).
    let need = keys.saturating_mul(o.pad as u64 + 64).saturating_mul(3);
    let free = store.disk_space()?.free_bytes;
    anyhow::ensure!(
        free > need,
        "{keys} keys of ~{} bytes need ~{:.1} GiB free under {}; {:.1} GiB are",
        o.pad + 14,
        need as f64 / (1u64 << 30) as f64,
        dir.display(),
        free as f64 / (1u64 << 30) as f64
    );
    let limits = InstanceLimits {
        memory_bytes: o.memory_mib << 20,
        cpu_limit_ms: 3_600_000,
        wall_limit_ms: 3_600_000,
        ..InstanceLimits::default()
    };
    let mut run = StateRun::new(backend, keys);
    let mut inst = instance(module, &store, limits).await?;
    inst.open(&context(backend, o.pad, false)).await?;
    let mut ckpt = Checkpointer { store: store.clone(), chains: BTreeMap::new(), next: 1 };
    // Counts of the first keys, checked after the restore.
    let mut expected = vec![0u64; keys.min(CHECKED_KEYS) as usize];
    let mut count = |id: u64| {
        if let Some(c) = expected.get_mut(id as usize) {
            *c += 1;
        }
    };
    let batch = o.batch.max(1) as u64;

    // 1. Load: each key once, checkpointed every `checkpoint_records`.
    let mut since = 0u64;
    let mut id = 0u64;
    let mut stretch = Stretch::start();
    let mut progress = Progress::start(id);
    while id < keys {
        let end = (id + batch).min(keys);
        let records = batch_of(id..end);
        // Only the guest may fail here (its memory limit): the host backend must not.
        if let Err(e) = stretch.process(&mut inst, &records).await {
            anyhow::ensure!(backend == Backend::Guest, "host backend: {e:#}");
            run.failed = Some((id, format!("{e:#}")));
            return Ok(run);
        }
        (id..end).for_each(&mut count);
        since += end - id;
        if keys >= 4 * PROGRESS_RECORDS && id / PROGRESS_RECORDS != end / PROGRESS_RECORDS {
            progress.report(end);
        }
        id = end;
        if since >= o.checkpoint_records || id == keys {
            since = 0;
            std::mem::replace(&mut stretch, Stretch::start()).end(&mut run.load);
            let taken = ckpt.take(&mut inst).await;
            stretch = Stretch::start();
            match taken {
                Ok(c) => {
                    if keys >= 4 * PROGRESS_RECORDS {
                        eprintln!(
                            "    checkpoint at {id} keys: sync {:.0} ms, async {:.0} ms, {:.1} MiB",
                            c.sync_ms,
                            c.async_ms,
                            mib(c.bytes)
                        );
                        progress = Progress::start(id);
                    }
                    run.load_checkpoints.push(c)
                }
                Err(e) if backend == Backend::Guest => {
                    run.failed = Some((id, format!("checkpoint: {e:#}")));
                    return Ok(run);
                }
                Err(e) => return Err(e),
            }
        }
    }

    // 2. Steady: random keys.
    let mut rng = SmallRng::seed_from_u64(SEED);
    let mut left = o.steady_records;
    let mut stretch = Stretch::start();
    while left > 0 {
        let n = left.min(batch);
        let ids: Vec<u64> = (0..n).map(|_| rng.gen_range(0..keys)).collect();
        stretch.process(&mut inst, &batch_of(ids.iter().copied())).await?;
        ids.into_iter().for_each(&mut count);
        left -= n;
    }
    stretch.end(&mut run.steady);
    run.steady_checkpoint = ckpt.take(&mut inst).await?;
    if backend == Backend::Host {
        run.local_disk_bytes = inst.keyed_states().store().map(|s| s.disk_bytes());
    }

    // 3. 1 % of the keys change.
    let changed = (keys / 100).max(1);
    let step = keys / changed;
    let ids: Vec<u64> = (0..changed).map(|i| i * step).collect();
    let mut stretch = Stretch::start();
    for chunk in ids.chunks(batch as usize) {
        stretch.process(&mut inst, &batch_of(chunk.iter().copied())).await?;
    }
    ids.into_iter().for_each(&mut count);
    run.changed = ckpt.take(&mut inst).await?;
    drop(inst);

    // 4. Read every chain, then restore into a fresh instance.
    let chains: Vec<Vec<u64>> = ckpt.chains.values().cloned().collect();
    let started = Instant::now();
    let mut bytes = 0u64;
    let _ = store.visit_chains(JOB, &chains, &mut |_, key, value| {
        bytes += (key.len() + value.len()) as u64;
        ControlFlow::Continue(())
    })?;
    run.read_seconds = started.elapsed().as_secs_f64();
    run.state_bytes = bytes;
    let mut fresh = instance(module, &store, limits).await?;
    let version = fresh.describe().await?.state_version;
    let storage: Arc<dyn CheckpointStorage> = Arc::new(store.clone());
    let (cpu0, started) = (cpu_seconds("self"), Instant::now());
    restore_chains(&mut fresh, version, storage, JOB.into(), chains, RESTORE_CHUNK_BYTES).await?;
    run.restore_seconds = started.elapsed().as_secs_f64();
    run.restore_cpu = cpu_seconds("self") - cpu0;
    fresh.open(&context(backend, o.pad, true)).await?;
    // The restored instance counts on from where the first one stopped.
    let out = fresh.process(0, &batch_of(0..expected.len() as u64)).await?;
    for (record, want) in out.iter().zip(&expected) {
        let (id, got): (u64, u64) = rmp_serde::from_slice(record.value)?;
        anyhow::ensure!(
            got == want + 1,
            "{} backend: key {id} counts {got} after the restore, not {}",
            backend.name(),
            want + 1
        );
    }
    Ok(run)
}

/// Every key count, `runs` runs of each backend, the backends alternating which goes first.
pub async fn run(host: &Arc<GuestHost>, o: &StateBenchOptions) -> anyhow::Result<Vec<StateRun>> {
    let module = LocalModules::new(host.clone(), ".").load("builtin:counter").map_err(anyhow::Error::msg)?;
    let mut out = Vec::new();
    for &keys in o.keys.iter().filter(|&&k| k > 0) {
        for r in 0..o.runs.max(1) {
            let mut order = o.backends.clone();
            if r % 2 == 1 {
                order.reverse();
            }
            for backend in order {
                eprintln!("  {keys} keys, run {}, {} backend", r + 1, backend.name());
                let dir = o.dir.join(format!("{}-{keys}", backend.name()));
                let result = run_one(&module, o, backend, keys, &dir).await?;
                eprintln!("    {}", summary(&result));
                out.push(result);
            }
        }
    }
    Ok(out)
}

/// One line per run (stderr while the bench goes).
fn summary(r: &StateRun) -> String {
    if let Some((at, e)) = &r.failed {
        return format!("failed after {at} keys: {e}");
    }
    format!(
        "load {:.0} k/CPU-s, steady {:.0} k/CPU-s, full {:.1} MiB, checkpoint of {} changed keys sync {:.1} ms async {:.1} ms {:.2} MiB, restore {:.0} MiB/s",
        r.load.per_cpu() / 1e3,
        r.steady.per_cpu() / 1e3,
        mib(r.full_bytes()),
        r.changed.keys,
        r.changed.sync_ms,
        r.changed.async_ms,
        mib(r.changed.bytes),
        r.restore_rate()
    )
}

/// Runs the benchmark and prints its tables.
pub async fn run_and_print(host: &Arc<GuestHost>, o: &StateBenchOptions) -> anyhow::Result<()> {
    let runs = run(host, o).await?;
    println!(
        "Keyed count (builtin:counter), state in guest memory vs on the host's local store: values of ~{} bytes, {} records per batch, load checkpointed every {} records, {} steady records on random keys, instance memory limit {} MiB; medians of {} runs, backends alternating:",
        o.pad + 14,
        o.batch,
        o.checkpoint_records,
        o.steady_records,
        o.memory_mib,
        o.runs.max(1)
    );
    for &keys in o.keys.iter().filter(|&&k| k > 0) {
        print_keys(keys, &runs);
    }
    Ok(())
}

fn print_keys(keys: u64, runs: &[StateRun]) {
    let of = |b: Backend| runs.iter().filter(|r| r.keys == keys && r.backend == b).collect::<Vec<_>>();
    let (guest, host) = (of(Backend::Guest), of(Backend::Host));
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "backend",
        "load records/s",
        "load per CPU-s",
        "steady records/s",
        "steady per CPU-s",
        "full checkpoint",
        "1 % changed: sync / async, written",
        "restore MiB/s (per CPU-s)",
        "local store on disk",
    ]);
    let mut failures = Vec::new();
    for (backend, rs) in [(Backend::Guest, &guest), (Backend::Host, &host)] {
        if rs.is_empty() {
            continue;
        }
        let ok: Vec<&&StateRun> = rs.iter().filter(|r| r.failed.is_none()).collect();
        if ok.is_empty() {
            let failed = rs.iter().find_map(|r| r.failed.as_ref());
            let cell = failed.map_or(String::new(), |(at, _)| format!("fails after {at} keys"));
            table.add_row(vec![backend.name().to_string(), cell]);
            failures.extend(failed.map(|(_, e)| format!("  {}: {e}", backend.name())));
            continue;
        }
        let m = |f: &dyn Fn(&StateRun) -> f64| median(ok.iter().map(|r| f(r)).collect());
        let k = |v: f64| format!("{:.0} k", v / 1e3);
        table.add_row(vec![
            backend.name().to_string(),
            k(m(&|r| r.load.rate())),
            k(m(&|r| r.load.per_cpu())),
            k(m(&|r| r.steady.rate())),
            k(m(&|r| r.steady.per_cpu())),
            format!(
                "{:.1} MiB ({} checkpoints, sync {:.0} ms, async {:.0} ms)",
                m(&|r| mib(r.full_bytes())),
                ok[0].load_checkpoints.len(),
                m(&|r| r.load_checkpoints.iter().map(|c| c.sync_ms).sum()),
                m(&|r| r.load_checkpoints.iter().map(|c| c.async_ms).sum()),
            ),
            format!(
                "{:.1} / {:.1} ms, {:.2} MiB",
                m(&|r| r.changed.sync_ms),
                m(&|r| r.changed.async_ms),
                m(&|r| mib(r.changed.bytes))
            ),
            format!(
                "{:.0} ({:.0})",
                m(&|r| r.restore_rate()),
                m(&|r| mib(r.state_bytes) / r.restore_cpu.max(0.01))
            ),
            match m(&|r| r.local_disk_bytes.map_or(f64::NAN, mib)) {
                v if v.is_nan() => "-".to_string(),
                v => format!("{v:.1} MiB"),
            },
        ]);
    }
    let live = median(
        host.iter().chain(&guest).filter(|r| r.failed.is_none()).map(|r| mib(r.state_bytes)).collect(),
    );
    println!("{keys} keys ({live:.1} MiB of live state):");
    println!("{table}");
    for f in failures {
        println!("{f}");
    }
    // Ratios of runs made back to back (run i of each backend).
    let pairs: Vec<(&StateRun, &StateRun)> = guest
        .iter()
        .zip(&host)
        .filter(|(g, h)| g.failed.is_none() && h.failed.is_none())
        .map(|(g, h)| (*g, *h))
        .collect();
    if pairs.is_empty() {
        println!("  host / guest: no pair of runs where both backends held the state");
        return;
    }
    let ratio = |f: &dyn Fn(&StateRun) -> f64| median(pairs.iter().map(|(g, h)| f(h) / f(g)).collect());
    println!(
        "  host / guest (median of paired runs): records per CPU-second load {:.2}, steady {:.2}; 1 % checkpoint sync {:.2}, async {:.2}, bytes {:.2}; full checkpoint bytes {:.2}; restore MiB/s {:.2}",
        ratio(&|r| r.load.per_cpu()),
        ratio(&|r| r.steady.per_cpu()),
        ratio(&|r| r.changed.sync_ms),
        ratio(&|r| r.changed.async_ms),
        ratio(&|r| r.changed.bytes as f64),
        ratio(&|r| r.full_bytes() as f64),
        ratio(&|r| r.restore_rate()),
    );
}
