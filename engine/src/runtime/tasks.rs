//! The tasks of an attempt's part (its subtasks and snapshot writers, the coordinator, the
//! parts elsewhere) joined as one: the first real failure (not a "channel closed" that merely
//! follows from it) aborts every other task and is returned with its node id and subtask.

use std::collections::HashMap;
use std::pin::Pin;

use tokio::task::{JoinError, JoinHandle, JoinSet};

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
        let mut outcome = Outcome::default();
        let mut remote = self.remote.take();
        while !self.set.is_empty() || (remote.is_some() && outcome.first.is_none()) {
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
            tokio::select! {
                joined = self.set.join_next_with_id(), if !self.set.is_empty() => {
                    if let Some(joined) = joined {
                        self.task_ended(joined, &mut outcome);
                    }
                }
                result = coordinator_ends => {
                    coordinator = None;
                    match result {
                        Ok(Ok(id)) => outcome.final_checkpoint = Some(id),
                        // The tasks ended (the coordinator may see it before this loop
                        // joins them): their own errors come first.
                        Ok(Err(JobError::TasksGone)) => outcome.secondary(JobError::TasksGone),
                        Ok(Err(e)) => outcome.fail(e, &mut self.set),
                        Err(e) => outcome.fail(JobError::Background(e), &mut self.set),
                    }
                }
                result = remote_ends => {
                    remote = None;
                    match result {
                        Ok(()) => {}
                        Err(e @ JobError::Task { error: TaskError::Remote { secondary: true, .. }, .. }) => {
                            outcome.secondary(e);
                        }
                        Err(e) => outcome.fail(e, &mut self.set),
                    }
                }
            }
        }
        if let Some(c) = coordinator.take() {
            if outcome.first.is_some() || outcome.secondary.is_some() {
                c.abort();
            } else {
                // Every task ended well: the sources ended only after the final checkpoint
                // completed, so the coordinator has returned (or returns now: its inbox closed).
                match c.await {
                    Ok(Ok(id)) => outcome.final_checkpoint = Some(id),
                    Ok(Err(e)) => outcome.first = Some(e),
                    Err(e) => outcome.first = Some(JobError::Background(e)),
                }
            }
        }
        match outcome.first.or(outcome.secondary) {
            Some(e) => Err(e),
            None => Ok(outcome.final_checkpoint),
        }
    }

    /// A task here ended: a failure is named with the task's node and subtask (a panic
    /// with its message); a cancelled task adds nothing.
    fn task_ended(
        &mut self,
        joined: Result<(tokio::task::Id, Result<(), TaskError>), JoinError>,
        outcome: &mut Outcome,
    ) {
        let error = match joined {
            Ok((_, Ok(()))) => return,
            Ok((id, Err(error))) => {
                let (node, subtask) = self.names[&id].clone();
                let secondary = error.is_secondary();
                let err = JobError::Task { node, subtask, error };
                if secondary {
                    return outcome.secondary(err);
                }
                err
            }
            Err(e) if e.is_panic() => {
                let (node, subtask) = self.names[&e.id()].clone();
                let payload = e.into_panic();
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                JobError::Panic { node, subtask, message }
            }
            Err(_) => return,
        };
        outcome.fail(error, &mut self.set);
    }
}

/// How an attempt's tasks ended so far.
#[derive(Default)]
struct Outcome {
    /// The final checkpoint, once the coordinator returned it.
    final_checkpoint: Option<u64>,
    /// The first real failure.
    first: Option<JobError>,
    /// The first failure that merely follows from another (a channel closed).
    secondary: Option<JobError>,
}

impl Outcome {
    /// A real failure: the first one aborts every other task.
    fn fail(&mut self, error: JobError, set: &mut JoinSet<Result<(), TaskError>>) {
        if self.first.is_none() {
            self.first = Some(error);
            set.abort_all();
        }
    }

    fn secondary(&mut self, error: JobError) {
        self.secondary.get_or_insert(error);
    }
}
