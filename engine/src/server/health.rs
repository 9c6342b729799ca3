//! The store's health, and the watchdog that gets the server out of a storage failure by
//! itself. redb latches an I/O error (a full disk): from then on every call fails until the
//! database is closed and opened again. The watchdog probes the store; when it finds it
//! failed it stops every run, reopens the store (again and again while the disk is still
//! full; requests meanwhile answer 503), then resumes the jobs that were running from their
//! latest checkpoints, as a server restart would. Nothing acknowledged is lost: the file
//! reopens at its last durable commit, and every acknowledgement waits for one.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use serde::Serialize;
use weir_store::StoreError;

use super::Server;

/// How often the watchdog probes the store (a probe does no I/O).
const PROBE_EVERY: Duration = Duration::from_millis(250);
/// How long the watchdog waits between two attempts to reopen the store.
const RETRY_EVERY: Duration = Duration::from_millis(500);

/// Whether the store can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreState {
    /// It serves.
    Ok,
    /// It met an I/O error; the runs are stopped and it is being reopened.
    Reopening,
    /// Reopening it failed (the disk is still full?); the watchdog tries again.
    Failed,
}

impl StoreState {
    /// Its name in `/healthz`.
    pub fn as_str(self) -> &'static str {
        match self {
            StoreState::Ok => "ok",
            StoreState::Reopening => "reopening",
            StoreState::Failed => "failed",
        }
    }
}

/// The store's state as `/healthz` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoreStatus {
    /// Whether it serves.
    pub state: StoreState,
    /// The error that stopped it, then the last one of reopening it; none once it serves.
    pub error: Option<String>,
    /// Times it was reopened since the server started.
    pub reopens: u64,
    /// The error that made it reopen last (kept once it serves again).
    pub last_failure: Option<String>,
}

/// The store's state, shared by the watchdog and `/healthz`.
#[derive(Debug)]
pub struct StoreHealth {
    status: Mutex<StoreStatus>,
}

impl Default for StoreHealth {
    fn default() -> Self {
        let status = StoreStatus { state: StoreState::Ok, error: None, reopens: 0, last_failure: None };
        StoreHealth { status: Mutex::new(status) }
    }
}

impl StoreHealth {
    /// The state now.
    pub fn status(&self) -> StoreStatus {
        self.status.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, state: StoreState, error: Option<String>) {
        let mut s = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        if state == StoreState::Ok && s.state != StoreState::Ok {
            s.reopens += 1;
        }
        if state == StoreState::Reopening {
            s.last_failure.clone_from(&error);
        }
        s.state = state;
        s.error = error;
    }
}

/// Starts the watchdog of `server`'s store; it ends with the server.
pub(crate) fn spawn_watchdog(server: &Arc<Server>) {
    tokio::spawn(watch(Arc::downgrade(server)));
}

async fn watch(server: Weak<Server>) {
    loop {
        tokio::time::sleep(PROBE_EVERY).await;
        let Some(server) = server.upgrade() else { return };
        let store = server.store.clone();
        let probe = tokio::task::spawn_blocking(move || store.probe()).await;
        if let Ok(Err(error)) = probe
            && error.is_io_failure()
        {
            recover(&server, &error).await;
        }
    }
}

/// Stops every run, reopens the store until it opens, and resumes the jobs that were running.
async fn recover(server: &Server, error: &StoreError) {
    tracing::error!("the store failed ({error}); stopping every run and reopening it");
    server.store_health.set(StoreState::Reopening, Some(error.to_string()));
    // Runs end before the store goes: their statuses stay as stored (the failed store
    // refused any change), so the resume below finds them active.
    server.jobs.abort_all();
    loop {
        let store = server.store.clone();
        let reopened = match tokio::task::spawn_blocking(move || store.reopen()).await {
            // Not the file's path: /healthz shows this to anyone.
            Ok(Err(StoreError::Open { source, .. })) => Err(format!("cannot open the store file: {source}")),
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        match reopened {
            Ok(()) => break,
            Err(e) => {
                tracing::warn!("cannot reopen the store yet: {e}");
                server.store_health.set(StoreState::Failed, Some(e));
            }
        }
        tokio::time::sleep(RETRY_EVERY).await;
    }
    server.store_health.set(StoreState::Ok, None);
    match server.jobs.resume_all().await {
        Ok(resumed) => tracing::info!(jobs = resumed, "the store is reopened; the running jobs resumed"),
        Err(e) => tracing::error!("the store is reopened, but resuming the jobs failed: {e}"),
    }
}
