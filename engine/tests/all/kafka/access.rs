//! Kafka connections and tenants' grants through a real server and socket: every refusal
//! answers before a job exists, with its status and a message that names no address and no
//! secret, and no request makes the server connect anywhere: the configured connections
//! point at a loopback port this test listens on, and no connection arrives there.

use crate::server;

use std::net::TcpListener;

use serde_json::{Value, json};
use server::{ADMIN, Api, TestServer};
use weir::connectors::kafka::{ConnectionConfig, SaslMechanism, Secret, SecurityProtocol};

const PASSWORD: &str = "hunter2-kafka-password";

/// A server whose connections `main`, `other` and `secure` all lead to `listener`, and a
/// tenant granted `main` (topics `acme.`, groups `acme-`) and `secure`.
async fn setup(listener: &TcpListener) -> (TestServer, Api, String, String) {
    let address = listener.local_addr().expect("address").to_string();
    let plain = ConnectionConfig::plaintext([address.clone()]);
    let secure = ConnectionConfig {
        security_protocol: SecurityProtocol::SaslPlaintext,
        sasl_mechanism: Some(SaslMechanism::ScramSha256),
        sasl_username: Some("weir".into()),
        sasl_password: Some(Secret::new(PASSWORD)),
        ..plain.clone()
    };
    let server = TestServer::start(|c| {
        c.kafka_connections.insert("main".into(), plain.clone());
        c.kafka_connections.insert("other".into(), plain.clone());
        c.kafka_connections.insert("secure".into(), secure);
    })
    .await;
    let (tenant, api) = server.tenant("acme").await;
    let grants = json!([
        { "connection": "main", "topic_prefixes": ["acme."], "group_prefixes": ["acme-"] },
        { "connection": "secure", "topic_prefixes": ["acme."] }
    ]);
    let (status, body) = server
        .client(ADMIN)
        .put(&format!("/api/v1/tenants/{tenant}/kafka"), &json!({ "grants": grants }))
        .await;
    assert_eq!(status, 200, "set grants: {body}");
    assert_eq!(body["kafka"], grants.as_array().map(|g| with_defaults(g)).unwrap());
    (server, api, tenant, address)
}

/// Grants as the server echoes them (missing prefixes as empty lists).
fn with_defaults(grants: &[Value]) -> Value {
    grants
        .iter()
        .map(|g| {
            let mut g = g.clone();
            for key in ["topic_prefixes", "group_prefixes"] {
                if g.get(key).is_none() {
                    g[key] = json!([]);
                }
            }
            g
        })
        .collect()
}

/// kafka source `source` → tokenizer → `sink`.
fn job(source: Value, sink: Value) -> Value {
    json!({
        "name": "kafka",
        "nodes": [
            { "id": "in", "kind": "source", "connector": source["connector"], "config": source["config"] },
            { "id": "op", "kind": "operator", "module": "builtin:tokenizer" },
            { "id": "out", "kind": "sink", "connector": sink["connector"], "config": sink["config"] }
        ],
        "edges": [ { "from": "in", "to": "op" }, { "from": "op", "to": "out" } ]
    })
}

fn kafka_source(config: Value) -> Value {
    job(json!({ "connector": "kafka", "config": config }), json!({ "connector": "blackhole", "config": {} }))
}

fn kafka_sink(config: Value) -> Value {
    job(
        json!({ "connector": "generator", "config": { "mode": "sequence", "count": 10 } }),
        json!({ "connector": "kafka", "config": config }),
    )
}

