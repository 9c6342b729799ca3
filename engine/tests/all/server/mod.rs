//! A Weir server for API tests: in process (a real socket, a real redb file in a temporary
//! directory) or as a `weir serve` child process (for kill -9), plus a small JSON client.
//! It uses `crate::common`.
#![allow(dead_code)]

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weir::server::{Server, ServerConfig};

use crate::common::guest_path;

pub mod wordcount;

/// The admin token of test servers.
pub const ADMIN: &str = "test-admin-token";

/// A running server.
pub struct TestServer {
    /// Base URL, `http://127.0.0.1:<port>`.
    pub url: String,
    /// The data directory.
    pub data_dir: PathBuf,
    /// Where workers register (`weir serve` with `WEIR_CLUSTER__LISTEN`).
    pub cluster: Option<String>,
    _temp: Option<tempfile::TempDir>,
    child: Option<Child>,
    task: Option<tokio::task::JoinHandle<()>>,
    service: Option<std::sync::Arc<Server>>,
    /// What a `weir serve` child wrote to its stderr (its log); passed on to the test's.
    pub log: std::sync::Arc<ProcessLog>,
}

/// A child process's log as it arrives: bytes and lines so far, and the last lines.
#[derive(Debug, Default)]
pub struct ProcessLog {
    state: std::sync::Mutex<(u64, u64, std::collections::VecDeque<String>)>,
}

impl ProcessLog {
    /// Keeps the last this many lines.
    const KEPT: usize = 20_000;

    /// Reads `from` line by line on a thread of its own, passing each on to this process's
    /// stderr.
    pub fn follow(from: impl std::io::Read + Send + 'static) -> std::sync::Arc<ProcessLog> {
        let log = std::sync::Arc::new(ProcessLog::default());
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(from).lines().map_while(Result::ok) {
                eprintln!("{line}");
                let mut s = kept.state.lock().unwrap();
                s.0 += line.len() as u64 + 1;
                s.1 += 1;
                s.2.push_back(line);
                if s.2.len() > Self::KEPT {
                    s.2.pop_front();
                }
            }
        });
        log
    }

    /// (bytes, lines) so far.
    pub fn written(&self) -> (u64, u64) {
        let s = self.state.lock().unwrap();
        (s.0, s.1)
    }

    /// The lines after the first `n` (those still kept).
    pub fn lines_after(&self, n: u64) -> Vec<String> {
        let s = self.state.lock().unwrap();
        let first = s.1 - s.2.len() as u64;
        s.2.iter().skip(n.saturating_sub(first) as usize).cloned().collect()
    }
}

impl TestServer {
    /// A server in this process on a fresh data directory, with `tweak` applied to its
    /// config. Call from a multi-threaded tokio runtime.
    pub async fn start(tweak: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let temp = tempfile::tempdir().expect("temp dir");
        let mut server = Self::start_in(temp.path(), tweak).await;
        server._temp = Some(temp);
        server
    }

