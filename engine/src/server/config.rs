//! Server configuration: defaults, then a TOML file, then `WEIR_*` environment variables
//! (figment). Nested keys use `__`: `WEIR_DEFAULT_QUOTAS__MAX_JOBS=4`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use super::tenants::Quotas;
use crate::cluster::ClusterConfig;
use crate::cluster::objects::ObjectStoreConfig;
use crate::connectors::kafka::ConnectionConfig;
use crate::guest::{HostOptions, PoolingOptions};
use crate::plan::PlanLimits;

/// The top-level keys, also the `WEIR_*` variables read from the environment.
const KEYS: [&str; 25] = [
    "listen",
    "data_dir",
    "admin_token",
    "max_request_bytes",
    "default_quotas",
    "pooling",
    "max_instances",
    "max_instance_memory_mb",
    "plan_limits",
    "min_free_bytes",
    "request_header_timeout_ms",
    "request_body_timeout_ms",
    "max_connections",
    "max_connections_per_address",
    "response_write_timeout_ms",
    "max_requests_per_tenant",
    "max_request_body_bytes_per_tenant",
    "max_compiles_per_tenant",
    "max_compiles",
    "max_page_bytes",
    "kafka_connections",
    "cluster",
    "chunk_store",
    "chunk_store_prefix",
    "chunk_store_sweep",
];

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerConfigError {
    /// The config file given does not exist.
    #[error("the config file {} does not exist", .0.display())]
    NoFile(PathBuf),
    /// A value is missing, of the wrong type, or a key is unknown.
    #[error("invalid configuration: {0}")]
    Invalid(Box<figment::Error>),
    /// A value has the right type but not a valid value.
    #[error("invalid configuration: {0}")]
    Value(String),
    /// The `cluster` section does not hold together.
    #[error("invalid configuration: {0}")]
    Cluster(#[from] crate::cluster::ClusterConfigError),
}

/// How `weir serve` runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address to listen on (`127.0.0.1:8080`; port 0 picks a free one).
    pub listen: String,
    /// Where the store (`weir.redb`), uploaded modules and the compiled-module cache live.
    pub data_dir: PathBuf,
    /// The admin token: it manages tenants. Without one, the tenant routes are closed.
    pub admin_token: Option<String>,
    /// Largest request body accepted, in bytes (module uploads are also held to the
    /// tenant's `max_module_bytes`).
    pub max_request_bytes: usize,
    /// Quotas of tenants created without their own.
    pub default_quotas: Quotas,
    /// Instantiate operators from wasmtime's pooling allocator (fast, address space
    /// reserved up front: about 8 GiB of virtual memory per instance, none of it resident
    /// until used).
    pub pooling: bool,
    /// Most operator instances alive at once on this server (the pool's size); one more
    /// fails its job with an error naming this setting. Only with `pooling`.
    pub max_instances: u32,
    /// Largest linear memory of one operator instance, in MiB (at most 4096): the pool's
    /// slot size. A job's `memory_limit_mb` above it is lowered to it (not refused, so that
    /// a default limit always runs); the memory-limit error then names both. Only with
    /// `pooling`.
    pub max_instance_memory_mb: u64,
    /// What a submitted job spec may ask for (channels, capacities, batch and output sizes,
    /// restarts, checkpoints): a spec may lower these limits, never raise them.
    pub plan_limits: PlanLimits,
    /// Bytes kept free on the data directory's disk (at most a tenth of the disk): uploads,
    /// appends, checkpoints, savepoints and job creations that would leave less are refused
    /// (507 over the API; a checkpoint fails), so that the disk never fills under the store
    /// and reads, stops and cancels keep working.
    pub min_free_bytes: u64,
    /// Time a client has to send a request's head (request line and headers), in ms; also
    /// how long an idle keep-alive connection stays open. A slower client is disconnected.
    pub request_header_timeout_ms: u64,
    /// Time a client has to send a request's whole body once its head has arrived, in ms.
    /// A slower body is cut off: the request fails with 400 and the connection is closed.
    pub request_body_timeout_ms: u64,
    /// Most open client connections; a connection beyond them is closed at once.
    pub max_connections: usize,
    /// Most open connections from one client address (IP); one more from it is closed at
    /// once, so one address cannot take every connection.
    pub max_connections_per_address: usize,
    /// Time a response may stall on a client that does not read it, in ms: a write that
    /// makes no progress for this long closes the connection.
    pub response_write_timeout_ms: u64,
    /// Most requests of one tenant in progress at once; one more answers 429 at once, with
    /// `Retry-After`.
    pub max_requests_per_tenant: u32,
    /// Most bytes of request bodies one tenant may have in progress at once (each request
    /// counts its `Content-Length`, or `max_request_bytes` when it has none); one more answers
    /// 429 at once, with `Retry-After`. Never below `max_request_bytes`.
    pub max_request_body_bytes_per_tenant: usize,
    /// Most module compilations of one tenant at once; one more answers 429 at once.
    pub max_compiles_per_tenant: u32,
    /// Most module compilations at once on this server (default: the number of cores).
    pub max_compiles: u32,
    /// Largest page of stream records or of state, in bytes of JSON (a page holds at least
    /// one record, however large).
    pub max_page_bytes: usize,
    /// The Kafka clusters jobs may reach, by name: a tenant's job names one of those the
    /// admin granted it (a tenant's `kafka` grants) and can never give an address of its
    /// own. The names and grants are what tenants see; addresses and secrets never leave
    /// the server. In the environment: `WEIR_KAFKA_CONNECTIONS__<NAME>__BOOTSTRAP_SERVERS`
    /// (names are lower-cased there).
    pub kafka_connections: BTreeMap<String, ConnectionConfig>,
    /// Workers (`weir worker`): where they register and the secret they present
    /// (`WEIR_CLUSTER__LISTEN`, `WEIR_CLUSTER__TOKEN`). Without `listen`, none can.
    pub cluster: ClusterConfig,
    /// Where checkpoint and savepoint chunks and module bytes go: unset (the default), into
    /// `weir.redb` and the data directory; else an object store (`{ kind = "s3", bucket,
    /// endpoint, access_key_id, secret_access_key, ... }`, `{ kind = "local", dir }`), the
    /// one a cluster's workers share. The chunk and savepoint indexes, history, manifests and
    /// module records stay in `weir.redb`.
    pub chunk_store: Option<ObjectStoreConfig>,
    /// The path inside the bucket or directory under which this server's objects go.
    pub chunk_store_prefix: String,
    /// How the sweeps at start (and of running jobs' chunks) treat objects under the prefix
    /// that no record names: `grace_ms` (default one hour; objects younger are kept, as a
    /// `weir.redb` restored from a backup does not name what was written since) and
    /// `dry_run` (only log).
    pub chunk_store_sweep: weir_store::SweepPolicy,
}

