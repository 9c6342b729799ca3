//! The CLI client against a real server: upload, submit, list, get, checkpoints, streams,
//! stop — the commands a user types, checked on their output.

use crate::common;
use crate::server;

use std::process::Command;
use std::time::Duration;

use server::TestServer;

/// Runs `weir <args>` against `url` with `token`; returns stdout, failing on a non-zero exit.
fn weir(url: &str, token: &str, args: &[&str], stdin: Option<&str>) -> String {
    let (ok, stdout, stderr) = weir_status(url, token, args, stdin);
    assert!(ok, "weir {args:?} failed:\n{stdout}\n{stderr}");
    stdout
}

fn weir_status(url: &str, token: &str, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("--data-dir")
        .arg(dir.path())
        .args(args)
        .env("WEIR_URL", url)
        .env("WEIR_TOKEN", token)
        .env("RUST_BACKTRACE", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).unwrap();
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_upgrades_a_job_checks_first_and_reports_a_rollback() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let token = api.token().unwrap().to_string();
    let url = server.url.clone();
    api.upload_guest("wordcount").await;
    api.upload_guest("wordcount-v3").await;
    api.upload_guest("faulty").await;
    weir(&url, &token, &["stream", "create", "lines", "--partitions", "1"], None);
    weir(&url, &token, &["stream", "push", "lines"], Some("\"a b a\"\n\"b c\"\n"));
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), "up-job", "wordcount");
    let submitted = weir(&url, &token, &["job", "submit", spec.to_str().unwrap()], None);
    let job = submitted.split_whitespace().nth(1).unwrap().to_string();
    api.wait_job(&job, Duration::from_secs(60), |j| {
        j["vertices"][2]["records_in"].as_u64().unwrap_or(0) >= 5
    })
    .await;

    // A version that fails at once: the command waits, reports the rollback and fails.
    let (ok, out, err) = weir_status(
        &url,
        &token,
        &["job", "upgrade", &job, "--module", "count=faulty", "--grace-period-ms", "30000"],
        None,
    );
    assert!(!ok, "{out}");
    assert!(err.contains("rolled back") && err.contains("runs version 1"), "{out}\n{err}");

    // The check alone, then the upgrade with a rescale.
    let checked = weir(
        &url,
        &token,
        &["job", "upgrade", &job, "--module", "count=wordcount-v3", "--parallelism", "count=2", "--dry-run"],
        None,
    );
    assert!(checked.contains("version 1 -> 3"), "{checked}");
    assert!(checked.contains("count: parallelism 1 -> 2, state, state migrated 0 -> 1"), "{checked}");
    let upgraded = weir(
        &url,
        &token,
        &[
            "job",
            "upgrade",
            &job,
            "--module",
            "count=wordcount-v3",
            "--parallelism",
            "count=2",
            "--grace-period-ms",
            "200",
        ],
        None,
    );
    assert!(upgraded.contains(&format!("job {job} runs version 3 (running)")), "{upgraded}");
    let versions = weir(&url, &token, &["job", "versions", &job], None);
    for outcome in ["replaced", "rolled back", "current"] {
        assert!(versions.contains(outcome), "{versions}");
    }
    let (ok, _, err) = weir_status(&url, &token, &["job", "upgrade", &job, "--parallelism", "nope=2"], None);
    assert!(!ok && err.contains("no node `nope`"), "{err}");
}