    /// A server in this process on `data_dir`.
    pub async fn start_in(data_dir: &Path, tweak: impl FnOnce(&mut ServerConfig)) -> TestServer {
        let mut config = ServerConfig {
            listen: "127.0.0.1:0".into(),
            data_dir: data_dir.to_path_buf(),
            admin_token: Some(ADMIN.into()),
            ..ServerConfig::default()
        };
        tweak(&mut config);
        // A server that was aborted on this directory may still be closing its store.
        let deadline = Instant::now() + Duration::from_secs(30);
        let server = loop {
            match Server::open(config.clone()).await {
                Ok(server) => break server,
                Err(e) if Instant::now() < deadline && format!("{e:#}").contains("already open") => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("the server does not open: {e:#}"),
            }
        };
        let service = server.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            weir::api::serve(server, move |a| {
                let _ = tx.send(a);
            })
            .await
            .expect("server runs");
        });
        let address = rx.await.expect("server listening");
        TestServer {
            url: format!("http://{address}"),
            data_dir: data_dir.to_path_buf(),
            cluster: None,
            _temp: None,
            child: None,
            task: Some(task),
            service: Some(service),
            log: Default::default(),
        }
    }

    /// `weir serve` as a child process on `data_dir`.
    pub fn spawn_process(data_dir: &Path) -> TestServer {
        Self::spawn_process_with(data_dir, &[])
    }

    /// `weir serve` as a child process on `data_dir`, with `env` (configuration such as
    /// `WEIR_PLAN_LIMITS__MAX_EDGES`) added to its environment.
    pub fn spawn_process_with(data_dir: &Path, env: &[(&str, &str)]) -> TestServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_weir"))
            .args(["--data-dir"])
            .arg(data_dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .env("WEIR_ADMIN_TOKEN", ADMIN)
            .env("RUST_LOG", "weir=info")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("weir serve starts");
        let log = ProcessLog::follow(child.stderr.take().expect("stderr"));
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut cluster = None;
        let url = loop {
            let line = lines.next().expect("weir serve printed its address").expect("stdout");
            if let Some(rest) = line.strip_prefix("weir cluster listening on ") {
                cluster = Some(rest.trim().to_string());
            }
            if let Some(rest) = line.strip_prefix("weir server listening on ") {
                break rest.trim().to_string();
            }
        };
        TestServer {
            url,
            data_dir: data_dir.to_path_buf(),
            cluster,
            _temp: None,
            child: Some(child),
            task: None,
            service: None,
            log,
        }
    }

    /// The child process's id (panics for an in-process server).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("a child process").id()
    }

    /// Kills the child process with SIGKILL and waits for it.
    pub fn kill9(&mut self) {
        let mut child = self.child.take().expect("a child process");
        child.kill().expect("kill");
        child.wait().expect("wait");
    }

    /// Stops an in-process server (its jobs are aborted; statuses stay for resumption).
    pub fn abort(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
        if let Some(s) = self.service.take() {
            s.jobs.abort_all();
        }
    }

    /// The service of an in-process server, to look at what the API does not show.
    pub fn service(&self) -> &std::sync::Arc<Server> {
        self.service.as_ref().expect("an in-process server")
    }

    /// A client with `token`.
    pub fn client(&self, token: &str) -> Api {
        Api { http: reqwest::Client::new(), url: self.url.clone(), token: Some(token.to_string()) }
    }

    /// A client without a token.
    pub fn anonymous(&self) -> Api {
        Api { http: reqwest::Client::new(), url: self.url.clone(), token: None }
    }

    /// Creates a tenant; returns (tenant id, client with its token).
    pub async fn tenant(&self, name: &str) -> (String, Api) {
        self.tenant_with(name, None).await
    }

    /// Creates a tenant with quotas.
    pub async fn tenant_with(&self, name: &str, quotas: Option<Value>) -> (String, Api) {
        let mut body = json!({ "name": name });
        if let Some(q) = quotas {
            body["quotas"] = q;
        }
        let (status, v) = self.client(ADMIN).post("/api/v1/tenants", &body).await;
        assert_eq!(status, 201, "create tenant: {v}");
        let id = v["tenant"]["id"].as_str().unwrap().to_string();
        (id, self.client(v["token"].as_str().unwrap()))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// A JSON client of the API: every call returns (status, body as JSON).
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    /// Base URL.
    pub url: String,
    token: Option<String>,
}

impl Api {
    /// A client of the server at `url` with `token`.
    pub fn new(url: &str, token: &str) -> Api {
        Api { http: reqwest::Client::new(), url: url.to_string(), token: Some(token.to_string()) }
    }

    /// The same client against another server (a restarted one).
    pub fn at(&self, url: &str) -> Api {
        Api { url: url.to_string(), ..self.clone() }
    }

    /// The same client on a connection pool of its own. For requests whose body the server
    /// may stop reading (it then closes the connection, and a pooled connection that was
    /// closed under a client fails its next request).
    pub fn fresh(&self) -> Api {
        Api { http: reqwest::Client::new(), ..self.clone() }
    }

