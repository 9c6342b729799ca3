//! Migrating a subtask's state to a module of another state schema version: restore with
//! the old version, open, full snapshot in the new format.

use std::collections::BTreeMap;
use std::sync::Arc;

use weir_store::{ScopeDelta, StateEntry};

use super::error::RestoreError;
use crate::guest::bindings::Context;
use crate::guest::{OperatorInstance, OperatorModule};
use crate::local_state::is_host_state;
use crate::plan::{Plan, PlanNode};
use crate::runtime::{instance_limits, operator_context, restore_chunks, split_into_scopes};

/// Migrates one new subtask's state with its new module: restore with the old version,
/// open, full snapshot.
pub(super) async fn migrate_subtask(
    module: &Arc<OperatorModule>,
    node: &PlanNode,
    config: &str,
    s: u32,
    plan: &Plan,
    old_version: u32,
    scopes: Vec<ScopeDelta>,
) -> Result<Vec<ScopeDelta>, RestoreError> {
    let max_parallelism = plan.spec.settings.max_parallelism;
    let fail = |e: String| {
        RestoreError::Migration(format!(
            "operator `{}` subtask {s}: migrating its state from schema version {old_version} failed: {e}",
            node.id
        ))
    };
    let mut instance = OperatorInstance::new(module, &node.id, s, instance_limits(&plan.spec.settings))
        .await
        .map_err(|e| fail(e.to_string()))?;
    // Host keyed state is the host's, not the guest's: it is carried over as it is (the
    // guest's migration never sees it).
    let mut host: Vec<ScopeDelta> = Vec::new();
    for scope in scopes {
        let (kept, guest): (Vec<StateEntry>, Vec<StateEntry>) =
            scope.entries.into_iter().partition(|e| is_host_state(&e.state));
        if !kept.is_empty() {
            host.push(ScopeDelta { scope: scope.scope, entries: kept });
        }
        for chunk in restore_chunks(guest, 4 << 20) {
            instance.restore(old_version, &chunk).await.map_err(|e| fail(e.to_string()))?;
        }
    }
    let context = Context { restored: true, ..operator_context(plan, node, s, config) };
    instance.open(&context).await.map_err(|e| fail(e.to_string()))?;
    let delta = instance.snapshot(0, true).await.map_err(|e| fail(e.to_string()))?;
    let scopes = split_into_scopes(&delta, max_parallelism, s).map_err(|e| fail(e.to_string()))?;
    // A full snapshot holds puts only.
    let mut by_scope: BTreeMap<u32, Vec<StateEntry>> = BTreeMap::new();
    for scope in scopes.into_iter().chain(host) {
        by_scope
            .entry(scope.scope)
            .or_default()
            .extend(scope.entries.into_iter().filter(|e| e.value.is_some()));
    }
    Ok(by_scope.into_iter().map(|(scope, entries)| ScopeDelta { scope, entries }).collect())
}
