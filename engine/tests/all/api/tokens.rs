//! Tokens and disabled tenants, and the figures `/metrics` shows at all times: a revoked or
//! rotated-out token answers 401 from the next request on; a disabled tenant's requests
//! answer 403, its running job stops (its state kept) and resumes exactly once when it is
//! enabled, also across a server restart; the CLI verbs drive the same routes; a fresh
//! server's `/metrics` shows the process and every tenant's usage against its quotas.

use crate::server;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use server::wordcount::{check_exactly_once, lines, push, wait_output};
use server::{ADMIN, Api, TestServer, wordcount};
use weir::server::jobs::JobStatus;

const LONG: Duration = Duration::from_secs(120);

/// `GET /api/v1/tenant` with `api`'s token: its status.
async fn whoami(api: &Api) -> u16 {
    api.get("/api/v1/tenant").await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_and_rotated_tokens_answer_401_at_once_and_lists_hold_no_secret() {
    let server = TestServer::start(|_| {}).await;
    let admin = server.client(ADMIN);
    let (a_id, first) = server.tenant("acme").await;
    let (b_id, b) = server.tenant("other").await;
    let tokens = format!("/api/v1/tenants/{a_id}/tokens");

    // The first token is listed (labelled `initial`), without its secret.
    let (status, list) = admin.get(&tokens).await;
    assert_eq!(status, 200, "{list}");
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{list}");
    assert_eq!(data[0]["label"], "initial");
    let first_id = data[0]["id"].as_str().unwrap().to_string();

    // A second token, labelled: both work; the list shows ids, labels, times only.
    let (status, issued) = admin.post(&tokens, &json!({ "label": "ci" })).await;
    assert_eq!(status, 201, "{issued}");
    let second = server.client(issued["token"].as_str().unwrap());
    let second_id = issued["id"].as_str().unwrap().to_string();
    assert_eq!(issued["label"], "ci");
    assert_eq!((whoami(&first).await, whoami(&second).await), (200, 200));
    let (_, list) = admin.get(&tokens).await;
    let text = list.to_string();
    for secret in [first.token().unwrap(), second.token().unwrap()] {
        assert!(!text.contains(&secret["weir_".len()..]), "the list shows a token: {list}");
    }
    for t in list["data"].as_array().unwrap() {
        let mut keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["created_ms", "id", "label"], "{list}");
    }
    // An empty body issues an unlabelled token; a bad label is refused.
    let (status, v) = admin.post_empty(&tokens).await;
    assert_eq!((status, &v["label"]), (201, &Value::Null), "{v}");
    let third = server.client(v["token"].as_str().unwrap());
    let (status, v) = admin.post(&tokens, &json!({ "label": "a\nb" })).await;
    assert_eq!(status, 400, "{v}");

    // Revoke by id: 401 on the very next request; the others keep working.
    let (status, v) = admin.delete(&format!("{tokens}/{second_id}")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["id"], second_id.as_str());
    let (status, v) = second.get("/api/v1/tenant").await;
    assert_eq!(status, 401, "{v}");
    assert!(v["error"].as_str().unwrap().contains("not valid"), "{v}");
    assert_eq!(whoami(&first).await, 200);
    let (status, _) = admin.delete(&format!("{tokens}/{second_id}")).await;
    assert_eq!(status, 404, "revoked twice");
    let (status, _) = admin.delete(&format!("{tokens}/not-an-id")).await;
    assert_eq!(status, 404);
    // Another tenant's token id is not this tenant's.
    let (_, b_tokens) = admin.get(&format!("/api/v1/tenants/{b_id}/tokens")).await;
    let b_token_id = b_tokens["data"][0]["id"].as_str().unwrap();
    let (status, _) = admin.delete(&format!("{tokens}/{b_token_id}")).await;
    assert_eq!(status, 404);

    // Rotate all: one new token, every old one revoked in the same step.
    let (status, rotated) = admin.post(&format!("{tokens}/rotate"), &json!({ "label": "rotated" })).await;
    assert_eq!(status, 201, "{rotated}");
    let mut revoked: Vec<&str> =
        rotated["revoked"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    revoked.sort_unstable();
    assert_eq!(revoked.len(), 2, "{rotated}");
    assert!(revoked.contains(&first_id.as_str()), "{rotated}");
    assert_eq!((whoami(&first).await, whoami(&third).await), (401, 401));
    let fourth = server.client(rotated["token"].as_str().unwrap());
    assert_eq!(whoami(&fourth).await, 200);
    // Rotate one: the new token takes its label.
    let fourth_id = rotated["id"].as_str().unwrap();
    let (status, one) = admin.post(&format!("{tokens}/rotate"), &json!({ "token_id": fourth_id })).await;
    assert_eq!(status, 201, "{one}");
    assert_eq!(one["label"], "rotated", "{one}");
    assert_eq!(one["revoked"][0]["id"], fourth_id, "{one}");
    assert_eq!(whoami(&fourth).await, 401);
    assert_eq!(whoami(&server.client(one["token"].as_str().unwrap())).await, 200);
    let (_, list) = admin.get(&tokens).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 1, "{list}");

    // Tenant B was never touched; tenant tokens cannot manage tokens.
    assert_eq!(whoami(&b).await, 200);
    let (status, _) = b.get(&tokens).await;
    assert_eq!(status, 403);
}