/// No connection has arrived at `listener` (it is non-blocking).
fn assert_no_connection(listener: &TcpListener) {
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok((_, peer)) => panic!("the server connected to the Kafka address (from {peer})"),
        Err(e) => panic!("accept: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_specs_never_start_or_connect() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("non-blocking");
    let (server, api, _, address) = setup(&listener).await;
    let inline = "name a connection; the server connects only to the connections its admin configured";
    let cases: Vec<(&str, Value, u16, Vec<&str>)> = vec![
        (
            "inline brokers",
            kafka_source(json!({ "brokers": { "bootstrap_servers": [address] }, "topics": ["acme.a"] })),
            400,
            vec!["node `in`", "`brokers` is not accepted", inline],
        ),
        (
            "inline bootstrap_servers",
            kafka_source(
                json!({ "connection": "main", "bootstrap_servers": ["10.0.0.1:9092"], "topics": ["acme.a"] }),
            ),
            400,
            vec![inline],
        ),
        (
            "inline credentials",
            kafka_sink(json!({ "connection": "main", "topic": "acme.out", "sasl_password": "x" })),
            400,
            vec!["node `out`", "`sasl_password` is not accepted", inline],
        ),
        (
            "unknown connection",
            kafka_source(json!({ "connection": "nope", "topics": ["acme.a"] })),
            400,
            vec!["there is no Kafka connection `nope`; the tenant may use: main, secure"],
        ),
        (
            "connection not granted",
            kafka_source(json!({ "connection": "other", "topics": ["acme.a"] })),
            403,
            vec!["the tenant may not use Kafka connection `other`", "the tenant may use: main, secure"],
        ),
        (
            "topic outside the prefixes",
            kafka_source(json!({ "connection": "main", "topics": ["acme.a", "globex.orders"] })),
            403,
            vec!["topic `globex.orders` is outside what the tenant may use on connection `main`", "`acme.`"],
        ),
        (
            "pattern without a literal prefix",
            kafka_source(json!({ "connection": "main", "topic_pattern": ".*" })),
            403,
            vec!["topic_pattern `.*` may match topics outside", "start it with one of: `acme.`"],
        ),
        (
            "pattern reaching another prefix",
            kafka_source(json!({ "connection": "main", "topic_pattern": "(acme|globex)\\..*" })),
            403,
            vec!["may match topics outside"],
        ),
        (
            "pattern whose prefix is too short",
            kafka_source(json!({ "connection": "main", "topic_pattern": "acme.*" })),
            403,
            vec!["may match topics outside"],
        ),
        (
            "group outside the prefixes",
            kafka_source(json!({ "connection": "main", "topics": ["acme.a"], "group_id": "globex-g" })),
            403,
            vec!["group_id `globex-g` is outside", "`acme-`"],
        ),
        (
            "a grant without group prefixes",
            kafka_source(json!({ "connection": "secure", "topics": ["acme.a"], "group_id": "acme-g",
                "commit_offsets": true })),
            403,
            vec!["group_id `acme-g` is outside", "none (the grant allows nothing here)"],
        ),
        (
            "sink topic outside the prefixes",
            kafka_sink(json!({ "connection": "main", "topic": "globex.out" })),
            403,
            vec!["node `out`", "topic `globex.out` is outside"],
        ),
        (
            "transactional id outside the prefixes",
            kafka_sink(json!({ "connection": "main", "topic": "acme.out", "delivery": "transactional",
                "transactional_id_prefix": "globex-" })),
            403,
            vec!["transactional_id_prefix `globex-` is outside"],
        ),
        (
            "transactional without a prefix",
            kafka_sink(json!({ "connection": "main", "topic": "acme.out", "delivery": "transactional" })),
            400,
            vec!["needs a `transactional_id_prefix`"],
        ),
        (
            "a setting out of range",
            kafka_source(json!({ "connection": "main", "topics": ["acme.a"], "fetch_max_wait_ms": 40000 })),
            400,
            vec!["fetch_max_wait_ms must be from 0 to 30000, got 40000"],
        ),
    ];
    for (what, spec, status, needles) in &cases {
        let (got, body) = api.post("/api/v1/jobs", spec).await;
        assert_eq!(got, *status, "{what}: {body}");
        let message = body["error"].as_str().unwrap_or_else(|| panic!("{what}: no error message: {body}"));
        for needle in needles {
            assert!(message.contains(needle), "{what}: `{message}` does not say `{needle}`");
        }
        for secret in [address.as_str(), PASSWORD, "other,"] {
            assert!(!message.contains(secret), "{what}: `{message}` shows `{secret}`");
        }
    }
    // A tenant without grants has no Kafka at all.
    let (_, stranger) = server.tenant("globex").await;
    let (status, body) = stranger
        .post("/api/v1/jobs", &kafka_source(json!({ "connection": "main", "topics": ["acme.a"] })))
        .await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap().contains("the tenant may use: none"), "{body}");
    // Nothing was created, nothing started, nothing connected.
    for client in [&api, &stranger] {
        let (status, jobs) = client.get("/api/v1/jobs").await;
        assert_eq!(status, 200, "{jobs}");
        assert_eq!(jobs["data"], json!([]), "a refused spec left a job");
    }
    assert_no_connection(&listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_see_names_and_prefixes_only() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    listener.set_nonblocking(true).expect("non-blocking");
    let (server, api, tenant, address) = setup(&listener).await;
    let (status, body) = api.get("/api/v1/kafka/connections").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["data"],
        json!([
            { "connection": "main", "topic_prefixes": ["acme."], "group_prefixes": ["acme-"] },
            { "connection": "secure", "topic_prefixes": ["acme."], "group_prefixes": [] }
        ])
    );
    let (status, me) = api.get("/api/v1/tenant").await;
    assert_eq!(status, 200, "{me}");
    for text in [body.to_string(), me.to_string()] {
        assert!(!text.contains(&address) && !text.contains(PASSWORD), "{text}");
    }
    // Admin input is checked.
    let admin = server.client(ADMIN);
    let path = format!("/api/v1/tenants/{tenant}/kafka");
    let (status, body) = admin.put(&path, &json!({ "grants": [{ "connection": "elsewhere" }] })).await;
    assert_eq!(status, 400, "{body}");
    assert!(body["error"].as_str().unwrap().contains("no Kafka connection `elsewhere`"), "{body}");
    let (status, body) =
        admin.put(&path, &json!({ "grants": [{ "connection": "main" }, { "connection": "main" }] })).await;
    assert_eq!(status, 400, "{body}");
    let (status, body) =
        admin.put(&path, &json!({ "grants": [{ "connection": "main", "servers": ["x:1"] }] })).await;
    assert_eq!(status, 400, "{body}");
    // An empty prefix would grant every name by accident: refused, `*` says it on purpose.
    for key in ["topic_prefixes", "group_prefixes"] {
        let (status, body) =
            admin.put(&path, &json!({ "grants": [{ "connection": "main", key: [""] }] })).await;
        assert_eq!(status, 400, "{body}");
        assert!(body["error"].as_str().unwrap().contains("an empty prefix is refused"), "{body}");
    }
    let (status, body) = api.put(&path, &json!({ "grants": [{ "connection": "main" }] })).await;
    assert_eq!(status, 403, "a tenant sets its own grants: {body}");

    // An accepted job keeps the connection's name only; a revoked grant refuses its restart
    // (every plan resolves the connection again).
    let spec = kafka_source(json!({ "connection": "secure", "topics": ["acme.orders"] }));
    let id = api.create_job(&spec).await;
    let (status, job) = api.get(&format!("/api/v1/jobs/{id}")).await;
    assert_eq!(status, 200, "{job}");
    let text = job.to_string();
    assert!(text.contains("\"connection\":\"secure\""), "{text}");
    assert!(!text.contains(&address) && !text.contains(PASSWORD), "the job shows its connection: {text}");
    let (status, body) =
        admin.put(&path, &json!({ "grants": [{ "connection": "main", "topic_prefixes": ["acme."] }] })).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = api.post_empty(&format!("/api/v1/jobs/{id}/restart")).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().unwrap().contains("may not use Kafka connection `secure`"), "{body}");
}

