#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into engine/fuzz/corpus/<target>/ (see
docs/fuzzing.md). Run from the repository root after `cargo test --workspace --no-run`
(it uses that build's `weir` binary and guest components):

    python3 engine/fuzz/make-seeds.py [TARGET_DIR]

- savepoint_import: a real savepoint file, exported from a `weir serve` on a temporary data
  directory after a word count (tokenizer -> keyed counts) has counted a few lines; each
  seed starts with the target's mode byte (1: repair the checksum, 0: as is).
- job_plan: the Rust examples' job files and two specs that use every connector and setting.
- append_msgpack: append bodies encoded as MessagePack (every type the format has).
- module_load: the smallest real operator (`weir_test_other_world`, a component of another
  world), an empty component and a core module.
"""
import json
import os
import secrets
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TARGET = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target")
CORPUS = os.path.join(ROOT, "engine", "fuzz", "corpus")
GUESTS = os.path.join(TARGET, "guests", "wasm32-wasip2", "guest")


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


def msgpack(v):
    """A small MessagePack encoder (the standard library has none)."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack(">b", v)
        if 0 <= v < 1 << 16:
            return b"\xcd" + struct.pack(">H", v)
        if 0 <= v < 1 << 64:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        return (bytes([0xA0 | len(b)]) if len(b) < 32 else b"\xd9" + bytes([len(b)])) + b
    if isinstance(v, bytes):
        return b"\xc4" + bytes([len(v)]) + v
    if isinstance(v, list):
        return bytes([0x90 | len(v)]) + b"".join(msgpack(x) for x in v)
    if isinstance(v, dict):
        return bytes([0x80 | len(v)]) + b"".join(msgpack(k) + msgpack(x) for k, x in v.items())
    raise TypeError(type(v))


def append_seeds():
    write("append_msgpack", "one-record", msgpack({"records": [{"value": "a line of text"}]}))
    write("append_msgpack", "every-field", msgpack({"records": [
        {"key": "k1", "value": {"n": 1, "neg": -5, "big": 1 << 40, "f": 1.5, "ok": True, "none": None,
                                "list": [1, "two", [3]], "bin": b"\x00\xff"},
         "timestamp": 1700000000000, "partition": 0},
        {"key": 7, "value": [False, -100000], "partition": 1},
        {"key": None, "value": "x" * 40},
    ]}))
    write("append_msgpack", "empty", msgpack({"records": []}))
    # A value of a job's sink: an ext type and a deep array (both only read back).
    write("append_msgpack", "ext-and-deep", b"\xd4\x01\x02" + b"\x91" * 130 + b"\xc0")


def plan_seeds():
    for path in ["nexmark-q1/q1.job.json", "nexmark-q2/q2.job.json", "nexmark-q17/q17.job.json",
                 "tumbling-window/window.job.json", "wordcount/wordcount.job.json"]:
        with open(os.path.join(ROOT, "examples", path), "rb") as f:
            write("job_plan", os.path.basename(path), f.read())
    write("job_plan", "stream-wordcount.json", json.dumps({
        "name": "wordcount",
        "nodes": [
            {"id": "in", "kind": "source", "connector": "stream", "config": {"stream": "lines", "follow": True}},
            {"id": "split", "kind": "operator", "module": "builtin:tokenizer"},
            {"id": "count", "kind": "operator", "module": "builtin:wordcount", "parallelism": 2},
            {"id": "out", "kind": "sink", "connector": "stream", "config": {"stream": "counts"}},
        ],
        "edges": [{"from": "in", "to": "split"}, {"from": "split", "to": "count", "partitioning": "hash"},
                  {"from": "count", "to": "out", "partitioning": "rebalance"}],
    }, indent=1).encode())
    write("job_plan", "every-setting.json", json.dumps({
        "name": "settings",
        "nodes": [
            {"id": "gen", "kind": "source", "connector": "generator", "parallelism": 2,
             "config": {"mode": "words", "count": 10, "words_per_line": 3}},
            {"id": "nx", "kind": "source", "connector": "nexmark", "config": {"event_type": "bid", "count": 5}},
            {"id": "win", "kind": "operator", "module": "builtin:tumbling-window", "parallelism": 2,
             "config": {"size_ms": 1000}},
            {"id": "fs", "kind": "source", "connector": "file", "config": {"path": "in.txt"}},
            {"id": "hole", "kind": "sink", "connector": "blackhole"},
            {"id": "file", "kind": "sink", "connector": "file", "config": {"path": "out"}},
        ],
        "edges": [{"from": "gen", "to": "win", "partitioning": "forward"}, {"from": "nx", "to": "win"},
                  {"from": "win", "to": "hole", "partitioning": "broadcast"}, {"from": "fs", "to": "file"}],
        "settings": {
            "max_parallelism": 128, "channel_capacity": 64, "cpu_limit_ms": 1000, "wall_limit_ms": 5000,
            "memory_limit_mb": 64, "max_output_bytes_per_call": 65536,
            "checkpoint": {"interval_ms": 1000, "timeout_ms": 10000, "min_pause_ms": 0, "max_concurrent": 2,
                           "tolerable_failures": 1, "retained": 3, "max_chain_length": 10},
            "restart": {"attempts": 2, "delay_ms": 10},
        },
    }, indent=1).encode())


def module_seeds():
    shutil.copy(os.path.join(GUESTS, "weir_test_other_world.wasm"),
                os.path.join(CORPUS, "module_load", "other-world.wasm"))
    write("module_load", "empty-component.wasm", b"\x00asm\x0d\x00\x01\x00")
    write("module_load", "core-module.wasm", b"\x00asm\x01\x00\x00\x00")


def savepoint_seeds():
    weir = os.path.join(TARGET, "debug", "weir")
    data = tempfile.mkdtemp()
    admin = secrets.token_hex(24)
    out = open(os.path.join(data, "stdout"), "w+")
    server = subprocess.Popen([weir, "--data-dir", os.path.join(data, "d"), "serve", "--listen", "127.0.0.1:0"],
                              stdout=out, stderr=subprocess.DEVNULL, env=dict(os.environ, WEIR_ADMIN_TOKEN=admin))
    try:
        deadline = time.time() + 120
        url = None
        while url is None:
            out.seek(0)
            for line in out:
                if line.startswith("weir server listening on "):
                    url = line.split()[-1]
            if url is None:
                if server.poll() is not None or time.time() > deadline:
                    sys.exit("weir serve did not start")
                time.sleep(0.1)

        def call(method, path, token, body=None, raw=False):
            request = urllib.request.Request(url + path, method=method,
                                             data=None if body is None else json.dumps(body).encode())
            request.add_header("Authorization", "Bearer " + token)
            if body is not None:
                request.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.read() if raw else json.load(response)

        def wait(path, token):
            deadline = time.time() + 120
            while call("GET", path, token)["status"] != "completed":
                if time.time() > deadline:
                    sys.exit(path + " did not complete in 120 s")
                time.sleep(0.1)

        token = call("POST", "/api/v1/tenants", admin, {"name": "seeds"})["token"]
        call("POST", "/api/v1/streams", token, {"name": "lines", "partitions": 2})
        lines = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps"]
        call("POST", "/api/v1/streams/lines/records", token, {"records": [{"value": l} for l in lines]})
        job = call("POST", "/api/v1/jobs", token, {
            "name": "seeds",
            "nodes": [
                {"id": "in", "kind": "source", "connector": "stream", "config": {"stream": "lines", "follow": True}},
                {"id": "split", "kind": "operator", "module": "builtin:tokenizer"},
                {"id": "count", "kind": "operator", "module": "builtin:wordcount", "parallelism": 2},
                {"id": "out", "kind": "sink", "connector": "blackhole"},
            ],
            "edges": [{"from": "in", "to": "split"}, {"from": "split", "to": "count", "partitioning": "hash"},
                      {"from": "count", "to": "out", "partitioning": "rebalance"}],
            "settings": {"checkpoint": {"interval_ms": None}},
        })["id"]
        # Let the job read the lines before its checkpoint, so the savepoint holds counts.
        time.sleep(2)
        checkpoint = call("POST", "/api/v1/jobs/%s/checkpoints" % job, token)["id"]
        wait("/api/v1/jobs/%s/checkpoints/%d" % (job, checkpoint), token)
        savepoint = call("POST", "/api/v1/jobs/%s/savepoints" % job, token, {"mode": "keep_running"})["id"]
        wait("/api/v1/savepoints/%s" % savepoint, token)
        file = call("GET", "/api/v1/savepoints/%s/file" % savepoint, token, raw=True)
        write("savepoint_import", "wordcount-repair", b"\x01" + file)
        write("savepoint_import", "wordcount", b"\x00" + file)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    append_seeds()
    plan_seeds()
    os.makedirs(os.path.join(CORPUS, "module_load"), exist_ok=True)
    module_seeds()
    savepoint_seeds()
    for target in sorted(os.listdir(CORPUS)):
        files = os.listdir(os.path.join(CORPUS, target))
        size = sum(os.path.getsize(os.path.join(CORPUS, target, f)) for f in files)
        print("%s: %d seeds, %d bytes" % (target, len(files), size))
