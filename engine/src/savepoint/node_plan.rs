//! What each node of the new job gets from the savepoint ([`NodePlan`]): the node's saved
//! state, loaded and checked against what the savepoint says of it, and the checks that
//! need that state (rescaled sources, schema versions, operator state of removed subtasks).

use std::collections::BTreeMap;
use std::sync::Arc;

use weir_store::{OPERATOR_SCOPE_BASE, Store, StoreError};

use super::description::NodeDescription;
use super::error::RestoreError;
use super::options::RestoreOptions;
use super::store_call::blocking;
use crate::connectors::SourceConfig;
use crate::guest::{OperatorInstance, OperatorModule};
use crate::plan::{NodeBody, Plan, PlanNode};
use crate::runtime::{TaskState, instance_limits};

/// What the new job's node gets from the savepoint.
pub(super) struct NodePlan {
    /// The savepoint's node (None: the job's node is new; it starts empty).
    pub(super) old: Option<NodeDescription>,
    /// Old blobs by old subtask.
    pub(super) blobs: BTreeMap<u32, TaskState>,
    /// Scopes holding entries.
    pub(super) scopes: Vec<u32>,
    /// Sources at another parallelism: the positions per new subtask.
    pub(super) positions: Option<Vec<Option<serde_json::Value>>>,
    /// Operators: (savepoint's version, module's version) when both are known.
    pub(super) versions: Option<(u32, u32)>,
}

/// The state of node `old` in `savepoint`: its subtasks' blobs, decoded, and the scopes that
/// hold entries. Scopes and subtasks must fit the node as described (an imported file may
/// say anything).
pub(super) async fn load_node(
    store: &Store,
    savepoint: &str,
    old: &NodeDescription,
    max_parallelism: u32,
) -> Result<(BTreeMap<u32, TaskState>, Vec<u32>), RestoreError> {
    let (s, id, op) = (store.clone(), savepoint.to_string(), old.id.clone());
    let (raw, scopes) =
        blocking(move || Ok::<_, StoreError>((s.savepoint_blobs(&id, &op)?, s.savepoint_scopes(&id, &op)?)))
            .await?;
    let node = &old.id;
    let inconsistent =
        |what: String| RestoreError::Incompatible(format!("the savepoint is inconsistent: {what}"));
    let mut blobs = BTreeMap::new();
    for (subtask, blob) in raw {
        if subtask >= old.parallelism {
            return Err(inconsistent(format!(
                "node `{node}` has {} subtask(s) but state for subtask {subtask}",
                old.parallelism
            )));
        }
        let state = TaskState::decode(&blob)
            .map_err(|e| RestoreError::Incompatible(format!("node `{node}` subtask {subtask}: {e}")))?;
        blobs.insert(subtask, state);
    }
    for &scope in &scopes {
        let fits = if scope >= OPERATOR_SCOPE_BASE {
            scope - OPERATOR_SCOPE_BASE < old.parallelism
        } else {
            scope < max_parallelism
        };
        if !fits {
            return Err(inconsistent(format!(
                "node `{node}` has state in scope {scope}, which is neither one of its {max_parallelism} key groups nor one of its {} subtasks",
                old.parallelism
            )));
        }
    }
    Ok((blobs, scopes))
}

/// Whether a node's saved state holds anything worth restoring: keyed or operator state,
/// timers, or a source position (a stateless operator's blobs hold none).
pub(super) fn holds_state(blobs: &BTreeMap<u32, TaskState>, scopes: &[u32]) -> bool {
    !scopes.is_empty() || blobs.values().any(|b| b.position.is_some() || !b.timers.is_empty())
}

/// The checks of one node the savepoint has state for; fills in positions and versions.
pub(super) async fn check_node(
    node: &PlanNode,
    old: &NodeDescription,
    np: &mut NodePlan,
    plan: &Plan,
    store: &Store,
    options: RestoreOptions,
    dropped: &mut Vec<String>,
) -> Result<(), RestoreError> {
    let rescaled = old.parallelism != node.parallelism;
    match &node.body {
        NodeBody::Source(config) if rescaled => {
            np.positions = Some(rescale_sources(config, old, &np.blobs, node.parallelism, store)?);
        }
        NodeBody::Operator { module, .. } => {
            let (new_version, migrates_from) = module_versions(module, &node.id, plan).await?;
            if let Some(old_version) = old.state_version {
                if old_version != new_version && !migrates_from.contains(&old_version) {
                    return Err(RestoreError::Incompatible(format!(
                        "operator `{}`: the savepoint's state has schema version {old_version}; module `{}` has version {new_version} and cannot migrate from {old_version} (it migrates from {})",
                        node.id,
                        module.name(),
                        if migrates_from.is_empty() {
                            "no older version".to_string()
                        } else {
                            format!("{migrates_from:?}")
                        }
                    )));
                }
                np.versions = Some((old_version, new_version));
            }
            if node.parallelism < old.parallelism {
                // Operator state and keyless timers of the removed subtasks have no place.
                let mut lost = Vec::new();
                for s in node.parallelism..old.parallelism {
                    let has_scope = np.scopes.contains(&(OPERATOR_SCOPE_BASE + s));
                    let has_timers =
                        np.blobs.get(&s).is_some_and(|b| b.timers.iter().any(|(_, key)| key.is_empty()));
                    if has_scope || has_timers {
                        lost.push(s);
                    }
                }
                if !lost.is_empty() {
                    let what = format!(
                        "operator (non-keyed) state or timers of subtask(s) {lost:?} of operator `{}`, which scales from {} to {} subtasks",
                        node.id, old.parallelism, node.parallelism
                    );
                    if !options.allow_non_restored_state {
                        return Err(RestoreError::Incompatible(format!(
                            "the savepoint has {what}: non-keyed state belongs to a subtask index and cannot be redistributed; set allow_non_restored_state to drop it"
                        )));
                    }
                    dropped.push(what);
                }
            }
        }
        _ => {}
    }
    Ok(())
}

fn rescale_sources(
    config: &SourceConfig,
    old: &NodeDescription,
    blobs: &BTreeMap<u32, TaskState>,
    parallelism: u32,
    store: &Store,
) -> Result<Vec<Option<serde_json::Value>>, RestoreError> {
    let positions: Vec<Option<serde_json::Value>> =
        (0..old.parallelism).map(|s| blobs.get(&s).and_then(|b| b.position.clone())).collect();
    config.rescale_positions(&positions, parallelism, Some(store)).map_err(|e| {
        RestoreError::Incompatible(format!(
            "source `{}` cannot go from {} to {parallelism} subtasks: {e}",
            old.id, old.parallelism
        ))
    })
}

/// The state schema version of `module` and the versions it migrates from.
async fn module_versions(
    module: &Arc<OperatorModule>,
    node: &str,
    plan: &Plan,
) -> Result<(u32, Vec<u32>), RestoreError> {
    let mut instance = OperatorInstance::new(module, node, 0, instance_limits(&plan.spec.settings))
        .await
        .map_err(|e| RestoreError::Migration(format!("operator `{node}`: {e}")))?;
    let info =
        instance.describe().await.map_err(|e| RestoreError::Migration(format!("operator `{node}`: {e}")))?;
    Ok((info.state_version, info.migrates_from))
}