/// `weir run` has no named connections: a job file naming one is refused before it runs,
/// and an inline connection is checked as the server checks its own.
#[test]
fn weir_run_takes_inline_connections_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let run = |config: Value| {
        let file = dir.path().join("job.json");
        let spec = json!({
            "name": "kafka-run",
            "nodes": [
                { "id": "in", "kind": "source", "connector": "kafka", "config": config },
                { "id": "out", "kind": "sink", "connector": "blackhole" }
            ],
            "edges": [ { "from": "in", "to": "out" } ]
        });
        std::fs::write(&file, spec.to_string()).expect("write the job file");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["run", "--no-checkpoints"])
            .arg(&file)
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("weir run");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (ok, stderr) = run(json!({ "connection": "main", "topics": ["t"] }));
    assert!(!ok, "a named connection ran: {stderr}");
    assert!(stderr.contains("`weir run` has no named Kafka connections"), "{stderr}");
    assert!(stderr.contains("inline under `brokers`"), "{stderr}");
    let (ok, stderr) = run(json!({ "brokers": { "bootstrap_servers": ["nope"] }, "topics": ["t"] }));
    assert!(!ok);
    assert!(stderr.contains("brokers: bootstrap server `nope` must be host:port"), "{stderr}");
}

/// Connections come from the environment too (`weir serve` as a process): a grant can name
/// one, and a bad one stops the server from starting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_from_the_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let env = [("WEIR_KAFKA_CONNECTIONS__MAIN__BOOTSTRAP_SERVERS", r#"["127.0.0.1:9"]"#)];
    let server = TestServer::spawn_process_with(dir.path(), &env);
    let (tenant, api) = server.tenant("acme").await;
    let grants = json!({ "grants": [ { "connection": "main", "topic_prefixes": ["acme."] } ] });
    let (status, body) = server.client(ADMIN).put(&format!("/api/v1/tenants/{tenant}/kafka"), &grants).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = api.get("/api/v1/kafka/connections").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"][0]["connection"], "main", "{body}");
    drop(server);

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_weir"))
        .arg("--data-dir")
        .arg(dir.path().join("other"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("WEIR_KAFKA_CONNECTIONS__MAIN__BOOTSTRAP_SERVERS", r#"["no-port"]"#)
        .output()
        .expect("weir serve");
    assert!(!bad.status.success(), "weir serve started with a bad connection");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("kafka_connections.main: bootstrap server `no-port` must be host:port"),
        "{stderr}"
    );
}
