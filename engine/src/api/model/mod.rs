//! The bodies and query parameters of the API's requests and responses, as Rust types:
//! every response body is one of these (`Deserialize` too, so a client reads them back), and the OpenAPI document's
//! schemas are generated from them. They mirror the service's types (`crate::server`) field
//! for field, converted by `From`.

mod checkpoints;
mod jobs;
mod modules;
mod savepoints;
mod streams;
mod tenants;
mod workers;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use checkpoints::{
    CheckpointDetail, CheckpointType, CheckpointView, Counts, History, HistoryQuery, Latest, MinAvgMax,
    OperatorView, SubtaskView, Summary, Triggered,
};
pub(crate) use checkpoints::{took_unaligned, view};
pub use jobs::{
    CreateQuery, Edge, JobDetail, JobRecord, JobStatus, JobSummary, SubtaskLive, UpgradeAnswer, Vertex,
};
pub use modules::{Module, UploadForm, UploadQuery};
pub use savepoints::{
    SavepointMode, SavepointRecord, SavepointStatus, StateItem, StatePage, StateQuery, TriggerSavepoint,
};
pub use streams::{
    AppendBody, Appended, NewRecord, NewStream, ReadBody, ReadQuery, StoredRecord, StreamInfo,
};
pub use tenants::{
    KafkaGrant, KafkaGrants, NewTenant, NewToken, Quotas, RotateTokens, Rotated, ServerKafkaConnection,
    Tenant, TenantSettings, TenantView, TenantWithToken, TokenBody, TokenInfo, Usage,
};
pub use workers::Worker;

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
    /// `ok` when the server serves; otherwise the store's state (and the status is 503).
    pub status: String,
    /// The store: `ok`, `reopening` (it met an I/O error, such as a full disk; the runs are
    /// stopped and it is being reopened) or `failed` (reopening it failed; retried).
    pub store: String,
    /// Why the store is not `ok`: the I/O error, then the last error of reopening it.
    pub store_error: Option<String>,
    /// Times the store was reopened since the server started.
    pub store_reopens: u64,
    /// The I/O error that made the store reopen last.
    pub store_last_failure: Option<String>,
    /// Bytes free on the data directory's disk (none when it cannot be measured).
    pub disk_free_bytes: Option<u64>,
    /// Bytes kept free on that disk: writes that would leave less answer 507.
    pub disk_reserved_bytes: Option<u64>,
}

