//! The HTTP client of a Weir server used by `weir module|job|checkpoint|savepoint|stream|tenant`,
//! and the helpers that print its answers.
//!
//! The server's address and the token come from `--url`/`--token`, else `WEIR_URL` /
//! `WEIR_TOKEN`, else the client file `<data-dir>/client.toml` that `weir demo` writes.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
use futures::StreamExt as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use weir::api::model::{
    AppendBody, Appended, CheckpointDetail, Data, ErrorBody, History, JobDetail, JobRecord, JobSummary,
    Module, NewRecord, NewStream, NewTenant, NewToken, ReadBody, RotateTokens, Rotated, SavepointMode,
    SavepointRecord, StreamInfo, Tenant, TenantWithToken, TokenBody, TokenInfo, TriggerSavepoint, Triggered,
};

/// Where the client finds the server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClientConfig {
    /// The server's base URL (`http://127.0.0.1:8080`).
    pub url: Option<String>,
    /// A tenant's token (or the admin token for `weir tenant`).
    pub token: Option<String>,
}

impl ClientConfig {
    /// The name of the client file in a data directory.
    pub const FILE: &'static str = "client.toml";

    /// Reads `<data_dir>/client.toml` if it exists.
    pub fn read(data_dir: &Path) -> anyhow::Result<Self> {
        let path = data_dir.join(Self::FILE);
        if !path.exists() {
            return Ok(ClientConfig::default());
        }
        let text =
            std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        toml_lite(&text).with_context(|| format!("cannot parse {}", path.display()))
    }

    /// Writes `<data_dir>/client.toml`, readable by its owner only (it holds a token).
    pub fn write(&self, data_dir: &Path) -> anyhow::Result<()> {
        let path = data_dir.join(Self::FILE);
        let mut text = String::new();
        if let Some(url) = &self.url {
            text.push_str(&format!("url = {url:?}\n"));
        }
        if let Some(token) = &self.token {
            text.push_str(&format!("token = {token:?}\n"));
        }
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let write = |options: &std::fs::OpenOptions| -> std::io::Result<()> {
            use std::io::Write as _;
            let mut file = options.open(&path)?;
            // A file left by an older version keeps its mode on open: narrow it.
            #[cfg(unix)]
            file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
            file.write_all(text.as_bytes())
        };
        write(&options).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// Parses the client file with figment (TOML).
fn toml_lite(text: &str) -> anyhow::Result<ClientConfig> {
    use figment::providers::{Format, Toml};
    Ok(figment::Figment::from(Toml::string(text)).extract()?)
}

/// An API client.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    url: String,
    token: Option<String>,
}

/// An error answer of the API.
#[derive(Debug, thiserror::Error)]
#[error("{status}: {message}")]
pub struct ApiFailure {
    /// The HTTP status.
    pub status: u16,
    /// The `error` of the body.
    pub message: String,
}

impl Client {
    /// A client of the server at `url` using `token`.
    pub fn new(url: &str, token: Option<String>) -> Self {
        let http =
            reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).build().unwrap_or_default();
        Client { http, url: url.trim_end_matches('/').to_string(), token }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut r = self.http.request(method, format!("{}{path}", self.url));
        if let Some(t) = &self.token {
            r = r.bearer_auth(t);
        }
        r
    }

