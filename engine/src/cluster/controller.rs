//! The controller's side: the cluster listener, one session per worker, and the registry of
//! the workers ([`Workers`]) that placement and the API read.
//!
//! A worker is *live* from its `Welcome` until its session ends: it said goodbye, the
//! connection closed or failed, nothing arrived for `heartbeat_timeout_ms`, or a new session
//! under its name replaced it. It is then *lost*, with the reason, and stays listed as lost
//! (the newest [`MAX_LOST`]) so an operator can see what happened. A worker that comes back
//! (a paused process resumed, a restarted pod) registers again and gets a new id: nothing of
//! its old session is ever taken from it again.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, broadcast, mpsc, watch};

use super::admission::{Place, Unauthenticated};
use super::placement::{Assignment, PlacementError, place};
use super::protocol::{
    AttemptId, Hello, PROTOCOL_VERSION, Session, ToController, ToWorker, spawn_writer, valid_name,
};
use super::quota::{HeldUntilEnded, Reservations};

/// Lost workers kept in the registry (the newest).
pub const MAX_LOST: usize = 64;

/// The controller's cluster settings (`cluster` in the server's configuration).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Where workers connect (`0.0.0.0:7070`; port 0 picks a free one). Unset (the
    /// default): no listener, every job runs in the server's process.
    pub listen: Option<String>,
    /// The secret a worker presents to register (at least 16 bytes; required with
    /// `listen`). Whoever holds it receives tenants' modules and data: give it only to
    /// workers (a Kubernetes secret).
    pub token: Option<String>,
    /// How often a worker sends a heartbeat, ms.
    pub heartbeat_interval_ms: u64,
    /// A worker from which nothing arrived for this long is lost, ms.
    pub heartbeat_timeout_ms: u64,
    /// Time a new connection has to register (its TLS handshake and its hello), ms.
    pub hello_timeout_ms: u64,
    /// Connections from one peer address (an IPv4 address, an IPv6 /64) that have not
    /// proved the token yet; one more is closed at once.
    pub max_unauthenticated_per_address: u32,
    /// Connections from anywhere that have not proved the token yet; one more is closed at
    /// once.
    pub max_unauthenticated: u32,
    /// Most live workers; one more is refused (it may try again later).
    pub max_workers: u32,
    /// Largest control frame, bytes (either way); a longer message crosses in parts.
    pub max_frame_bytes: usize,
    /// Where the controller's data plane listens (the subtasks that run in the controller
    /// exchange records with the workers' there); default: `listen`'s host, any port.
    pub data_listen: Option<String>,
    /// The data address workers use to reach the controller (default: the bound address;
    /// in Kubernetes the controller's Service name and the port).
    pub data_advertise: Option<String>,
    /// After a restart with jobs to resume, how long the controller waits for a worker to
    /// register before it resumes them in its own process.
    pub resume_wait_ms: u64,
    /// Mutual TLS on the sessions and the data plane ([`super::tls`]); unset: plain TCP,
    /// which the controller refuses off loopback unless `insecure_plaintext` is set.
    pub tls: Option<super::tls::TlsFiles>,
    /// Plain TCP off loopback (without `tls`): for a network that is private, or a mesh
    /// that adds mTLS. The cluster token, tenants' modules and data then cross it in clear.
    pub insecure_plaintext: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            listen: None,
            token: None,
            heartbeat_interval_ms: 1_000,
            heartbeat_timeout_ms: 10_000,
            hello_timeout_ms: 5_000,
            max_unauthenticated_per_address: 8,
            max_unauthenticated: 128,
            max_workers: 256,
            max_frame_bytes: 16 << 20,
            data_listen: None,
            data_advertise: None,
            tls: None,
            insecure_plaintext: false,
            resume_wait_ms: 10_000,
        }
    }
}

