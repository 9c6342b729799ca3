//! Starting a job from a savepoint ([`restore_into`]), step by step: read the description,
//! account for saved state the job has no place for, plan every node, write the first
//! checkpoint.

use std::collections::{BTreeMap, BTreeSet};

use weir_store::{CheckpointMeta, CheckpointStatus, CheckpointStorage, SavepointInfo, Store};

use super::description::Description;
use super::error::RestoreError;
use super::first_checkpoint::write_checkpoint;
use super::node_plan::{NodePlan, check_node, holds_state, load_node};
use super::options::RestoreOptions;
use super::report::{NodeCheck, NodeRestore, RestoreCheck, RestoreReport};
use super::store_call::blocking;
use crate::clock::unix_ms;
use crate::plan::{NodeKind, Plan};

/// Starts job `job` (which has no checkpoint yet) of `plan` from `savepoint`: checks that
/// the savepoint fits, then writes the job's first checkpoint with the savepoint's state
/// mapped onto the plan. Nothing is written when a check fails; a failure while writing
/// (a migration error, storage) leaves no checkpoint behind.
pub async fn restore_into(
    store: &Store,
    job: &str,
    plan: &Plan,
    savepoint: &SavepointInfo,
    options: RestoreOptions,
) -> Result<RestoreReport, RestoreError> {
    let (plans, dropped) = checked_plans(store, plan, savepoint, options).await?;
    let (checkpoint, nodes) = write_first_checkpoint(store, job, plan, savepoint, &plans).await?;
    Ok(RestoreReport { savepoint: savepoint.id.clone(), checkpoint, nodes, dropped })
}

/// Checks that a job of `plan` could start from `savepoint` — every check [`restore_into`]
/// makes before it writes (key groups, nodes without a place, rescaled sources, operator
/// state of removed subtasks, state schema versions) — and says what each node would get.
/// Writes nothing and runs no migration (a module that cannot migrate the state it claims
/// to is found when the job starts).
pub async fn check_restore(
    store: &Store,
    plan: &Plan,
    savepoint: &SavepointInfo,
    options: RestoreOptions,
) -> Result<RestoreCheck, RestoreError> {
    let (plans, dropped) = checked_plans(store, plan, savepoint, options).await?;
    let nodes = plan
        .nodes
        .iter()
        .zip(&plans)
        .map(|(node, np)| NodeCheck {
            id: node.id.clone(),
            has_state: np.old.is_some() && holds_state(&np.blobs, &np.scopes),
            from_parallelism: np.old.as_ref().map(|o| o.parallelism),
            parallelism: node.parallelism,
            state_versions: np.versions,
            migrates: np.versions.is_some_and(|(old, new)| old != new),
        })
        .collect();
    Ok(RestoreCheck { savepoint: savepoint.id.clone(), nodes, dropped })
}

/// Every check before anything is written: what each node of `plan` gets from
/// `savepoint`, and the saved state that is dropped.
async fn checked_plans(
    store: &Store,
    plan: &Plan,
    savepoint: &SavepointInfo,
    options: RestoreOptions,
) -> Result<(Vec<NodePlan>, Vec<String>), RestoreError> {
    let description = read_description(savepoint, plan)?;
    let stored_nodes: BTreeSet<String> = {
        let (store, id) = (store.clone(), savepoint.id.clone());
        blocking(move || store.savepoint_operators(&id)).await?.into_iter().collect()
    };
    let mut dropped = unplaced_state(store, savepoint, plan, &description, &stored_nodes, options).await?;
    let plans =
        plan_nodes(store, savepoint, plan, &description, &stored_nodes, options, &mut dropped).await?;
    Ok((plans, dropped))
}

/// The savepoint's description, if its key groups are the job's.
fn read_description(savepoint: &SavepointInfo, plan: &Plan) -> Result<Description, RestoreError> {
    let description = Description::read(savepoint).map_err(|e| RestoreError::Incompatible(e.to_string()))?;
    let max_parallelism = plan.spec.settings.max_parallelism;
    if description.max_parallelism != max_parallelism {
        return Err(RestoreError::Incompatible(format!(
            "the savepoint divides keyed state into {} key groups (max_parallelism {}) but the job's max_parallelism is {max_parallelism}: keep it at {}",
            description.max_parallelism, description.max_parallelism, description.max_parallelism
        )));
    }
    Ok(description)
}

