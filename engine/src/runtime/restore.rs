//! Restoring a guest from its chains: the store is read on the blocking pool while the
//! guest restores the chunk before.

use std::ops::ControlFlow;
use std::sync::Arc;

use tokio::sync::mpsc;
use weir_store::CheckpointStorage;

use super::error::TaskError;
use super::scopes::RestoreChunker;
use crate::guest::OperatorInstance;
use crate::guest::bindings::StateDelta;
use crate::local_state::{LocalRestorer, LocalStateError, LocalStore, is_host_state};

/// Restores `instance` from `chains` (the live entries of each, in chunks of at most
/// `max_bytes`), written by a module of state schema version `state_version`. Entries of
/// host keyed state (`@host/...`) go into a fresh local store instead, which the instance
/// gets when the restore is done.
///
/// The store is read on the blocking pool ([`CheckpointStorage::visit_chains`], no copy of
/// the state, no sort) while the guest restores the chunk before. Memory: the store's
/// reading of one chain, and three chunks that go round (one filled, one queued, one in the
/// guest; the guest hands each back to be filled again).
pub async fn restore_chains(
    instance: &mut OperatorInstance,
    state_version: u32,
    storage: Arc<dyn CheckpointStorage>,
    job: String,
    chains: Vec<Vec<u64>>,
    max_bytes: usize,
) -> Result<(), TaskError> {
    let (tx, mut rx) = mpsc::channel::<StateDelta>(1);
    let (back, returned) = std::sync::mpsc::channel::<StateDelta>();
    // Host keyed state goes into a fresh local store, opened at its first entry.
    let place = instance.keyed_states().place().cloned();
    let reader = tokio::task::spawn_blocking(move || -> Result<Option<LocalStore>, TaskError> {
        let mut chunker = RestoreChunker::new(max_bytes);
        let mut host: Option<LocalRestorer> = None;
        let mut host_error: Option<LocalStateError> = None;
        let flow = storage.visit_chains(&job, &chains, &mut |state, key, value| {
            if is_host_state(state) {
                let put = match (&mut host, &place) {
                    (Some(r), _) => r.put(state, key, value),
                    (None, Some(place)) => place.open().and_then(|store| {
                        let r = host.insert(store.restorer());
                        r.put(state, key, value)
                    }),
                    (None, None) => {
                        Err(LocalStateError::Store("the instance has no place for host state".into()))
                    }
                };
                if let Err(e) = put {
                    host_error = Some(e);
                    return ControlFlow::Break(());
                }
                return ControlFlow::Continue(());
            }
            let Some(chunk) = chunker.push(state, key, value) else { return ControlFlow::Continue(()) };
            // The guest failed when the receiver is gone: stop reading.
            if tx.blocking_send(chunk).is_err() {
                return ControlFlow::Break(());
            }
            while let Ok(spare) = returned.try_recv() {
                chunker.recycle(spare);
            }
            ControlFlow::Continue(())
        })?;
        if let Some(e) = host_error {
            return Err(e.into());
        }
        if flow.is_continue()
            && let Some(chunk) = chunker.finish()
        {
            let _ = tx.blocking_send(chunk);
        }
        Ok(host.map(LocalRestorer::finish).transpose()?)
    });
    // Ends when the reader is done (or failed: its error follows).
    while let Some(chunk) = rx.recv().await {
        instance.restore(state_version, &chunk).await?;
        let _ = back.send(chunk);
    }
    if let Some(store) = reader.await?? {
        instance.keyed_states().restored(store);
    }
    Ok(())
}
