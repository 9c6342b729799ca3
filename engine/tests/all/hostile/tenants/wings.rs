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

/// Waits until B's job `id` has failed; returns its error.
async fn fails(b: &B, id: &str) -> String {
    let job = b.api.wait_job(id, LONG, |j| j["status"] == "finished" || j["status"] == "failed").await;
    assert_eq!(job["status"], "failed", "{job}");
    job["error"].as_str().unwrap_or_default().to_string()
}

/// A Python operator (componentize-py, `examples/python/tests/hostile/pickle_bomb.py`) that
/// answers every batch with a pickle of 100,000 records sharing one 1 MiB string through
/// the memo: ~300 KB that reads as ~100 GB. The host's reader stops at the output limit and
/// the job fails saying so (once a document's parse took ~44 bytes of host memory per byte
/// with no tie to that limit).
pub async fn pickle_bomb(b: &B, module: &str) {
    let spec = json!({
        "name": "pickle-bomb",
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": 100, "batch_size": 10 } },
            { "id": "bomb", "kind": "operator", "module": module },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "bomb" }, { "from": "bomb", "to": "out" } ],
        "settings": { "checkpoint": { "interval_ms": null }, "restart": { "attempts": 0 } }
    });
    let id = b.api.create_job(&spec).await;
    let error = fails(b, &id).await;
    eprintln!("    {error}");
    assert!(
        error.contains("bytes of output from one process call")
            && error.contains("max_output_bytes_per_call"),
        "{error}"
    );
}

/// One gzip record batch of ~64 KiB holding one record of 64 MiB of zeros.
pub fn gzip_bomb() -> bytes::Bytes {
    use weir::connectors::kafka::client::{ProduceRecord, encode_batch};
    let record = ProduceRecord { key: None, value: Some(vec![0u8; 64 << 20]), timestamp: 0, headers: vec![] };
    let batch = encode_batch(&[record], None, false, kafka_protocol::records::Compression::Gzip).unwrap();
    assert!(batch.len() < 1 << 20, "the bomb is {} bytes", batch.len());
    batch
}

/// B's granted topic `b-bomb` holds one gzip batch of ~64 KiB that inflates to 64 MiB
/// ([`gzip_bomb`], served as a broker serves a producer's batch), and B's job reads it: the
/// batch is refused before it is inflated past the 32 MiB a batch may take, and the job
/// fails naming that bound and the topic, never the broker's address.
pub async fn decompression_bomb(b: &B) {
    let spec = json!({
        "name": "decompression-bomb",
        "nodes": [
            { "id": "in", "kind": "source", "connector": "kafka",
              "config": { "connection": "main", "topics": ["b-bomb"], "key_format": "raw",
                          "value_format": "raw" } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "in", "to": "out" } ],
        "settings": { "checkpoint": { "interval_ms": null }, "restart": { "attempts": 0 } }
    });
    let id = b.api.create_job(&spec).await;
    let error = fails(b, &id).await;
    eprintln!("    {error}");
    assert!(error.contains("does not decompress within 33554432 bytes (gzip)"), "{error}");
    assert!(
        !error.contains(&b.url) && !error.contains("127.0.0.1"),
        "an address reaches the tenant: {error}"
    );
}

/// 300 sockets to the cluster port that never say hello, from two loopback addresses:
/// past each address's budget of connections that have not proved the token they are
/// closed at once, the others at the hello timeout; none holds a session permit (A is
/// measured throughout).
pub async fn tokenless_cluster_sockets(cluster: &str, hello_timeout: std::time::Duration) {
    let target: std::net::SocketAddr = cluster.parse().unwrap();
    let mut silent = Vec::new();
    for from in ["127.0.0.1", "127.0.0.3"] {
        for _ in 0..150 {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
            match socket.connect(target).await {
                Ok(stream) => silent.push(stream),
                Err(e) => eprintln!("    a silent socket was refused: {e}"),
            }
        }
    }
    let opened = silent.len();
    let deadline = std::time::Instant::now() + hello_timeout + std::time::Duration::from_secs(30);
    let mut closed = 0;
    for mut stream in silent {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut buf = [0u8; 64];
        loop {
            match tokio::time::timeout(left, stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => {
                    closed += 1;
                    break;
                }
                Ok(Ok(_)) => continue,
                Err(_) => break,
            }
        }
    }
    eprintln!("    {opened} silent cluster sockets, {closed} closed");
    assert_eq!(closed, opened, "the controller kept token-less sockets open past its hello timeout");
}

