//! Tenant A's side of the hostile-tenant suite: a pacer that feeds A's word count at a fixed
//! rate, a prober that times A's `GET /jobs/{id}` and `POST /jobs`, and a monitor that
//! samples the server process (resident memory, open file descriptors) and the data
//! directory. Every sample is tagged with the phase (attack) that was running.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server::Api;
use crate::server::wordcount::lines;

/// Lines A appends per request, and how often.
pub const PACE_LINES: u64 = 50;
pub const PACE_EVERY: Duration = Duration::from_millis(100);

/// One timed request of A.
#[derive(Debug, Clone)]
struct Sample {
    phase: usize,
    what: &'static str,
    took: Duration,
}

/// Peaks seen by the monitor during one phase.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    pub rss_bytes: u64,
    pub fds: u64,
    pub threads: u64,
    pub data_dir_bytes: u64,
}

#[derive(Default)]
struct Shared {
    phase: AtomicUsize,
    stop: AtomicBool,
    /// Lines appended so far (acknowledged).
    pushed: AtomicU64,
    samples: Mutex<Vec<Sample>>,
    peaks: Mutex<Vec<Peaks>>,
    /// The first failure of a background task (an answer A should not have had).
    failure: Mutex<Option<String>>,
}

impl Shared {
    fn fail(&self, message: String) {
        self.failure.lock().unwrap().get_or_insert(message);
    }

    fn record(&self, what: &'static str, took: Duration) {
        let phase = self.phase.load(Ordering::Relaxed);
        self.samples.lock().unwrap().push(Sample { phase, what, took });
    }
}

/// A's watchers, running until [`Watch::finish`].
pub struct Watch {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    a: Api,
    job: String,
}

/// What one phase measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub name: String,
    /// Lines per second A's job consumed during the phase (until it caught up with what
    /// was appended by the phase's end).
    pub throughput: f64,
    pub p99_get: Duration,
    pub p99_post: Duration,
    pub requests: usize,
    pub peaks: Peaks,
    pub took: Duration,
}

