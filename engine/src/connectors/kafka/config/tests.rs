//! Parsing and validation of the Kafka settings.
use std::sync::Arc;

use serde_json::json;

use super::*;

fn source(v: serde_json::Value) -> Result<KafkaSourceConfig, String> {
    let mut c: KafkaSourceConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

fn sink(v: serde_json::Value) -> Result<KafkaSinkConfig, String> {
    let mut c: KafkaSinkConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

fn connection(v: serde_json::Value) -> Result<ConnectionConfig, String> {
    let c: ConnectionConfig = serde_json::from_value(v).map_err(|e| e.to_string())?;
    c.validate().map_err(|e| e.to_string())?;
    Ok(c)
}

#[test]
fn source_defaults() {
    let c = source(json!({ "connection": "main", "topics": ["a"] })).unwrap();
    assert_eq!(c.start, StartFrom::Earliest);
    assert_eq!((c.key_format, c.value_format), (Format::Raw, Format::Raw));
    assert_eq!(c.event_time, EventTime::Kafka);
    assert_eq!(c.discovery_interval_ms, Some(10_000));
    assert_eq!(c.idle_timeout_ms, None);
    assert_eq!(
        (c.fetch_max_wait_ms, c.fetch_max_bytes, c.max_partition_fetch_bytes),
        (500, 8 << 20, 1 << 20)
    );
    assert!(!c.commit_offsets);
    // A named connection is resolved by the server, not by parsing.
    assert!(c.access.is_none());
    let c = source(json!({ "connection": "main", "topics": ["a"], "discovery_interval_ms": null,
        "start": { "timestamp": 1700000000000i64 }, "event_time": { "field": "ts" }, "value_format": "json" }))
    .unwrap();
    assert_eq!(c.discovery_interval_ms, None);
    assert_eq!(c.start, StartFrom::Timestamp(1_700_000_000_000));
    assert_eq!(c.event_time, EventTime::Field("ts".into()));
}

#[test]
fn source_xor_rules() {
    let both =
        source(json!({ "connection": "m", "brokers": { "bootstrap_servers": ["h:1"] }, "topics": ["a"] }));
    assert!(both.unwrap_err().contains("not both"));
    assert!(source(json!({ "topics": ["a"] })).unwrap_err().contains("name a `connection`"));
    let e = source(json!({ "connection": "m", "topics": ["a"], "topic_pattern": "a.*" })).unwrap_err();
    assert!(e.contains("`topics` or `topic_pattern`, not both"), "{e}");
    assert!(source(json!({ "connection": "m" })).unwrap_err().contains("give `topics`"));
    assert!(source(json!({ "connection": "m", "topics": [] })).unwrap_err().contains("give `topics`"));
    let e = source(json!({ "connection": "m", "topics": ["a"], "start": "group" })).unwrap_err();
    assert!(e.contains("needs a `group_id`"), "{e}");
    let e = source(json!({ "connection": "m", "topics": ["a"], "commit_offsets": true })).unwrap_err();
    assert!(e.contains("commit_offsets needs a `group_id`"), "{e}");
    source(json!({ "connection": "m", "topics": ["a"], "commit_offsets": true, "group_id": "g",
        "start": "group" }))
    .unwrap();
    let e =
        source(json!({ "connection": "m", "topics": ["a"], "event_time": { "field": "t" } })).unwrap_err();
    assert!(e.contains("needs value_format json or msgpack"), "{e}");
    let e = source(json!({ "connection": "m", "topics": ["a", "a"] })).unwrap_err();
    assert!(e.contains("listed twice"), "{e}");
    let e = source(json!({ "connection": "m", "topics": ["a b"] })).unwrap_err();
    assert!(e.contains("not a Kafka topic name"), "{e}");
    let e = source(json!({ "connection": "m", "topic_pattern": "(" })).unwrap_err();
    assert!(e.contains("not a regular expression"), "{e}");
    let e = source(json!({ "connection": "m", "topics": ["a"], "bootstrap_servers": ["h:1"] })).unwrap_err();
    assert!(e.contains("unknown field `bootstrap_servers`"), "{e}");
    let e = source(json!({ "connection": "m", "topics": ["a"], "access": {} })).unwrap_err();
    assert!(e.contains("unknown field `access`"), "{e}");
    let e = source(json!({ "connection": "no spaces", "topics": ["a"] })).unwrap_err();
    assert!(e.contains("connection name"), "{e}");
}

#[test]
fn source_ranges_are_named() {
    let cases = [
        ("fetch_max_wait_ms", json!(30_001), "fetch_max_wait_ms must be from 0 to 30000"),
        ("fetch_max_bytes", json!(10), "fetch_max_bytes must be from 1024 to 67108864"),
        (
            "max_partition_fetch_bytes",
            json!(1 << 30),
            "max_partition_fetch_bytes must be from 1024 to 16777216",
        ),
        ("idle_timeout_ms", json!(0), "idle_timeout_ms must be from 1 to 86400000"),
        ("discovery_interval_ms", json!(1), "discovery_interval_ms must be from 100 to 86400000"),
    ];
    for (field, value, message) in cases {
        let mut v = json!({ "connection": "m", "topics": ["a"] });
        v[field] = value;
        let e = source(v).unwrap_err();
        assert!(e.contains(message), "{field}: {e}");
    }
    // A pattern's discovery asks for the metadata of every topic: at most every 5 s.
    for (ms, ok) in [(4_999, false), (5_000, true)] {
        let v = json!({ "connection": "m", "topic_pattern": "a.*", "discovery_interval_ms": ms });
        match source(v) {
            Ok(_) => assert!(ok, "{ms} ms accepted"),
            Err(e) => {
                assert!(!ok && e.contains("discovery_interval_ms must be from 5000 to 86400000"), "{ms}: {e}")
            }
        }
    }
    let e = source(json!({ "connection": "m", "topics": ["a"], "fetch_max_bytes": 4096,
        "max_partition_fetch_bytes": 8192 }))
    .unwrap_err();
    assert!(e.contains("at most fetch_max_bytes"), "{e}");
    let e = source(json!({ "connection": "m", "topics": ["a"], "start": { "timestamp": -1 } })).unwrap_err();
    assert!(e.contains("start timestamp"), "{e}");
}

#[test]
fn inline_brokers_become_an_unrestricted_access() {
    let c =
        source(json!({ "brokers": { "bootstrap_servers": ["127.0.0.1:9092"] }, "topic_pattern": "t-.*" }))
            .unwrap();
    let access = c.access.as_ref().unwrap();
    assert_eq!(access.connection.bootstrap_servers, ["127.0.0.1:9092"]);
    assert!(access.topic_allowed("anything") && access.group_allowed("anything"));
    let e = source(json!({ "brokers": { "bootstrap_servers": [] }, "topics": ["a"] })).unwrap_err();
    assert!(e.starts_with("brokers: bootstrap_servers must list 1 to 64"), "{e}");
}

#[test]
fn connection_validation() {
    let c = connection(json!({ "bootstrap_servers": ["a:9092", "[::1]:9093"] })).unwrap();
    assert_eq!(c.security_protocol, SecurityProtocol::Plaintext);
    assert_eq!((c.connect_timeout_ms, c.request_timeout_ms), (5000, 10_000));
    for bad in ["a", "a:0", "a:70000", ":9092", "a b:1"] {
        let e = connection(json!({ "bootstrap_servers": [bad] })).unwrap_err();
        assert!(e.contains("must be host:port"), "{bad}: {e}");
    }
    let many: Vec<String> = (0..65).map(|i| format!("h{i}:1")).collect();
    assert!(connection(json!({ "bootstrap_servers": many })).unwrap_err().contains("1 to 64"));
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "sasl_username": "u" })).unwrap_err();
    assert!(
        e.contains("sasl_username needs security_protocol sasl_plaintext or sasl_ssl (it is plaintext)"),
        "{e}"
    );
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "security_protocol": "sasl_ssl",
        "sasl_mechanism": "PLAIN", "sasl_username": "u" }))
    .unwrap_err();
    assert!(e.contains("security_protocol sasl_ssl needs sasl_password"), "{e}");
    connection(json!({ "bootstrap_servers": ["a:1"], "security_protocol": "sasl_ssl",
        "sasl_mechanism": "SCRAM-SHA-512", "sasl_username": "u", "sasl_password": "p",
        "ssl_ca_location": "/etc/ca.pem" }))
    .unwrap();
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "ssl_ca_location": "/ca" })).unwrap_err();
    assert!(e.contains("ssl_ca_location needs security_protocol ssl or sasl_ssl"), "{e}");
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "security_protocol": "ssl",
        "ssl_certificate_location": "/c" }))
    .unwrap_err();
    assert!(e.contains("go together"), "{e}");
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "connect_timeout_ms": 0 })).unwrap_err();
    assert!(e.contains("connect_timeout_ms must be from 1 to 300000, got 0"), "{e}");
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "request_timeout_ms": 600_001 })).unwrap_err();
    assert!(e.contains("request_timeout_ms must be from 1 to 600000"), "{e}");
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "sasl_mechanism": "GSSAPI" })).unwrap_err();
    assert!(e.contains("unknown variant `GSSAPI`"), "{e}");
    let e = connection(json!({ "bootstrap_servers": ["a:1"], "password": "x" })).unwrap_err();
    assert!(e.contains("unknown field `password`"), "{e}");
}

