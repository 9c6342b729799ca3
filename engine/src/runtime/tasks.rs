//! The tasks of an attempt's part (its subtasks and snapshot writers, the coordinator, the
//! parts elsewhere) joined as one: the first real failure (not a "channel closed" that merely
//! follows from it) aborts every other task and is returned with its node id and subtask.

use std::collections::HashMap;
use std::pin::Pin;

use tokio::task::{JoinHandle, JoinSet};

use super::error::{JobError, TaskError};

/// The end of an attempt's parts that run elsewhere (workers): `Ok` when every one ended
/// well, the first failure otherwise.
pub(crate) type RemoteParts = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;

/// The tasks of an attempt, with the node and subtask each runs.
#[derive(Default)]
pub(crate) struct Tasks {
    set: JoinSet<Result<(), TaskError>>,
    names: HashMap<tokio::task::Id, (String, u32)>,
    remote: Option<RemoteParts>,
}

impl Tasks {
    pub(crate) fn spawn(
        &mut self,
        node: String,
        subtask: u32,
        task: impl Future<Output = Result<(), TaskError>> + Send + 'static,
    ) {
        let handle = self.set.spawn(task);
        self.names.insert(handle.id(), (node, subtask));
    }

    /// Joins the parts elsewhere with the tasks here: their failures count as these do.
    pub(crate) fn with_remote(mut self, remote: RemoteParts) -> Self {
        self.remote = Some(remote);
        self
    }

    /// Joins every task, the parts elsewhere and the coordinator; returns the final
    /// checkpoint's id (when checkpointed) or the first real failure.
    pub(crate) async fn join(
        mut self,
        mut coordinator: Option<JoinHandle<Result<u64, JobError>>>,
    ) -> Result<Option<u64>, JobError> {
        let mut final_checkpoint = None;
        let mut first_error: Option<JobError> = None;
        let mut secondary: Option<JobError> = None;
        let mut remote = self.remote.take();
        loop {
            if self.set.is_empty() && (remote.is_none() || first_error.is_some()) {
                break;
            }
            let coordinator_ends = async {
                match &mut coordinator {
                    Some(c) => c.await,
                    None => std::future::pending().await,
                }
            };
            let remote_ends = async {
                match &mut remote {
                    Some(r) => r.await,
                    None => std::future::pending().await,
                }
            };
            let joined = tokio::select! {
                joined = self.set.join_next_with_id(), if !self.set.is_empty() => joined,
                result = coordinator_ends => {
                    coordinator = None;
                    match result {
                        Ok(Ok(id)) => final_checkpoint = Some(id),
                        // The tasks ended (the coordinator may see it before this loop
                        // joins them): their own errors come first.
                        Ok(Err(JobError::TasksGone)) => {
                            secondary.get_or_insert(JobError::TasksGone);
                        }
                        Ok(Err(e)) => {
                            first_error.get_or_insert(e);
                            self.set.abort_all();
                        }
                        Err(e) => {
                            first_error.get_or_insert(JobError::Background(e));
                            self.set.abort_all();
                        }
                    }
                    continue;
                }
                result = remote_ends => {
                    remote = None;
                    match result {
                        Ok(()) => {}
                        Err(e @ JobError::Task { error: TaskError::Remote { secondary: true, .. }, .. }) => {
                            secondary.get_or_insert(e);
                        }
                        Err(e) => {
                            if first_error.is_none() {
                                first_error = Some(e);
                                self.set.abort_all();
                            }
                        }
                    }
                    continue;
                }
            };
            let Some(joined) = joined else { continue };
            let (id, result) = match joined {
                Ok((id, r)) => (id, r.map_err(Some)),
                Err(e) if e.is_panic() => {
                    let id = e.id();
                    let payload = e.into_panic();
                    let message = payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "unknown panic".into());
                    let (node, subtask) = self.names[&id].clone();
                    first_error.get_or_insert(JobError::Panic { node, subtask, message });
                    self.set.abort_all();
                    continue;
                }
                Err(e) => (e.id(), Err(None)),
            };
            if let Err(Some(error)) = result {
                let (node, subtask) = self.names[&id].clone();
                let secondary_error = error.is_secondary();
                let err = JobError::Task { node, subtask, error };
                if secondary_error {
                    secondary.get_or_insert(err);
                } else if first_error.is_none() {
                    first_error = Some(err);
                    self.set.abort_all();
                }
            }
        }
        if let Some(c) = coordinator.take() {
            if first_error.is_some() || secondary.is_some() {
                c.abort();
            } else {
                // Every task ended well: the sources ended only after the final checkpoint
                // completed, so the coordinator has returned (or returns now: its inbox closed).
                match c.await {
                    Ok(Ok(id)) => final_checkpoint = Some(id),
                    Ok(Err(e)) => first_error = Some(e),
                    Err(e) => first_error = Some(JobError::Background(e)),
                }
            }
        }
        match first_error.or(secondary) {
            Some(e) => Err(e),
            None => Ok(final_checkpoint),
        }
    }
}
