//! `weir bench <suite>`: the benchmarks, each suite with its own flags. Every suite measures
//! its variants side by side in one run and prints ratios and per-core figures; the method
//! and the results are in docs/benchmarks.md. Build with `--release`.

mod backpressure;
mod checkpoints;
mod cluster;
mod kafka;
mod languages;
mod languages_e2e;
mod languages_state;
mod nexmark;
mod pipeline;
mod queries;
mod savepoints;
mod server;
mod state;

use std::path::{Path, PathBuf};

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use weir::guest::GuestHost;

/// A benchmark suite and its flags.
#[derive(clap::Subcommand)]
pub enum Suite {
    /// The Nexmark queries end to end (q0, q1, q2, q3, q4, q5, q7, q8, q11): the `nexmark`
    /// source → the query → blackhole at parallelism 1 and 2, events per second and per
    /// CPU-second, beside Flink's published per-core figures.
    Nexmark {
        /// A short run to see that everything works (100 k events, 1 run); the explicit flags
        /// below still apply where given.
        #[arg(long)]
        quick: bool,
        /// Events per run (q1 and q2: bids).
        #[arg(long)]
        events: Option<u64>,
        /// Runs of each variant (the median is reported).
        #[arg(long)]
        runs: Option<usize>,
        /// The queries.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "q0,q1,q2,q3,q4,q5,q7,q8,q11")]
        queries: Vec<queries::Query>,
        /// The parallelisms.
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        parallelism: Vec<u32>,
    },
    /// Nexmark q1/q2 records per second per core in one operator, Wasm versus native.
    Operators {
        /// Bids per measured pass.
        #[arg(long, default_value_t = 65_536)]
        records: usize,
        /// Minimum seconds per measurement.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
    },
    /// Throughput with and without checkpoints, checkpoint size and duration against state
    /// size, incremental bytes written, restore speed.
    Checkpoints {
        /// Records of the throughput job.
        #[arg(long, default_value_t = 20_000_000)]
        job_records: u64,
        /// Distinct keys of the throughput job.
        #[arg(long, default_value_t = 100_000)]
        job_keys: u64,
        /// Runs of each throughput variant.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Key counts for size and duration against state size.
        #[arg(long, value_delimiter = ',', default_value = "10000,100000,500000")]
        state_keys: Vec<u64>,
        /// Keys of the incremental benchmark (1 GiB of state at 1 KiB values).
        #[arg(long, default_value_t = 1_000_000)]
        incremental_keys: u64,
        /// Bytes per state value.
        #[arg(long, default_value_t = 1000)]
        value_bytes: usize,
    },
    /// Checkpoints under full backpressure (a sink slower than the source): duration
    /// p50/p99, timeouts and persisted in-flight bytes, aligned vs unaligned vs aligned with
    /// an aligned timeout; and records per CPU-second unaligned vs aligned without
    /// backpressure.
    Backpressure {
        /// A short run to see that everything works (small buffers, few checkpoints and
        /// records); the explicit flags below still apply where given.
        #[arg(long)]
        quick: bool,
        /// Seconds each mode may run under backpressure.
        #[arg(long)]
        seconds: Option<f64>,
        /// Completed checkpoints after which a mode stops early.
        #[arg(long)]
        checkpoints: Option<usize>,
        /// `settings.channel_capacity` (batches).
        #[arg(long)]
        channel_capacity: Option<usize>,
        /// Records per source batch.
        #[arg(long, default_value_t = 200)]
        batch_size: usize,
        /// The sink's pause per batch, ms.
        #[arg(long)]
        pause_ms: Option<u64>,
        /// Distinct keys.
        #[arg(long, default_value_t = 10_000)]
        keys: u64,
        /// Wait between the end of a checkpoint and the next trigger, ms.
        #[arg(long, default_value_t = 200)]
        interval_ms: u64,
        /// The checkpoint timeout (`timeout_ms`), ms.
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u64,
        /// `aligned_timeout_ms` of the third mode.
        #[arg(long, default_value_t = 100)]
        aligned_timeout_ms: u64,
        /// Records of each run without backpressure.
        #[arg(long)]
        records: Option<u64>,
        /// Runs of each mode without backpressure (the median is reported).
        #[arg(long)]
        runs: Option<usize>,
        /// Checkpoint interval of the runs without backpressure, ms.
        #[arg(long, default_value_t = 200)]
        throughput_interval_ms: u64,
    },
    /// Savepoint copy, export, import and restore (rescaled or not) against reading the
    /// checkpoint.
    Savepoints {
        /// Keys of the state.
        #[arg(long, default_value_t = 200_000)]
        keys: u64,
        /// Bytes per state value.
        #[arg(long, default_value_t = 1000)]
        value_bytes: usize,
    },
    /// Instantiation, memory per idle instance, API latency over a long history, a quiet
    /// tenant beside a noisy one.
    Server {
        /// Operator instances created.
        #[arg(long, default_value_t = 200)]
        instances: usize,
        /// Checkpoints in the listed history.
        #[arg(long, default_value_t = 10_000)]
        history: u64,
        /// Requests per latency figure.
        #[arg(long, default_value_t = 20)]
        requests: usize,
        /// Seconds per throughput measurement.
        #[arg(long, default_value_t = 5.0)]
        window: f64,
        /// Lines per second of the quiet tenant's job.
        #[arg(long, default_value_t = 20_000)]
        quiet_rate: u64,
    },
    /// Nexmark q1 from Kafka to Kafka (`exactly_once`, `at_least_once`) beside the stream
    /// log, through a Tansu broker the bench starts (`WEIR_TANSU` or the tests' cache path).
    Kafka {
        /// Bids in the input topic.
        #[arg(long, default_value_t = 200_000)]
        records: usize,
        /// Runs of each variant (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Whole jobs end to end: Nexmark bids as JSON lines → q0/q1/q2 → blackhole at
    /// parallelism 1 and 2, with and without 1 s checkpoints, records per second and per
    /// CPU-second; and stream log → q1 → stream log with 1 s checkpoints.
    Pipeline {
        /// A short run to see that everything works (200 k bids, 1 run, 100 k stream bids);
        /// the explicit flags below still apply where given.
        #[arg(long)]
        quick: bool,
        /// Bids in the JSON-lines input (generated once, cached under ~/.cache/weir/bench).
        #[arg(long)]
        bids: Option<u64>,
        /// Runs of each variant (the median is reported).
        #[arg(long)]
        runs: Option<usize>,
        /// Queries of the file pipeline.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "q0,q1,q2")]
        queries: Vec<pipeline::Query>,
        /// Parallelisms of the file pipeline.
        #[arg(long, value_delimiter = ',', default_value = "1,2")]
        parallelism: Vec<u32>,
        /// Only runs without checkpoints.
        #[arg(long, conflicts_with = "only_checkpointed")]
        only_plain: bool,
        /// Only runs with 1 s checkpoints.
        #[arg(long)]
        only_checkpointed: bool,
        /// Bids of the stream-log path (0 skips it).
        #[arg(long)]
        stream_bids: Option<u64>,
        /// Only the stream-log path (no file pipeline).
        #[arg(long)]
        only_stream: bool,
    },
    /// One Nexmark job on 1, 2, 4 … workers (issue 22), each worker a `weir worker` process
    /// held to the same CPU share by a cgroup quota: events per second against one worker,
    /// per CPU-second, checkpoint duration and bytes. Needs root (cgroups).
    Cluster {
        /// The numbers of workers.
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        workers: Vec<usize>,
        /// Each worker's CPU share, in cores. 0.25 leaves a 2-core machine room for the
        /// controller, the kernel's network work and the bench itself beside 4 workers (at
        /// 0.4, 4 workers got 1.40 of their 1.6 cores).
        #[arg(long, default_value_t = 0.25)]
        cpu: f64,
        /// Events per run.
        #[arg(long, default_value_t = 2_000_000)]
        events: u64,
        /// The query.
        #[arg(long, value_enum, default_value = "q5")]
        query: queries::Query,
        /// Runs of each variant (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Runs every worker count twice, plain TCP and mutual TLS (`cluster.tls`, with a CA
        /// and a certificate the `openssl` command makes), round robin, and reports what TLS
        /// costs.
        #[arg(long)]
        tls: bool,
    },
    /// Keyed state in guest memory versus on the host's local store (issue 21): the keyed
    /// count's records per second and per CPU-second while loading the keys and on random
    /// keys, checkpoint duration and size, restore speed. Data goes under the data directory
    /// (~3 × keys × value bytes of disk) and is deleted after each run.
    State {
        /// Key counts (`1000000,50000000` for state that does not fit an instance's memory;
        /// the 50 M run needs ~40 GB free and hours: see docs/benchmarks.md).
        #[arg(long, value_delimiter = ',', default_value = "1000000")]
        keys: Vec<u64>,
        /// The backends (both for the ratios; one alone to profile it).
        #[arg(long, value_enum, value_delimiter = ',', default_value = "guest,host")]
        backends: Vec<state::Backend>,
        /// Runs of each backend per key count (medians are reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Padding bytes stored with each count (values of ~pad + 14 bytes).
        #[arg(long, default_value_t = 190)]
        pad: usize,
        /// Records per batch.
        #[arg(long, default_value_t = 1024)]
        batch: usize,
        /// Records on random keys after the load.
        #[arg(long, default_value_t = 1_000_000)]
        steady_records: u64,
        /// The load is checkpointed every this many records (and at its end).
        #[arg(long, default_value_t = 8_000_000)]
        checkpoint_records: u64,
        /// The operator instance's memory limit, MiB.
        #[arg(long, default_value_t = 1024)]
        memory_mib: usize,
    },
    /// Nexmark q1, word count and Nexmark q17 per core in Python, JavaScript and C beside
    /// Rust.
    Languages {
        /// `NAME=DIR`, a language's build directory holding `nexmark-q1.wasm`,
        /// `wordcount.wasm`, `nexmark-q17.wasm` and optionally `<name>-records.wasm`
        /// variants on the per-record API (repeatable; default: `examples/{python,js,c}/build`
        /// where they exist).
        #[arg(long = "lang", value_name = "NAME=DIR")]
        languages: Vec<String>,
        /// Records per measured pass.
        #[arg(long, default_value_t = 65_536)]
        records: usize,
        /// Records per batch.
        #[arg(long, default_value_t = 1024)]
        batch: usize,
        /// Minimum seconds per measurement.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        /// Bids of the end-to-end q1 runs (file of JSON bids → q1 → blackhole, parallelism
        /// 1, per language); 0 skips them.
        #[arg(long, default_value_t = 500_000)]
        end_to_end_bids: u64,
        /// Rounds of the end-to-end runs and of the state measurements (medians are
        /// reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Keys of the q17 state snapshotted and restored per language (plain and through
        /// state documents); 0 skips it.
        #[arg(long, default_value_t = 10_000)]
        state_keys: u64,
    },
}

/// Runs a suite; scratch data goes under `data_dir`.
pub async fn run(data_dir: &Path, suite: Suite) -> anyhow::Result<()> {
    let host = GuestHost::new(Some(data_dir.join("module-cache")))?;
    match suite {
        Suite::Operators { records, seconds } => nexmark_table(&host, records, seconds).await,
        Suite::Nexmark { quick, events, runs, queries, parallelism } => {
            let options = queries::QueryBenchOptions {
                events: events.unwrap_or(if quick { 100_000 } else { 5_000_000 }).max(1),
                runs: runs.unwrap_or(if quick { 1 } else { 3 }).max(1),
                queries,
                parallelisms: parallelism.into_iter().filter(|p| *p > 0).collect(),
            };
            queries::run_and_print(&host, &options).await
        }
        Suite::Languages { languages, records, batch, seconds, end_to_end_bids, runs, state_keys } => {
            let dirs = languages_table(&host, languages, records, batch, seconds).await?;
            if state_keys > 0 {
                let results = languages_state::run(&host, &dirs, state_keys, runs).await?;
                print_state_costs(state_keys, runs, &results);
            }
            if end_to_end_bids > 0 {
                let cache = pipeline::default_cache(data_dir);
                let results = languages_e2e::run(&host, &dirs, end_to_end_bids, runs, &cache).await?;
                print_end_to_end(end_to_end_bids, runs, &results);
            }
            Ok(())
        }
        Suite::Checkpoints { job_records, job_keys, runs, state_keys, incremental_keys, value_bytes } => {
            let dir = data_dir.join("bench");
            let options = checkpoints::CheckpointBenchOptions {
                records: job_records,
                keys: job_keys,
                runs: runs.max(1),
                state_keys,
                incremental_keys,
                value_bytes,
                dir: dir.clone(),
            };
            checkpoints::run_and_print(&host, &options).await?;
            let _ = std::fs::remove_dir_all(&dir);
            Ok(())
        }
        Suite::Backpressure {
            quick,
            seconds,
            checkpoints,
            channel_capacity,
            batch_size,
            pause_ms,
            keys,
            interval_ms,
            timeout_ms,
            aligned_timeout_ms,
            records,
            runs,
            throughput_interval_ms,
        } => {
            // `--quick`: small buffers (1 s of data), few checkpoints and records.
            let q = |full: u64, short: u64| if quick { short } else { full };
            let options = backpressure::BackpressureBenchOptions {
                cap: std::time::Duration::from_secs_f64(seconds.unwrap_or(q(150, 20) as f64).max(1.0)),
                checkpoints: checkpoints.unwrap_or(q(25, 5) as usize).max(1),
                warmup: std::time::Duration::from_secs(q(3, 1)),
                channel_capacity: channel_capacity.unwrap_or(q(128, 16) as usize).max(1),
                batch_size: batch_size.max(2),
                pause_ms: pause_ms.unwrap_or(q(50, 20)),
                keys: keys.max(1),
                interval: std::time::Duration::from_millis(interval_ms),
                timeout_ms,
                aligned_timeout_ms,
                records: records.unwrap_or(q(4_000_000, 200_000)).max(1),
                runs: runs.unwrap_or(q(5, 2) as usize).max(1),
                throughput_interval_ms: throughput_interval_ms.max(1),
                dir: data_dir.join("bench-backpressure"),
            };
            backpressure::run_and_print(&host, &options).await?;
            let _ = std::fs::remove_dir_all(&options.dir);
            Ok(())
        }
        Suite::Savepoints { keys, value_bytes } => {
            let options = savepoints::SavepointBenchOptions {
                keys,
                value_bytes,
                dir: data_dir.join("bench-savepoints"),
            };
            savepoints::run_and_print(&host, &options).await
        }
        Suite::Kafka { records, runs } => {
            let options = kafka::KafkaBenchOptions {
                records: records.max(1),
                runs: runs.max(1),
                dir: data_dir.join("bench-kafka"),
            };
            kafka_table(&host, &options).await?;
            let _ = std::fs::remove_dir_all(&options.dir);
            Ok(())
        }
        Suite::Pipeline {
            quick,
            bids,
            runs,
            queries,
            parallelism,
            only_plain,
            only_checkpointed,
            stream_bids,
            only_stream,
        } => {
            let options = pipeline::PipelineBenchOptions {
                bids: bids.unwrap_or(if quick { 200_000 } else { 5_000_000 }).max(1),
                runs: runs.unwrap_or(if quick { 1 } else { 3 }).max(1),
                queries,
                parallelisms: parallelism.into_iter().filter(|p| *p > 0 && !only_stream).collect(),
                plain: !only_checkpointed,
                checkpointed: !only_plain,
                stream_bids: stream_bids.unwrap_or(if quick { 100_000 } else { 1_000_000 }),
                cache: pipeline::default_cache(data_dir),
                dir: data_dir.join("bench-pipeline"),
            };
            pipeline::run_and_print(&host, &options).await?;
            let _ = std::fs::remove_dir_all(&options.dir);
            Ok(())
        }
        Suite::Cluster { workers, cpu, events, query, runs, tls } => {
            let options = cluster::ClusterBenchOptions {
                workers: workers.into_iter().filter(|n| *n > 0).collect(),
                cpu,
                events: events.max(1000),
                query,
                runs: runs.max(1),
                tls,
            };
            cluster::run_and_print(data_dir, &options).await
        }
        Suite::State { keys, backends, runs, pad, batch, steady_records, checkpoint_records, memory_mib } => {
            let options = state::StateBenchOptions {
                keys,
                backends,
                runs: runs.max(1),
                pad,
                batch: batch.max(1),
                steady_records,
                checkpoint_records: checkpoint_records.max(1),
                memory_mib: memory_mib.max(1),
                dir: data_dir.join("bench-state"),
            };
            let result = state::run_and_print(&host, &options).await;
            let _ = std::fs::remove_dir_all(&options.dir);
            result
        }
        Suite::Server { instances, history, requests, window, quiet_rate } => {
            let options = server::ServerBenchOptions {
                dir: data_dir.join("bench-server"),
                instances: instances.max(1),
                checkpoints: history,
                requests: requests.max(1),
                seconds: window,
                quiet_rate,
            };
            server::run_and_print(&options).await
        }
    }
}

async fn nexmark_table(host: &GuestHost, records: usize, seconds: f64) -> anyhow::Result<()> {
    let results = nexmark::run(host, records, std::time::Duration::from_secs_f64(seconds)).await?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "query",
        "batch",
        "wasm records/s",
        "native records/s",
        "wasm / native",
    ]);
    for r in &results {
        table.add_row([
            r.query.to_string(),
            r.batch_size.to_string(),
            format!("{:.2} M", r.wasm / 1e6),
            format!("{:.2} M", r.native / 1e6),
            format!("{:.2}", r.wasm / r.native),
        ]);
    }
    println!("Nexmark bids, one core (one operator instance, current-thread runtime):");
    println!("{table}");
    Ok(())
}

