//! `weir bench cluster`: the same Nexmark job (the `nexmark` source → the query → blackhole,
//! parallelism = workers, every subtask on a worker) on 1, 2, 4 … workers, each worker held
//! to the same CPU share by a cgroup quota (`cpu.cfs_quota_us`, or `cpu.max` on cgroup v2)
//! so that a 2-core machine can show how throughput grows with workers.
//!
//! Each run starts a controller (`weir serve` with a cluster listener) and the workers as
//! child processes of this binary (one slot each), submits the job over the API, and measures
//! the steady part of the run: between the moments the source passed 10 % and 90 % of its
//! events (so that starting, compiling and the final checkpoint are left out), from the
//! source counters the workers report. CPU: the workers' and the controller's, from
//! `/proc/<pid>/stat` over the same window. Checkpoints (every second): their count, the
//! median duration and the bytes written, from the job's checkpoint history. With `--tls`,
//! each worker count runs again with every cluster connection over mutual TLS, side by side.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use serde_json::{Value, json};

use super::kafka::cpu_seconds;
use super::queries::{self, Query};

const ADMIN: &str = "bench-admin-token";
const TOKEN: &str = "bench-cluster-token-0123456789";
const WAIT: Duration = Duration::from_secs(120);

/// What the suite runs.
#[derive(Debug, Clone)]
pub struct ClusterBenchOptions {
    /// The numbers of workers.
    pub workers: Vec<usize>,
    /// Each worker's CPU share (cores).
    pub cpu: f64,
    /// Events per run.
    pub events: u64,
    /// The query.
    pub query: Query,
    /// Runs of each variant (the median is reported).
    pub runs: usize,
    /// Each worker count also over mutual TLS.
    pub tls: bool,
}

/// One run's figures.
#[derive(Debug, Clone, Default)]
struct RunFigures {
    per_second: f64,
    per_cpu_second: f64,
    worker_cpus: f64,
    controller_cpus: f64,
    checkpoints: u64,
    checkpoint_ms: f64,
    checkpoint_bytes: f64,
}

/// A child process whose output lines arrive on a channel.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(mut command: Command) -> anyhow::Result<Proc> {
        // WEIR_BENCH_LOG=1 shows the processes' logs.
        let logs =
            if std::env::var_os("WEIR_BENCH_LOG").is_some() { Stdio::inherit() } else { Stdio::null() };
        let mut child = command.stdout(Stdio::piped()).stderr(logs).spawn()?;
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().context("stdout")?;
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Proc { child, lines })
    }

    /// The rest of the first line starting with `prefix`.
    fn line(&self, prefix: &str) -> anyhow::Result<String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).with_context(|| format!("no line `{prefix}`"))?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest.trim().to_string());
            }
        }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CPU cgroup with a quota; removed on drop (after its processes are gone).
struct Cgroup {
    path: PathBuf,
    v2: bool,
}

impl Cgroup {
    fn create(name: &str, cpus: f64) -> anyhow::Result<Cgroup> {
        let period = 100_000u64;
        let quota = (cpus * period as f64).round() as u64;
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        let (path, v2) = if v1.join("cpu.cfs_quota_us").exists() {
            (v1.join(name), false)
        } else {
            (Path::new("/sys/fs/cgroup").join(name), true)
        };
        std::fs::create_dir_all(&path).with_context(|| {
            format!("cannot create the cgroup {} (run as root, with the cpu controller)", path.display())
        })?;
        if v2 {
            std::fs::write(path.join("cpu.max"), format!("{quota} {period}"))?;
        } else {
            std::fs::write(path.join("cpu.cfs_period_us"), period.to_string())?;
            std::fs::write(path.join("cpu.cfs_quota_us"), quota.to_string())?;
        }
        Ok(Cgroup { path, v2 })
    }

    /// Moves process `pid` (every thread of it) into the cgroup.
    fn add(&self, pid: &str) -> anyhow::Result<()> {
        std::fs::write(self.path.join("cgroup.procs"), pid)
            .with_context(|| format!("cannot move {pid} into {}", self.path.display()))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // The processes are gone (killed before); the kernel may take a moment to notice.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.path).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.v2;
    }
}

struct Http {
    client: reqwest::Client,
    url: String,
}

impl Http {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        let mut request = self.client.request(method, format!("{}{path}", self.url)).bearer_auth(token);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{path}: {status} {value}");
        }
        Ok(value)
    }
}

