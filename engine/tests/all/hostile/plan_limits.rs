//! Server-wide plan limits (`plan_limits` in the server's config), on a real server: every
//! limit refuses a spec that raises it with a 400 naming the field, the value, the limit and
//! its key, and accepts a spec that stays under it; defaults above a limit are lowered to it
//! and minimums are raised; the amplifying specs of issue 15 are refused; and a job stored
//! as running whose spec no longer passes the limits comes back `failed` with the reason
//! when the server restarts, while another tenant's job resumes and the server answers.

use crate::server;

use std::time::Duration;

use serde_json::{Value, json};
use server::TestServer;
use weir::plan::PlanLimits;

const LONG: Duration = Duration::from_secs(60);

/// generator (`source_p` subtasks) → blackhole (`sink_p` subtasks) over a hash edge; the
/// generator runs slowly for a long time, so the job stays running until cancelled.
fn job(source_p: u32, sink_p: u32) -> Value {
    json!({
        "name": "limits",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "generator", "parallelism": source_p,
              "config": { "mode": "words", "lines": 1_000_000_000u64, "records_per_second": 10 } },
            { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": sink_p }
        ],
        "edges": [ { "from": "in", "to": "out", "partitioning": "hash" } ]
    })
}

/// `job(1, 1)` with `edges` sinks, one edge to each.
fn fan_out(edges: usize) -> Value {
    let mut spec = job(1, 1);
    spec["nodes"] = json!([spec["nodes"][0].clone()]);
    spec["edges"] = json!([]);
    for i in 0..edges {
        let id = format!("out{i}");
        spec["nodes"]
            .as_array_mut()
            .unwrap()
            .push(json!({ "id": id, "kind": "sink", "connector": "blackhole" }));
        spec["edges"].as_array_mut().unwrap().push(json!({ "from": "in", "to": id }));
    }
    spec
}

/// `spec` with `value` at `pointer` (a JSON pointer), creating the objects on the way.
fn with(mut spec: Value, pointer: &str, value: Value) -> Value {
    let mut at = &mut spec;
    for key in pointer.split('/').skip(1) {
        at = match at {
            Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
            other => {
                if other.is_null() {
                    *other = json!({});
                }
                other.as_object_mut().unwrap().entry(key).or_insert(Value::Null)
            }
        };
    }
    *at = value;
    spec
}