/// Writes the word-count job of these tests (stream `lines` → tokenizer → `module` →
/// stream `counts`) to `dir/job.json`.
fn write_spec(dir: &std::path::Path, name: &str, module: &str) -> std::path::PathBuf {
    let spec = dir.join("job.json");
    let job = serde_json::json!({
        "name": name,
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "stream", "config": { "stream": "lines", "follow": true } },
            { "id": "split", "kind": "operator", "module": "builtin:tokenizer" },
            { "id": "count", "kind": "operator", "module": module },
            { "id": "out", "kind": "sink", "connector": "stream", "config": { "stream": "counts", "partitions": 1 } }
        ],
        "edges": [
            { "from": "lines", "to": "split" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 100 } }
    });
    std::fs::write(&spec, job.to_string()).unwrap();
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_drives_a_job_through_the_api() {
    let server = TestServer::start(|_| {}).await;
    let url = server.url.clone();
    // Tenants through the CLI with the admin token.
    let created = weir(&url, server::ADMIN, &["tenant", "create", "acme"], None);
    let token =
        created.lines().find_map(|l| l.strip_prefix("token: ")).expect("token printed").trim().to_string();
    assert!(weir(&url, server::ADMIN, &["tenant", "list"], None).contains("acme"));

    let wordcount = common::guest_path("wordcount");
    let uploaded =
        weir(&url, &token, &["module", "upload", wordcount.to_str().unwrap(), "--name", "wc"], None);
    assert!(uploaded.contains("`wc`"), "{uploaded}");
    let modules = weir(&url, &token, &["module", "list"], None);
    assert!(modules.contains("wc") && modules.contains("id"), "{modules}");

    weir(&url, &token, &["stream", "create", "lines", "--partitions", "1"], None);
    let pushed = weir(&url, &token, &["stream", "push", "lines"], Some("\"a b a\"\n{\"value\": \"b c\"}\n"));
    assert!(pushed.contains("2 record(s) appended"), "{pushed}");

    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), "cli-job", "wc");
    let submitted = weir(&url, &token, &["job", "submit", spec.to_str().unwrap()], None);
    let job = submitted.split_whitespace().nth(1).expect("job id printed").to_string();
    assert!(submitted.contains("running"), "{submitted}");
    let listed = weir(&url, &token, &["job", "list"], None);
    assert!(listed.contains(&job) && listed.contains("cli-job"), "{listed}");

    // The output appears; `stream read` shows it.
    let api = server.client(&token);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let read = weir(&url, &token, &["stream", "read", "counts"], None);
        if read.contains("next offset: 3") {
            assert!(read.contains("\"a\"") || read.contains(" a "), "{read}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no output: {read}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let triggered = weir(&url, &token, &["checkpoint", "trigger", &job], None);
    assert!(triggered.contains("completed"), "{triggered}");
    let history = weir(&url, &token, &["checkpoint", "list", &job], None);
    assert!(history.contains("completed") && history.contains("duration ms"), "{history}");
    // An aligned job (the default mode): no unaligned checkpoint, and the in-flight figures.
    assert!(history.contains("(0 unaligned") && history.contains("persisted in-flight bytes"), "{history}");
    let shown = weir(&url, &token, &["job", "get", &job], None);
    assert!(shown.contains("split") && shown.contains("records in"), "{shown}");

    let stopped = weir(&url, &token, &["job", "stop", &job], None);
    assert!(stopped.contains("stopping"), "{stopped}");
    api.wait_status(&job, "stopped", Duration::from_secs(60)).await;

    // Errors are the API's message, with a failing exit status.
    let (ok, _, err) = weir_status(&url, &token, &["job", "get", "0123456789abcdef0123456789abcdef"], None);
    assert!(!ok && err.contains("404") && err.contains("no job"), "{err}");
    let (ok, _, err) = weir_status(&url, "wrong", &["job", "list"], None);
    assert!(!ok && err.contains("401"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_takes_exports_imports_and_restores_savepoints() {
    let server = TestServer::start(|_| {}).await;
    let (_, api) = server.tenant("acme").await;
    let token = api.token().unwrap().to_string();
    let url = server.url.clone();
    api.upload_guest("wordcount").await;
    weir(&url, &token, &["stream", "create", "lines", "--partitions", "1"], None);
    weir(&url, &token, &["stream", "push", "lines"], Some("\"a b a\"\n\"b c\"\n"));
    let dir = tempfile::tempdir().unwrap();
    let spec = write_spec(dir.path(), "sp-job", "wordcount");
    let submitted = weir(&url, &token, &["job", "submit", spec.to_str().unwrap()], None);
    let job = submitted.split_whitespace().nth(1).unwrap().to_string();
    api.wait_job(&job, Duration::from_secs(60), |j| {
        j["vertices"][2]["records_in"].as_u64().unwrap_or(0) >= 5
    })
    .await;

    // Trigger with stop: waits for the outcome and prints it.
    let taken = weir(&url, &token, &["savepoint", "trigger", &job, "--mode", "stop"], None);
    assert!(taken.contains("completed") && taken.contains("entries"), "{taken}");
    let id = taken.split_whitespace().nth(1).unwrap().to_string();
    api.wait_status(&job, "stopped", Duration::from_secs(60)).await;
    let listed = weir(&url, &token, &["savepoint", "list", "--job", &job], None);
    assert!(listed.contains(&id) && listed.contains("stop"), "{listed}");
    let shown = weir(&url, &token, &["savepoint", "get", &id], None);
    assert!(shown.contains("count") && shown.contains("max_parallelism 128"), "{shown}");

    // Export to a file, import it back as a second savepoint, restore from that one.
    let file = dir.path().join("sp.weirsp");
    let exported = weir(&url, &token, &["savepoint", "export", &id, "-o", file.to_str().unwrap()], None);
    assert!(exported.contains("exported"), "{exported}");
    assert_eq!(&std::fs::read(&file).unwrap()[..8], b"WEIRSAVE");
    let imported = weir(&url, &token, &["savepoint", "import", file.to_str().unwrap()], None);
    assert!(imported.contains(&format!("imported from savepoint {id}")), "{imported}");
    let copy = imported.split_whitespace().nth(1).unwrap().to_string();
    assert_ne!(copy, id);
    let restored =
        weir(&url, &token, &["job", "submit", spec.to_str().unwrap(), "--from-savepoint", &copy], None);
    assert!(restored.contains(&format!("restored from savepoint {copy}")), "{restored}");
    assert!(restored.contains("count: parallelism 1 -> 1"), "{restored}");

    // Delete; afterwards it is gone.
    let deleted = weir(&url, &token, &["savepoint", "delete", &id], None);
    assert!(deleted.contains("deleted"), "{deleted}");
    let (ok, _, err) = weir_status(&url, &token, &["savepoint", "get", &id], None);
    assert!(!ok && err.contains("404"), "{err}");
    let (ok, _, err) = weir_status(&url, &token, &["savepoint", "import", spec.to_str().unwrap()], None);
    assert!(!ok && err.contains("not a Weir savepoint file"), "{err}");
}
