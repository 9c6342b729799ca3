//! Savepoints seen from the engine: what a savepoint says about the job it was taken from
//! ([`Description`]), and starting a job from one ([`restore_into`]).
//!
//! The store keeps a savepoint as a self-contained copy: per operator, the live entries of
//! every scope (a key group, or one subtask's operator state) and every subtask's blob
//! ([`TaskState`]). Starting a job from it writes the job's *first checkpoint* from that
//! copy, mapped onto the new job, after checking that it fits; the runtime then restores that
//! checkpoint like any other. Mapping, by node id:
//!
//! - keyed state moves by key group: new subtask `i` of `p` gets the groups
//!   [`key_group_range`]`(i, p, max_parallelism)`, whatever the old parallelism was (the
//!   number of key groups, `max_parallelism`, must stay the same);
//! - operator (non-keyed) state and timers without a key belong to a subtask index: new
//!   subtask `i` gets old subtask `i`'s. Scaling down would drop the state of the removed
//!   subtasks, so it needs `allow_non_restored_state`;
//! - keyed timers follow their key's group;
//! - source positions are kept per subtask, or merged and re-split by the connector when the
//!   parallelism changes ([`SourceConfig::rescale_positions`]);
//! - sinks start clean: the transactions a savepoint's checkpoint owns belong to the job it
//!   was taken from, which commits them;
//! - event time restarts: watermarks are not restored (a drained savepoint's watermark is
//!   the end of time), timers are;
//! - an operator whose module has another state schema version is migrated by the new
//!   module once, here: restore with the old version, open, and a full snapshot in the new
//!   format. A version the module cannot migrate from is refused before anything is written.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weir_store::{
    CheckpointMeta, CheckpointStatus, CheckpointStorage, Manifest, OPERATOR_SCOPE_BASE, SavepointInfo,
    ScopeDelta, StateEntry, Store, StoreError, SubtaskState, SubtaskWrite,
};

use crate::clock::unix_ms;
use crate::connectors::SourceConfig;
use crate::guest::bindings::Context;
use crate::guest::{OperatorInstance, OperatorModule};
use crate::key_groups::{key_group, key_group_range, subtask_for_key_group};
use crate::local_state::record_key;
use crate::plan::{JobSpec, NodeBody, NodeKind, Plan};
use crate::runtime::instance_limits;
use crate::runtime::{TaskState, restore_chunks, split_into_scopes};

/// Version of [`Description`]'s layout.
pub const DESCRIPTION_FORMAT: u32 = 1;

/// What a savepoint says about the job it was taken from (stored with it and carried in its
/// export file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Description {
    /// Layout version ([`DESCRIPTION_FORMAT`]).
    pub format: u32,
    /// The job's name.
    pub job_name: String,
    /// The number of key groups keyed state is divided into.
    pub max_parallelism: u32,
    /// Every node of the job, in spec order.
    pub nodes: Vec<NodeDescription>,
}

/// One node of a savepoint's job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NodeDescription {
    /// Node id (state is mapped by it).
    pub id: String,
    /// Source, operator or sink.
    pub kind: NodeKind,
    /// Parallelism when the savepoint was taken.
    pub parallelism: u32,
    /// Operators: the module (the id the job pinned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module: Option<String>,
    /// Sources and sinks: the connector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connector: Option<String>,
    /// Operators: the state schema version of the module that wrote the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_version: Option<u32>,
}

/// Why a savepoint's description cannot be made or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptionError {
    /// A subtask's saved blob does not decode.
    #[error("{node}/{subtask}: {source}")]
    Blob {
        /// The node id.
        node: String,
        /// The subtask.
        subtask: u32,
        /// The decoding error.
        source: crate::runtime::RestoreError,
    },
    /// The description is not the JSON of a [`Description`].
    #[error("the savepoint's description is not readable: {0}")]
    Unreadable(#[from] serde_json::Error),
    /// Another layout version.
    #[error("the savepoint's description has format {0}; this build reads format {DESCRIPTION_FORMAT}")]
    Format(u32),
    /// No key groups.
    #[error("the savepoint's description has max_parallelism 0")]
    NoKeyGroups,
    /// A node's parallelism outside `1..=max_parallelism`.
    #[error("the savepoint's description gives node `{node}` parallelism {parallelism}, outside 1..={max}")]
    Parallelism {
        /// The node id.
        node: String,
        /// Its parallelism.
        parallelism: u32,
        /// `max_parallelism`.
        max: u32,
    },
    /// A node listed twice.
    #[error("the savepoint's description lists node `{0}` twice")]
    DuplicateNode(String),
}