/// Without the token.
impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("listen", &self.listen)
            .field("token", &self.token.as_ref().map(|_| "<secret>"))
            .field("heartbeat_interval_ms", &self.heartbeat_interval_ms)
            .field("heartbeat_timeout_ms", &self.heartbeat_timeout_ms)
            .field("hello_timeout_ms", &self.hello_timeout_ms)
            .field("max_unauthenticated_per_address", &self.max_unauthenticated_per_address)
            .field("max_unauthenticated", &self.max_unauthenticated)
            .field("max_workers", &self.max_workers)
            .field("max_frame_bytes", &self.max_frame_bytes)
            .field("data_listen", &self.data_listen)
            .field("data_advertise", &self.data_advertise)
            .field("resume_wait_ms", &self.resume_wait_ms)
            .field("tls", &self.tls)
            .field("insecure_plaintext", &self.insecure_plaintext)
            .finish()
    }
}

impl ClusterConfig {
    /// Checks the values (the token is needed only with a listener).
    pub fn validate(&self) -> Result<(), ClusterConfigError> {
        if self.listen.is_some() && self.token.as_ref().is_none_or(|t| t.len() < 16) {
            return Err(ClusterConfigError::Token);
        }
        if self.heartbeat_interval_ms == 0 || self.heartbeat_interval_ms * 2 > self.heartbeat_timeout_ms {
            return Err(ClusterConfigError::Heartbeat {
                interval_ms: self.heartbeat_interval_ms,
                timeout_ms: self.heartbeat_timeout_ms,
            });
        }
        if self.hello_timeout_ms == 0
            || self.max_workers == 0
            || self.max_unauthenticated_per_address == 0
            || self.max_unauthenticated < self.max_unauthenticated_per_address
            || self.max_frame_bytes < 4096
        {
            return Err(ClusterConfigError::Bounds);
        }
        Ok(())
    }
}

/// Why the `cluster` settings are not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterConfigError {
    /// A listener without a token.
    #[error("cluster.listen needs cluster.token, a secret of at least 16 bytes")]
    Token,
    /// Heartbeats that cannot be told from a lost worker.
    #[error(
        "cluster.heartbeat_timeout_ms ({timeout_ms}) must be at least twice cluster.heartbeat_interval_ms ({interval_ms}), which is above 0"
    )]
    Heartbeat {
        /// `cluster.heartbeat_interval_ms`.
        interval_ms: u64,
        /// `cluster.heartbeat_timeout_ms`.
        timeout_ms: u64,
    },
    /// A bound at zero or too small.
    #[error(
        "cluster.hello_timeout_ms, cluster.max_workers and cluster.max_unauthenticated_per_address must be above 0, cluster.max_unauthenticated at least cluster.max_unauthenticated_per_address and cluster.max_frame_bytes at least 4096"
    )]
    Bounds,
}

/// A worker as the registry knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WorkerInfo {
    /// Its id (one per session).
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Where its session comes from.
    pub peer: String,
    /// Its data address.
    pub data_addr: String,
    /// Subtasks it runs at once.
    pub slots: u32,
    /// Its build.
    pub version: String,
    /// When it registered (Unix ms).
    pub registered_ms: u64,
    /// Milliseconds since its last message (for a lost worker: at the moment it was lost).
    pub heartbeat_age_ms: u64,
    /// Slots reserved for jobs' attempts, by job.
    pub reserved: BTreeMap<String, u32>,
    /// Why it is lost; `None` while it is live.
    pub lost: Option<String>,
}

/// A change of the set of live workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerEvent {
    /// A worker registered.
    Joined(u64),
    /// A worker is lost, and why.
    Lost(u64, String),
}

struct Live {
    info: WorkerInfo,
    last_seen: Instant,
    /// Tells its session to end (it was replaced).
    close: watch::Sender<Option<String>>,
    /// Messages to the worker, in order (its session's writer takes them).
    outbox: mpsc::Sender<ToWorker>,
}

/// Messages to a worker wait here while the session's writer sends earlier ones.
const OUTBOX: usize = 1024;

