//! Restoring a guest from its chains: the store is read on the blocking pool while the
//! guest restores the chunk before.

use std::ops::ControlFlow;
use std::sync::Arc;

use tokio::sync::mpsc;
use weir_store::{CheckpointStorage, StoreError};

use super::error::TaskError;
use super::scopes::RestoreChunker;
use crate::guest::OperatorInstance;
use crate::guest::bindings::StateDelta;

/// Restores `instance` from `chains` (the live entries of each, in chunks of at most
/// `max_bytes`), written by a module of state schema version `state_version`.
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
    let reader = tokio::task::spawn_blocking(move || -> Result<(), StoreError> {
        let mut chunker = RestoreChunker::new(max_bytes);
        let flow = storage.visit_chains(&job, &chains, &mut |state, key, value| {
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
        if flow.is_continue()
            && let Some(chunk) = chunker.finish()
        {
            let _ = tx.blocking_send(chunk);
        }
        Ok(())
    });
    // Ends when the reader is done (or failed: its error follows).
    while let Some(chunk) = rx.recv().await {
        instance.restore(state_version, &chunk).await?;
        let _ = back.send(chunk);
    }
    reader.await??;
    Ok(())
}