/// B's ring of operator logs in this suite.
pub const B_LOG_BYTES: u64 = 128 << 10;

/// A guest that logs 1 MB/s (ten records a second, each logging 100 lines of 1 KiB) and
/// names 100 counters (issue 42): its instance keeps what its rate allows and drops the
/// rest, counted in B's metrics; the job's log stays within B's ring; the server's own log
/// gets a summary, never a line of the guest; B's metrics hold at most 32 of its counters.
pub async fn log_flood(b: &B, server_log: &crate::server::ProcessLog) {
    const RECORDS: u64 = 40;
    const LINES: u64 = 100;
    let (log_bytes, log_lines) = server_log.written();
    let started = std::time::Instant::now();
    let spec = json!({
        "name": "flood",
        "nodes": [
            { "id": "src", "kind": "source", "connector": "generator",
              "config": { "mode": "sequence", "count": RECORDS, "batch_size": 1, "records_per_second": 10 } },
            { "id": "flood", "kind": "operator", "module": "counter",
              "config": { "log_flood": LINES, "counter_flood": 100 } },
            { "id": "out", "kind": "sink", "connector": "blackhole" }
        ],
        "edges": [ { "from": "src", "to": "flood" }, { "from": "flood", "to": "out" } ],
        "settings": { "checkpoint": { "interval_ms": null } }
    });
    let id = b.api.create_job(&spec).await;
    finishes(b, &id).await;
    let seconds = started.elapsed().as_secs_f64();

    // The ring: every line B can read is within its bound.
    let (status, page) = b.api.get(&format!("/api/v1/jobs/{id}/logs?limit=10000")).await;
    assert_eq!(status, 200, "{page}");
    let read = page["data"].as_array().unwrap();
    let text: u64 = read.iter().map(|l| l["message"].as_str().unwrap().len() as u64).sum();
    assert!(
        !read.is_empty() && text <= B_LOG_BYTES,
        "{} lines, {text} bytes in a ring of {B_LOG_BYTES}",
        read.len()
    );
    // The rate: 64 KiB of text a second per instance (a second's burst); the rest dropped
    // and counted.
    let metrics = b.api.text("/api/v1/metrics").await;
    let sum = |name: &str| -> f64 {
        metrics
            .lines()
            .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&format!("job=\"{id}\"")))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
            .sum()
    };
    let (kept, dropped) =
        (sum("weir_operator_log_lines_total"), sum("weir_operator_log_lines_dropped_total"));
    let allowed = (64.0 * 1024.0 * (seconds + 1.0) / 1000.0).ceil();
    assert!(kept > 0.0 && kept <= allowed, "kept {kept} lines in {seconds:.1} s (at most {allowed})");
    assert!(
        kept + dropped >= (RECORDS * LINES) as f64,
        "kept {kept} + dropped {dropped} of {}",
        RECORDS * LINES
    );
    let counters = metrics
        .lines()
        .filter(|l| l.starts_with("weir_operator_counter_total{") && l.contains(&format!("job=\"{id}\"")))
        .count();
    assert!(counters <= 32, "{counters} counter series of one instance");
    // The server's own log: a summary of the drops, no line of the guest, a few KiB.
    let (bytes, _) = server_log.written();
    let said = server_log.lines_after(log_lines);
    assert!(said.iter().any(|l| l.contains("operators logged past their rate")), "{said:#?}");
    assert!(!said.iter().any(|l| l.contains("flood ")), "a guest's line in the server's log");
    assert!(bytes - log_bytes <= 64 << 10, "the server logged {} bytes", bytes - log_bytes);
    eprintln!(
        "    logs: {kept} lines kept, {dropped} dropped in {seconds:.1} s; {} lines ({text} bytes) in the ring; \
         the server logged {} bytes",
        read.len(),
        bytes - log_bytes
    );
}