/// Messages about one attempt of a job, from the workers that run its parts: (worker id,
/// message). Only the current attempt of a job gets them; anything else is dropped.
pub struct AttemptInbox {
    workers: Workers,
    attempt: AttemptId,
    rx: mpsc::UnboundedReceiver<(u64, ToController)>,
}

impl std::fmt::Debug for AttemptInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttemptInbox").field("attempt", &self.attempt).finish_non_exhaustive()
    }
}

impl AttemptInbox {
    /// The next message (never `None` while the inbox lives: the registry keeps a sender).
    pub async fn recv(&mut self) -> Option<(u64, ToController)> {
        self.rx.recv().await
    }

    /// A message that arrived already, if any.
    pub fn try_recv(&mut self) -> Option<(u64, ToController)> {
        self.rx.try_recv().ok()
    }
}

impl Drop for AttemptInbox {
    fn drop(&mut self) {
        let mut attempts = self.workers.attempts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if attempts.get(&self.attempt.job).is_some_and(|(a, _)| *a == self.attempt.attempt) {
            attempts.remove(&self.attempt.job);
        }
    }
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    live: BTreeMap<u64, Live>,
    lost: VecDeque<WorkerInfo>,
}

impl Registry {
    fn free_slots(&self) -> BTreeMap<u64, u32> {
        self.live
            .iter()
            .map(|(&id, l)| (id, l.info.slots.saturating_sub(l.info.reserved.values().sum())))
            .collect()
    }
}

/// The registry of workers (cheap to clone; shared by the sessions, placement and the API).
#[derive(Clone)]
pub struct Workers {
    config: Arc<ClusterConfig>,
    token_hash: Option<[u8; 32]>,
    registry: Arc<Mutex<Registry>>,
    events: broadcast::Sender<WorkerEvent>,
    /// The current attempt of each job that runs on workers, and where its messages go.
    attempts: Arc<Mutex<AttemptRoutes>>,
    /// Reservations of ended attempts kept until their parts on the workers ended.
    pub(super) held: HeldUntilEnded,
}

type AttemptRoutes = std::collections::HashMap<String, (u64, mpsc::UnboundedSender<(u64, ToController)>)>;

impl std::fmt::Debug for Workers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workers").field("live", &self.lock().live.len()).finish_non_exhaustive()
    }
}

impl Workers {
    /// An empty registry under `config`.
    pub fn new(config: ClusterConfig) -> Self {
        let token_hash = config.token.as_deref().map(|t| Sha256::digest(t.as_bytes()).into());
        Workers {
            config: Arc::new(config),
            token_hash,
            registry: Arc::new(Mutex::new(Registry { next_id: 1, ..Registry::default() })),
            events: broadcast::channel(256).0,
            attempts: Arc::default(),
            held: HeldUntilEnded::default(),
        }
    }

    /// The cluster's configuration.
    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// Whether any worker is live (jobs then run on workers).
    pub fn any_live(&self) -> bool {
        !self.lock().live.is_empty()
    }

    /// Makes `attempt` the job's current attempt: messages about it come to the returned
    /// inbox, and messages about any other attempt of the job are dropped from now on (W4).
    pub fn attach(&self, attempt: AttemptId) -> AttemptInbox {
        let (tx, rx) = mpsc::unbounded_channel();
        self.attempts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(attempt.job.clone(), (attempt.attempt, tx));
        AttemptInbox { workers: self.clone(), attempt, rx }
    }

    /// Sends `message` to live worker `worker`; `false` if it is not live (or its session
    /// ended meanwhile).
    pub async fn send(&self, worker: u64, message: ToWorker) -> bool {
        let outbox = self.lock().live.get(&worker).map(|l| l.outbox.clone());
        match outbox {
            Some(outbox) => outbox.send(message).await.is_ok(),
            None => false,
        }
    }

