//! A real Prometheus (Debian's `prometheus`, which `.ci/run` installs) scrapes a running Weir
//! server on loopback (issue 42): the admin scrape with the repository's own config
//! (`deploy/observability/prometheus.yml`, its target and token file pointed at the test's
//! server) and a tenant's scrape of `/api/v1/metrics` with the tenant's token. PromQL through
//! Prometheus' HTTP API answers the job's records-in rate, an operator's own counter and the
//! watermark lag; the tenant's scrape holds only the tenant's series; and every query of the
//! Grafana dashboard (`deploy/observability/grafana-dashboard.json`) is valid PromQL, the
//! job's panels answering with the job's series.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::server::{ADMIN, TestServer};

const LONG: Duration = Duration::from_secs(90);

/// A Prometheus server on loopback.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn binary() -> PathBuf {
    let found = Command::new("sh").args(["-c", "command -v prometheus"]).output().unwrap();
    assert!(found.status.success(), "no `prometheus`: install Debian's prometheus package (.ci/run does)");
    PathBuf::from(String::from_utf8(found.stdout).unwrap().trim())
}

impl Prometheus {
    /// Prometheus with `config`, its database in `dir`; ready to answer.
    async fn start(config: &Path, dir: &Path) -> Prometheus {
        // A free port (taken again should another process get it first).
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
            let mut child = Command::new(binary())
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.join("tsdb").display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--log.level=warn")
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("prometheus starts");
            let url = format!("http://127.0.0.1:{port}");
            let deadline = Instant::now() + LONG;
            loop {
                if let Some(status) = child.try_wait().unwrap() {
                    eprintln!("prometheus exited ({status}); trying another port");
                    break;
                }
                if reqwest::get(format!("{url}/-/ready")).await.is_ok_and(|r| r.status() == 200) {
                    return Prometheus { child, url };
                }
                assert!(Instant::now() < deadline, "prometheus is not ready");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        panic!("prometheus did not start");
    }

    /// An instant query's answer (`data`), asserting it is valid PromQL.
    async fn query(&self, promql: &str) -> Value {
        let response = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", promql)])
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["status"], "success", "{promql}: {body}");
        body["data"].clone()
    }