async fn kafka_table(
    host: &std::sync::Arc<GuestHost>,
    options: &kafka::KafkaBenchOptions,
) -> anyhow::Result<()> {
    let results = kafka::run(host, options).await?;
    let rate = |v: kafka::Variant| results.iter().find(|r| r.variant == v).map_or(f64::NAN, |r| r.rate);
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "q1 job",
        "records/s",
        "per CPU-s (weir)",
        "per CPU-s (weir + broker)",
        "checkpoints/run",
        "checkpoint ms median / max",
        "each run, k records/s",
    ]);
    for r in &results {
        table.add_row([
            r.variant.name().to_string(),
            format!("{:.0} k", r.rate / 1e3),
            format!("{:.0} k", r.per_cpu / 1e3),
            format!("{:.0} k", r.per_cpu_with_broker / 1e3),
            r.checkpoints.to_string(),
            format!("{:.1} / {:.1}", r.checkpoint_median_ms, r.checkpoint_max_ms),
            r.runs.iter().map(|x| format!("{:.0}", x / 1e3)).collect::<Vec<_>>().join(", "),
        ]);
    }
    println!(
        "Nexmark q1, {} bids, parallelism 1, checkpoints every 1 s, median of {} runs (records/s: start to output readable):",
        options.records, options.runs
    );
    println!("{table}");
    let eo = rate(kafka::Variant::ExactlyOnce);
    println!(
        "exactly_once / at_least_once: {:.2}; exactly_once / stream log: {:.2}",
        eo / rate(kafka::Variant::AtLeastOnce),
        eo / rate(kafka::Variant::Stream)
    );
    Ok(())
}

