//! Kafka: the source and sink end to end against a real Kafka-protocol broker (Tansu), the
//! `exactly_once` chaos trials, the `transactional` sink's protocol against a fake
//! transaction-capable broker, connections and tenants' grants, a broker that stops answering,
//! and what the tests' broker itself does.

mod access;
mod connectors;
mod dead_letters;
pub(crate) mod exactly_once;
mod lag;
mod slow_broker;
mod tansu;
mod transactional;

/// An in-process server whose connection `main` leads to `bootstrap`, and tenant `acme`
/// granted its topics `acme.*`: (server, tenant's client).
pub(crate) async fn server_granting_acme(bootstrap: &str) -> (crate::server::TestServer, crate::server::Api) {
    let main = weir::connectors::kafka::ConnectionConfig::plaintext([bootstrap.to_string()]);
    let server = crate::server::TestServer::start(|config| {
        config.kafka_connections.insert("main".into(), main);
    })
    .await;
    let (tenant, api) = server.tenant("acme").await;
    let grants = serde_json::json!({ "grants": [ { "connection": "main", "topic_prefixes": ["acme."] } ] });
    let (status, v) =
        server.client(crate::server::ADMIN).put(&format!("/api/v1/tenants/{tenant}/kafka"), &grants).await;
    assert_eq!(status, 200, "{v}");
    (server, api)
}
