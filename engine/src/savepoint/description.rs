//! What a savepoint says about the job it was taken from ([`Description`]), stored with it
//! and carried in its export file, and why one cannot be made or read ([`DescriptionError`]).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use weir_store::{Manifest, SavepointInfo};

use crate::plan::{JobSpec, NodeKind};
use crate::runtime::{TaskRestoreError, TaskState};

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
        source: TaskRestoreError,
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

    /// The node `id`.
    pub(super) fn node(&self, id: &str) -> Option<&NodeDescription> {
        self.nodes.iter().find(|n| n.id == id)
    }
}