    /// The result of `promql` once it holds a sample that `good` accepts.
    async fn wait_for(&self, promql: &str, good: impl Fn(f64) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + LONG;
        loop {
            let data = self.query(promql).await;
            let result = data["result"].as_array().cloned().unwrap_or_default();
            if result.iter().any(|r| r["value"][1].as_str().and_then(|v| v.parse().ok()).is_some_and(&good)) {
                return result;
            }
            assert!(Instant::now() < deadline, "{promql}: {data}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// An event-time job (its records an hour behind the clock) whose operator counts what it
/// logs, at 20 records a second.
fn spec(counter: &str) -> Value {
    let mut spec = super::observing::spec(counter, 1_000_000, Some(20));
    spec["nodes"][0]["config"]["start_timestamp"] = json!(weir::clock::unix_ms() as i64 - 3_600_000);
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_prometheus_scrapes_the_server_and_answers_promql_for_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestServer::start(|_| {}).await;
    let (acme, api) = server.tenant("acme").await;
    let (other, other_api) = server.tenant("other").await;
    let counter = api.upload_guest("counter").await;
    let job = api.create_job(&spec(&counter)).await;
    let other_counter = other_api.upload_guest("counter").await;
    let other_job = other_api.create_job(&spec(&other_counter)).await;

    // The repository's scrape config, at this server, every second; and the tenant's scrape
    // beside it (another address of the same server: another `instance`).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let shipped = std::fs::read_to_string(root.join("deploy/observability/prometheus.yml")).unwrap();
    let (admin_token, acme_token) = (dir.path().join("admin-token"), dir.path().join("acme-token"));
    std::fs::write(&admin_token, ADMIN).unwrap();
    std::fs::write(&acme_token, api.token().unwrap()).unwrap();
    let port = server.url.rsplit(':').next().unwrap();
    let config = shipped
        .replace("scrape_interval: 15s", "scrape_interval: 1s")
        .replace("weir-api.weir.svc:8080", &format!("127.0.0.1:{port}"))
        .replace("/etc/prometheus/weir-admin-token", &admin_token.display().to_string());
    assert_ne!(config, shipped);
    let config = format!(
        "{config}\n  - job_name: weir-tenant-acme\n    metrics_path: /api/v1/metrics\n    honor_labels: true\n    \
         authorization: {{ credentials_file: {} }}\n    static_configs: [ {{ targets: [\"localhost:{port}\"] }} ]\n",
        acme_token.display()
    );
    let config_file = dir.path().join("prometheus.yml");
    std::fs::write(&config_file, config).unwrap();
    let prometheus = Prometheus::start(&config_file, dir.path()).await;

    // The admin scrape: the job's records-in rate (~20/s), its operator's counter and its
    // watermark lag (~1 h), under Weir's own `job` label.
    let admin = format!("instance=\"127.0.0.1:{port}\",tenant=\"{acme}\",job=\"{job}\"");
    let rate = prometheus
        .wait_for(&format!("sum(rate(weir_records_in_total{{{admin},node=\"count\"}}[5s]))"), |v| v > 0.0)
        .await;
    let rate: f64 = rate[0]["value"][1].as_str().unwrap().parse().unwrap();
    assert!(rate < 100.0, "records in at {rate}/s, paced at 20/s");
    prometheus
        .wait_for(
            &format!("weir_operator_counter_total{{{admin},node=\"count\",name=\"records_logged\"}}"),
            |v| v >= 1.0,
        )
        .await;
    prometheus
        .wait_for(&format!("max(weir_event_time_lag_seconds{{{admin},node=\"count\"}})"), |v| {
            (3_000.0..4_000.0).contains(&v)
        })
        .await;
    // The admin scrape has the other tenant too; the tenant's only its own.
    prometheus
        .wait_for(&format!("sum(weir_records_in_total{{tenant=\"{other}\",job=\"{other_job}\"}})"), |v| {
            v > 0.0
        })
        .await;
    let tenant = format!("instance=\"localhost:{port}\"");
    prometheus.wait_for(&format!("sum(weir_records_in_total{{{tenant},job=\"{job}\"}})"), |v| v > 0.0).await;
    // (Prometheus' own series of the scrape, `up` and `scrape_*`, have no tenant.)
    let foreign =
        prometheus.query(&format!("count({{{tenant},tenant!=\"{acme}\",__name__!~\"up|scrape_.*\"}})")).await;
    assert_eq!(foreign["result"], json!([]), "another tenant's series in acme's scrape: {foreign}");
    let process =
        prometheus.query(&format!("count({{{tenant},__name__=~\"process_.*|weir_worker.*\"}})")).await;
    assert_eq!(process["result"], json!([]), "{process}");

    // Every query of the dashboard, for this tenant and job, is valid PromQL; the job's
    // throughput, lag, counter and log panels answer.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/observability/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut answered = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"].as_str().unwrap().replace("$tenant", &acme).replace("$job", &job);
            let data = prometheus.query(&expr).await;
            if !data["result"].as_array().unwrap().is_empty() {
                answered.push(panel["title"].as_str().unwrap().to_string());
            }
        }
    }
    for title in [
        "Records in per second, by node",
        "Event-time lag (worst subtask), by node",
        "Operators' own counters per second",
        "Operator log lines per second, kept and dropped",
        "Busy and backpressured (worst subtask), by node",
        "Quota use",
    ] {
        assert!(
            answered.iter().any(|t| t == title),
            "the panel `{title}` has no data; answered: {answered:?}"
        );
    }
    for id in [&job, &other_job] {
        let client = if id == &job { &api } else { &other_api };
        let (status, _) = client.post_empty(&format!("/api/v1/jobs/{id}/cancel")).await;
        assert_eq!(status, 200);
    }
}