/// The part of the controller's configuration a worker uses too ([`ServerConfig::load_shared`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SharedConfig {
    /// The controller's chunk store: when the worker's is the same, it puts its chunks and
    /// reads its restores there itself.
    pub chunk_store: Option<ObjectStoreConfig>,
    /// The path inside the bucket or directory.
    pub chunk_store_prefix: String,
    /// The free space kept on the worker's disk: host state that would leave less is refused.
    pub min_free_bytes: u64,
    /// `cluster.tls`: the worker's certificate, key and the cluster CA (its other `cluster`
    /// keys are the controller's).
    pub cluster: SharedCluster,
}

/// The part of `cluster` a worker uses.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SharedCluster {
    /// Mutual TLS to the controller and the other workers.
    #[serde(default)]
    pub tls: Option<crate::cluster::tls::TlsFiles>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: "127.0.0.1:8080".into(),
            data_dir: PathBuf::from("weir-data"),
            admin_token: None,
            max_request_bytes: 64 << 20,
            default_quotas: Quotas::default(),
            pooling: true,
            max_instances: 1000,
            max_instance_memory_mb: 4096,
            plan_limits: PlanLimits::default(),
            min_free_bytes: 256 << 20,
            request_header_timeout_ms: 10_000,
            request_body_timeout_ms: 60_000,
            max_connections: 4096,
            max_connections_per_address: 256,
            response_write_timeout_ms: 30_000,
            max_requests_per_tenant: 64,
            max_request_body_bytes_per_tenant: 256 << 20,
            max_compiles_per_tenant: 2,
            max_compiles: std::thread::available_parallelism().map_or(2, |n| n.get() as u32),
            max_page_bytes: 4 << 20,
            kafka_connections: BTreeMap::new(),
            cluster: ClusterConfig::default(),
            chunk_store: None,
            chunk_store_prefix: "weir".into(),
            chunk_store_sweep: weir_store::SweepPolicy::default(),
        }
    }
}