/// The per-core table; returns the language directories it measured.
async fn languages_table(
    host: &GuestHost,
    languages: Vec<String>,
    records: usize,
    batch_size: usize,
    seconds: f64,
) -> anyhow::Result<Vec<(String, PathBuf)>> {
    let dirs: Vec<(String, PathBuf)> = if languages.is_empty() {
        ["python", "js", "c"]
            .into_iter()
            .map(|l| (l.to_string(), PathBuf::from(format!("examples/{l}/build"))))
            .filter(|(_, d)| d.is_dir())
            .collect()
    } else {
        languages
            .iter()
            .map(|l| match l.split_once('=') {
                Some((name, dir)) => Ok((name.to_string(), PathBuf::from(dir))),
                None => Err(anyhow::anyhow!("--lang takes NAME=DIR, got `{l}`")),
            })
            .collect::<Result<_, _>>()?
    };
    if dirs.is_empty() {
        println!(
            "no language builds found: build them with examples/<lang>/build.sh, or pass --lang NAME=DIR"
        );
    }
    for (name, dir) in &dirs {
        let any = languages::WORKLOADS.iter().any(|(_, c)| dir.join(format!("{c}.wasm")).is_file());
        anyhow::ensure!(
            any,
            "{name}: {} holds none of nexmark-q1.wasm, wordcount.wasm, nexmark-q17.wasm",
            dir.display()
        );
    }
    let options = languages::LanguageBenchOptions {
        languages: dirs.clone(),
        records,
        batch_size,
        min: std::time::Duration::from_secs_f64(seconds),
    };
    let results = languages::run(host, &options).await?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "workload",
        "language",
        "records/s",
        "vs Rust",
        "encoded batches",
        "component",
    ]);
    for r in &results {
        let rust = results.iter().find(|x| x.workload == r.workload && x.language == "rust").map(|x| x.rate);
        table.add_row([
            r.workload.to_string(),
            r.language.clone(),
            format!("{:.0} k", r.rate / 1e3),
            rust.map(|rust| format!("{:.3}", r.rate / rust)).unwrap_or_default(),
            format!("{:.0} %", r.encoded * 100.0),
            if r.size >= 1_000_000 {
                format!("{:.1} MB", r.size as f64 / 1e6)
            } else {
                format!("{} KB", r.size / 1000)
            },
        ]);
    }
    println!(
        "One operator instance per module, one core, {batch_size} records per batch, {records} records per pass:"
    );
    println!("{table}");
    Ok(dirs)
}

