//! Unread savepoint exports (issue 40): an export used to be written from one read
//! transaction on a blocking thread straight into the response, so a client that never read
//! it held the thread and the transaction (which pins the store's pages: another tenant's
//! churn grew `weir.redb` without bound) and its connection, and was not counted by the
//! per-tenant request limit. Now the file is spooled first (the transaction ends before the
//! first byte), the spool is charged to the tenant's storage quota, and the request holds
//! one of the tenant's `max_requests_per_tenant` permits until its body ends.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::net::{TcpSocket, TcpStream};

use crate::server::{Api, TestServer, files, wait_for};

const LONG: Duration = Duration::from_secs(120);
/// B's state: this many distinct words of `WORD` letters (~12 MB).
const WORDS: usize = 12_000;
const WORD: usize = 1_000;

/// Distinct lowercase words of `WORD` letters, 8 to a line (seeded, so a rerun is the same).
fn long_word_lines() -> Vec<Value> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut letter = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (b'a' + (state % 26) as u8) as char
    };
    let words: Vec<String> = (0..WORDS).map(|_| (0..WORD).map(|_| letter()).collect()).collect();
    words.chunks(8).map(|line| json!({ "value": line.join(" ") })).collect()
}

/// stream `lines` → tokenizer → word count → blackhole, checkpoints every 200 ms.
fn spec() -> Value {
    json!({
        "name": "long-words",
        "nodes": [
            { "id": "lines", "kind": "source", "connector": "stream", "config": { "stream": "lines", "follow": true } },
            { "id": "split", "kind": "operator", "module": "tokenizer" },
            { "id": "count", "kind": "operator", "module": "wordcount" },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "lines", "to": "split" },
            { "from": "split", "to": "count", "partitioning": "hash" },
            { "from": "count", "to": "out" }
        ],
        "settings": { "checkpoint": { "interval_ms": 200 } }
    })
}

/// A savepoint of B's job holding ~12 MB of state; returns its id.
async fn big_savepoint(b: &Api) -> String {
    b.upload_guest("tokenizer").await;
    b.upload_guest("wordcount").await;
    let (status, v) = b.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 1 })).await;
    assert_eq!(status, 201, "{v}");
    for chunk in long_word_lines().chunks(100) {
        let (status, v) = b.post("/api/v1/streams/lines/records", &json!({ "records": chunk })).await;
        assert_eq!(status, 201, "{v}");
    }
    let job = b.create_job(&spec()).await;
    b.wait_job(&job, LONG, |j| {
        j["vertices"].as_array().unwrap().iter().any(|v| v["id"] == "count" && v["records_in"] == WORDS)
    })
    .await;
    let (status, sp) = b.post(&format!("/api/v1/jobs/{job}/savepoints"), &json!({ "mode": "stop" })).await;
    assert_eq!(status, 202, "{sp}");
    let id = sp["id"].as_str().unwrap().to_string();
    wait_for("the savepoint completes", LONG, || {
        let (b, id) = (b.clone(), id.clone());
        async move {
            let (_, now) = b.get(&format!("/api/v1/savepoints/{id}")).await;
            assert_ne!(now["status"], "failed", "{now}");
            now["status"] == "completed"
        }
    })
    .await;
    id
}