impl ServerConfig {
    /// The wasmtime engine's options: the module cache in `cache_dir`, and the instance
    /// pool when `pooling` is on.
    pub fn host_options(&self, cache_dir: PathBuf) -> HostOptions {
        let pooling = self.pooling.then(|| PoolingOptions {
            max_instances: self.max_instances,
            max_memory_bytes: usize::try_from(self.max_instance_memory_mb.saturating_mul(1 << 20))
                .unwrap_or(usize::MAX),
        });
        HostOptions { cache_dir: Some(cache_dir), pooling }
    }

    /// Defaults, merged with `file` (TOML) when given, then with `WEIR_*` variables.
    pub fn load(file: Option<&Path>) -> Result<Self, ServerConfigError> {
        let config: ServerConfig =
            Self::figment(file)?.extract().map_err(|e| ServerConfigError::Invalid(Box::new(e)))?;
        config.validate()?;
        Ok(config)
    }

    /// What a worker shares with its controller (`weir worker --config`), read from the
    /// same file and variables as [`load`](Self::load) reads them; the controller's other
    /// keys are left alone.
    pub fn load_shared(file: Option<&Path>) -> Result<SharedConfig, ServerConfigError> {
        Self::figment(file)?.extract().map_err(|e| ServerConfigError::Invalid(Box::new(e)))
    }

    fn figment(file: Option<&Path>) -> Result<Figment, ServerConfigError> {
        let mut figment = Figment::from(Serialized::defaults(ServerConfig::default()));
        if let Some(file) = file {
            if !file.exists() {
                return Err(ServerConfigError::NoFile(file.to_path_buf()));
            }
            figment = figment.merge(Toml::file(file));
        }
        // Other WEIR_* variables (the CLI's, the tests') are not configuration.
        let env = Env::prefixed("WEIR_").split("__").filter(|key| {
            let top = key.as_str().split('.').next().unwrap_or("");
            KEYS.iter().any(|k| top.eq_ignore_ascii_case(k))
        });
        Ok(figment.merge(env))
    }

    /// Checks what types alone do not: the Kafka connections' names and settings.
    pub fn validate(&self) -> Result<(), ServerConfigError> {
        use crate::connectors::kafka::config::check_connection_name;
        for (name, connection) in &self.kafka_connections {
            check_connection_name(name)
                .map_err(|e| ServerConfigError::Value(format!("kafka_connections: {e}")))?;
            connection
                .validate()
                .map_err(|e| ServerConfigError::Value(format!("kafka_connections.{name}: {e}")))?;
        }
        self.cluster.validate()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_connections_from_a_file_are_checked() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("weir.toml");
        std::fs::write(
            &file,
            "[kafka_connections.main]\nbootstrap_servers = [\"127.0.0.1:9092\"]\n\
             security_protocol = \"sasl_plaintext\"\nsasl_mechanism = \"PLAIN\"\n\
             sasl_username = \"u\"\nsasl_password = \"s3cret\"\n",
        )
        .expect("write");
        let config = ServerConfig::load(Some(&file)).expect("loads");
        let main = &config.kafka_connections["main"];
        assert_eq!(main.bootstrap_servers, ["127.0.0.1:9092"]);
        assert!(!format!("{config:?}").contains("s3cret"), "the password shows in Debug");
        std::fs::write(&file, "[kafka_connections.main]\nbootstrap_servers = [\"nope\"]\n").expect("write");
        let e = ServerConfig::load(Some(&file)).expect_err("refused").to_string();
        assert!(e.contains("kafka_connections.main: bootstrap server `nope` must be host:port"), "{e}");
        std::fs::write(&file, "[kafka_connections.main]\nbootstrap_servers = [\"h:1\"]\nextra = 1\n")
            .expect("write");
        let e = ServerConfig::load(Some(&file)).expect_err("refused").to_string();
        assert!(e.contains("extra"), "{e}");
    }