impl From<crate::server::Health> for Health {
    fn from(h: crate::server::Health) -> Self {
        Health {
            status: h.store.state.as_str().into(),
            store: h.store.state.as_str().into(),
            store_error: h.store.error,
            store_reopens: h.store.reopens,
            store_last_failure: h.store.last_failure,
            disk_free_bytes: h.disk.map(|d| d.free_bytes),
            disk_reserved_bytes: h.disk.map(|d| d.reserved_bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::json;

    use super::*;
    use crate::server;

    /// The API's form of `domain` serialises exactly as the service's type does (what the
    /// API answered before the types were split), and reads back.
    fn same_json<D, A>(domain: D)
    where
        D: Serialize + Clone + Into<A>,
        A: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
    {
        let expected = serde_json::to_value(domain.clone()).unwrap();
        let api: A = domain.into();
        let json = serde_json::to_value(&api).unwrap();
        assert_eq!(json, expected);
        assert_eq!(serde_json::from_value::<A>(json).unwrap(), api);
    }

    #[test]
    fn bodies_keep_the_services_json() {
        let quotas = server::tenants::Quotas::default();
        same_json::<_, Quotas>(quotas.clone());
        same_json::<_, Tenant>(server::tenants::Tenant {
            id: "0123456789abcdef".into(),
            name: "acme".into(),
            created_ms: 1,
            quotas,
            disabled_ms: Some(2),
            suspended_jobs: vec!["ab".repeat(16)],
            kafka: vec![server::tenants::KafkaGrant {
                connection: "main".into(),
                topic_prefixes: vec!["acme.".into()],
                group_prefixes: vec![],
            }],
            manage_own_tokens: true,
        });
        let spec: crate::plan::JobSpec = serde_json::from_value(json!({
            "name": "j",
            "nodes": [{ "id": "s", "kind": "source", "connector": "generator" }]
        }))
        .unwrap();
        for status in [server::jobs::JobStatus::Running, server::jobs::JobStatus::Canceled] {
            same_json::<_, JobRecord>(server::jobs::JobRecord {
                id: "ab".repeat(16),
                tenant: "0123456789abcdef".into(),
                name: "j".into(),
                status,
                error: Some("boom".into()),
                created_ms: 1,
                start_ms: Some(2),
                end_ms: None,
                restarts: 3,
                subtasks: 1,
                spec: spec.clone(),
                restored_from: None,
                unconfirmed_resumes: 0,
                version: 2,
                versions: Vec::new(),
                upgrade: Some(server::jobs::Upgrade {
                    from_version: 1,
                    to_version: 2,
                    phase: server::jobs::UpgradePhase::Probation,
                    savepoint: Some("cd".repeat(16)),
                    grace_period_ms: 10,
                    probation_until_ms: Some(20),
                    allow_non_restored_state: false,
                    started_ms: 5,
                    rollback_reason: None,
                    restore_checkpoint: Some(3),
                }),
            });
        }
        same_json::<_, SubtaskLive>(server::jobs::SubtaskLive {
            subtask: 1,
            backpressure: 0.5,
            ..Default::default()
        });
        for mode in [None, Some(server::savepoints::SavepointMode::Drain)] {
            same_json::<_, SavepointRecord>(server::savepoints::SavepointRecord {
                id: "cd".repeat(16),
                tenant: "0123456789abcdef".into(),
                job: "ab".repeat(16),
                job_name: "j".into(),
                mode,
                status: server::savepoints::SavepointStatus::Pending,
                checkpoint: Some(4),
                error: None,
                created_ms: 1,
                completed_ms: None,
                bytes: 10,
                entries: 2,
                origin: None,
                description: None,
            });
        }
        same_json::<_, Module>(server::registry::Module {
            id: "ef".repeat(32),
            name: "m".into(),
            size: 3,
            created_ms: 1,
            exports: vec!["weir:operator/operator@0.2.0".into()],
        });
        same_json::<_, StreamInfo>(server::streams::StreamInfo {
            name: "s".into(),
            partitions: 2,
            end_offsets: vec![0, 5],
        });
        same_json::<_, Appended>(server::streams::Appended { partition: 1, offset: 7 });
        // Keys and values are JSON text (no PartialEq, no `from_value`): compared as text.
        let raw = |text: &str| serde_json::value::RawValue::from_string(text.to_string()).unwrap();
        let domain = server::streams::StoredRecord {
            partition: 0,
            offset: 1,
            key: raw("null"),
            value: raw(r#"{"a":[1]}"#),
            timestamp: -1,
        };
        let expected = serde_json::to_string(&domain).unwrap();
        let api: StoredRecord = domain.into();
        assert_eq!(serde_json::to_string(&api).unwrap(), expected);
        let back: StoredRecord = serde_json::from_str(&expected).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), expected);
        assert_eq!(expected, r#"{"partition":0,"offset":1,"key":null,"value":{"a":[1]},"timestamp":-1}"#);
        same_json::<_, Usage>(server::Usage { jobs: 1, subtasks: 2, storage_bytes: 3, buffered_bytes: 4 });
        same_json::<_, StatePage>(server::state_pages::StatePage {
            operator: "count".into(),
            data: vec![server::state_pages::StateItem {
                key_group: Some(3),
                subtask: None,
                state: "counts".into(),
                key: json!("to"),
                field: None,
                value: json!(2),
            }],
            next: Some("3.1".into()),
        });
    }

    #[test]
    fn requests_reach_the_service_unchanged() {
        let mode: SavepointMode = serde_json::from_value(json!("keep_running")).unwrap();
        assert_eq!(
            server::savepoints::SavepointMode::from(mode),
            server::savepoints::SavepointMode::KeepRunning
        );
        let quotas: Quotas = serde_json::from_value(json!({ "max_jobs": 3 })).unwrap();
        let quotas = server::tenants::Quotas::from(quotas);
        assert_eq!(quotas.max_jobs, 3);
        assert_eq!(quotas.max_subtasks, server::tenants::Quotas::default().max_subtasks);
        let record: NewRecord = serde_json::from_value(json!({ "value": 1, "partition": 0 })).unwrap();
        let record = server::streams::NewRecord::try_from(record).unwrap();
        assert_eq!((record.key, record.value, record.partition), (vec![], vec![1], Some(0)));
    }
}
