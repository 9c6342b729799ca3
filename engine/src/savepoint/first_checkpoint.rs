//! The new job's first checkpoint, written from the savepoint's state as the node plans map
//! it: every subtask's scopes and blob, migrated by the new module where its schema version
//! changed.

use std::collections::BTreeMap;
use std::sync::Arc;

use weir_store::{
    CheckpointStorage, Manifest, OPERATOR_SCOPE_BASE, SavepointInfo, ScopeDelta, Store, SubtaskState,
    SubtaskWrite,
};

use super::error::RestoreError;
use super::migration::migrate_subtask;
use super::node_plan::NodePlan;
use super::report::NodeRestore;
use super::store_call::blocking;
use crate::key_groups::{key_group, key_group_range, subtask_for_key_group};
use crate::local_state::record_key;
use crate::plan::{NodeBody, NodeKind, Plan, PlanNode};
use crate::runtime::TaskState;

/// Writes every subtask of every node; returns the manifest, the per-node report and the
/// bytes written.
pub(super) async fn write_checkpoint(
    store: &Store,
    job: &str,
    id: u64,
    plan: &Plan,
    savepoint: &SavepointInfo,
    plans: &[NodePlan],
) -> Result<(Manifest, Vec<NodeRestore>, u64), RestoreError> {
    let max_parallelism = plan.spec.settings.max_parallelism;
    let mut manifest: Manifest = BTreeMap::new();
    let mut report = Vec::new();
    let mut bytes = 0;
    for (node, np) in plan.nodes.iter().zip(plans) {
        let mut keyed_entries = 0u64;
        let migrate = np.versions.filter(|(old, new)| old != new);
        for s in 0..node.parallelism {
            let (mut scopes, keyed) = subtask_scopes(store, savepoint, node, np, s, max_parallelism).await?;
            keyed_entries += keyed;
            let mut blob = map_blob(node, np, s, max_parallelism);
            if let (Some((old_version, new_version)), NodeBody::Operator { module, config }) =
                (migrate, &node.body)
            {
                scopes = migrate_subtask(module, node, config, s, plan, old_version, scopes).await?;
                blob.state_version = Some(new_version);
            }
            let write = SubtaskWrite {
                job: job.to_string(),
                checkpoint: id,
                operator: node.id.clone(),
                subtask: s,
                full: true,
                scopes: Arc::new(scopes),
                previous: BTreeMap::new(),
                blob: blob.encode(),
                max_chain_length: plan.spec.settings.checkpoint.max_chain_length,
                channel_state: Vec::new(),
            };
            let st = store.clone();
            let state: SubtaskState = blocking(move || st.write_subtask(write)).await?;
            bytes += state.bytes_written;
            manifest.entry(node.id.clone()).or_default().insert(s, state);
        }
        report.push(NodeRestore {
            id: node.id.clone(),
            restored: np.old.is_some() && (!np.scopes.is_empty() || !np.blobs.is_empty()),
            from_parallelism: np.old.as_ref().map(|o| o.parallelism),
            parallelism: node.parallelism,
            state_versions: np.versions,
            migrated: migrate.is_some(),
            keyed_entries,
        });
    }
    Ok((manifest, report, bytes))
}

/// The saved scopes of new subtask `s` of `node`: its key groups, and the operator state
/// of the same index; with the number of keyed entries among them.
async fn subtask_scopes(
    store: &Store,
    savepoint: &SavepointInfo,
    node: &PlanNode,
    np: &NodePlan,
    s: u32,
    max_parallelism: u32,
) -> Result<(Vec<ScopeDelta>, u64), RestoreError> {
    let mut scopes = Vec::new();
    let mut keyed_entries = 0u64;
    if np.old.is_none() {
        return Ok((scopes, keyed_entries));
    }
    let range = key_group_range(s, node.parallelism, max_parallelism);
    for &scope in &np.scopes {
        let mine = if scope >= OPERATOR_SCOPE_BASE {
            scope - OPERATOR_SCOPE_BASE == s
        } else {
            range.contains(&scope)
        };
        if !mine {
            continue;
        }
        let (st, sp, op) = (store.clone(), savepoint.id.clone(), node.id.clone());
        let entries = blocking(move || st.read_savepoint_scope(&sp, &op, scope)).await?;
        if scope < OPERATOR_SCOPE_BASE {
            // Each entry goes to the subtask of its scope: it must be its key's group.
            if let Some(e) =
                entries.iter().find(|e| key_group(record_key(&e.state, &e.key), max_parallelism) != scope)
            {
                return Err(RestoreError::Incompatible(format!(
                    "the savepoint is inconsistent: node `{}` keeps a key of key group {} in key group {scope}",
                    node.id,
                    key_group(record_key(&e.state, &e.key), max_parallelism)
                )));
            }
            keyed_entries += entries.len() as u64;
        }
        // The operator scope of old subtask `s` is new subtask `s`'s.
        scopes.push(ScopeDelta { scope, entries });
    }
    Ok((scopes, keyed_entries))
}

/// The blob of new subtask `s` of `node`.
fn map_blob(node: &PlanNode, np: &NodePlan, s: u32, max_parallelism: u32) -> TaskState {
    let Some(old) = &np.old else { return TaskState::default() };
    match node.kind {
        NodeKind::Source => TaskState {
            position: match &np.positions {
                Some(positions) => positions.get(s as usize).cloned().flatten(),
                None => np.blobs.get(&s).and_then(|b| b.position.clone()),
            },
            ..TaskState::default()
        },
        NodeKind::Operator => {
            let mut timers = Vec::new();
            for (old_subtask, blob) in &np.blobs {
                for (ts, key) in &blob.timers {
                    let owner = if key.is_empty() {
                        *old_subtask
                    } else {
                        subtask_for_key_group(
                            key_group(key, max_parallelism),
                            node.parallelism,
                            max_parallelism,
                        )
                    };
                    if owner == s {
                        timers.push((*ts, key.clone()));
                    }
                }
            }
            timers.sort();
            timers.dedup();
            TaskState { timers, state_version: old.state_version, ..TaskState::default() }
        }
        NodeKind::Sink => TaskState::default(),
    }
}