#[test]
fn debug_never_shows_the_password() {
    let c = connection(json!({ "bootstrap_servers": ["a:1"], "security_protocol": "sasl_plaintext",
        "sasl_mechanism": "PLAIN", "sasl_username": "user", "sasl_password": "hunter2-secret" }))
    .unwrap();
    let access = KafkaAccess { name: Some("main".into()), ..KafkaAccess::inline(c.clone()) };
    let mut s = source(json!({ "connection": "main", "topics": ["a"] })).unwrap();
    s.access = Some(Arc::new(access.clone()));
    for text in [format!("{c:?}"), format!("{access:?}"), format!("{s:?}"), format!("{s:#?}")] {
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("sasl_password: Some(\"***\")") || text.contains("\"***\""), "{text}");
        assert!(text.contains("user"), "{text}");
    }
    // The password still reaches the wire.
    assert_eq!(c.sasl_password.as_ref().map(Secret::expose), Some("hunter2-secret"));
}

#[test]
fn sink_rules() {
    let c = sink(json!({ "connection": "m", "topic": "out" })).unwrap();
    assert_eq!(c.delivery, Delivery::ExactlyOnce);
    assert_eq!(c.partitioner, Partitioner::Key);
    assert_eq!((c.transaction_timeout_ms, c.max_request_bytes, c.linger_ms), (60_000, 1 << 20, 5));
    let e = sink(json!({ "connection": "m", "topic": "out", "delivery": "at_least_once",
        "transactional_id_prefix": "t" }))
    .unwrap_err();
    assert!(e.contains("transactional_id_prefix needs delivery"), "{e}");
    sink(json!({ "connection": "m", "topic": "out", "delivery": "transactional", "transactional_id_prefix": "t" }))
        .unwrap();
    let e = sink(json!({ "connection": "m", "topic": "out", "transaction_timeout_ms": 10 })).unwrap_err();
    assert!(e.contains("transaction_timeout_ms must be from 1000 to 900000"), "{e}");
    let e = sink(json!({ "connection": "m", "topic": "out", "max_request_bytes": 100 })).unwrap_err();
    assert!(e.contains("max_request_bytes must be from 1024"), "{e}");
    let e = sink(json!({ "connection": "m", "topic": "out", "linger_ms": 60_001 })).unwrap_err();
    assert!(e.contains("linger_ms must be from 0 to 60000"), "{e}");
    assert!(sink(json!({ "connection": "m" })).unwrap_err().contains("missing field `topic`"));
    let e = sink(json!({ "connection": "m", "topic": "out", "delivery": "maybe" })).unwrap_err();
    assert!(e.contains("unknown variant `maybe`"), "{e}");
}

