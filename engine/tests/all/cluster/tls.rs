//! Mutual TLS on the cluster's connections (issue 22): a controller and two workers holding
//! certificates of one cluster CA run a job exactly once, their sessions and data plane
//! over TLS; a worker speaking plain TCP, and one whose certificate another CA signed, never
//! register. The CA and certificates are made with the `openssl` command.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use weir::cluster::data::{ChannelKey, DataError, DataPlane};
use weir::cluster::tls::{TlsFiles, Transport};

use super::workers::{TOKEN, Worker, controller, find, registered_id, wait_workers};
use crate::server::wordcount::{self, check_exactly_once, lines, push, wait_output};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA `name` in `dir`: (`name.pem`, `name.key`).
fn ca(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let (pem, key) = (format!("{name}.pem"), format!("{name}.key"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &key,
            "-out",
            &pem,
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign",
        ],
    );
    (dir.join(pem), dir.join(key))
}

/// A certificate `name` for DNS name `san`, signed by `ca`: (`name.pem`, `name.key`).
fn certificate(dir: &Path, name: &str, ca: &(PathBuf, PathBuf), san: &str) -> (PathBuf, PathBuf) {
    let (pem, key, csr, ext) =
        (format!("{name}.pem"), format!("{name}.key"), format!("{name}.csr"), format!("{name}.ext"));
    std::fs::write(
        dir.join(&ext),
        format!(
            "subjectAltName=DNS:{san}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n"
        ),
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &key,
            "-out",
            &csr,
        ],
    );
    let (ca_pem, ca_key) = (ca.0.to_str().unwrap(), ca.1.to_str().unwrap());
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            ca_pem,
            "-CAkey",
            ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-out",
            &pem,
            "-extfile",
            &ext,
        ],
    );
    (dir.join(pem), dir.join(key))
}