    /// A live worker's data address.
    pub fn data_addr(&self, worker: u64) -> Option<String> {
        self.lock().live.get(&worker).map(|l| l.info.data_addr.clone())
    }

    /// Whether worker `worker` is live.
    pub fn is_live(&self, worker: u64) -> bool {
        self.lock().live.contains_key(&worker)
    }

    /// Hands a job-scoped message to its attempt's inbox, or drops it (fencing).
    fn route(&self, worker: u64, attempt: &AttemptId, message: ToController) {
        if matches!(message, ToController::Ended { .. }) {
            self.held.ended(worker, attempt);
        }
        let attempts = self.attempts.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match attempts.get(&attempt.job) {
            Some((current, tx)) if *current == attempt.attempt => {
                let _ = tx.send((worker, message));
            }
            _ => {
                tracing::debug!(worker, job = %attempt.job, attempt = attempt.attempt, "message of an attempt that is not current dropped")
            }
        }
    }

    /// Keeps `reservations` until worker `worker`'s part of `attempt` ended or the worker is
    /// lost (dropped now if it is not live).
    pub(super) fn hold_until_ended(&self, worker: u64, attempt: &AttemptId, reservations: Reservations) {
        let registry = self.lock();
        if registry.live.contains_key(&worker) {
            self.held.hold(worker, attempt, reservations);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live workers (by id), then the lost ones (newest first).
    pub fn list(&self) -> Vec<WorkerInfo> {
        let registry = self.lock();
        let now = Instant::now();
        let mut out: Vec<WorkerInfo> = registry
            .live
            .values()
            .map(|l| WorkerInfo {
                heartbeat_age_ms: now.duration_since(l.last_seen).as_millis() as u64,
                ..l.info.clone()
            })
            .collect();
        out.extend(registry.lost.iter().rev().cloned());
        out
    }

    /// Joins and losses from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<WorkerEvent> {
        self.events.subscribe()
    }

    /// Checks that `hello` speaks this protocol and holds the cluster token, or says why
    /// not (for good: retrying does not help).
    fn authenticate(&self, hello: &Hello) -> Result<(), ToWorker> {
        let refuse = |reason: String| ToWorker::Refused { reason, retry: false };
        if hello.protocol != PROTOCOL_VERSION {
            return Err(refuse(format!(
                "the controller speaks protocol {PROTOCOL_VERSION}, the worker {}",
                hello.protocol
            )));
        }
        let presented: [u8; 32] = Sha256::digest(hello.token.as_bytes()).into();
        // W2: only holders of the cluster token register.
        if self.token_hash != Some(presented) {
            return Err(refuse("the cluster token is not valid".into()));
        }
        Ok(())
    }

    /// Registers `hello` from `peer`, or says why not.
    fn register(
        &self,
        hello: &Hello,
        peer: SocketAddr,
        outbox: mpsc::Sender<ToWorker>,
    ) -> Result<(u64, watch::Receiver<Option<String>>), ToWorker> {
        let refuse = |reason: String, retry: bool| ToWorker::Refused { reason, retry };
        self.authenticate(hello)?;
        if !valid_name(&hello.name) {
            return Err(refuse("a worker name is 1 to 64 bytes of [A-Za-z0-9._-]".into(), false));
        }
        if hello.data_addr.is_empty() || hello.data_addr.len() > 256 || !hello.data_addr.contains(':') {
            return Err(refuse("the data address must be host:port (at most 256 bytes)".into(), false));
        }
        if !(1..=1024).contains(&hello.slots) {
            return Err(refuse(format!("a worker has 1 to 1024 slots, not {}", hello.slots), false));
        }
        let mut registry = self.lock();
        // The same name again: the new session replaces the old one.
        let replaced: Option<u64> =
            registry.live.values().find(|l| l.info.name == hello.name).map(|l| l.info.id);
        if let Some(old) = replaced {
            self.lose(&mut registry, old, "replaced by a new session of the same worker".into());
        }
        if registry.live.len() >= self.config.max_workers as usize {
            return Err(refuse(
                format!(
                    "the cluster has its maximum of {} workers (cluster.max_workers)",
                    self.config.max_workers
                ),
                true,
            ));
        }
        // W1: ids are never reused; a worker that comes back gets a new one.
        let id = registry.next_id;
        registry.next_id += 1;
        let (close, closed) = watch::channel(None);
        let info = WorkerInfo {
            id,
            name: hello.name.clone(),
            peer: peer.to_string(),
            data_addr: hello.data_addr.clone(),
            slots: hello.slots,
            version: hello.version.chars().take(64).collect(),
            registered_ms: crate::clock::unix_ms(),
            heartbeat_age_ms: 0,
            reserved: BTreeMap::new(),
            lost: None,
        };
        registry.live.insert(id, Live { info, last_seen: Instant::now(), close, outbox });
        let _ = self.events.send(WorkerEvent::Joined(id));
        Ok((id, closed))
    }

    /// Free slots of each live worker: its slots less those reserved.
    pub fn free_slots(&self) -> BTreeMap<u64, u32> {
        self.lock().free_slots()
    }

    /// Places an attempt of `job` whose nodes have `parallelisms` on the live workers
    /// ([`place`]) and reserves its slots. The job's earlier reservation is given up first,
    /// either way: a new attempt follows one that ended, whose slots it may take. Refused,
    /// reserving nothing, when the workers lack room.
    pub fn reserve(&self, job: &str, parallelisms: &[u32]) -> Result<Assignment, PlacementError> {
        let mut registry = self.lock();
        for live in registry.live.values_mut() {
            live.info.reserved.remove(job);
        }
        let assignment = place(parallelisms, &registry.free_slots())?;
        let widest = assignment.iter().max_by_key(|p| p.len()).cloned().unwrap_or_default();
        for worker in widest {
            if let Some(live) = registry.live.get_mut(&worker) {
                *live.info.reserved.entry(job.to_string()).or_default() += 1;
            }
        }
        Ok(assignment)
    }

    /// Frees the slots reserved for `job`.
    pub fn release(&self, job: &str) {
        for live in self.lock().live.values_mut() {
            live.info.reserved.remove(job);
        }
    }

    fn seen(&self, id: u64) {
        if let Some(live) = self.lock().live.get_mut(&id) {
            live.last_seen = Instant::now();
        }
    }

    /// Marks `id` lost (if it is live) with `reason`.
    fn lost(&self, id: u64, reason: String) {
        let mut registry = self.lock();
        self.lose(&mut registry, id, reason);
    }

    fn lose(&self, registry: &mut Registry, id: u64, reason: String) {
        let Some(live) = registry.live.remove(&id) else { return };
        self.held.lost(id);
        tracing::warn!(worker = id, name = %live.info.name, %reason, "worker lost");
        let _ = live.close.send(Some(reason.clone()));
        let info = WorkerInfo {
            heartbeat_age_ms: live.last_seen.elapsed().as_millis() as u64,
            lost: Some(reason.clone()),
            ..live.info
        };
        registry.lost.push_back(info);
        while registry.lost.len() > MAX_LOST {
            registry.lost.pop_front();
        }
        let _ = self.events.send(WorkerEvent::Lost(id, reason));
    }
}

/// The largest frame before the peer proved the cluster token: a hello is a few hundred
/// bytes, and every unauthenticated connection may hold one frame in memory.
const HELLO_FRAME_BYTES: usize = 64 << 10;

/// Accepts worker sessions on `listener` over `transport` for as long as the task runs.
/// Until its hello proves the token a connection holds only a place of the budgets for
/// unauthenticated connections ([`Unauthenticated`]), at most `hello_timeout_ms`; one past
/// them is closed at once. Then it takes a session permit: sessions beyond twice
/// `max_workers` are refused (retry later).
pub async fn accept(listener: TcpListener, workers: Workers, transport: super::tls::Transport) {
    let config = &workers.config;
    let sessions = Arc::new(Semaphore::new(config.max_workers as usize * 2));
    let unauthenticated = Unauthenticated::new(
        config.max_unauthenticated_per_address as usize,
        config.max_unauthenticated as usize,
    );
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: try again shortly.
                tracing::warn!(error = %e, "cluster listener: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let place = match unauthenticated.take(peer.ip()) {
            Ok(place) => place,
            Err(full) => {
                tracing::warn!(%peer, "cluster listener: {full} already, connection closed");
                continue;
            }
        };
        let (workers, transport, sessions) = (workers.clone(), transport.clone(), sessions.clone());
        tokio::spawn(async move {
            let deadline =
                tokio::time::Instant::now() + Duration::from_millis(workers.config.hello_timeout_ms);
            match tokio::time::timeout_at(deadline, transport.accept(stream)).await {
                Ok(Ok(stream)) => {
                    session(stream, peer, &workers, Unproved { place, deadline, sessions }).await
                }
                Ok(Err(e)) => tracing::warn!(%peer, error = %e, "cluster session: refused before its hello"),
                Err(_) => tracing::warn!(%peer, "cluster session: no TLS handshake in time"),
            }
        });
    }
}