/// One run on `workers` workers.
fn openssl(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("openssl").current_dir(dir).args(args).output().context("running openssl")?;
    if !out.status.success() {
        bail!("openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// A cluster CA and one certificate for `weir-cluster` under `dir`; returns the variables
/// that give a process that certificate.
fn make_certificates(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    std::fs::create_dir_all(dir)?;
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    let mut ca = vec!["req", "-x509", "-days", "2", "-subj", "/CN=weir-bench-ca", "-keyout", "ca.key"];
    ca.extend(ec);
    ca.extend(["-out", "ca.pem", "-addext", "basicConstraints=critical,CA:TRUE"]);
    ca.extend(["-addext", "keyUsage=critical,keyCertSign"]);
    openssl(dir, &ca)?;
    let mut csr = vec!["req", "-new", "-subj", "/CN=weir-cluster", "-keyout", "node.key", "-out", "node.csr"];
    csr.extend(ec);
    openssl(dir, &csr)?;
    std::fs::write(
        dir.join("node.ext"),
        "subjectAltName=DNS:weir-cluster\nextendedKeyUsage=serverAuth,clientAuth\n",
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "node.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            "node.pem",
            "-extfile",
            "node.ext",
        ],
    )?;
    Ok([("CERT", "node.pem"), ("KEY", "node.key"), ("CA", "ca.pem")]
        .into_iter()
        .map(|(k, f)| (format!("WEIR_CLUSTER__TLS__{k}"), dir.join(f).display().to_string()))
        .collect())
}

async fn one_run(
    dir: &Path,
    workers: usize,
    o: &ClusterBenchOptions,
    tls: &[(String, String)],
) -> anyhow::Result<RunFigures> {
    let exe = std::env::current_exe()?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut command = Command::new(&exe);
    command
        .arg("--data-dir")
        .arg(dir.join("controller"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("WEIR_ADMIN_TOKEN", ADMIN)
        .env("WEIR_CLUSTER__LISTEN", "127.0.0.1:0")
        .env("WEIR_CLUSTER__TOKEN", TOKEN)
        .envs(tls.iter().map(|(k, v)| (k, v)))
        .env("RUST_LOG", "weir=warn");
    let controller = Proc::spawn(command)?;
    let cluster = controller.line("weir cluster listening on ")?;
    let url = controller.line("weir server listening on ")?;
    let tag = std::process::id();
    let mut procs = Vec::new();
    let mut groups = Vec::new();
    for k in 0..workers {
        let group = Cgroup::create(&format!("weir-bench-{tag}-{k}"), o.cpu)?;
        let mut command = Command::new(&exe);
        command
            .args(["worker", "--controller", &cluster, "--name", &format!("bench-{k}")])
            .args(["--listen", "127.0.0.1:0", "--slots", "1", "--dir"])
            .arg(dir.join(format!("worker-{k}")))
            .env("WEIR_CLUSTER_TOKEN", TOKEN)
            .envs(tls.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", "weir=warn");
        let worker = Proc::spawn(command)?;
        group.add(&worker.pid())?;
        worker.line(&format!("weir worker bench-{k} registered as worker"))?;
        procs.push(worker);
        groups.push(group);
    }
    let http = Http { client: reqwest::Client::new(), url };
    let tenant = http
        .call(
            reqwest::Method::POST,
            "/api/v1/tenants",
            ADMIN,
            Some(&json!({
                "name": "bench",
                "quotas": { "max_subtasks": 1000, "max_jobs": 10 }
            })),
        )
        .await?;
    let token = tenant["token"].as_str().context("tenant token")?.to_string();
    let mut spec = serde_json::to_value(queries::job(o.query, workers as u32, o.events)?)?;
    spec["settings"] = json!({ "checkpoint": { "interval_ms": 1000 } });
    let job = http.call(reqwest::Method::POST, "/api/v1/jobs", &token, Some(&spec)).await?;
    let id = job["id"].as_str().context("job id")?.to_string();
    let path = format!("/api/v1/jobs/{id}");
    let source_out = |j: &Value| j["vertices"][0]["records_out"].as_u64().unwrap_or(0);
    let cpu_now = || {
        let workers: f64 = procs.iter().map(|p| cpu_seconds(&p.pid())).sum();
        (workers, cpu_seconds(&controller.pid()))
    };
    let (low, high) = (o.events / 10, o.events * 9 / 10);
    let deadline = Instant::now() + WAIT;
    let mut start: Option<(Instant, u64, (f64, f64))> = None;
    let mut last: Option<(Instant, u64, (f64, f64))> = None;
    let figures = loop {
        let j = http.call(reqwest::Method::GET, &path, &token, None).await?;
        let out = source_out(&j);
        let status = j["status"].as_str().unwrap_or("").to_string();
        if status == "failed" {
            bail!("the job failed: {}", j["error"]);
        }
        match start {
            None if out >= low => start = Some((Instant::now(), out, cpu_now())),
            Some((_, _, _)) if status == "finished" && last.is_none() => {
                bail!("the job finished before the measurement ended")
            }
            Some((t0, out0, (w0, c0))) if out >= high || status == "finished" => {
                // Finished between two looks: the last look ends the window.
                let (t1, out, (w1, c1)) =
                    if out >= high { (Instant::now(), out, cpu_now()) } else { last.unwrap() };
                let elapsed = t1.duration_since(t0).as_secs_f64();
                let events = out.saturating_sub(out0) as f64;
                let cpu = (w1 - w0) + (c1 - c0);
                break RunFigures {
                    per_second: events / elapsed,
                    per_cpu_second: if cpu > 0.0 { events / cpu } else { 0.0 },
                    worker_cpus: (w1 - w0) / elapsed,
                    controller_cpus: (c1 - c0) / elapsed,
                    ..RunFigures::default()
                };
            }
            Some(_) => last = Some((Instant::now(), out, cpu_now())),
            None => {}
        }
        if Instant::now() > deadline {
            bail!("the job did not reach {high} events in {} s (at {out}): {j}", WAIT.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let history =
        http.call(reqwest::Method::GET, &format!("{path}/checkpoints?limit=100000"), &token, None).await?;
    let mut durations: Vec<f64> = Vec::new();
    let mut bytes = 0.0;
    for c in history["data"].as_array().into_iter().flatten() {
        if c["status"] == "completed" {
            durations.push(c["duration_ms"].as_f64().unwrap_or(0.0));
            bytes += c["state_size"].as_f64().unwrap_or(0.0);
        }
    }
    durations.sort_by(f64::total_cmp);
    let _ = http.call(reqwest::Method::POST, &format!("{path}/cancel"), &token, None).await;
    drop(procs);
    drop(groups);
    drop(controller);
    Ok(RunFigures {
        checkpoints: durations.len() as u64,
        checkpoint_ms: durations.get(durations.len() / 2).copied().unwrap_or(0.0),
        checkpoint_bytes: if durations.is_empty() { 0.0 } else { bytes / durations.len() as f64 },
        ..figures
    })
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// Runs every variant `runs` times, round robin, and prints the medians.
pub async fn run_and_print(data_dir: &Path, o: &ClusterBenchOptions) -> anyhow::Result<()> {
    let dir = data_dir.join("bench-cluster");
    let tls = match o.tls {
        true => make_certificates(&data_dir.join("bench-cluster-certs"))?,
        false => Vec::new(),
    };
    // (workers, over TLS)
    let variants: Vec<(usize, bool)> = o
        .workers
        .iter()
        .flat_map(|&n| std::iter::once((n, false)).chain(o.tls.then_some((n, true))))
        .collect();
    let mut results: Vec<Vec<RunFigures>> = variants.iter().map(|_| Vec::new()).collect();
    for round in 0..o.runs {
        for (i, &(n, over_tls)) in variants.iter().enumerate() {
            let figures = one_run(&dir, n, o, if over_tls { &tls } else { &[] }).await?;
            eprintln!(
                "run {}/{}: {n} worker(s){}: {:.0} events/s, {:.0} per CPU-s, workers {:.2} CPUs, controller {:.2}",
                round + 1,
                o.runs,
                if over_tls { " over TLS" } else { "" },
                figures.per_second,
                figures.per_cpu_second,
                figures.worker_cpus,
                figures.controller_cpus
            );
            results[i].push(figures);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(data_dir.join("bench-cluster-certs"));
    println!(
        "Nexmark {} on workers held to {:.2} CPU each (cgroup quota), {} events, median of {} run(s)",
        o.query.name(),
        o.cpu,
        o.events,
        o.runs
    );
    let mut table = comfy_table::Table::new();
    table.set_header([
        "workers",
        "events/s",
        "× 1 worker",
        "events per CPU-s",
        "worker CPUs",
        "controller CPUs",
        "checkpoints",
        "checkpoint ms (median)",
        "bytes per checkpoint",
    ]);
    let per_second = |i: usize| median(results[i].iter().map(|f| f.per_second).collect());
    let base = if results.is_empty() { 0.0 } else { per_second(0) };
    for (i, &(n, over_tls)) in variants.iter().enumerate() {
        let r = &results[i];
        let rate = per_second(i);
        let label = match over_tls {
            // Beside it, what TLS leaves of the plain figure.
            true => format!(
                "{n}, TLS ({:.2} of plain)",
                if i > 0 && per_second(i - 1) > 0.0 { rate / per_second(i - 1) } else { 0.0 }
            ),
            false => n.to_string(),
        };
        table.add_row([
            label,
            format!("{rate:.0}"),
            format!("{:.2}", if base > 0.0 { rate / base } else { 0.0 }),
            format!("{:.0}", median(r.iter().map(|f| f.per_cpu_second).collect())),
            format!("{:.2}", median(r.iter().map(|f| f.worker_cpus).collect())),
            format!("{:.2}", median(r.iter().map(|f| f.controller_cpus).collect())),
            format!("{:.0}", median(r.iter().map(|f| f.checkpoints as f64).collect())),
            format!("{:.0}", median(r.iter().map(|f| f.checkpoint_ms).collect())),
            format!("{:.0}", median(r.iter().map(|f| f.checkpoint_bytes).collect())),
        ]);
    }
    println!("{table}");
    Ok(())
}