/// Tenant A's wordcount job with 1,000 lines counted and a completed checkpoint.
async fn running_wordcount(api: &Api) -> String {
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    let (status, v) = api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    assert_eq!(status, 201, "{v}");
    let job = api.create_job(&wordcount::spec("wc", "tokenizer", "wordcount")).await;
    push(api, lines(0, 1000)).await;
    wait_output(api, 1000).await;
    api.wait_job(&job, LONG, |j| j["latest_checkpoint"]["id"].as_u64().unwrap_or(0) >= 1).await;
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_tenant_is_refused_its_job_stops_and_resumes_exactly_once_after_a_restart() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().to_path_buf();
    let mut server = TestServer::start_in(&dir, |_| {}).await;
    let (a_id, a) = server.tenant("acme").await;
    let (_, b) = server.tenant("other").await;
    let a_token = a.token().unwrap().to_string();
    let job = running_wordcount(&a).await;
    let admin = server.client(ADMIN);

    let (status, t) = admin.post_empty(&format!("/api/v1/tenants/{a_id}/disable")).await;
    assert_eq!(status, 200, "{t}");
    assert!(t["disabled_ms"].as_u64().is_some(), "{t}");
    assert_eq!(t["suspended_jobs"], json!([job]), "{t}");
    // The job stopped at once, with the reason; its run is gone.
    let record = server.service().jobs.get(&a_id, &job).unwrap();
    assert_eq!(record.status, JobStatus::Stopped, "{record:?}");
    assert!(record.error.as_deref().unwrap_or("").contains("`acme` was disabled"), "{record:?}");
    assert!(server.service().jobs.live(&job).is_none(), "the job still runs");
    // Every request of A answers 403 with the reason; B goes on (and may run jobs).
    for (method, path) in
        [("GET", "/api/v1/tenant"), ("GET", "/api/v1/jobs"), ("POST", "/api/v1/streams/lines/records")]
    {
        let r = a.request(method.parse().unwrap(), path).json(&json!({ "records": [{ "value": "x" }] }));
        let (status, v) = a.send(r).await;
        assert_eq!(status, 403, "{method} {path}: {v}");
        assert!(v["error"].as_str().unwrap().contains("tenant `acme` is disabled"), "{v}");
    }
    assert_eq!(whoami(&b).await, 200);
    let b_job = b
        .create_job(&json!({
            "name": "b",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1000 } },
                { "id": "out", "kind": "sink", "connector": "blackhole" }
            ],
            "edges": [ { "from": "in", "to": "out" } ]
        }))
        .await;
    b.wait_status(&b_job, "finished", LONG).await;
    // Disabling again changes nothing.
    let (status, again) = admin.post_empty(&format!("/api/v1/tenants/{a_id}/disable")).await;
    assert_eq!(
        (status, &again["disabled_ms"], &again["suspended_jobs"]),
        (200, &t["disabled_ms"], &t["suspended_jobs"])
    );

    // A restart keeps the tenant disabled and does not resume its job.
    drop((a, b, admin));
    server.abort();
    drop(server);
    let server = TestServer::start_in(&dir, |_| {}).await;
    let a = server.client(&a_token);
    let admin = server.client(ADMIN);
    let (status, v) = a.get("/api/v1/tenant").await;
    assert_eq!(status, 403, "{v}");
    let (_, t) = admin.get(&format!("/api/v1/tenants/{a_id}")).await;
    assert!(t["disabled_ms"].as_u64().is_some(), "{t}");
    assert_eq!(server.service().jobs.get(&a_id, &job).unwrap().status, JobStatus::Stopped);
    assert!(server.service().jobs.live(&job).is_none(), "a disabled tenant's job resumed at start");

    // Enabled: the token works, the job resumes from its latest checkpoint, and the output
    // goes on exactly once.
    let (status, t) = admin.post_empty(&format!("/api/v1/tenants/{a_id}/enable")).await;
    assert_eq!(status, 200, "{t}");
    assert_eq!((&t["disabled_ms"], &t["suspended_jobs"]), (&Value::Null, &json!([])), "{t}");
    let (_, j) = a.get(&format!("/api/v1/jobs/{job}")).await;
    assert_eq!(j["status"], "running", "{j}");
    push(&a, lines(1000, 2000)).await;
    wait_output(&a, 2000).await;
    check_exactly_once(&a, 2000).await;
}