/// An export request on a connection with a tiny receive window: reads the response's head
/// and none of its body. Returns the connection, the status and the Content-Length.
async fn unread_export(url: &str, token: &str, savepoint: &str) -> (TcpStream, u16, u64) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let address = url.strip_prefix("http://").unwrap().parse().unwrap();
    let mut stream = socket.connect(address).await.expect("connect");
    let request = format!(
        "GET /api/v1/savepoints/{savepoint}/file HTTP/1.1\r\nHost: weir\r\nAuthorization: Bearer {token}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(LONG, stream.read(&mut byte)).await.expect("a response head").unwrap();
        assert_eq!(n, 1, "the server closed the connection: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head[9..12].parse().unwrap();
    let length = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or(0);
    (stream, status, length)
}

fn redb_bytes(server: &TestServer) -> u64 {
    std::fs::metadata(server.data_dir.join("weir.redb")).unwrap().len()
}

async fn storage(api: &Api) -> u64 {
    let (status, v) = api.get("/api/v1/tenant").await;
    assert_eq!(status, 200, "{v}");
    v["usage"]["storage_bytes"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unread_exports_hold_request_permits_and_quota_but_no_transaction() {
    let server = TestServer::start(|c| c.max_requests_per_tenant = 4).await;
    let quota = json!({ "max_storage_bytes": 256u64 << 20 });
    let (_, a) = server.tenant_with("a", Some(quota.clone())).await;
    let (_, b) = server.tenant_with("b", Some(quota)).await;
    let savepoint = big_savepoint(&b).await;
    let file = b
        .request(reqwest::Method::GET, &format!("/api/v1/savepoints/{savepoint}/file"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(file.len() > 10 << 20, "a savepoint file of {} bytes", file.len());
    let stored = storage(&b).await;

    // Exports that B never reads: each holds a permit and its spool's room in B's quota.
    let token = b.token().unwrap().to_string();
    let mut unread = Vec::new();
    for _ in 0..3 {
        let (stream, status, length) = unread_export(&server.url, &token, &savepoint).await;
        assert_eq!((status, length), (200, file.len() as u64));
        unread.push(stream);
    }
    let held = storage(&b).await - stored;
    assert!(
        held >= 3 * file.len() as u64,
        "three spools of {} bytes hold {held} bytes of B's quota",
        file.len()
    );
    // The spools are unlinked once open: nothing is left under tmp/ to clean up.
    assert!(files(&server.data_dir.join("tmp")).is_empty(), "spool files are left under tmp/");
    // A fourth takes B's last permit; then B is at its limit: a fifth export, and anything
    // else, answers 429.
    let (stream, status, _) = unread_export(&server.url, &token, &savepoint).await;
    assert_eq!(status, 200, "a fourth export while three are unread");
    unread.push(stream);
    let (_, status, _) = unread_export(&server.url, &token, &savepoint).await;
    assert_eq!(status, 429, "a fifth export while four are unread");
    let (status, v) = b.get("/api/v1/jobs").await;
    assert_eq!(status, 429, "{v}");
    assert!(v["error"].as_str().unwrap().contains("max_requests_per_tenant"), "{v}");

    // A is served, and A's churn (importing B's file and deleting it) reuses the store's
    // pages: no read transaction of the unread exports pins them. (The first round may
    // grow the file by a region; an export that pinned pages grew it by a file a round.)
    let mut sizes = Vec::new();
    for round in 0..7 {
        let (status, v) = a
            .send_bytes(
                reqwest::Method::POST,
                "/api/v1/savepoints",
                "application/octet-stream",
                file.to_vec(),
            )
            .await;
        assert_eq!(status, 201, "round {round}: {v}");
        let (status, v) = a.delete(&format!("/api/v1/savepoints/{}", v["id"].as_str().unwrap())).await;
        assert_eq!(status, 204, "round {round}: {v}");
        sizes.push(redb_bytes(&server));
    }
    println!("weir.redb after each import and delete of {} bytes: {sizes:?}", file.len());
    // (redb may also shrink the file when its tail is free.)
    let grown = sizes.iter().max().unwrap().saturating_sub(sizes[0]);
    assert!(
        grown < file.len() as u64,
        "weir.redb grew by {grown} bytes over six imports and deletes of a {} byte file",
        file.len()
    );

    // Once B's clients go, B's permits and its quota come back.
    drop(unread);
    wait_for("B is served again", LONG, || {
        let b = b.fresh();
        async move { b.get("/api/v1/jobs").await.0 == 200 }
    })
    .await;
    wait_for("the spools' reservations are given back", LONG, || {
        let b = b.fresh();
        async move { storage(&b).await == stored }
    })
    .await;
}
