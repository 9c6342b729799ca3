//! What a subtask of an attempt is handed besides its channels: an operator's context and
//! place on disk, a connector's environment, what it does with the records it takes out.

use std::sync::Arc;

use super::dead_letter::DeadLetters;
use super::env::TaskEnv;
use crate::connectors::ConnectorEnv;
use crate::guest::bindings::Context;
use crate::guest::logs::{InstanceLogs, LogRate, LogSink, TracingSink};
use crate::key_groups::key_group_range;
use crate::local_state::{LocalPlace, LocalStateConfig};
use crate::plan::{Plan, PlanNode};

/// The context subtask `s` of operator `node` of `plan` is given at `open` (with `restored`
/// false: the caller sets it once the subtask restored state).
pub fn operator_context(plan: &Plan, node: &PlanNode, s: u32, config: &str) -> Context {
    let max_parallelism = plan.spec.settings.max_parallelism;
    let range = key_group_range(s, node.parallelism, max_parallelism);
    Context {
        operator_id: node.id.clone(),
        config: config.to_string(),
        subtask_index: s,
        parallelism: node.parallelism,
        max_parallelism,
        key_group_start: range.start,
        key_group_end: range.end,
        inputs: node.inputs.len() as u32,
        restored: false,
    }
}

/// Where an operator subtask keeps its state on disk: the key groups it owns.
pub(super) fn local_place(plan: &Plan, node: &PlanNode, s: u32, env: Option<&TaskEnv>) -> LocalPlace {
    let max_parallelism = plan.spec.settings.max_parallelism;
    LocalPlace {
        config: match env {
            Some(e) => e.local.clone(),
            None => LocalStateConfig::temporary(""),
        },
        operator: node.id.clone(),
        subtask: s,
        max_parallelism,
        owned: key_group_range(s, node.parallelism, max_parallelism),
    }
}

/// What a connector of a job may use: the store, or on a worker the controller's outbox
/// (checkpointed jobs; then sinks write through two-phase commit), or nothing.
pub(super) fn connector_env<'a>(
    store: Option<&'a weir_store::Store>,
    outbox: Option<&'a Arc<dyn weir_store::Outbox>>,
    job: &'a str,
    node: &'a str,
) -> ConnectorEnv<'a> {
    if store.is_none() && outbox.is_none() {
        return ConnectorEnv::plain();
    }
    ConnectorEnv { store, job, node, transactional: true, outbox }
}

/// What subtask `s` of `node` does with the records it takes out: its `on_error`, the job's
/// limit, and the job's book (none without a run environment).
pub(super) fn dead_letters(plan: &Plan, node: &PlanNode, s: u32, env: Option<&TaskEnv>) -> DeadLetters {
    let policy =
        plan.spec.nodes.iter().find(|n| n.id == node.id).and_then(|n| n.on_error).unwrap_or_default();
    let job = env.map_or("", |e| e.job_id.as_str());
    let limit = plan.spec.settings.max_dead_letters_per_minute;
    let d = DeadLetters::new(job, &node.id, s, policy, limit, env.map(|e| e.dead_letters.clone()));
    if plan.spec.dead_letter.is_some() { d } else { d.without_destination() }
}

/// Where subtask `s` of operator `node` logs: the job's log (the process's own without one),
/// at the job's rate, tagged with the attempt.
pub(super) fn instance_logs(node: &PlanNode, s: u32, env: Option<&TaskEnv>) -> InstanceLogs {
    let sink: Arc<dyn LogSink> = env.and_then(|e| e.logs.clone()).unwrap_or_else(|| Arc::new(TracingSink));
    let (rate, attempt) = env.map_or((LogRate::default(), 0), |e| (e.log_rate, e.attempt));
    InstanceLogs::new(sink, &node.id, s, attempt, rate)
}