    /// Sends `request` and returns the body of a success; an error answer becomes an
    /// [`ApiFailure`] with the API's `error` message.
    async fn send_raw(&self, request: reqwest::RequestBuilder) -> anyhow::Result<bytes::Bytes> {
        let response =
            request.send().await.with_context(|| format!("cannot reach the server at {}", self.url))?;
        let status = response.status();
        let bytes = response.bytes().await?;
        if !status.is_success() {
            let message = serde_json::from_slice::<ErrorBody>(&bytes)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).chars().take(200).collect());
            return Err(ApiFailure { status: status.as_u16(), message }.into());
        }
        Ok(bytes)
    }

    /// Sends `request` and reads the answer as the API's type `T`.
    async fn send<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> anyhow::Result<T> {
        let bytes = self.send_raw(request).await?;
        serde_json::from_slice(&bytes).with_context(|| {
            format!("the server's answer is not the {} this client expects", std::any::type_name::<T>())
        })
    }

    /// `GET path`.
    pub(crate) async fn get<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        self.send(self.request(reqwest::Method::GET, path)).await
    }

    /// `POST path` with a JSON body (or none).
    pub(crate) async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> anyhow::Result<T> {
        let mut r = self.request(reqwest::Method::POST, path);
        if let Some(b) = body {
            r = r.json(b);
        }
        self.send(r).await
    }

    /// `DELETE path`.
    async fn delete(&self, path: &str) -> anyhow::Result<()> {
        self.send_raw(self.request(reqwest::Method::DELETE, path)).await.map(drop)
    }

    /// `GET path`, streaming the body into `out`; returns the bytes written.
    async fn download(&self, path: &str, out: &mut (dyn std::io::Write + Send)) -> anyhow::Result<u64> {
        let response = self
            .request(reqwest::Method::GET, path)
            .send()
            .await
            .with_context(|| format!("cannot reach the server at {}", self.url))?;
        if !response.status().is_success() {
            let status = response.status().as_u16();
            let bytes = response.bytes().await?;
            let message = serde_json::from_slice::<ErrorBody>(&bytes)
                .map(|e| e.error)
                .unwrap_or_else(|_| String::from_utf8_lossy(&bytes).chars().take(200).collect());
            return Err(ApiFailure { status, message }.into());
        }
        let mut total = 0u64;
        let mut body = response.bytes_stream();
        while let Some(chunk) = body.next().await {
            let chunk = chunk.context("the download was cut short")?;
            out.write_all(&chunk)?;
            total += chunk.len() as u64;
        }
        out.flush()?;
        Ok(total)
    }

    /// `POST path` with a file as an `application/octet-stream` body (streamed).
    async fn post_file<T: DeserializeOwned>(&self, path: &str, file: &Path) -> anyhow::Result<T> {
        let f =
            tokio::fs::File::open(file).await.with_context(|| format!("cannot read {}", file.display()))?;
        let length = f.metadata().await?.len();
        let stream = file_chunks(f);
        let body = reqwest::Body::wrap_stream(stream);
        self.send(
            self.request(reqwest::Method::POST, path)
                .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
                .header(reqwest::header::CONTENT_LENGTH, length)
                .body(body),
        )
        .await
    }

    /// Uploads a module file, showing progress.
    pub async fn upload(&self, file: &Path, name: Option<&str>, progress: bool) -> anyhow::Result<Module> {
        let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        let file_name =
            file.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_else(|| "module.wasm".into());
        let total = bytes.len() as u64;
        let bar =
            if progress { indicatif::ProgressBar::new(total) } else { indicatif::ProgressBar::hidden() };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "uploading {bytes}/{total_bytes} [{bar:30}] {bytes_per_sec}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        let chunks: Vec<Vec<u8>> = bytes.chunks(64 << 10).map(<[u8]>::to_vec).collect();
        let progress_bar = bar.clone();
        let stream = futures::stream::iter(chunks).map(move |c| {
            progress_bar.inc(c.len() as u64);
            Ok::<_, std::io::Error>(c)
        });
        let part = reqwest::multipart::Part::stream_with_length(reqwest::Body::wrap_stream(stream), total)
            .file_name(file_name)
            .mime_str("application/wasm")?;
        let mut form = reqwest::multipart::Form::new().part("file", part);
        if let Some(n) = name {
            form = form.text("name", n.to_string());
        }
        let result = self.send(self.request(reqwest::Method::POST, "/api/v1/modules").multipart(form)).await;
        bar.finish_and_clear();
        result
    }
}

/// The API's operations, one method each: every path the CLI uses is here, and every answer
/// is read as the server's own response type (`weir::api::model`), so a change to a response
/// body that the CLI does not follow fails to compile.
impl Client {
    /// `GET /modules`.
    pub async fn modules(&self) -> anyhow::Result<Vec<Module>> {
        Ok(self.get::<Data<Module>>("/api/v1/modules").await?.data)
    }

    /// `DELETE /modules/{id}`.
    pub async fn delete_module(&self, id: &str) -> anyhow::Result<()> {
        self.delete(&format!("/api/v1/modules/{id}")).await
    }

    /// `POST /jobs` (from a savepoint when `from_savepoint` is given).
    pub async fn create_job(
        &self,
        spec: &Value,
        from_savepoint: Option<&str>,
        allow_non_restored_state: bool,
    ) -> anyhow::Result<JobDetail> {
        let path = match from_savepoint {
            Some(id) => format!(
                "/api/v1/jobs?from_savepoint={id}{}",
                if allow_non_restored_state { "&allow_non_restored_state=true" } else { "" }
            ),
            None => "/api/v1/jobs".to_string(),
        };
        self.post(&path, Some(spec)).await
    }

    /// `GET /jobs`.
    pub async fn jobs(&self) -> anyhow::Result<Vec<JobSummary>> {
        Ok(self.get::<Data<JobSummary>>("/api/v1/jobs").await?.data)
    }

    /// `GET /jobs/{id}`.
    pub async fn job(&self, id: &str) -> anyhow::Result<JobDetail> {
        self.get(&format!("/api/v1/jobs/{id}")).await
    }