impl Description {
    /// Describes the job of `spec` whose checkpoint has `manifest`.
    pub fn of(spec: &JobSpec, manifest: &Manifest) -> Result<Description, DescriptionError> {
        let mut nodes = Vec::new();
        for node in &spec.nodes {
            let mut state_version = None;
            if node.kind == NodeKind::Operator
                && let Some(subtasks) = manifest.get(&node.id)
            {
                for (s, state) in subtasks {
                    let blob = TaskState::decode(&state.blob).map_err(|source| DescriptionError::Blob {
                        node: node.id.clone(),
                        subtask: *s,
                        source,
                    })?;
                    state_version = state_version.or(blob.state_version);
                }
            }
            nodes.push(NodeDescription {
                id: node.id.clone(),
                kind: node.kind,
                parallelism: node.parallelism,
                module: node.module.clone(),
                connector: node.connector.clone(),
                state_version,
            });
        }
        Ok(Description {
            format: DESCRIPTION_FORMAT,
            job_name: spec.name.clone(),
            max_parallelism: spec.settings.max_parallelism,
            nodes,
        })
    }

    /// Reads the description a savepoint carries.
    pub fn read(savepoint: &SavepointInfo) -> Result<Description, DescriptionError> {
        let description: Description = serde_json::from_value(savepoint.description.clone())?;
        if description.format != DESCRIPTION_FORMAT {
            return Err(DescriptionError::Format(description.format));
        }
        // An imported file is whatever its uploader wrote (its checksum only proves it whole):
        // what later loops and allocations depend on is checked here.
        let max = description.max_parallelism;
        if max == 0 {
            return Err(DescriptionError::NoKeyGroups);
        }
        let mut ids = BTreeSet::new();
        for node in &description.nodes {
            if node.parallelism == 0 || node.parallelism > max {
                return Err(DescriptionError::Parallelism {
                    node: node.id.clone(),
                    parallelism: node.parallelism,
                    max,
                });
            }
            if !ids.insert(node.id.as_str()) {
                return Err(DescriptionError::DuplicateNode(node.id.clone()));
            }
        }
        Ok(description)
    }

    fn node(&self, id: &str) -> Option<&NodeDescription> {
        self.nodes.iter().find(|n| n.id == id)
    }
}

/// How to start a job from a savepoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RestoreOptions {
    /// Start even if some of the savepoint's state has no place in the new job (a node that
    /// is gone or changed kind, operator state of subtasks removed by scaling down): that
    /// state is dropped.
    #[serde(default)]
    pub allow_non_restored_state: bool,
}

/// What starting a job from a savepoint did, per node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RestoreReport {
    /// The savepoint.
    pub savepoint: String,
    /// The job's checkpoint that holds the restored state (its first).
    pub checkpoint: u64,
    /// Per node of the new job, in spec order.
    pub nodes: Vec<NodeRestore>,
    /// State of the savepoint that was dropped (with `allow_non_restored_state`), described.
    pub dropped: Vec<String>,
}

/// How one node of a new job was restored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NodeRestore {
    /// Node id.
    pub id: String,
    /// Whether the savepoint had state for it.
    pub restored: bool,
    /// Its parallelism in the savepoint (when it had the node).
    pub from_parallelism: Option<u32>,
    /// Its parallelism in the job.
    pub parallelism: u32,
    /// Operators: the state schema version in the savepoint and the module's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_versions: Option<(u32, u32)>,
    /// Operators: the new module migrated the state.
    pub migrated: bool,
    /// Keyed entries restored.
    pub keyed_entries: u64,
}

/// Why a job cannot start from a savepoint.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The savepoint does not fit the job (the message says how).
    #[error("{0}")]
    Incompatible(String),
    /// The new module failed to migrate (or restore) the state.
    #[error("{0}")]
    Migration(String),
    /// The store failed.
    #[error("storage: {0}")]
    Store(#[from] StoreError),
}