/// What a connection holds until its hello proved the token.
struct Unproved {
    /// Its place in the budgets for unauthenticated connections.
    place: Place,
    /// When its hello must have arrived.
    deadline: tokio::time::Instant,
    /// The session permits, one to take once the token is proved.
    sessions: Arc<Semaphore>,
}

/// One worker's session, from its hello to its end.
async fn session(stream: super::tls::Stream, peer: SocketAddr, workers: &Workers, unproved: Unproved) {
    let config = &workers.config;
    let mut session = Session::new(stream, HELLO_FRAME_BYTES.min(config.max_frame_bytes));
    let hello = tokio::time::timeout_at(unproved.deadline, session.recv()).await;
    let hello = match hello {
        Ok(Ok(Some(ToController::Hello(hello)))) => hello,
        Ok(Ok(Some(other))) => {
            tracing::warn!(%peer, ?other, "cluster session: the first message is not a hello");
            return;
        }
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::warn!(%peer, error = %e, "cluster session: a bad hello");
            return;
        }
        Err(_) => {
            tracing::warn!(%peer, "cluster session: no hello in time");
            return;
        }
    };
    if let Err(refusal) = workers.authenticate(&hello) {
        tracing::warn!(%peer, name = %hello.name, ?refusal, "worker refused");
        let _ = session.send(&refusal).await;
        return;
    }
    // The token is proved: the connection leaves the unauthenticated budgets for a session
    // permit, held until the session ends.
    let Unproved { place, sessions, .. } = unproved;
    drop(place);
    let Ok(_permit) = sessions.try_acquire_owned() else {
        tracing::warn!(%peer, name = %hello.name, "cluster session: too many sessions, refused");
        let refusal = ToWorker::Refused {
            reason: format!(
                "the controller holds {} sessions (twice cluster.max_workers)",
                u64::from(config.max_workers) * 2
            ),
            retry: true,
        };
        let _ = session.send(&refusal).await;
        return;
    };
    let mut session = session.with_max_frame(config.max_frame_bytes);
    let (outbox, outgoing) = mpsc::channel::<ToWorker>(OUTBOX);
    let (id, mut closed) = match workers.register(&hello, peer, outbox.clone()) {
        Ok(registered) => registered,
        Err(refusal) => {
            tracing::warn!(%peer, name = %hello.name, ?refusal, "worker refused");
            let _ = session.send(&refusal).await;
            return;
        }
    };
    tracing::info!(worker = id, name = %hello.name, %peer, data = %hello.data_addr, slots = hello.slots, "worker registered");
    let welcome = ToWorker::Welcome {
        worker: id,
        heartbeat_interval_ms: config.heartbeat_interval_ms,
        heartbeat_timeout_ms: config.heartbeat_timeout_ms,
    };
    if let Err(e) = session.send(&welcome).await {
        workers.lost(id, format!("the session failed: {e}"));
        return;
    }
    // The worker holds the token: its messages may be long (snapshots, in parts).
    session.set_max_message(MAX_MESSAGE_BYTES);
    let (writer, mut reader) = session.split();
    let (writing, mut write_failed) = spawn_writer(writer, outgoing);
    let timeout = Duration::from_millis(config.heartbeat_timeout_ms);
    let reason = loop {
        tokio::select! {
            next = tokio::time::timeout(timeout, reader.recv::<ToController>()) => {
                let message = match next {
                    Err(_) => break format!("no heartbeat for {} ms", config.heartbeat_timeout_ms),
                    Ok(Ok(None)) => break "the session closed".to_string(),
                    Ok(Err(e)) => break format!("the session failed: {e}"),
                    Ok(Ok(Some(message))) => message,
                };
                workers.seen(id);
                match message {
                    ToController::Heartbeat { seq } => {
                        if outbox.send(ToWorker::HeartbeatAck { seq }).await.is_err() {
                            break "the session's writer ended".to_string();
                        }
                    }
                    ToController::Goodbye { reason } => {
                        break format!("left: {}", reason.chars().take(256).collect::<String>());
                    }
                    ToController::Hello(_) => break "a second hello in one session".to_string(),
                    ToController::Deployed { ref attempt, .. }
                    | ToController::Coordinator { ref attempt, .. }
                    | ToController::Ended { ref attempt, .. }
                    | ToController::Metrics { ref attempt, .. }
                    | ToController::Logs { ref attempt, .. }
                    | ToController::Storage { ref attempt, .. } => workers.route(id, &attempt.clone(), message),
                }
            }
            failed = &mut write_failed => {
                break failed.unwrap_or_else(|_| "the session's writer ended".to_string());
            }
            // Replaced by a new session of the same name: already lost.
            _ = closed.changed() => {
                writing.abort();
                return;
            }
        }
    };
    writing.abort();
    workers.lost(id, reason);
}