    /// `GET /jobs/{id}/exceptions`: the job's failures, newest first.
    pub async fn job_exceptions(&self, id: &str) -> anyhow::Result<Vec<weir::server::jobs::JobException>> {
        let page: Data<weir::server::jobs::JobException> =
            self.get(&format!("/api/v1/jobs/{id}/exceptions")).await?;
        Ok(page.data)
    }

    /// `GET /jobs/{id}/logs?after=…`: the job's log lines after `after`, oldest first
    /// (`query`: more `&k=v` filters).
    pub async fn job_logs(
        &self,
        id: &str,
        after: u64,
        query: &str,
    ) -> anyhow::Result<Vec<weir::server::jobs::StoredLine>> {
        let page: Data<weir::server::jobs::StoredLine> =
            self.get(&format!("/api/v1/jobs/{id}/logs?after={after}&limit=10000{query}")).await?;
        Ok(page.data)
    }

    /// `POST /jobs/{id}/{action}`: `stop`, `cancel` or `restart`.
    pub async fn job_action(&self, id: &str, action: &str) -> anyhow::Result<JobRecord> {
        self.post(&format!("/api/v1/jobs/{id}/{action}"), None::<&()>).await
    }

    /// `GET /jobs/{id}/checkpoints?limit=`.
    pub async fn checkpoints(&self, job: &str, limit: usize) -> anyhow::Result<History> {
        self.get(&format!("/api/v1/jobs/{job}/checkpoints?limit={limit}")).await
    }

    /// `GET /jobs/{id}/checkpoints/{cid}`.
    pub async fn checkpoint(&self, job: &str, id: u64) -> anyhow::Result<CheckpointDetail> {
        self.get(&format!("/api/v1/jobs/{job}/checkpoints/{id}")).await
    }

    /// `POST /jobs/{id}/checkpoints`.
    pub async fn trigger_checkpoint(&self, job: &str) -> anyhow::Result<Triggered> {
        self.post(&format!("/api/v1/jobs/{job}/checkpoints"), None::<&()>).await
    }

    /// `POST /jobs/{id}/savepoints`.
    pub async fn trigger_savepoint(&self, job: &str, mode: SavepointMode) -> anyhow::Result<SavepointRecord> {
        self.post(&format!("/api/v1/jobs/{job}/savepoints"), Some(&TriggerSavepoint { mode })).await
    }

    /// `GET /savepoints`, or `GET /jobs/{id}/savepoints` for one job's.
    pub async fn savepoints(&self, job: Option<&str>) -> anyhow::Result<Vec<SavepointRecord>> {
        let path = match job {
            Some(j) => format!("/api/v1/jobs/{j}/savepoints"),
            None => "/api/v1/savepoints".to_string(),
        };
        Ok(self.get::<Data<SavepointRecord>>(&path).await?.data)
    }

    /// `GET /savepoints/{id}`.
    pub async fn savepoint(&self, id: &str) -> anyhow::Result<SavepointRecord> {
        self.get(&format!("/api/v1/savepoints/{id}")).await
    }

    /// `GET /savepoints/{id}/file` into `out`; returns the bytes written.
    pub async fn export_savepoint(
        &self,
        id: &str,
        out: &mut (dyn std::io::Write + Send),
    ) -> anyhow::Result<u64> {
        self.download(&format!("/api/v1/savepoints/{id}/file"), out).await
    }

    /// `POST /savepoints` with a savepoint file.
    pub async fn import_savepoint(&self, file: &Path) -> anyhow::Result<SavepointRecord> {
        self.post_file("/api/v1/savepoints", file).await
    }

    /// `DELETE /savepoints/{id}`.
    pub async fn delete_savepoint(&self, id: &str) -> anyhow::Result<()> {
        self.delete(&format!("/api/v1/savepoints/{id}")).await
    }

    /// `POST /streams`.
    pub async fn create_stream(&self, name: &str, partitions: u32) -> anyhow::Result<StreamInfo> {
        self.post("/api/v1/streams", Some(&NewStream { name: name.to_string(), partitions })).await
    }

    /// `GET /streams`.
    pub async fn streams(&self) -> anyhow::Result<Vec<StreamInfo>> {
        Ok(self.get::<Data<StreamInfo>>("/api/v1/streams").await?.data)
    }

    /// `POST /streams/{name}/records`.
    pub async fn append(&self, name: &str, records: Vec<NewRecord>) -> anyhow::Result<Vec<Appended>> {
        let body = AppendBody { records };
        Ok(self.post::<Data<Appended>>(&format!("/api/v1/streams/{name}/records"), Some(&body)).await?.data)
    }

    /// `GET /streams/{name}/records`.
    pub async fn read(
        &self,
        name: &str,
        partition: u32,
        offset: u64,
        limit: usize,
    ) -> anyhow::Result<ReadBody> {
        self.get(&format!(
            "/api/v1/streams/{name}/records?partition={partition}&offset={offset}&limit={limit}"
        ))
        .await
    }

