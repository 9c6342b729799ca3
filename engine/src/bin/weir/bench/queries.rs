//! `weir bench nexmark`: the Nexmark queries Weir has, end to end (issue 19). Each run is a
//! job in this process, as `weir run` runs it: the `nexmark` source (generating the events,
//! as Flink's Nexmark datagen does inside the job) → the query's operators → blackhole, at
//! parallelism 1 and 2, without checkpoints. q0 is the source alone; q1 and q2 read the bid
//! stream (`builtin:nexmark-q1`/`-q2`); q3, q4, q5, q7, q8 and q11 read the mixed stream
//! (persons, auctions, bids 1 : 3 : 46) through `builtin:nexmark`. Events per second divide
//! the events the source emitted by the wall time; events per CPU-second by the user + system
//! CPU time of the whole process over the run. Each figure is the median of `runs` runs made
//! round robin.

use std::sync::Arc;
use std::time::Instant;

use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use serde_json::{Value, json};

use weir::guest::GuestHost;
use weir::modules::LocalModules;
use weir::plan::JobSpec;
use weir::runtime::run_job;

use super::kafka::cpu_seconds;

/// A Nexmark query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Query {
    /// The source alone (mixed stream).
    Q0,
    /// Currency conversion (bids).
    Q1,
    /// Selection (bids).
    Q2,
    /// Local item suggestion: a join.
    Q3,
    /// Average price per category: a join, then an average.
    Q4,
    /// Hot items: a sliding window.
    Q5,
    /// Highest bid: a tumbling window.
    Q7,
    /// Monitor new users: a window join.
    Q8,
    /// User sessions: session windows.
    Q11,
}

impl Query {
    pub(super) fn name(self) -> &'static str {
        match self {
            Query::Q0 => "q0",
            Query::Q1 => "q1",
            Query::Q2 => "q2",
            Query::Q3 => "q3",
            Query::Q4 => "q4",
            Query::Q5 => "q5",
            Query::Q7 => "q7",
            Query::Q8 => "q8",
            Query::Q11 => "q11",
        }
    }

    /// Flink's own Nexmark figures per core, events per second, where the issue quotes them
    /// (not measured on this machine).
    fn flink_per_core(self) -> Option<f64> {
        match self {
            Query::Q5 => Some(22e3),
            Query::Q7 => Some(12e3),
            _ => None,
        }
    }

    /// The source's key per event type, and the `builtin:nexmark` stages with the
    /// partitioning of the edge into each.
    fn plan(self) -> (Value, Vec<(&'static str, &'static str)>) {
        let keyed = |bid: &str, auction: &str, person: &str| json!({ "bid": bid, "auction": auction, "person": person });
        match self {
            Query::Q0 | Query::Q1 | Query::Q2 => (Value::Null, vec![]),
            Query::Q3 => (keyed("auction", "seller", "id"), vec![("q3", "hash")]),
            Query::Q4 => (keyed("auction", "id", "id"), vec![("q4-winning", "hash"), ("q4-average", "hash")]),
            Query::Q5 => (keyed("auction", "id", "id"), vec![("q5-count", "hash"), ("q5-hot", "hash")]),
            Query::Q7 => (Value::Null, vec![("q7-partial", "forward"), ("q7-final", "hash")]),
            Query::Q8 => (keyed("bidder", "seller", "id"), vec![("q8", "hash")]),
            Query::Q11 => (keyed("bidder", "id", "id"), vec![("q11", "hash")]),
        }
    }
}

/// What the suite runs.
#[derive(Debug, Clone)]
pub struct QueryBenchOptions {
    /// Events the source generates (for q1 and q2: bids).
    pub events: u64,
    /// Runs of each variant (the median is reported).
    pub runs: usize,
    /// The queries.
    pub queries: Vec<Query>,
    /// The parallelisms.
    pub parallelisms: Vec<u32>,
}