fn small_limits() -> PlanLimits {
    PlanLimits {
        max_edges: 2,
        max_channels: 8,
        max_channel_capacity: 16,
        max_buffered_batches: 64,
        max_channel_capacity_bytes: 1 << 20,
        max_buffered_bytes: 4 << 20,
        max_batch_size: 100,
        max_batch_bytes: 1 << 16,
        max_output_bytes_per_call: 1 << 20,
        max_words_per_line: 100,
        max_restart_attempts: 5,
        min_restart_delay_ms: 250,
        min_checkpoint_interval_ms: 300,
        max_concurrent_checkpoints: 2,
        max_retained_checkpoints: 5,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_limit_refuses_a_spec_that_raises_it_and_accepts_one_that_lowers_it() {
    let server = TestServer::start(|c| c.plan_limits = small_limits()).await;
    let (_, api) = server.tenant("limited").await;
    let settings = |pointer: &str, value: Value| with(job(1, 1), &format!("/settings/{pointer}"), value);
    let source = |field: &str, value: Value| with(job(1, 1), &format!("/nodes/0/config/{field}"), value);
    // (limit key, what the error names, value asked, a spec above the limit, one under it)
    let cases: Vec<(&str, &str, u64, u64, Value, Value)> = vec![
        ("max_edges", "the job's edge count", 3, 2, fan_out(3), fan_out(2)),
        ("max_channels", "the job's channel count", 16, 8, job(4, 4), job(2, 2)),
        (
            "max_channel_capacity",
            "settings.channel_capacity",
            17,
            16,
            settings("channel_capacity", json!(17)),
            settings("channel_capacity", json!(4)),
        ),
        (
            "max_buffered_batches",
            "the job's channel count × settings.channel_capacity",
            128,
            64,
            with(job(2, 4), "/settings/channel_capacity", json!(16)),
            with(job(2, 2), "/settings/channel_capacity", json!(16)),
        ),
        (
            "max_channel_capacity_bytes",
            "settings.channel_capacity_bytes",
            2 << 20,
            1 << 20,
            settings("channel_capacity_bytes", json!(2 << 20)),
            settings("channel_capacity_bytes", json!(1 << 16)),
        ),
        (
            "max_buffered_bytes",
            "the job's channel count × settings.channel_capacity_bytes",
            8 << 20,
            4 << 20,
            with(job(2, 4), "/settings/channel_capacity_bytes", json!(1 << 20)),
            with(job(2, 2), "/settings/channel_capacity_bytes", json!(1 << 20)),
        ),
        (
            "max_batch_bytes",
            "node `in`: config.batch_bytes",
            (1 << 16) + 1,
            1 << 16,
            source("batch_bytes", json!((1 << 16) + 1)),
            source("batch_bytes", json!(4096)),
        ),
        (
            "max_batch_size",
            "node `in`: config.batch_size",
            101,
            100,
            source("batch_size", json!(101)),
            source("batch_size", json!(50)),
        ),
        (
            "max_output_bytes_per_call",
            "settings.max_output_bytes_per_call",
            2 << 20,
            1 << 20,
            settings("max_output_bytes_per_call", json!(2 << 20)),
            settings("max_output_bytes_per_call", json!(4096)),
        ),
        (
            "max_words_per_line",
            "node `in`: config.words_per_line",
            101,
            100,
            source("words_per_line", json!(101)),
            source("words_per_line", json!(5)),
        ),
        (
            "max_restart_attempts",
            "settings.restart.attempts",
            6,
            5,
            settings("restart/attempts", json!(6)),
            settings("restart/attempts", json!(2)),
        ),
        (
            "max_concurrent_checkpoints",
            "settings.checkpoint.max_concurrent",
            3,
            2,
            settings("checkpoint/max_concurrent", json!(3)),
            settings("checkpoint/max_concurrent", json!(2)),
        ),
        (
            "max_retained_checkpoints",
            "settings.checkpoint.retained",
            6,
            5,
            settings("checkpoint/retained", json!(6)),
            settings("checkpoint/retained", json!(3)),
        ),
    ];
    for (key, what, value, limit, raised, lowered) in cases {
        let (status, body) = api.post("/api/v1/jobs", &raised).await;
        assert_eq!(status, 400, "{key}: {body}");
        let expected = format!("{what} {value} is above this server's limit of {limit} (plan_limits.{key})");
        let error = body["error"].as_str().unwrap_or_default();
        assert!(error.starts_with(&expected), "{key}: `{error}` does not start with `{expected}`");
        let id = api.create_job(&lowered).await;
        let (status, body) = api.post_empty(&format!("/api/v1/jobs/{id}/cancel")).await;
        assert_eq!(status, 200, "{key}: cancel: {body}");
    }

    // What the spec leaves to a default above a limit runs at the limit; minimums are
    // raised: the stored spec shows what runs.
    let asked = with(
        with(job(1, 1), "/settings/restart/delay_ms", json!(0)),
        "/settings/checkpoint/interval_ms",
        json!(1),
    );
    let id = api.create_job(&asked).await;
    let (status, stored) = api.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(status, 200, "{stored}");
    let spec = &stored["spec"];
    assert_eq!(spec["settings"]["restart"]["delay_ms"], 250, "{spec}");
    assert_eq!(spec["settings"]["checkpoint"]["interval_ms"], 300, "{spec}");
    assert_eq!(spec["settings"]["max_output_bytes_per_call"], 1 << 20, "{spec}");
    assert_eq!(spec["nodes"][0]["config"]["batch_size"], 100, "{spec}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_amplifying_specs_of_the_issue_are_refused() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("hostile").await;
    // The same edge three times with channel_capacity 65536 (it was accepted and ran).
    let mut spec = with(job(2, 2), "/settings/channel_capacity", json!(65536));
    let edge = spec["edges"][0].clone();
    spec["edges"] = json!([edge.clone(), edge.clone(), edge]);
    let (status, body) = api.post("/api/v1/jobs", &spec).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("settings.channel_capacity 65536 is above this server's limit of 256"),
        "{body}"
    );
    // Either part alone is refused too.
    spec["settings"] = json!({});
    let (status, body) = api.post("/api/v1/jobs", &spec).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("listed more than once"), "{body}");
    // A huge source batch and a generator line of a billion words.
    let batch = with(job(1, 1), "/nodes/0/config/batch_size", json!(1_000_000));
    let (status, body) = api.post("/api/v1/jobs", &batch).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("plan_limits.max_batch_size"), "{body}");
    let words = with(job(1, 1), "/nodes/0/config/words_per_line", json!(1_000_000_000u64));
    let (status, body) = api.post("/api/v1/jobs", &words).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("plan_limits.max_words_per_line"), "{body}");
    // The widest job the default quotas allow fits the default limits (32 × 32 channels).
    let id = api.create_job(&job(32, 32)).await;
    api.wait_status(&id, "running", LONG).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_refused_by_lower_limits_fails_at_resume_and_the_others_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = TestServer::spawn_process(dir.path());
    let (_, a) = first.tenant("alice").await;
    let (_, b) = first.tenant("bob").await;
    let a_job = a.create_job(&job(1, 1)).await;
    let b_job = b.create_job(&with(job(1, 1), "/settings/channel_capacity", json!(64))).await;
    let before = a.wait_status(&a_job, "running", LONG).await;
    b.wait_status(&b_job, "running", LONG).await;
    first.kill9();

    // The same data, a stricter server: bob's job asks for more than it now allows.
    let second =
        TestServer::spawn_process_with(dir.path(), &[("WEIR_PLAN_LIMITS__MAX_CHANNEL_CAPACITY", "32")]);
    let (a, b) = (a.at(&second.url), b.at(&second.url));
    let failed = b.wait_status(&b_job, "failed", LONG).await;
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("cannot resume after a server restart: ")
            && error.contains("settings.channel_capacity 64 is above this server's limit of 32 (plan_limits.max_channel_capacity)"),
        "{failed}"
    );
    // Alice's job resumed (a new run started), and the server takes new jobs.
    let resumed = a.wait_status(&a_job, "running", LONG).await;
    assert!(resumed["start_ms"].as_u64() > before["start_ms"].as_u64(), "{before} then {resumed}");
    let (status, body) =
        b.post("/api/v1/jobs", &with(job(1, 1), "/settings/channel_capacity", json!(64))).await;
    assert_eq!(status, 400, "{body}");
    let again = b.create_job(&job(1, 1)).await;
    b.wait_status(&again, "running", LONG).await;
    // The failed job stays failed at the next start; nothing else changes.
    drop(second);
    let third =
        TestServer::spawn_process_with(dir.path(), &[("WEIR_PLAN_LIMITS__MAX_CHANNEL_CAPACITY", "32")]);
    let b = b.at(&third.url);
    let (_, still) = b.get(&format!("/api/v1/jobs/{b_job}")).await;
    assert_eq!(still["status"], "failed", "{still}");
    b.wait_status(&again, "running", LONG).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_resumed_three_times_without_progress_is_failed_instead_of_resumed_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = TestServer::spawn_process(dir.path());
    let (_, api) = server.tenant("crashy").await;
    // No periodic checkpoints: only a minute of running would confirm a resume.
    let id = api.create_job(&with(job(1, 1), "/settings/checkpoint/interval_ms", Value::Null)).await;
    api.wait_status(&id, "running", LONG).await;
    // The server goes down soon after every start, as if resuming the job brought it down.
    for _ in 0..3 {
        server.kill9();
        server = TestServer::spawn_process(dir.path());
        let (status, job) = api.at(&server.url).get(&format!("/api/v1/jobs/{id}")).await;
        assert_eq!((status, job["status"].as_str()), (200, Some("running")), "{job}");
    }
    server.kill9();
    server = TestServer::spawn_process(dir.path());
    let api = api.at(&server.url);
    let failed = api.wait_status(&id, "failed", LONG).await;
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(
            "cannot resume after a server restart: the server went down 3 times after resuming this job"
        ),
        "{failed}"
    );
    // Its owner's restart clears the count: it runs, and resumes at the next start.
    let (status, body) = api.post_empty(&format!("/api/v1/jobs/{id}/restart")).await;
    assert_eq!(status, 200, "{body}");
    server.kill9();
    server = TestServer::spawn_process(dir.path());
    let (status, job) = api.at(&server.url).get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!((status, job["status"].as_str()), (200, Some("running")), "{job}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_whose_module_no_longer_loads_fails_at_resume_and_the_others_resume() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = TestServer::spawn_process(dir.path());
    let (_, api) = first.tenant("modules").await;
    let tokenizer = api.upload_guest("tokenizer").await;
    let mut with_module = job(1, 1);
    with_module["nodes"]
        .as_array_mut()
        .unwrap()
        .insert(1, json!({ "id": "split", "kind": "operator", "module": tokenizer }));
    with_module["edges"] = json!([ { "from": "in", "to": "split" }, { "from": "split", "to": "out" } ]);
    let broken = api.create_job(&with_module).await;
    let plain = api.create_job(&job(1, 1)).await;
    api.wait_status(&broken, "running", LONG).await;
    api.wait_status(&plain, "running", LONG).await;
    first.kill9();
    // The module's stored bytes are damaged while the server is down.
    std::fs::write(dir.path().join("modules").join(format!("{tokenizer}.wasm")), b"not wasm").unwrap();
    let second = TestServer::spawn_process(dir.path());
    let api = api.at(&second.url);
    let failed = api.wait_status(&broken, "failed", LONG).await;
    assert!(
        failed["error"].as_str().unwrap_or_default().starts_with("cannot resume after a server restart: "),
        "{failed}"
    );
    api.wait_status(&plain, "running", LONG).await;
}