    /// The client's token.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// A request to `path` (appended to the base URL as is).
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.url));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Sends and decodes: (status, JSON body, or a `text/plain` body as a string, or Null).
    pub async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value) {
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let text = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .is_some_and(|t| t.to_str().unwrap_or_default().starts_with("text/plain"));
        let bytes = response.bytes().await.expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else if text {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                panic!("status {status}: body is not JSON: {}", String::from_utf8_lossy(&bytes))
            })
        };
        (status, body)
    }

    /// GET of a text answer (Prometheus' `/metrics`, `/api/v1/metrics`); panics unless 200.
    pub async fn text(&self, path: &str) -> String {
        let response = self.request(reqwest::Method::GET, path).send().await.expect("request sent");
        assert_eq!(response.status(), 200, "GET {path}");
        response.text().await.expect("body")
    }

    /// GET.
    pub async fn get(&self, path: &str) -> (u16, Value) {
        self.send(self.request(reqwest::Method::GET, path)).await
    }

    /// POST a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(self.request(reqwest::Method::POST, path).json(body)).await
    }

    /// POST without a body.
    pub async fn post_empty(&self, path: &str) -> (u16, Value) {
        self.send(self.request(reqwest::Method::POST, path)).await
    }

    /// DELETE.
    pub async fn delete(&self, path: &str) -> (u16, Value) {
        self.send(self.request(reqwest::Method::DELETE, path)).await
    }

    /// PUT a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> (u16, Value) {
        self.send(self.request(reqwest::Method::PUT, path).json(body)).await
    }

    /// Any method with a raw body of `content_type`.
    pub async fn send_bytes(
        &self,
        method: reqwest::Method,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> (u16, Value) {
        self.send(self.request(method, path).header(reqwest::header::CONTENT_TYPE, content_type).body(body))
            .await
    }

    /// Uploads module bytes as multipart; (status, body).
    pub async fn upload(&self, name: &str, bytes: Vec<u8>) -> (u16, Value) {
        let part = reqwest::multipart::Part::bytes(bytes).file_name(format!("{name}.wasm"));
        let form = reqwest::multipart::Form::new().part("file", part).text("name", name.to_string());
        self.send(self.request(reqwest::Method::POST, "/api/v1/modules").multipart(form)).await
    }

    /// Uploads a test guest (`faulty`, `counter`, ...) or example and returns its id.
    pub async fn upload_guest(&self, name: &str) -> String {
        let bytes = std::fs::read(guest_path(name)).expect("guest built");
        let (status, v) = self.upload(name, bytes).await;
        assert!(status == 201 || status == 200, "upload {name}: {status} {v}");
        v["id"].as_str().unwrap().to_string()
    }

    /// Creates a job; returns its id.
    pub async fn create_job(&self, spec: &Value) -> String {
        let (status, v) = self.post("/api/v1/jobs", spec).await;
        assert_eq!(status, 201, "create job: {v}");
        v["id"].as_str().unwrap().to_string()
    }

    /// Waits until job `id` satisfies `done` (checked every 50 ms, up to `timeout`); returns
    /// the job.
    pub async fn wait_job(&self, id: &str, timeout: Duration, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let (status, job) = self.get(&format!("/api/v1/jobs/{id}")).await;
            assert_eq!(status, 200, "get job: {job}");
            if done(&job) {
                return job;
            }
            assert!(Instant::now() < deadline, "job {id} did not reach the condition in {timeout:?}: {job}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until job `id` has `status`.
    pub async fn wait_status(&self, id: &str, status: &str, timeout: Duration) -> Value {
        self.wait_job(id, timeout, |j| j["status"] == status).await
    }

    /// Every record of every partition of stream `name`, as (partition, offset, key, value).
    pub async fn read_all(&self, name: &str) -> Vec<(u64, u64, Value, Value)> {
        let (status, info) = self.get(&format!("/api/v1/streams/{name}")).await;
        assert_eq!(status, 200, "{info}");
        let mut out = Vec::new();
        for p in 0..info["partitions"].as_u64().unwrap() {
            let mut offset = 0;
            loop {
                let (status, page) = self
                    .get(&format!("/api/v1/streams/{name}/records?partition={p}&offset={offset}&limit=10000"))
                    .await;
                assert_eq!(status, 200, "{page}");
                let data = page["data"].as_array().unwrap();
                if data.is_empty() {
                    break;
                }
                for r in data {
                    out.push((p, r["offset"].as_u64().unwrap(), r["key"].clone(), r["value"].clone()));
                }
                offset = page["next_offset"].as_u64().unwrap();
            }
        }
        out
    }
}

/// Waits until `check` is true (checked every 50 ms, up to `timeout`); panics naming `what`
/// otherwise.
pub async fn wait_for<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: not reached in {timeout:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `request` (a whole HTTP/1.1 request, sent as is: no URL normalisation, no
/// encoding) to the server at `url` and returns (status, headers, body). The request should
/// say `Connection: close`.
pub async fn raw_request(url: &str, request: &[u8]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = url.strip_prefix("http://").expect("an http:// URL");
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("connect");
    stream.write_all(request).await.expect("request written");
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut response))
        .await
        .expect("the server answered within 60 s")
        .expect("response read");
    let end = response.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| {
        panic!("no end of headers in the response: {}", String::from_utf8_lossy(&response))
    });
    let head = String::from_utf8_lossy(&response[..end]).to_string();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line `{status_line}`"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = response[end + 4..].to_vec();
    if headers.iter().any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body);
    }
    (status, headers, body)
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(line_end) = data.windows(2).position(|w| w == b"\r\n") else { return out };
        let size = usize::from_str_radix(String::from_utf8_lossy(&data[..line_end]).trim(), 16).unwrap_or(0);
        if size == 0 {
            return out;
        }
        let start = line_end + 2;
        out.extend_from_slice(&data[start..(start + size).min(data.len())]);
        data = &data[(start + size + 2).min(data.len())..];
    }
}

/// Every file under `dir` (relative path → size in bytes).
pub fn files(dir: &Path) -> std::collections::BTreeMap<PathBuf, u64> {
    fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<PathBuf, u64>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(path.strip_prefix(root).unwrap_or(&path).to_path_buf(), meta.len());
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}