    /// `POST /tenants` (admin).
    pub async fn create_tenant(&self, name: &str) -> anyhow::Result<TenantWithToken> {
        self.post("/api/v1/tenants", Some(&NewTenant { name: name.to_string(), quotas: None })).await
    }

    /// `GET /tenants` (admin).
    pub async fn tenants(&self) -> anyhow::Result<Vec<Tenant>> {
        Ok(self.get::<Data<Tenant>>("/api/v1/tenants").await?.data)
    }

    /// `POST /tenants/{id}/tokens` (admin).
    pub async fn issue_token(&self, tenant: &str, label: Option<String>) -> anyhow::Result<TokenBody> {
        self.post(&format!("/api/v1/tenants/{tenant}/tokens"), Some(&NewToken { label })).await
    }

    /// `GET /tenants/{id}/tokens` (admin).
    pub async fn tokens(&self, tenant: &str) -> anyhow::Result<Vec<TokenInfo>> {
        Ok(self.get::<Data<TokenInfo>>(&format!("/api/v1/tenants/{tenant}/tokens")).await?.data)
    }

    /// `DELETE /tenants/{id}/tokens/{token}` (admin).
    pub async fn revoke_token(&self, tenant: &str, token: &str) -> anyhow::Result<TokenInfo> {
        self.send(self.request(reqwest::Method::DELETE, &format!("/api/v1/tenants/{tenant}/tokens/{token}")))
            .await
    }

    /// `POST /tenants/{id}/tokens/rotate` (admin).
    pub async fn rotate_tokens(&self, tenant: &str, rotate: &RotateTokens) -> anyhow::Result<Rotated> {
        self.post(&format!("/api/v1/tenants/{tenant}/tokens/rotate"), Some(rotate)).await
    }

    /// `POST /tenants/{id}/disable` or `/enable` (admin).
    pub async fn set_tenant_enabled(&self, tenant: &str, enabled: bool) -> anyhow::Result<Tenant> {
        let action = if enabled { "enable" } else { "disable" };
        self.post(&format!("/api/v1/tenants/{tenant}/{action}"), None::<&()>).await
    }
}

/// The bytes of a file as a stream of chunks.
fn file_chunks(
    file: tokio::fs::File,
) -> impl futures::Stream<Item = std::io::Result<Vec<u8>>> + Send + 'static {
    futures::stream::unfold(Some(file), |file| async move {
        use tokio::io::AsyncReadExt as _;
        let mut file = file?;
        let mut buffer = vec![0u8; 256 << 10];
        match file.read(&mut buffer).await {
            Ok(0) => None,
            Ok(n) => {
                buffer.truncate(n);
                Some((Ok(buffer), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

/// Prints rows as a table.
pub fn print_table(header: &[&str], rows: Vec<Vec<String>>) {
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED).set_header(header.to_vec());
    for r in rows {
        table.add_row(r);
    }
    println!("{table}");
}

/// An optional value as display text (nothing for `None`).
pub fn opt<T: std::fmt::Display>(value: &Option<T>) -> String {
    value.as_ref().map(T::to_string).unwrap_or_default()
}

/// A figure with one decimal.
pub fn float(value: f64) -> String {
    format!("{value:.1}")
}

/// The API's name of an enum value (`running`, `keep_running`, …).
pub fn label<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// An optional Unix time in milliseconds as a UTC time.
pub fn time(ms: Option<u64>) -> String {
    ms.map(format_time).unwrap_or_default()
}

/// Reads records to push: JSON lines, each a record object (`{"key":..,"value":..}`) when
/// it has a `value` field, else a bare value.
pub fn records_from_lines(text: &str) -> anyhow::Result<Vec<NewRecord>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).with_context(|| format!("line {}: not JSON", n + 1))?;
        let record = match v {
            Value::Object(ref m) if m.contains_key("value") => {
                serde_json::from_value(v).with_context(|| format!("line {}: not a record", n + 1))?
            }
            value => NewRecord { key: None, value, timestamp: None, partition: None },
        };
        out.push(record);
    }
    if out.is_empty() {
        bail!("no records to push");
    }
    Ok(out)
}

/// `YYYY-MM-DD HH:MM:SS.mmm` of a Unix time in milliseconds (UTC).
pub fn format_time(ms: u64) -> String {
    let secs = ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{:03}", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_file_round_trips_and_only_its_owner_can_read_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(ClientConfig::FILE), "url = \"old\"\n").unwrap();
        let config =
            ClientConfig { url: Some("http://127.0.0.1:1".into()), token: Some("weir_secret".into()) };
        config.write(dir.path()).unwrap();
        assert_eq!(ClientConfig::read(dir.path()).unwrap(), config);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(ClientConfig::FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
        }
    }
}
