//! Tenant B's attacks on the wings built since the first round (issue 40): fat batches, a
//! timer storm, amplifying stream requests and clients that do not read their answers.
//! Each asserts what B gets; the suite measures A beside each one.

use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::attacks::B;

const LONG: std::time::Duration = std::time::Duration::from_secs(120);

/// Waits until B's job `id` has finished.
async fn finishes(b: &B, id: &str) {
    let job = b.api.wait_job(id, LONG, |j| j["status"] == "finished" || j["status"] == "failed").await;
    assert_eq!(job["status"], "finished", "{job}");
}

/// Lines of ~75 KB (10,000 words of a large vocabulary) at the largest batch size: batches
/// are cut by bytes and channels count bytes, so the job runs through in bounded memory
/// (once one batch was 0.9 GB).
pub async fn fat_batches(b: &B) {
    let spec = json!({
        "name": "fat",
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "words", "lines": 300, "words_per_line": 10_000,
                          "vocabulary": 1_000_000, "batch_size": 8192 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "out" } ],
        "settings": { "channel_capacity_bytes": 4 << 20, "checkpoint": { "interval_ms": null } }
    });
    let id = b.api.create_job(&spec).await;
    finishes(b, &id).await;
}

/// 3,000 timers due at once, each emitting 20 records, ahead of a slow consumer: they fire
/// one call at a time as room frees up downstream (once they all queued at once).
pub async fn timer_storm(b: &B) {
    let spec = json!({
        "name": "storm",
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 50, "batch_size": 10, "interval_ms": 1,
                          "out_of_orderness_ms": 0 } },
            { "id": "storm", "kind": "operator", "module": "faulty",
              "config": { "storm_at": 5, "timer_count": 3000, "storm_records": 20 } },
            { "id": "slow", "kind": "operator", "module": "faulty", "config": { "work": 20_000 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [
            { "from": "src", "to": "storm" },
            { "from": "storm", "to": "slow" },
            { "from": "slow", "to": "out" }
        ],
        "settings": { "channel_capacity": 4, "checkpoint": { "interval_ms": null } }
    });
    let id = b.api.create_job(&spec).await;
    finishes(b, &id).await;
}

/// Requests whose JSON and MessagePack once became value trees 30–70 times their size: an
/// append of 50,000 records of 160 small numbers (~17 MB), then pages of those records,
/// each within the server's `max_page_bytes`.
pub async fn amplifying_streams(b: &B) {
    let (status, v) = b.api.post("/api/v1/streams", &json!({ "name": "numbers", "partitions": 1 })).await;
    assert_eq!(status, 201, "{v}");
    let zeros = format!("[{}0]", "0,".repeat(159));
    let body = format!(r#"{{"records":[{}]}}"#, vec![format!(r#"{{"value":{zeros}}}"#); 50_000].join(","));
    let (status, v) = b
        .api
        .send_bytes(
            reqwest::Method::POST,
            "/api/v1/streams/numbers/records",
            "application/json",
            body.into_bytes(),
        )
        .await;
    assert_eq!(status, 201, "{}", v.to_string().chars().take(300).collect::<String>());
    let (mut offset, mut pages) = (0u64, 0);
    while offset < 50_000 {
        let (status, page) =
            b.api.get(&format!("/api/v1/streams/numbers/records?offset={offset}&limit=10000")).await;
        assert_eq!(status, 200, "{page}");
        offset = page["next_offset"].as_u64().unwrap();
        pages += 1;
    }
    eprintln!("    50,000 records read back in {pages} pages");
}

/// 16 requests for a page of ~4 MB whose answers B does not read for twice the server's
/// `response_write_timeout_ms`: each is cut off when its write stalls, and meanwhile they
/// hold B's request permits, not the server (A is measured throughout).
pub async fn slow_readers(b: &B, write_timeout: std::time::Duration) {
    let host = b.url.strip_prefix("http://").unwrap().to_string();
    let token = b.api.token().unwrap().to_string();
    let mut held = Vec::new();
    for _ in 0..16 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut stream = socket.connect(host.parse().unwrap()).await.unwrap();
        let request = format!(
            "GET /api/v1/streams/numbers/records?limit=10000 HTTP/1.1\r\nHost: weir\r\nAuthorization: Bearer {token}\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        held.push(stream);
    }
    // The client's behaviour, not a synchronisation: it does not read for this long.
    tokio::time::sleep(2 * write_timeout).await;
    let (mut cut, mut whole, mut refused) = (0, 0, 0);
    for mut stream in held {
        let mut answer = Vec::new();
        let read = tokio::time::timeout(LONG, async {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => answer.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        assert!(read.is_ok(), "an unread page's connection was not closed");
        let text = String::from_utf8_lossy(&answer[..answer.len().min(4096)]).to_string();
        let status = text.get(9..12).unwrap_or_default().to_string();
        let length: usize = text
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        let head = text.find("\r\n\r\n").map_or(0, |i| i + 4);
        // A page the kernel's buffers took whole was not stalled: its connection ends at the
        // keep-alive timeout instead.
        match status.as_str() {
            "200" if answer.len() < head + length => cut += 1,
            "200" => whole += 1,
            "429" => refused += 1,
            _ => panic!("an unread page ended as {status}, {} of {} bytes", answer.len(), head + length),
        }
    }
    eprintln!("    unread pages: {cut} cut off, {whole} buffered whole, {refused} refused");
    assert_eq!(cut + whole + refused, 16);
}