    #[test]
    fn a_chunk_store_is_read_from_the_file_and_its_secret_never_printed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("weir.toml");
        std::fs::write(
            &file,
            "chunk_store_prefix = \"prod\"\n[chunk_store]\nkind = \"s3\"\nbucket = \"chunks\"\n\
             endpoint = \"http://127.0.0.1:9000\"\naccess_key_id = \"id\"\nsecret_access_key = \"s3cret\"\n\
             allow_http = true\n[cluster]\nlisten = \"0.0.0.0:7070\"\ntoken = \"0123456789abcdef-secret\"\n",
        )
        .expect("write");
        let config = ServerConfig::load(Some(&file)).expect("loads");
        assert!(
            matches!(&config.chunk_store, Some(ObjectStoreConfig::S3 { bucket, .. }) if bucket == "chunks")
        );
        assert_eq!(config.chunk_store_prefix, "prod");
        let printed = format!("{config:?}");
        assert!(!printed.contains("s3cret") && !printed.contains("-secret"), "a secret shows in Debug");
        std::fs::write(&file, "[chunk_store]\nkind = \"ftp\"\n").expect("write");
        assert!(ServerConfig::load(Some(&file)).is_err(), "an unknown kind is refused");
    }

    #[test]
    fn a_worker_reads_the_controllers_chunk_store_and_leaves_the_rest() {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("weir.toml");
        // The controller's file: its cluster token comes from elsewhere, so `load` refuses it.
        std::fs::write(
            &file,
            "listen = \"0.0.0.0:8080\"\n[cluster]\nlisten = \"0.0.0.0:7070\"\n\
             [cluster.tls]\ncert = \"/tls/tls.crt\"\nkey = \"/tls/tls.key\"\nca = \"/tls/ca.crt\"\n\
             [chunk_store]\nkind = \"local\"\ndir = \"/var/lib/chunks\"\n",
        )
        .expect("write");
        assert!(ServerConfig::load(Some(&file)).is_err());
        let shared = ServerConfig::load_shared(Some(&file)).expect("loads");
        let (store, prefix) = (shared.chunk_store, shared.chunk_store_prefix);
        assert_eq!(shared.min_free_bytes, ServerConfig::default().min_free_bytes);
        let tls = shared.cluster.tls.expect("cluster.tls is read");
        assert_eq!((tls.cert.to_str(), tls.server_name.as_str()), (Some("/tls/tls.crt"), "weir-cluster"));
        assert_eq!(store, Some(ObjectStoreConfig::Local { dir: "/var/lib/chunks".into() }));
        assert_eq!(prefix, "weir");
        let other = ObjectStoreConfig::Local { dir: "/var/lib/other".into() };
        assert_ne!(store.and_then(|s| s.location(&prefix)), other.location(&prefix));
        assert_eq!(ObjectStoreConfig::Memory.location("weir"), None, "memory is never shared");
        let defaults = ServerConfig::load_shared(None).expect("defaults");
        assert_eq!((defaults.chunk_store, defaults.chunk_store_prefix), (None, "weir".into()));
    }
}