/// What the new job's node gets from the savepoint.
struct NodePlan {
    /// The savepoint's node (None: the job's node is new; it starts empty).
    old: Option<NodeDescription>,
    /// Old blobs by old subtask.
    blobs: BTreeMap<u32, TaskState>,
    /// Scopes holding entries.
    scopes: Vec<u32>,
    /// Sources at another parallelism: the positions per new subtask.
    positions: Option<Vec<Option<serde_json::Value>>>,
    /// Operators: (savepoint's version, module's version) when both are known.
    versions: Option<(u32, u32)>,
}

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
    let description = Description::read(savepoint).map_err(|e| RestoreError::Incompatible(e.to_string()))?;
    let max_parallelism = plan.spec.settings.max_parallelism;
    if description.max_parallelism != max_parallelism {
        return Err(RestoreError::Incompatible(format!(
            "the savepoint divides keyed state into {} key groups (max_parallelism {}) but the job's max_parallelism is {max_parallelism}: keep it at {}",
            description.max_parallelism, description.max_parallelism, description.max_parallelism
        )));
    }
    let mut dropped = Vec::new();
    let stored_nodes: BTreeSet<String> = {
        let (store, id) = (store.clone(), savepoint.id.clone());
        blocking(move || store.savepoint_operators(&id)).await?.into_iter().collect()
    };

    // Savepoint nodes the job does not have (or has as another kind).
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

    // Per node of the job: what it restores, and the checks that need the data.
    let mut plans = Vec::new();
    for node in &plan.nodes {
        let old = description.node(&node.id).filter(|o| o.kind == node.kind).cloned();
        let mut np =
            NodePlan { old, blobs: BTreeMap::new(), scopes: Vec::new(), positions: None, versions: None };
        if let Some(old) = np.old.clone()
            && stored_nodes.contains(&node.id)
        {
            (np.blobs, np.scopes) = load_node(store, &savepoint.id, &old, max_parallelism).await?;
            check_node(node, &old, &mut np, plan, store, options, &mut dropped).await?;
        }
        plans.push(np);
    }

    // Write the job's first checkpoint.
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
    match write_checkpoint(store, job, id, plan, savepoint, &plans).await {
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
            Ok(RestoreReport { savepoint: savepoint.id.clone(), checkpoint: id, nodes, dropped })
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

/// The state of node `old` in `savepoint`: its subtasks' blobs, decoded, and the scopes that
/// hold entries. Scopes and subtasks must fit the node as described (an imported file may
/// say anything).
async fn load_node(
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
fn holds_state(blobs: &BTreeMap<u32, TaskState>, scopes: &[u32]) -> bool {
    !scopes.is_empty() || blobs.values().any(|b| b.position.is_some() || !b.timers.is_empty())
}

/// The checks of one node the savepoint has state for; fills in positions and versions.
async fn check_node(
    node: &crate::plan::PlanNode,
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

/// Writes every subtask of every node; returns the manifest, the per-node report and the
/// bytes written.
async fn write_checkpoint(
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
            let range = key_group_range(s, node.parallelism, max_parallelism);
            // Scopes of this subtask: its key groups, and operator state of the same index.
            let mut scopes = Vec::new();
            if np.old.is_some() {
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
                        if let Some(e) = entries
                            .iter()
                            .find(|e| key_group(record_key(&e.state, &e.key), max_parallelism) != scope)
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
            }
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

/// The blob of new subtask `s` of `node`.
fn map_blob(node: &crate::plan::PlanNode, np: &NodePlan, s: u32, max_parallelism: u32) -> TaskState {
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

/// Migrates one new subtask's state with its new module: restore with the old version,
/// open, full snapshot.
async fn migrate_subtask(
    module: &Arc<OperatorModule>,
    node: &crate::plan::PlanNode,
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
            scope.entries.into_iter().partition(|e| crate::local_state::is_host_state(&e.state));
        if !kept.is_empty() {
            host.push(ScopeDelta { scope: scope.scope, entries: kept });
        }
        for chunk in restore_chunks(guest, 4 << 20) {
            instance.restore(old_version, &chunk).await.map_err(|e| fail(e.to_string()))?;
        }
    }
    let range = key_group_range(s, node.parallelism, max_parallelism);
    let context = Context {
        operator_id: node.id.clone(),
        config: config.to_string(),
        subtask_index: s,
        parallelism: node.parallelism,
        max_parallelism,
        key_group_start: range.start,
        key_group_end: range.end,
        inputs: node.inputs.len() as u32,
        restored: true,
    };
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

fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Source => "a source",
        NodeKind::Operator => "an operator",
        NodeKind::Sink => "a sink",
    }
}

async fn blocking<T: Send + 'static, E: Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, RestoreError>
where
    RestoreError: From<E>,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(RestoreError::from),
        Err(e) => Err(RestoreError::Migration(format!("restoring the savepoint panicked: {e}"))),
    }
}