/// The variables that give a process `cert` under the cluster CA `ca`.
fn tls_env(cert: &(PathBuf, PathBuf), ca: &Path) -> Vec<(String, String)> {
    [("CERT", &cert.0), ("KEY", &cert.1), ("CA", &ca.to_path_buf())]
        .into_iter()
        .map(|(k, v)| (format!("WEIR_CLUSTER__TLS__{k}"), v.display().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_over_mutual_tls_runs_a_job_and_refuses_strangers() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let cluster_ca = ca(&certs, "cluster-ca");
    let controller_cert = certificate(&certs, "controller", &cluster_ca, "weir-cluster");
    let worker_cert = certificate(&certs, "worker", &cluster_ca, "weir-cluster");
    let other_ca = ca(&certs, "other-ca");
    let stranger_cert = certificate(&certs, "stranger", &other_ca, "weir-cluster");

    let env = tls_env(&controller_cert, &cluster_ca.0);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = controller(&dir.path().join("data"), &env);
    let addr = server.cluster.clone().unwrap();
    let worker_env = tls_env(&worker_cert, &cluster_ca.0);
    let w1 = Worker::spawn_with(&addr, "w1", TOKEN, &worker_env);
    let w2 = Worker::spawn_with(&addr, "w2", TOKEN, &worker_env);
    w1.wait_line("over mutual TLS");
    let id1 = registered_id(&w1.wait_line("registered as worker"));
    let id2 = registered_id(&w2.wait_line("registered as worker"));

    // Strangers: plain TCP, and a certificate of another CA (the token is right).
    let plain = Worker::spawn(&addr, "plain", TOKEN);
    plain.wait_line("cannot register");
    let stranger = Worker::spawn_with(&addr, "stranger", TOKEN, &tls_env(&stranger_cert, &cluster_ca.0));
    stranger.wait_line("cannot register");
    // A worker's data plane takes no plain connection either (with the right token), and
    // takes one over TLS with a certificate of the cluster CA.
    let listed = wait_workers(&server, "w1 listed", |l| find(l, id1).is_some()).await;
    let data_addr = find(&listed, id1).unwrap()["data_addr"].as_str().unwrap().to_string();
    let key = ChannelKey { job: "no-such-job".into(), attempt: 1, channel: 0 };
    let ends = || (("up".to_string(), 0), ("down".to_string(), 0));
    let plain_plane = DataPlane::new(TOKEN, "127.0.0.1:9", 1 << 20, Transport::plain());
    let (from, to) = ends();
    match plain_plane.output(&data_addr, &key, (2, usize::MAX), from, to).await {
        Err(DataError::Connection { .. }) => {}
        other => panic!("a plain data connection was not refused: {other:?}"),
    }
    let files = TlsFiles {
        cert: worker_cert.0.clone(),
        key: worker_cert.1.clone(),
        ca: cluster_ca.0.clone(),
        server_name: "weir-cluster".into(),
    };
    let tls_plane = DataPlane::new(TOKEN, "127.0.0.1:9", 1 << 20, Transport::tls(&files).unwrap());
    let (from, to) = ends();
    if let Err(DataError::Connection { reason, .. }) =
        tls_plane.output(&data_addr, &key, (2, usize::MAX), from, to).await
    {
        panic!("a TLS data connection with the cluster's certificate failed: {reason}");
    }

    // The word count on the two TLS workers (one slot each), exactly once.
    let (_, api) = server.tenant("acme").await;
    api.upload_guest("tokenizer").await;
    api.upload_guest("wordcount").await;
    api.post("/api/v1/streams", &json!({ "name": "lines", "partitions": 2 })).await;
    push(&api, lines(0, 1000)).await;
    let job = api.create_job(&wordcount::spec("tls-wordcount", "tokenizer", "wordcount")).await;
    let list = wait_workers(&server, "a slot on each TLS worker", |l| {
        [id1, id2].iter().all(|id| find(l, *id).is_some_and(|w| w["used_slots"] == 1))
    })
    .await;
    assert_eq!(list.len(), 2, "only the TLS workers registered: {list:#?}");
    wait_output(&api, 1000).await;
    let (status, _) = api.post_empty(&format!("/api/v1/jobs/{job}/stop")).await;
    assert_eq!(status, 202);
    api.wait_status(&job, "stopped", std::time::Duration::from_secs(120)).await;
    check_exactly_once(&api, 1000).await;
}

/// Runs `weir serve` with `env` and waits for it to exit (killed after a minute): its
/// status and stderr.
fn serve_exits(data_dir: &Path, env: &[(&str, &str)]) -> (std::process::ExitStatus, String) {
    use std::io::Read as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
        .args(["--data-dir"])
        .arg(data_dir)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("weir serve did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (status, stderr)
}

/// Plain TCP only on loopback (issue 40): a controller listening on every interface without
/// `cluster.tls` does not start, and says what to set; with `cluster.insecure_plaintext` it
/// starts, and so does one with `cluster.tls`. A worker whose controller or data-plane
/// address is off loopback does not start without TLS or `--insecure-plaintext` either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_tcp_off_loopback_needs_tls_or_the_waiver() {
    let dir = tempfile::tempdir().unwrap();
    let open = [("WEIR_CLUSTER__LISTEN", "0.0.0.0:0"), ("WEIR_CLUSTER__TOKEN", TOKEN)];
    let (status, stderr) = serve_exits(&dir.path().join("refused"), &open);
    assert!(!status.success());
    assert!(
        stderr.contains("cluster.listen is 0.0.0.0:0, off loopback")
            && stderr.contains("set cluster.tls")
            && stderr.contains("cluster.insecure_plaintext = true"),
        "{stderr}"
    );
    // Loopback, but advertised elsewhere.
    let advertised = [
        ("WEIR_CLUSTER__LISTEN", "127.0.0.1:0"),
        ("WEIR_CLUSTER__TOKEN", TOKEN),
        ("WEIR_CLUSTER__DATA_ADVERTISE", "controller.example:7071"),
    ];
    let (status, stderr) = serve_exits(&dir.path().join("advertised"), &advertised);
    assert!(
        !status.success() && stderr.contains("cluster.data_advertise is controller.example:7071"),
        "{stderr}"
    );

    // Waived: it listens on every interface, and a worker on loopback registers.
    let server = controller(
        &dir.path().join("waived"),
        &[("WEIR_CLUSTER__LISTEN", "0.0.0.0:0"), ("WEIR_CLUSTER__INSECURE_PLAINTEXT", "true")],
    );
    let cluster = server.cluster.clone().unwrap();
    let port = cluster.strip_prefix("0.0.0.0:").unwrap_or_else(|| panic!("listening on {cluster}"));
    let addr = format!("127.0.0.1:{port}");
    let local = Worker::spawn(&addr, "local", TOKEN);
    local.wait_line("registered as worker");

    // Workers: a controller off loopback, a data plane on every interface.
    let mut far = Worker::spawn_in(None, "127.0.0.1:0", "10.255.255.1:7070", "far", TOKEN, &[]);
    let line = far.wait_line("off loopback");
    assert!(
        line.contains("--controller is 10.255.255.1:7070") && line.contains("--insecure-plaintext"),
        "{line}"
    );
    assert!(!far.exit_status().success());
    let mut open = Worker::spawn_in(None, "0.0.0.0:0", &addr, "open", TOKEN, &[]);
    let line = open.wait_line("off loopback");
    assert!(line.contains("--listen is 0.0.0.0:"), "{line}");
    assert!(!open.exit_status().success());
    let waived = [("WEIR_CLUSTER_INSECURE_PLAINTEXT".to_string(), "true".to_string())];
    let open = Worker::spawn_in(None, "0.0.0.0:0", &addr, "open", TOKEN, &waived);
    open.wait_line("registered as worker");

    // Mutual TLS needs no waiver.
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let cluster_ca = ca(&certs, "cluster-ca");
    let cert = certificate(&certs, "node", &cluster_ca, "weir-cluster");
    let env = tls_env(&cert, &cluster_ca.0);
    let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.push(("WEIR_CLUSTER__LISTEN", "0.0.0.0:0"));
    let tls_server = controller(&dir.path().join("tls"), &env);
    let port = tls_server.cluster.as_deref().unwrap().rsplit(':').next().unwrap().to_string();
    let worker = Worker::spawn_in(
        None,
        "0.0.0.0:0",
        &format!("127.0.0.1:{port}"),
        "tls",
        TOKEN,
        &tls_env(&cert, &cluster_ca.0),
    );
    worker.wait_line("registered as worker");
}
