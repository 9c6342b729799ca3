//! Job specs that cannot run: unknown modules, module paths and URLs, unknown connectors,
//! stream names with paths, bad connector configs, bad graphs (no nodes, a cycle, an edge to
//! nowhere, a bad node id), parallelism out of range, unknown kinds, settings and fields.

use serde_json::{Value, json};

use super::{expect, setup, state};

fn spec(nodes: Value, edges: Value) -> Value {
    json!({ "name": "bad", "nodes": nodes, "edges": edges })
}

pub(super) fn linear(source: Value, module: &str, sink: Value) -> Value {
    let mut source = source;
    source["id"] = json!("in");
    source["kind"] = json!("source");
    let mut sink = sink;
    sink["id"] = json!("out");
    sink["kind"] = json!("sink");
    spec(
        json!([source, { "id": "op", "kind": "operator", "module": module }, sink]),
        json!([ { "from": "in", "to": "op" }, { "from": "op", "to": "out" } ]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_job_specs() {
    let (server, api) = setup().await;
    let before = state(&server, &api).await;
    let generator = json!({ "connector": "generator", "config": { "mode": "sequence", "count": 10 } });
    let blackhole = json!({ "connector": "blackhole" });
    let tok = "builtin:tokenizer";
    let cases: Vec<(&str, Value, &[&str])> = vec![
        (
            "unknown module",
            linear(generator.clone(), "no-such-module", blackhole.clone()),
            &["unknown module `no-such-module`"],
        ),
        (
            "unknown builtin",
            linear(generator.clone(), "builtin:nope", blackhole.clone()),
            &["unknown module `builtin:nope`"],
        ),
        (
            "a module id nobody uploaded",
            linear(generator.clone(), &"ab".repeat(32), blackhole.clone()),
            &["unknown module"],
        ),
        (
            "a module path",
            linear(generator.clone(), "/etc/passwd", blackhole.clone()),
            &["unknown module `/etc/passwd`"],
        ),
        (
            "a module path out of the data dir",
            linear(generator.clone(), "../modules/x.wasm", blackhole.clone()),
            &["unknown module"],
        ),
        (
            "a module URL",
            linear(generator.clone(), "file:///etc/passwd", blackhole.clone()),
            &["unknown module"],
        ),
        (
            "unknown source connector",
            linear(json!({ "connector": "pulsar" }), tok, blackhole.clone()),
            &["unknown source connector `pulsar`"],
        ),
        (
            "unknown sink connector",
            linear(generator.clone(), tok, json!({ "connector": "s3" })),
            &["unknown sink connector `s3`"],
        ),
        ("no connector", linear(json!({}), tok, blackhole.clone()), &["connector"]),
        (
            "file source",
            linear(
                json!({ "connector": "file", "config": { "path": "/etc/passwd" } }),
                tok,
                blackhole.clone(),
            ),
            &["file connector", "not available"],
        ),
        (
            "file sink",
            linear(
                generator.clone(),
                tok,
                json!({ "connector": "file", "config": { "dir": "/tmp/weir-evil" } }),
            ),
            &["file connector", "not available"],
        ),
        (
            "a stream that does not exist",
            linear(json!({ "connector": "stream", "config": { "stream": "nope" } }), tok, blackhole.clone()),
            &["stream `nope` does not exist"],
        ),
        (
            "a stream name with a path",
            linear(
                json!({ "connector": "stream", "config": { "stream": "../../etc/passwd" } }),
                tok,
                blackhole.clone(),
            ),
            &["invalid stream name"],
        ),
        (
            "a sink stream name with a path",
            linear(
                generator.clone(),
                tok,
                json!({ "connector": "stream", "config": { "stream": "../x", "partitions": 1 } }),
            ),
            &["invalid stream name"],
        ),
        (
            "a stream without a name",
            linear(json!({ "connector": "stream", "config": {} }), tok, blackhole.clone()),
            &["needs `stream`"],
        ),
        (
            "a bad connector config",
            linear(
                json!({ "connector": "generator", "config": { "mode": "sequence" } }),
                tok,
                blackhole.clone(),
            ),
            &["generator", "count"],
        ),
        (
            "a config that is not an object",
            linear(json!({ "connector": "generator", "config": 5 }), tok, blackhole.clone()),
            &["config must be a JSON object"],
        ),
        (
            "a cycle",
            spec(
                json!([
                    { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } },
                    { "id": "a", "kind": "operator", "module": tok },
                    { "id": "b", "kind": "operator", "module": tok },
                    { "id": "out", "kind": "sink", "connector": "blackhole" }
                ]),
                json!([ { "from": "in", "to": "a" }, { "from": "a", "to": "b" }, { "from": "b", "to": "a" }, { "from": "b", "to": "out" } ]),
            ),
            &["cycle"],
        ),
        ("no nodes", spec(json!([]), json!([])), &["no nodes"]),
        (
            "an edge to nowhere",
            spec(
                json!([ { "id": "in", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } } ]),
                json!([ { "from": "in", "to": "ghost" } ]),
            ),
            &["unknown node `ghost`"],
        ),
        (
            "a bad node id",
            spec(
                json!([ { "id": "../x", "kind": "source", "connector": "generator", "config": { "mode": "sequence", "count": 1 } } ]),
                json!([]),
            ),
            &["node id `../x` is invalid"],
        ),
        (
            "parallelism 0",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["nodes"][1]["parallelism"] = json!(0);
                s
            },
            &["parallelism"],
        ),
        (
            "parallelism 100000",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["nodes"][1]["parallelism"] = json!(100_000);
                s
            },
            &["parallelism"],
        ),
        (
            "an unknown kind",
            spec(json!([ { "id": "x", "kind": "mystery" } ]), json!([])),
            &["unknown variant `mystery`"],
        ),
        (
            "an unknown setting",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["settings"] = json!({ "turbo": true });
                s
            },
            &["unknown field `turbo`"],
        ),
        (
            "an unknown field",
            {
                let mut s = linear(generator.clone(), tok, blackhole.clone());
                s["owner"] = json!("root");
                s
            },
            &["unknown field `owner`"],
        ),
        ("nodes that are not a list", json!({ "name": "x", "nodes": "all" }), &["invalid type"]),
    ];
    for (what, spec, words) in cases {
        expect(what, api.post("/api/v1/jobs", &spec).await, 400, words);
    }
    assert_eq!(state(&server, &api).await, before, "a refused job left something behind");
}
