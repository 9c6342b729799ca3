//! The worker's side (`weir worker`): register with the controller, keep the session alive
//! with heartbeats, run the parts of attempts the controller deploys (`executor`), and
//! register again (under a new id) whenever the session ends, until the controller refuses
//! the worker for good or the worker is asked to stop.

use std::time::Duration;

use tokio::sync::mpsc;

use super::controller::MAX_MESSAGE_BYTES;
use super::executor::{Executor, ExecutorConfig};
use super::protocol::{Hello, PROTOCOL_VERSION, Session, ToController, ToWorker, spawn_writer, valid_name};

/// Largest message the worker accepts from the controller, bytes.
const MAX_FRAME_BYTES: usize = 64 << 20;
/// Messages to the controller wait here while the session's writer sends earlier ones.
const OUTBOX: usize = 1024;

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
/// Waits between attempts to reach the controller: doubling from the first to the last.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The controller's cluster address (`host:port`).
    pub controller: String,
    /// The cluster token.
    pub token: String,
    /// The worker's name (unique in the cluster: a pod or host name).
    pub name: String,
    /// Where other workers reach this one's data plane.
    pub data_addr: String,
    /// Subtasks it runs at once.
    pub slots: u32,
    /// What it runs the subtasks it is given with.
    pub executor: ExecutorConfig,
    /// Plain TCP or mutual TLS to the controller (the data plane's is in `executor.data`).
    pub transport: super::tls::Transport,
}

/// Something the worker's sessions report (the CLI prints them; tests wait on them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerStatus {
    /// Registered under this id.
    Registered(u64),
    /// The session ended, and why; the worker registers again.
    SessionEnded(String),
}

/// Why a worker stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The options are not valid.
    #[error("{0}")]
    Options(String),
    /// The controller refused the worker and trying again would not help.
    #[error("the controller refused the worker: {0}")]
    Refused(String),
}