/// The saved state of savepoint nodes the job does not have (or has as another kind),
/// described: refused unless `allow_non_restored_state`, else dropped.
async fn unplaced_state(
    store: &Store,
    savepoint: &SavepointInfo,
    plan: &Plan,
    description: &Description,
    stored_nodes: &BTreeSet<String>,
    options: RestoreOptions,
) -> Result<Vec<String>, RestoreError> {
    let max_parallelism = plan.spec.settings.max_parallelism;
    let mut dropped = Vec::new();
    for old in &description.nodes {
        let current = plan.nodes.iter().find(|n| n.id == old.id);
        let fits = current.is_some_and(|n| n.kind == old.kind);
        if fits || old.kind == NodeKind::Sink || !stored_nodes.contains(&old.id) {
            continue;
        }
        let (blobs, scopes) = load_node(store, &savepoint.id, old, max_parallelism).await?;
        if !holds_state(&blobs, &scopes) {
            continue;
        }
        let what = match current {
            None => format!("node `{}`, which the job does not have", old.id),
            Some(n) => format!(
                "node `{}` as {}, which the job has as {}",
                old.id,
                kind_name(old.kind),
                kind_name(n.kind)
            ),
        };
        if !options.allow_non_restored_state {
            return Err(RestoreError::Incompatible(format!(
                "the savepoint has state for {what}; set allow_non_restored_state to start without it"
            )));
        }
        dropped.push(format!("state of {what}"));
    }
    Ok(dropped)
}

/// Per node of the job: what it restores, after the checks that need the saved data (what
/// they drop is added to `dropped`).
async fn plan_nodes(
    store: &Store,
    savepoint: &SavepointInfo,
    plan: &Plan,
    description: &Description,
    stored_nodes: &BTreeSet<String>,
    options: RestoreOptions,
    dropped: &mut Vec<String>,
) -> Result<Vec<NodePlan>, RestoreError> {
    let max_parallelism = plan.spec.settings.max_parallelism;
    let mut plans = Vec::new();
    for node in &plan.nodes {
        let old = description.node(&node.id).filter(|o| o.kind == node.kind).cloned();
        let mut np =
            NodePlan { old, blobs: BTreeMap::new(), scopes: Vec::new(), positions: None, versions: None };
        if let Some(old) = np.old.clone()
            && stored_nodes.contains(&node.id)
        {
            (np.blobs, np.scopes) = load_node(store, &savepoint.id, &old, max_parallelism).await?;
            check_node(node, &old, &mut np, plan, store, options, dropped).await?;
        }
        plans.push(np);
    }
    Ok(plans)
}

/// Writes the job's first checkpoint from `plans`: begun, written, then completed, or
/// aborted when writing fails. Returns its id and the per-node report.
async fn write_first_checkpoint(
    store: &Store,
    job: &str,
    plan: &Plan,
    savepoint: &SavepointInfo,
    plans: &[NodePlan],
) -> Result<(u64, Vec<NodeRestore>), RestoreError> {
    let last = {
        let (s, j) = (store.clone(), job.to_string());
        blocking(move || s.last_checkpoint_id(&j)).await?
    };
    let id = last + 1;
    let meta = CheckpointMeta {
        job: job.to_string(),
        id,
        status: CheckpointStatus::InProgress,
        trigger_time_ms: unix_ms(),
        retained: true,
        savepoint: Some(savepoint.id.clone()),
        ..CheckpointMeta::default()
    };
    {
        let (s, m) = (store.clone(), meta.clone());
        blocking(move || s.begin(&m)).await?;
    }
    match write_checkpoint(store, job, id, plan, savepoint, plans).await {
        Ok((manifest, nodes, bytes)) => {
            let mut done = meta.clone();
            done.status = CheckpointStatus::Completed;
            done.state_size = bytes;
            let end = unix_ms();
            done.end_time_ms = Some(end);
            done.duration_ms = Some(end.saturating_sub(meta.trigger_time_ms) as f64);
            let retain = plan.spec.settings.checkpoint.retained;
            let (s, d) = (store.clone(), done.clone());
            blocking(move || s.complete(&d, &manifest, retain)).await?;
            Ok((id, nodes))
        }
        Err(e) => {
            let mut failed = meta;
            failed.failure = Some(format!("restoring savepoint {} failed: {e}", savepoint.id));
            let s = store.clone();
            let _ = blocking(move || s.abort(&failed)).await;
            Err(e)
        }
    }
}

fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Source => "a source",
        NodeKind::Operator => "an operator",
        NodeKind::Sink => "a sink",
    }
}
