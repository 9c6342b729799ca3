//! The bodies of the API's requests and responses, as Rust types: every response body is
//! one of these (`Deserialize` too, so a client reads them back), and the OpenAPI document's
//! schemas are generated from them. They mirror the service's types (`crate::server`) field
//! for field, converted by `From`.

mod checkpoints;
mod jobs;
mod modules;
mod savepoints;
mod streams;
mod tenants;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub(crate) use checkpoints::view;
pub use checkpoints::{
    CheckpointDetail, CheckpointView, Counts, History, Latest, MinAvgMax, OperatorView, SubtaskView, Summary,
    Triggered,
};
pub use jobs::{Edge, JobDetail, JobRecord, JobStatus, JobSummary, SubtaskLive, Vertex};
pub use modules::{Module, UploadForm};
pub use savepoints::{
    SavepointMode, SavepointRecord, SavepointStatus, StateItem, StatePage, StateQuery, TriggerSavepoint,
};
pub use streams::{AppendBody, Appended, NewRecord, NewStream, ReadBody, StoredRecord, StreamInfo};
pub use tenants::{NewTenant, Quotas, Tenant, TenantView, TenantWithToken, TokenBody, Usage};

/// A collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Data<T> {
    /// The items.
    pub data: Vec<T>,
}

impl<T> Data<T> {
    /// The collection of `items`, converted to their API form.
    pub fn of<U: Into<T>>(items: impl IntoIterator<Item = U>) -> Self {
        Data { data: items.into_iter().map(Into::into).collect() }
    }
}

/// The body of every error response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, and what to do.
    pub error: String,
}

/// The answer of `/healthz`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
}