impl Watch {
    /// Starts the watchers of A's job `job` (already running on stream `lines`) against
    /// the server process `pid` with data directory `data_dir`. `pushed` lines are in the
    /// stream already.
    pub fn start(a: &Api, job: &str, pid: u32, data_dir: PathBuf, pushed: u64) -> Watch {
        let shared = Arc::new(Shared::default());
        shared.pushed.store(pushed, Ordering::Relaxed);
        shared.peaks.lock().unwrap().push(Peaks::default());
        let mut tasks = Vec::new();

        // The pacer: PACE_LINES lines every PACE_EVERY.
        let (s, api) = (shared.clone(), a.fresh());
        tasks.push(tokio::spawn(async move {
            let mut tick = tokio::time::interval(PACE_EVERY);
            while !s.stop.load(Ordering::Relaxed) {
                tick.tick().await;
                let from = s.pushed.load(Ordering::Relaxed);
                let body = json!({ "records": lines(from, from + PACE_LINES) });
                let t = Instant::now();
                let (status, v) = api.post("/api/v1/streams/lines/records", &body).await;
                if status != 201 {
                    s.fail(format!("A's append answered {status}: {v}"));
                    return;
                }
                s.record("append", t.elapsed());
                s.pushed.store(from + PACE_LINES, Ordering::Relaxed);
            }
        }));

        // The prober: GET /jobs/{id} every 50 ms, POST /jobs every tenth round.
        let (s, api, id) = (shared.clone(), a.fresh(), job.to_string());
        tasks.push(tokio::spawn(async move {
            let mut round = 0u64;
            while !s.stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let (status, v) = api.get(&format!("/api/v1/jobs/{id}")).await;
                if status != 200 || v["status"] != "running" {
                    s.fail(format!("A's GET /jobs/{id} answered {status}: {v}"));
                    return;
                }
                s.record("get_job", t.elapsed());
                if round.is_multiple_of(10) {
                    let t = Instant::now();
                    let (status, v) = api.post("/api/v1/jobs", &small_job(round)).await;
                    if status != 201 {
                        s.fail(format!("A's POST /jobs answered {status}: {v}"));
                        return;
                    }
                    s.record("post_job", t.elapsed());
                }
                round += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));

        // The monitor: the server's RSS and fds, and the data directory's size.
        let s = shared.clone();
        tasks.push(tokio::spawn(async move {
            while !s.stop.load(Ordering::Relaxed) {
                let dir = data_dir.clone();
                let now = tokio::task::spawn_blocking(move || Peaks {
                    rss_bytes: rss_bytes(pid),
                    fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count() as u64).unwrap_or(0),
                    threads: status_field(pid, "Threads:"),
                    data_dir_bytes: dir_bytes(&dir),
                })
                .await
                .unwrap();
                {
                    let mut peaks = s.peaks.lock().unwrap();
                    let phase = s.phase.load(Ordering::Relaxed);
                    let p = &mut peaks[phase];
                    p.rss_bytes = p.rss_bytes.max(now.rss_bytes);
                    p.fds = p.fds.max(now.fds);
                    p.threads = p.threads.max(now.threads);
                    p.data_dir_bytes = p.data_dir_bytes.max(now.data_dir_bytes);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }));
        Watch { shared, tasks, a: a.clone(), job: job.to_string() }
    }

    /// Lines appended so far.
    pub fn pushed(&self) -> u64 {
        self.shared.pushed.load(Ordering::Relaxed)
    }

    fn check(&self) {
        if let Some(f) = self.shared.failure.lock().unwrap().clone() {
            panic!("tenant A was hurt: {f}");
        }
    }

    /// Lines A's job has consumed (the `split` operator's input).
    pub async fn consumed(&self) -> u64 {
        let (status, v) = self.a.get(&format!("/api/v1/jobs/{}", self.job)).await;
        assert_eq!(status, 200, "{v}");
        let vertices = v["vertices"].as_array().expect("vertices");
        vertices.iter().find(|x| x["id"] == "split").and_then(|x| x["records_in"].as_u64()).expect("split")
    }

    /// Runs `attack` as phase `name` (at least `min` long), then waits until A's job has
    /// consumed every line appended until then; returns what A saw meanwhile.
    pub async fn phase(&self, name: &str, min: Duration, attack: impl Future<Output = ()>) -> Measured {
        let index = {
            let mut peaks = self.shared.peaks.lock().unwrap();
            peaks.push(Peaks::default());
            peaks.len() - 1
        };
        self.shared.phase.store(index, Ordering::Relaxed);
        let start = Instant::now();
        let before = self.consumed().await;
        eprintln!("--- phase {name}");
        tokio::join!(attack, tokio::time::sleep(min));
        let target = self.pushed();
        let deadline = Instant::now() + Duration::from_secs(120);
        let after = loop {
            self.check();
            let now = self.consumed().await;
            if now >= target {
                break now;
            }
            assert!(Instant::now() < deadline, "{name}: A's job is stuck at {now} of {target} lines");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let took = start.elapsed();
        self.check();
        let samples: Vec<Sample> =
            self.shared.samples.lock().unwrap().iter().filter(|s| s.phase == index).cloned().collect();
        let p99 = |what: &str| {
            let mut t: Vec<Duration> = samples.iter().filter(|s| s.what == what).map(|s| s.took).collect();
            t.sort();
            assert!(!t.is_empty(), "{name}: A made no {what} request");
            t[((t.len() * 99).div_ceil(100)).saturating_sub(1)]
        };
        Measured {
            name: name.to_string(),
            throughput: (after - before) as f64 / took.as_secs_f64(),
            p99_get: p99("get_job"),
            p99_post: p99("post_job"),
            requests: samples.len(),
            peaks: self.shared.peaks.lock().unwrap()[index],
            took,
        }
    }

    /// Stops the watchers; fails if one of them saw A hurt.
    pub async fn finish(mut self) -> u64 {
        self.shared.stop.store(true, Ordering::Relaxed);
        for t in std::mem::take(&mut self.tasks) {
            t.await.expect("a watcher panicked");
        }
        self.check();
        self.pushed()
    }
}

/// A's small job, created again and again: 100 numbers into a blackhole.
fn small_job(round: u64) -> Value {
    json!({
        "name": format!("a-probe-{round}"),
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 100 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "out" } ]
    })
}

/// Resident memory of process `pid`, from /proc.
pub fn rss_bytes(pid: u32) -> u64 {
    status_field(pid, "VmRSS:") * 1024
}

/// A number of /proc/`pid`/status (`VmRSS:` in kB, `Threads:`); 0 when it cannot be read.
fn status_field(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// Bytes of every file under `dir`.
pub fn dir_bytes(dir: &std::path::Path) -> u64 {
    crate::server::files(dir).values().sum()
}