/// Runs the worker's sessions until `stop` resolves (then it says goodbye) or the controller
/// refuses it for good. `report` hears every registration and every session's end.
pub async fn run(
    options: WorkerOptions,
    mut report: impl FnMut(WorkerStatus),
    stop: impl Future<Output = ()>,
) -> Result<(), WorkerError> {
    if !valid_name(&options.name) {
        return Err(WorkerError::Options(format!(
            "the worker name `{}` is not 1 to 64 bytes of [A-Za-z0-9._-]",
            options.name
        )));
    }
    let mut stop = std::pin::pin!(stop);
    let mut wait = BACKOFF.0;
    loop {
        match one_session(&options, &mut report, stop.as_mut()).await {
            Ended::Stopped => return Ok(()),
            Ended::Refused(reason) => return Err(WorkerError::Refused(reason)),
            Ended::Registered(reason) => {
                report(WorkerStatus::SessionEnded(reason));
                wait = BACKOFF.0;
            }
            Ended::NotRegistered(reason) => {
                tracing::warn!(controller = %options.controller, %reason, "cannot register; trying again");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = &mut stop => return Ok(()),
        }
        wait = (wait * 2).min(BACKOFF.1);
    }
}

enum Ended {
    /// Asked to stop (a registered session said goodbye).
    Stopped,
    /// Refused for good.
    Refused(String),
    /// A session that registered ended, and why.
    Registered(String),
    /// No session (the controller is unreachable, full, or the hello failed).
    NotRegistered(String),
}

async fn one_session(
    options: &WorkerOptions,
    report: &mut impl FnMut(WorkerStatus),
    mut stop: std::pin::Pin<&mut impl Future<Output = ()>>,
) -> Ended {
    let stream = tokio::select! {
        connected = options.transport.connect(&options.controller) => match connected {
            Ok(stream) => stream,
            Err(e) => return Ended::NotRegistered(format!("cannot connect to {}: {e}", options.controller)),
        },
        () = stop.as_mut() => return Ended::Stopped,
    };
    let mut session = Session::new(stream, MAX_FRAME_BYTES);
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        token: options.token.clone(),
        name: options.name.clone(),
        data_addr: options.data_addr.clone(),
        slots: options.slots,
        version: env!("CARGO_PKG_VERSION").into(),
    };
    if let Err(e) = session.send(&ToController::Hello(hello)).await {
        return Ended::NotRegistered(format!("the hello failed: {e}"));
    }
    let welcome = tokio::select! {
        welcome = tokio::time::timeout(Duration::from_secs(30), session.recv()) => welcome,
        () = stop.as_mut() => return Ended::Stopped,
    };
    let (interval, timeout) = match welcome {
        Ok(Ok(Some(ToWorker::Welcome { worker, heartbeat_interval_ms, heartbeat_timeout_ms }))) => {
            tracing::info!(worker, controller = %options.controller, "registered");
            report(WorkerStatus::Registered(worker));
            (
                Duration::from_millis(heartbeat_interval_ms.max(1)),
                Duration::from_millis(heartbeat_timeout_ms.max(1)),
            )
        }
        Ok(Ok(Some(ToWorker::Refused { reason, retry: false }))) => return Ended::Refused(reason),
        Ok(Ok(Some(ToWorker::Refused { reason, retry: true }))) => return Ended::NotRegistered(reason),
        Ok(Ok(Some(other))) => return Ended::NotRegistered(format!("an answer out of turn: {other:?}")),
        Ok(Ok(None)) => return Ended::NotRegistered("the controller closed the session".into()),
        Ok(Err(e)) => return Ended::NotRegistered(format!("the session failed: {e}")),
        Err(_) => return Ended::NotRegistered("no answer to the hello in 30 s".into()),
    };
    // The controller holds the token too: its messages may be long (modules, restores).
    session.set_max_message(MAX_MESSAGE_BYTES);
    let (writer, mut reader) = session.split();
    let (outbox, outgoing) = mpsc::channel::<ToController>(OUTBOX);
    let (writing, mut write_failed) = spawn_writer(writer, outgoing);
    let mut writing = AbortOnDrop(writing);
    // The parts of attempts deployed in this session end with it.
    let mut executor = Executor::new(options.executor.clone(), outbox.clone());
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seq = 0u64;
    // The controller is taken for gone when nothing arrives for `timeout`.
    let mut deadline = tokio::time::Instant::now() + timeout;
    loop {
        tokio::select! {
            _ = ticks.tick() => {
                seq += 1;
                if outbox.send(ToController::Heartbeat { seq }).await.is_err() {
                    return Ended::Registered("the session's writer ended".into());
                }
            }
            next = reader.recv::<ToWorker>() => match next {
                Ok(Some(message)) => {
                    deadline = tokio::time::Instant::now() + timeout;
                    match message {
                        ToWorker::HeartbeatAck { .. } => {}
                        ToWorker::Welcome { .. } | ToWorker::Refused { .. } => {
                            return Ended::Registered(format!("a message out of turn: {message:?}"));
                        }
                        other => executor.handle(other),
                    }
                }
                Ok(None) => return Ended::Registered("the controller closed the session".into()),
                Err(e) => return Ended::Registered(format!("the session failed: {e}")),
            },
            failed = &mut write_failed => {
                return Ended::Registered(failed.unwrap_or_else(|_| "the session's writer ended".into()));
            }
            () = tokio::time::sleep_until(deadline) => {
                return Ended::Registered(format!("no answer from the controller for {} ms", timeout.as_millis()));
            }
            () = stop.as_mut() => {
                drop(executor);
                let bye = ToController::Goodbye { reason: "the worker was asked to stop".into() };
                let _ = tokio::time::timeout(Duration::from_secs(2), outbox.send(bye)).await;
                // The writer ends once every sender is gone: the goodbye is on the wire.
                drop(outbox);
                let _ = tokio::time::timeout(Duration::from_secs(2), &mut writing.0).await;
                return Ended::Stopped;
            }
        }
    }
}