/// The job of `query` at `parallelism` over `events` events.
pub fn job(query: Query, parallelism: u32, events: u64) -> anyhow::Result<JobSpec> {
    let (key, stages) = query.plan();
    let bids = matches!(query, Query::Q1 | Query::Q2);
    let mut source = json!({ "event_type": if bids { "bid" } else { "mixed" }, "count": events,
                             "batch_size": 1024, "out_of_orderness_ms": 0 });
    if !key.is_null() {
        source["key"] = key;
    }
    let mut nodes = vec![json!({ "id": "events", "kind": "source", "connector": "nexmark",
                                 "parallelism": parallelism, "config": source })];
    let mut edges = Vec::new();
    let mut from = "events".to_string();
    let mut stage = |id: &str, module: &str, config: Value, partitioning: &str| {
        nodes.push(json!({ "id": id, "kind": "operator", "module": module, "parallelism": parallelism,
                           "config": config }));
        edges.push(json!({ "from": from, "to": id, "partitioning": partitioning }));
        from = id.to_string();
    };
    match query {
        Query::Q1 => stage("q1", "builtin:nexmark-q1", json!({}), "forward"),
        Query::Q2 => stage("q2", "builtin:nexmark-q2", json!({}), "forward"),
        _ => {
            for (name, partitioning) in stages {
                stage(name, "builtin:nexmark", json!({ "stage": name }), partitioning);
            }
        }
    }
    nodes.push(json!({ "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": parallelism }));
    edges.push(json!({ "from": from, "to": "out", "partitioning": "forward" }));
    Ok(serde_json::from_value(
        json!({ "name": format!("nexmark-{}", query.name()), "nodes": nodes, "edges": edges }),
    )?)
}

/// The median of one variant.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// The query.
    pub query: Query,
    /// Its parallelism.
    pub parallelism: u32,
    /// Events per second (wall).
    pub per_second: f64,
    /// Events per CPU-second.
    pub per_cpu_second: f64,
    /// CPUs busy on average.
    pub cpus: f64,
}

/// Runs every variant `runs` times, round robin.
pub async fn run(host: &Arc<GuestHost>, o: &QueryBenchOptions) -> anyhow::Result<Vec<QueryResult>> {
    let variants: Vec<(Query, u32)> =
        o.queries.iter().flat_map(|q| o.parallelisms.iter().map(move |p| (*q, *p))).collect();
    let mut runs: Vec<Vec<(f64, f64)>> = variants.iter().map(|_| Vec::new()).collect();
    for round in 0..o.runs {
        for (i, &(q, p)) in variants.iter().enumerate() {
            let plan = weir::plan::plan(&job(q, p, o.events)?, &LocalModules::new(host.clone(), "."))?;
            let (cpu0, start) = (cpu_seconds("self"), Instant::now());
            let report = run_job(&plan).await?;
            let (seconds, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds("self") - cpu0);
            anyhow::ensure!(
                report.source_records() == o.events,
                "{}: the source emitted {} of {} events",
                q.name(),
                report.source_records(),
                o.events
            );
            eprintln!(
                "  run {round} {}-p{p}: {:>7.0} k events/s, {:>7.0} k per CPU-s ({:.2} CPUs)",
                q.name(),
                o.events as f64 / seconds / 1e3,
                o.events as f64 / cpu.max(1e-9) / 1e3,
                cpu / seconds
            );
            runs[i].push((seconds, cpu));
        }
    }
    Ok(variants
        .iter()
        .zip(runs)
        .map(|(&(query, parallelism), mut r)| {
            let seconds = median(r.iter_mut().map(|x| x.0).collect());
            let cpu = median(r.iter().map(|x| x.1).collect());
            QueryResult {
                query,
                parallelism,
                per_second: o.events as f64 / seconds,
                per_cpu_second: o.events as f64 / cpu.max(1e-9),
                cpus: cpu / seconds,
            }
        })
        .collect())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the suite and prints its table.
pub async fn run_and_print(host: &Arc<GuestHost>, o: &QueryBenchOptions) -> anyhow::Result<()> {
    let results = run(host, o).await?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header([
        "query",
        "p",
        "events/s",
        "events per CPU-s",
        "CPUs",
        "Flink per core (published)",
        "× Flink per core",
    ]);
    for r in &results {
        let flink = r.query.flink_per_core();
        table.add_row([
            r.query.name().to_string(),
            r.parallelism.to_string(),
            format!("{:.0} K", r.per_second / 1e3),
            format!("{:.0} K", r.per_cpu_second / 1e3),
            format!("{:.2}", r.cpus),
            flink.map_or("—".into(), |f| format!("{:.0} K", f / 1e3)),
            flink.map_or("—".into(), |f| format!("{:.1}", r.per_cpu_second / f)),
        ]);
    }
    println!(
        "Nexmark end to end: {} events a run (q1, q2: bids), median of {} runs; source → query → blackhole, no checkpoints",
        o.events, o.runs
    );
    println!("{table}");
    println!(
        "Flink's figures are its own Nexmark results per core (quoted by issue 19), not measured on this \
         machine; the goal is 10× them for q5 and q7."
    );
    Ok(())
}
