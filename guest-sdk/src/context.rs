//! What the host tells an operator instance when it opens, and its configuration.

use serde::de::DeserializeOwned;

use crate::__bindings::weir::operator::types::Context as WitContext;
use crate::{Error, Result};

/// What the host tells an operator instance when it opens (see [`crate::Operator::open`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Context {
    /// The node id of this operator in the job (stable across job versions).
    pub operator_id: String,
    /// The operator's configuration: the job spec's `config` object as JSON text (`{}` when
    /// the spec gives none). [`Context::config`] decodes it.
    pub config: String,
    /// Index of this parallel instance, from 0 to `parallelism - 1`.
    pub subtask_index: u32,
    /// Number of parallel instances of this operator.
    pub parallelism: u32,
    /// Number of key groups of the job.
    pub max_parallelism: u32,
    /// First key group owned by this instance (inclusive).
    pub key_group_start: u32,
    /// Last key group owned by this instance (exclusive).
    pub key_group_end: u32,
    /// Number of inputs (upstream edges) of this operator.
    pub inputs: u32,
    /// True when the instance's state was restored before `open`.
    pub restored: bool,
}

impl Context {
    /// The context of a lone instance (subtask 0 of 1, one input, 128 key groups) with
    /// configuration `config` (JSON text). Meant for tests.
    pub fn with_config(config: impl Into<String>) -> Self {
        Self {
            operator_id: "test".to_owned(),
            config: config.into(),
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 128,
            key_group_start: 0,
            key_group_end: 128,
            inputs: 1,
            restored: false,
        }
    }

    /// Decodes the configuration (JSON text) into `T`.
    ///
    /// Fails with [`Error::InvalidConfig`] naming the operator and the JSON error. Give
    /// optional fields `#[serde(default)]`: the host passes `{}` when the job has no config.
    pub fn config<T: DeserializeOwned>(&self) -> Result<T> {
        parse_config(&self.config)
            .map_err(|e| Error::invalid_config(format!("operator {}: {}", self.operator_id, e.message())))
    }
}

/// Decodes configuration JSON text into `T`, failing with [`Error::InvalidConfig`].
pub fn parse_config<T: DeserializeOwned>(json: &str) -> Result<T> {
    serde_json::from_str(json)
        .map_err(|e| Error::invalid_config(format!("cannot read the config {json}: {e}")))
}

impl From<WitContext> for Context {
    fn from(c: WitContext) -> Self {
        Self {
            operator_id: c.operator_id,
            config: c.config,
            subtask_index: c.subtask_index,
            parallelism: c.parallelism,
            max_parallelism: c.max_parallelism,
            key_group_start: c.key_group_start,
            key_group_end: c.key_group_end,
            inputs: c.inputs,
            restored: c.restored,
        }
    }
}
