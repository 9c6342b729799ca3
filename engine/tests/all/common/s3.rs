//! A real S3-protocol server for the tests: moto's server (PyPI, `moto[server]`) as a child
//! process on a loopback port, in memory. The binary comes from `WEIR_MOTO`, else from
//! `~/.cache/weir/moto-<version>/bin/moto_server` (where `.ci/run` installs it).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The moto release `.ci/run` installs.
pub const MOTO_VERSION: &str = "5.2.5";

/// The server binary. Panics saying how to install it when there is none.
pub fn moto_binary() -> PathBuf {
    let hint = "install it with `bash .ci/run s3` (a venv in ~/.cache/weir) or set WEIR_MOTO";
    if let Some(path) = std::env::var_os("WEIR_MOTO") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "WEIR_MOTO={} is not a file; {hint}", path.display());
        return path;
    }
    let home = std::env::var_os("HOME").expect("HOME");
    let path = PathBuf::from(home).join(format!(".cache/weir/moto-{MOTO_VERSION}/bin/moto_server"));
    assert!(path.is_file(), "no S3 test server at {}; {hint}", path.display());
    path
}

/// A running S3 server (killed on drop).
pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub endpoint: String,
}

impl S3Server {
    /// Starts a server and waits until it answers.
    pub fn start() -> S3Server {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(moto_binary())
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server starts");
        let server = S3Server { child, endpoint: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server does not listen on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// The config of `bucket` on this server (moto takes any credentials).
    pub fn config(&self, bucket: &str) -> weir::cluster::objects::ObjectStoreConfig {
        weir::cluster::objects::ObjectStoreConfig::S3 {
            bucket: bucket.into(),
            region: "us-east-1".into(),
            endpoint: Some(self.endpoint.clone()),
            access_key_id: "test".into(),
            secret_access_key: "test".into(),
            allow_http: true,
        }
    }

    /// Creates `bucket` (moto does not check signatures).
    pub async fn create_bucket(&self, bucket: &str) {
        let status = reqwest::Client::new()
            .put(format!("{}/{bucket}", self.endpoint))
            .send()
            .await
            .expect("create the bucket")
            .status();
        assert!(status.is_success(), "creating bucket {bucket}: {status}");
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