/// The samples of a Prometheus text exposition: `name{labels}` → value.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

pub(crate) async fn scrape(server: &TestServer) -> BTreeMap<String, f64> {
    let response = reqwest::Client::new()
        .get(format!("{}/metrics", server.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    samples(&response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_servers_metrics_show_the_process_and_each_tenants_usage_and_quotas() {
    let server = TestServer::start(|_| {}).await;
    let m = scrape(&server).await;
    assert!(m["process_resident_memory_bytes"] > 1e6, "{m:?}");
    assert!(m["process_open_fds"] >= 3.0, "{m:?}");
    assert!(m["process_cpu_seconds_total"] >= 0.0, "{m:?}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let start = m["process_start_time_seconds"];
    assert!(start > now - 3600.0 && start <= now + 1.0, "start {start}, now {now}");
    assert_eq!(m[&format!("weir_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"))], 1.0, "{m:?}");
    assert!(m["weir_uptime_seconds"] >= 0.0, "{m:?}");

    let (a_id, a) =
        server.tenant_with("acme", Some(json!({ "max_storage_bytes": 50_000_000, "max_jobs": 3 }))).await;
    let series =
        |what: &str, quota: &str| format!("weir_tenant_{what}{{tenant=\"{a_id}\",quota=\"{quota}\"}}");
    let m = scrape(&server).await;
    assert_eq!(m[&series("quota", "storage_bytes")], 50_000_000.0, "{m:?}");
    assert_eq!(m[&series("quota", "jobs")], 3.0, "{m:?}");
    assert!(m.contains_key(&series("quota", "memory_mb")), "{m:?}");
    assert_eq!(m[&series("usage", "storage_bytes")], 0.0, "{m:?}");
    assert_eq!(m[&series("usage", "jobs")], 0.0, "{m:?}");
    assert_eq!(m[&format!("weir_tenant_disabled{{tenant=\"{a_id}\",name=\"acme\"}}")], 0.0, "{m:?}");

    // Each scrape reads the usage afresh: an upload shows at once, as the tenant sees it.
    a.upload_guest("tokenizer").await;
    let (_, me) = a.get("/api/v1/tenant").await;
    let stored = me["usage"]["storage_bytes"].as_f64().unwrap();
    assert!(stored > 0.0, "{me}");
    let m = scrape(&server).await;
    assert_eq!(m[&series("usage", "storage_bytes")], stored, "{m:?}");

    // Still the admin's only.
    let (status, _) = a.get("/metrics").await;
    assert_eq!(status, 403);
    let (status, _) = server.anonymous().get("/metrics").await;
    assert_eq!(status, 401);
}

/// `weir <args>` against `url` with `token`: (success, stdout, stderr).
fn weir(url: &str, token: &str, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(args)
        .env("WEIR_URL", url)
        .env("WEIR_TOKEN", token)
        .env("WEIR_DATA_DIR", "/nonexistent-weir-test-dir")
        .output()
        .expect("weir runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// The token a `weir tenant token create|rotate` printed.
fn printed_token(stdout: &str) -> String {
    stdout.lines().find_map(|l| l.strip_prefix("token: ")).expect("a token line").trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_creates_lists_revokes_and_rotates_tokens_and_disables_tenants() {
    let server = TestServer::start(|_| {}).await;
    let (_, first) = server.tenant("acme").await;
    let url = server.url.clone();
    let cli = move |args: &[&str]| {
        let (ok, out, err) = weir(&url, ADMIN, args);
        assert!(ok, "weir {args:?} failed: {err}");
        out
    };
    let out = cli(&["tenant", "token", "create", "acme", "--label", "ci"]);
    let ci = server.client(&printed_token(&out));
    assert_eq!(whoami(&ci).await, 200);
    let list = cli(&["tenant", "token", "list", "acme"]);
    assert!(list.contains("ci") && list.contains("initial"), "{list}");
    assert!(!list.contains(&ci.token().unwrap()["weir_".len()..]), "{list}");
    let ci_id = out.split_whitespace().nth(1).unwrap().to_string();
    assert!(list.contains(&ci_id), "{list}\n{out}");
    cli(&["tenant", "token", "revoke", "acme", &ci_id]);
    assert_eq!(whoami(&ci).await, 401);

    let out = cli(&["tenant", "token", "rotate", "acme"]);
    assert!(out.contains("revoked"), "{out}");
    assert_eq!(whoami(&first).await, 401);
    let rotated = server.client(&printed_token(&out));
    assert_eq!(whoami(&rotated).await, 200);

    let out = cli(&["tenant", "disable", "acme"]);
    assert!(out.contains("disabled"), "{out}");
    assert_eq!(whoami(&rotated).await, 403);
    let list = cli(&["tenant", "list"]);
    assert!(list.contains("disabled since"), "{list}");
    cli(&["tenant", "enable", "acme"]);
    assert_eq!(whoami(&rotated).await, 200);

    // Errors say what is wrong.
    let (ok, _, err) = weir(&server.url, ADMIN, &["tenant", "disable", "nobody"]);
    assert!(!ok && err.contains("no tenant with id or name `nobody`"), "{err}");
    let (ok, _, err) = weir(&server.url, rotated.token().unwrap(), &["tenant", "token", "list", "acme"]);
    assert!(!ok && err.contains("admin"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_stored_before_token_ids_keeps_working_and_gets_an_id() {
    let temp = tempfile::tempdir().unwrap();
    let mut server = TestServer::start_in(temp.path(), |_| {}).await;
    let (a_id, a) = server.tenant("acme").await;
    let token = a.token().unwrap().to_string();
    let (_, tenant) = server.client(ADMIN).get(&format!("/api/v1/tenants/{a_id}")).await;
    drop(a);
    server.abort();
    drop(server);
    // The store as an older Weir left it: token hashes only, no `weir.token_info`.
    let path = temp.path().join("weir.redb");
    let deadline = std::time::Instant::now() + LONG;
    let db = loop {
        match redb::Database::open(&path) {
            Ok(db) => break db,
            Err(e) => assert!(std::time::Instant::now() < deadline, "{e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let txn = db.begin_write().unwrap();
    let info: redb::TableDefinition<'_, (&str, &str), &[u8]> = redb::TableDefinition::new("weir.token_info");
    assert!(txn.delete_table(info).unwrap(), "the table was there");
    txn.commit().unwrap();
    drop(db);

    let server = TestServer::start_in(temp.path(), |_| {}).await;
    assert_eq!(whoami(&server.client(&token)).await, 200, "the old token works");
    let (_, list) = server.client(ADMIN).get(&format!("/api/v1/tenants/{a_id}/tokens")).await;
    let data = list["data"].as_array().unwrap();
    assert_eq!(data.len(), 1, "{list}");
    assert_eq!(data[0]["created_ms"], tenant["created_ms"], "{list}");
    // It can be revoked like any other.
    let (status, _) = server
        .client(ADMIN)
        .delete(&format!("/api/v1/tenants/{a_id}/tokens/{}", data[0]["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    assert_eq!(whoami(&server.client(&token)).await, 401);
}

/// A tenant manages its own tokens once the admin lets it: it lists them (never the
/// secrets), issues one, revokes another (which answers 401 at once), up to the 64 a tenant
/// may hold; without the setting, issuing and revoking are refused with 403 and listing works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_manages_its_own_tokens_when_the_admin_lets_it() {
    let server = TestServer::start(|_| {}).await;
    let (id, api) = server.tenant("acme").await;
    let admin = server.client(ADMIN);
    let (status, list) = api.get("/api/v1/tenant/tokens").await;
    assert_eq!(status, 200, "{list}");
    let first = list["data"][0]["id"].as_str().unwrap().to_string();
    assert!(!list.to_string().contains(api.token().unwrap()), "{list}");
    let (status, v) = api.post("/api/v1/tenant/tokens", &json!({ "label": "ci" })).await;
    assert_eq!(status, 403, "{v}");
    assert!(v["error"].as_str().unwrap().contains("ask the admin"), "{v}");
    let (status, v) = api.delete(&format!("/api/v1/tenant/tokens/{first}")).await;
    assert_eq!(status, 403, "{v}");

    let (status, t) =
        admin.put(&format!("/api/v1/tenants/{id}/settings"), &json!({ "manage_own_tokens": true })).await;
    assert_eq!((status, &t["manage_own_tokens"]), (200, &json!(true)), "{t}");
    let (status, issued) = api.post("/api/v1/tenant/tokens", &json!({ "label": "ci" })).await;
    assert_eq!(status, 201, "{issued}");
    let second = Api::new(&server.url, issued["token"].as_str().unwrap());
    assert_eq!(whoami(&second).await, 200);
    // The new token revokes the first: it answers 401 from the next request on.
    let (status, v) = second.delete(&format!("/api/v1/tenant/tokens/{first}")).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(whoami(&api).await, 401);
    let (_, list) = second.get("/api/v1/tenant/tokens").await;
    let labels: Vec<&str> =
        list["data"].as_array().unwrap().iter().map(|t| t["label"].as_str().unwrap_or("")).collect();
    assert_eq!(labels, ["ci"], "{list}");
    // At most 64.
    for _ in 1..64 {
        let (status, v) = second.post_empty("/api/v1/tenant/tokens").await;
        assert_eq!(status, 201, "{v}");
    }
    let (status, v) = second.post_empty("/api/v1/tenant/tokens").await;
    assert_eq!(status, 409, "{v}");
    // The admin takes the setting back.
    admin.put(&format!("/api/v1/tenants/{id}/settings"), &json!({ "manage_own_tokens": false })).await;
    let (status, _) = second.post_empty("/api/v1/tenant/tokens").await;
    assert_eq!(status, 403);
}