/// The longest message a registered worker may send (in parts): a subtask's snapshot.
pub const MAX_MESSAGE_BYTES: usize = 4 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(name: &str, token: &str) -> Hello {
        Hello {
            protocol: PROTOCOL_VERSION,
            token: token.into(),
            name: name.into(),
            data_addr: "127.0.0.1:9".into(),
            slots: 2,
            version: "test".into(),
        }
    }

    const TOKEN: &str = "0123456789abcdef";

    fn outbox() -> mpsc::Sender<ToWorker> {
        mpsc::channel(1).0
    }

    fn workers(max: u32) -> Workers {
        Workers::new(ClusterConfig {
            listen: Some("127.0.0.1:0".into()),
            token: Some(TOKEN.into()),
            max_workers: max,
            ..ClusterConfig::default()
        })
    }

    #[test]
    fn registration_is_checked_and_a_name_registered_again_replaces_its_old_session() {
        let workers = workers(2);
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let refused = |h: &Hello| match workers.register(h, peer, outbox()) {
            Err(ToWorker::Refused { reason, retry }) => (reason, retry),
            other => panic!("not refused: {other:?}"),
        };
        assert!(refused(&hello("a", "wrong-token-wrong")).0.contains("token"));
        assert!(refused(&Hello { protocol: 9, ..hello("a", TOKEN) }).0.contains("protocol"));
        assert!(refused(&hello("a b", TOKEN)).0.contains("name"));
        assert!(refused(&Hello { slots: 0, ..hello("a", TOKEN) }).0.contains("slots"));
        let mut events = workers.subscribe();
        let (a, mut a_closed) = workers.register(&hello("a", TOKEN), peer, outbox()).unwrap();
        let (b, _) = workers.register(&hello("b", TOKEN), peer, outbox()).unwrap();
        let (reason, retry) = refused(&hello("c", TOKEN));
        assert!(reason.contains("maximum of 2") && retry, "{reason}");
        // `a` again: the old session is told to close and listed as lost.
        let (a2, _) = workers.register(&hello("a", TOKEN), peer, outbox()).unwrap();
        assert!(a2 > b);
        // The sender is gone with the old entry; its last word stays readable.
        assert!(a_closed.borrow_and_update().as_deref().unwrap().contains("replaced"));
        let list = workers.list();
        let ids: Vec<(u64, bool)> = list.iter().map(|w| (w.id, w.lost.is_none())).collect();
        assert_eq!(ids, vec![(b, true), (a2, true), (a, false)]);
        let seen: Vec<WorkerEvent> = std::iter::from_fn(|| events.try_recv().ok()).collect();
        assert_eq!(seen[..2], [WorkerEvent::Joined(a), WorkerEvent::Joined(b)]);
        assert!(matches!(&seen[2], WorkerEvent::Lost(id, _) if *id == a));
        assert_eq!(seen[3], WorkerEvent::Joined(a2));
    }

    #[test]
    fn attempts_reserve_slots_on_live_workers_and_release_them() {
        let workers = workers(4);
        let peer: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let (a, _) = workers.register(&hello("a", TOKEN), peer, outbox()).unwrap();
        let (b, _) = workers.register(&hello("b", TOKEN), peer, outbox()).unwrap();
        // Two slots each (`hello`).
        let placed = workers.reserve("job-1", &[3, 3]).unwrap();
        assert_eq!(placed, vec![vec![a, b, a], vec![a, b, a]]);
        assert_eq!(workers.free_slots(), BTreeMap::from([(a, 0), (b, 1)]));
        let refused = workers.reserve("job-2", &[2]).unwrap_err();
        assert_eq!(refused, PlacementError::NotEnoughSlots { needed: 2, free: 1 });
        assert_eq!(workers.free_slots()[&b], 1, "a refusal reserves nothing");
        // A restart's attempt takes the job's own slots again.
        workers.reserve("job-1", &[4]).unwrap();
        assert_eq!(workers.free_slots(), BTreeMap::from([(a, 0), (b, 0)]));
        let listed = workers.list();
        assert_eq!(listed[0].reserved, BTreeMap::from([("job-1".to_string(), 2)]));
        workers.release("job-1");
        assert_eq!(workers.free_slots(), BTreeMap::from([(a, 2), (b, 2)]));
        // A lost worker's slots are gone with it.
        workers.reserve("job-3", &[2]).unwrap();
        workers.lost(a, "test".into());
        assert_eq!(workers.free_slots(), BTreeMap::from([(b, 1)]));
    }

    #[test]
    fn the_config_needs_a_token_and_sane_timeouts() {
        let mut config = ClusterConfig { listen: Some("0.0.0.0:0".into()), ..ClusterConfig::default() };
        assert!(config.validate().unwrap_err().to_string().contains("token"));
        config.token = Some(TOKEN.into());
        config.validate().unwrap();
        config.heartbeat_timeout_ms = config.heartbeat_interval_ms;
        assert!(config.validate().unwrap_err().to_string().contains("twice"));
        config.heartbeat_timeout_ms = config.heartbeat_interval_ms * 2;
        config.max_unauthenticated_per_address = 0;
        assert!(config.validate().unwrap_err().to_string().contains("max_unauthenticated_per_address"));
        config.max_unauthenticated_per_address = 8;
        config.max_unauthenticated = 4;
        assert!(config.validate().unwrap_err().to_string().contains("max_unauthenticated at least"));
        config.max_unauthenticated = 8;
        config.validate().unwrap();
        ClusterConfig::default().validate().unwrap();
    }
}