fn print_state_costs(keys: u64, runs: usize, results: &[languages_state::StateCost]) {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "language",
        "snapshot, plain",
        "snapshot, as in a job",
        "restore, plain",
        "restore, as in a job",
        "as in a job =",
    ]);
    for r in results {
        let us = |v: f64| format!("{v:.2} µs");
        table.add_row([
            r.language.clone(),
            us(r.snapshot_plain),
            us(r.snapshot_doc),
            us(r.restore_plain),
            us(r.restore_doc),
            (if r.documents { "state documents" } else { "plain" }).to_string(),
        ]);
    }
    println!(
        "Nexmark q17 state: a snapshot of {keys} changed keys and its restore, per entry, median of {runs} runs of each, alternating:"
    );
    println!("{table}");
}

fn print_end_to_end(bids: u64, runs: usize, results: &[languages_e2e::EndToEnd]) {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "language",
        "records/s",
        "per CPU-s",
        "× PyFlink process mode (127 K)",
        "× PyFlink thread mode (376 K)",
        "each run, records/s",
    ]);
    for r in results {
        let fmt = |v: f64| format!("{:.0} K", v / 1e3);
        table.add_row([
            r.language.clone(),
            fmt(r.rate),
            fmt(r.per_cpu),
            format!("{:.2}", r.rate / languages_e2e::PYFLINK[0].1),
            format!("{:.2}", r.rate / languages_e2e::PYFLINK[1].1),
            r.runs.iter().map(|x| fmt(*x)).collect::<Vec<_>>().join(", "),
        ]);
    }
    println!(
        "Nexmark q1 end to end: {bids} JSON bids, file → q1 → blackhole, parallelism 1, no checkpoints, median of {runs} runs \
         (PyFlink: q1 with the price conversion as a Python UDF, from issue 20, same machine and data):"
    );
    println!("{table}");
}