#[test]
fn pattern_prefixes_bound_what_a_pattern_matches() {
    assert_eq!(pattern_prefixes(r"tenant-a\..*"), Some(vec!["tenant-a.".to_string()]));
    let two = pattern_prefixes(r"(orders|payments)-[0-9]+").unwrap();
    assert!(
        two.iter().any(|l| l.starts_with("orders-")) && two.iter().any(|l| l.starts_with("payments-")),
        "{two:?}"
    );
    assert!(two.iter().all(|l| l.starts_with("orders-") || l.starts_with("payments-")), "{two:?}");
    assert_eq!(pattern_prefixes(".*"), None);
    assert_eq!(pattern_prefixes("a.*|.*"), None);
    // A quantified last character is not part of the prefix.
    let p = pattern_prefixes("abc?d").unwrap();
    assert!(p.iter().all(|l| l.starts_with("ab")), "{p:?}");
    let re = topic_regex("t-[0-9]+").unwrap();
    assert!(re.is_match("t-12") && !re.is_match("xt-12") && !re.is_match("t-12x"));
}

#[test]
fn grants_match_prefixes() {
    let access = KafkaAccess {
        name: Some("m".into()),
        connection: ConnectionConfig::plaintext(["h:1"]),
        topic_prefixes: Some(vec!["a.".into(), "b-".into()]),
        group_prefixes: Some(vec![]),
    };
    assert!(access.topic_allowed("a.x") && access.topic_allowed("b-") && !access.topic_allowed("a"));
    assert!(!access.group_allowed("any"));
}

#[test]
fn a_grant_prefix_ends_at_a_separator() {
    // `acme` is acme's own name and what continues it after a separator, not `acme2`'s.
    for (prefix, name, within) in [
        ("acme", "acme", true),
        ("acme", "acme.orders", true),
        ("acme", "acme-etl", true),
        ("acme", "acme_x", true),
        ("acme", "acme2.orders", false),
        ("acme", "acm", false),
        ("acme.", "acme.orders", true),
        ("acme.", "acme", false),
        ("acme.", "acme-x", false),
        ("", "anything", false),
        ("", "", false),
        ("*", "anything", true),
    ] {
        assert_eq!(within_prefix(prefix, name), within, "{prefix:?} covers {name:?}");
    }
    // A pattern whose matches all start with a literal is allowed only when every name that
    // starts with the literal is.
    for (prefix, literal, covers) in [
        ("acme", "acme.", true),
        ("acme", "acme-or", true),
        ("acme", "acme", false),
        ("acme", "acm", false),
        ("acme.", "acme.o", true),
        ("acme.", "acme", false),
        ("*", "", true),
        ("", "x", false),
    ] {
        assert_eq!(prefix_covers(prefix, literal), covers, "{prefix:?} covers all of {literal:?}*");
    }
}
