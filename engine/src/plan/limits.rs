//! Server-wide limits on what a job spec may ask for (`plan_limits` in the server's
//! config). A hosted tenant's spec may lower any of them but never raise them: every value
//! here bounds memory or CPU that one spec could otherwise multiply without end (the same
//! edge's p × p channels at a huge capacity, a generator line of four billion words, restarts
//! in a tight loop).
//!
//! How a spec meets a limit: a value the spec gives above a maximum is refused with
//! [`PlanError::Limit`] (naming the field, its value, the limit and its config key); a
//! default above a maximum is lowered to it, so that a spec that sets nothing always runs;
//! a value below a minimum (restart delay, checkpoint interval) is raised to it, since a
//! floor on a pause changes only the pace, never what the job computes.

use serde::{Deserialize, Serialize};

use super::{JobSpec, MIN_CHANNEL_CAPACITY_BYTES, NodeKind, Partitioning, PlanError, Settings};
use crate::connectors::{DEFAULT_BATCH_BYTES, DEFAULT_BATCH_SIZE};

/// The generator's default `words_per_line`.
const DEFAULT_WORDS_PER_LINE: u64 = 8;

/// What a job spec may ask for on this server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanLimits {
    /// Edges of one job.
    pub max_edges: u64,
    /// Channels of one job: over its edges, upstream × downstream subtasks for a hash,
    /// rebalance or broadcast edge, one per subtask for a forward edge.
    pub max_channels: u64,
    /// `settings.channel_capacity`, in batches.
    pub max_channel_capacity: u64,
    /// Batches the job's channels can hold together (channels × `channel_capacity`): with the
    /// batch size, what bounds the memory in flight between subtasks.
    pub max_buffered_batches: u64,
    /// `settings.channel_capacity_bytes`.
    pub max_channel_capacity_bytes: u64,
    /// Bytes the job's local channels can hold together (channels ×
    /// `channel_capacity_bytes`): the memory in flight between its subtasks. A spec that
    /// leaves `channel_capacity_bytes` at its default gets it lowered to fit (to no less
    /// than 64 KiB).
    pub max_buffered_bytes: u64,
    /// A source's `batch_size`, in records.
    pub max_batch_size: u64,
    /// A source's `batch_bytes`: a batch is cut once its keys and values reach it.
    pub max_batch_bytes: u64,
    /// `settings.max_output_bytes_per_call`.
    pub max_output_bytes_per_call: u64,
    /// The generator's `words_per_line` (one line is one record held whole in memory).
    pub max_words_per_line: u64,
    /// `settings.restart.attempts`.
    pub max_restart_attempts: u64,
    /// `settings.restart.delay_ms` is raised to at least this.
    pub min_restart_delay_ms: u64,
    /// `settings.checkpoint.interval_ms` is raised to at least this.
    pub min_checkpoint_interval_ms: u64,
    /// `settings.checkpoint.max_concurrent`.
    pub max_concurrent_checkpoints: u64,
    /// `settings.checkpoint.retained`.
    pub max_retained_checkpoints: u64,
}

impl Default for PlanLimits {
    fn default() -> Self {
        PlanLimits {
            max_edges: 256,
            max_channels: 4096,
            max_channel_capacity: 256,
            max_buffered_batches: 16_384,
            max_channel_capacity_bytes: 64 << 20,
            max_buffered_bytes: 1 << 30,
            max_batch_size: 8192,
            max_batch_bytes: 16 << 20,
            max_output_bytes_per_call: 64 << 20,
            max_words_per_line: 10_000,
            max_restart_attempts: 100,
            min_restart_delay_ms: 100,
            min_checkpoint_interval_ms: 100,
            max_concurrent_checkpoints: 4,
            max_retained_checkpoints: 100,
        }
    }
}

/// One value against one maximum: kept when within it, lowered to it when it is the default
/// (the spec did not ask for it), refused otherwise.
fn cap(
    value: u64,
    default: u64,
    limit: u64,
    what: impl FnOnce() -> String,
    key: &'static str,
) -> Result<u64, PlanError> {
    if value <= limit {
        Ok(value)
    } else if value == default {
        Ok(limit)
    } else {
        Err(PlanError::Limit { what: what(), value, limit, key, note: "" })
    }
}

fn to_u64(v: usize) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

impl PlanLimits {
    /// Holds `spec` to these limits, in place: lowers defaults and raises minimums (the
    /// stored spec then shows what runs), refuses what the spec asked above a maximum. Runs
    /// before planning, so a refused spec compiles nothing; what it cannot judge yet (an
    /// unknown node, a malformed config) is left for the planner to report. Invariant T4.
    pub fn apply(&self, spec: &mut JobSpec) -> Result<(), PlanError> {
        // Whether the spec asked for its channel bytes: judged before a cap lowers them.
        let bytes_asked = spec.settings.channel_capacity_bytes != Settings::default().channel_capacity_bytes;
        self.apply_settings(&mut spec.settings)?;
        let edges = to_u64(spec.edges.len());
        if edges > self.max_edges {
            return Err(PlanError::Limit {
                what: "the job's edge count".into(),
                value: edges,
                limit: self.max_edges,
                key: "max_edges",
                note: "",
            });
        }
        // A parallelism out of range is the planner's to report (its error names the node).
        let max_p = spec.settings.max_parallelism;
        if spec.nodes.iter().any(|n| n.parallelism == 0 || n.parallelism > max_p) {
            return Ok(());
        }
        let channels = channel_count(spec);
        if channels > self.max_channels {
            return Err(PlanError::Limit {
                what: "the job's channel count".into(),
                value: channels,
                limit: self.max_channels,
                key: "max_channels",
                note: "; a hash, rebalance or broadcast edge builds upstream × downstream channels, a forward edge one per subtask",
            });
        }
        let buffered = channels.saturating_mul(to_u64(spec.settings.channel_capacity));
        if buffered > self.max_buffered_batches {
            return Err(PlanError::Limit {
                what: "the job's channel count × settings.channel_capacity".into(),
                value: buffered,
                limit: self.max_buffered_batches,
                key: "max_buffered_batches",
                note: "; lower channel_capacity or the parallelism",
            });
        }
        self.apply_buffered_bytes(&mut spec.settings, channels, bytes_asked)?;
        for node in spec.nodes.iter_mut().filter(|n| n.kind == NodeKind::Source) {
            self.cap_config(
                node,
                "batch_bytes",
                to_u64(DEFAULT_BATCH_BYTES),
                self.max_batch_bytes,
                "max_batch_bytes",
            )?;
            let words = node.connector.as_deref() == Some("generator")
                && node.config.get("mode").and_then(|m| m.as_str()) == Some("words");
            self.cap_config(
                node,
                "batch_size",
                to_u64(DEFAULT_BATCH_SIZE),
                self.max_batch_size,
                "max_batch_size",
            )?;
            if words {
                self.cap_config(
                    node,
                    "words_per_line",
                    DEFAULT_WORDS_PER_LINE,
                    self.max_words_per_line,
                    "max_words_per_line",
                )?;
            }
        }
        Ok(())
    }

    /// Channels × `channel_capacity_bytes` within `max_buffered_bytes`: the default lowered
    /// to fit, a value the spec gave refused.
    fn apply_buffered_bytes(&self, s: &mut Settings, channels: u64, asked: bool) -> Result<(), PlanError> {
        let buffered = channels.saturating_mul(s.channel_capacity_bytes);
        if buffered <= self.max_buffered_bytes {
            return Ok(());
        }
        let fits = self.max_buffered_bytes / channels.max(1);
        if !asked && fits >= MIN_CHANNEL_CAPACITY_BYTES {
            s.channel_capacity_bytes = fits;
            return Ok(());
        }
        Err(PlanError::Limit {
            what: "the job's channel count × settings.channel_capacity_bytes".into(),
            value: buffered,
            limit: self.max_buffered_bytes,
            key: "max_buffered_bytes",
            note: "; lower channel_capacity_bytes or the parallelism",
        })
    }

    fn apply_settings(&self, s: &mut Settings) -> Result<(), PlanError> {
        let d = Settings::default();
        s.channel_capacity_bytes = cap(
            s.channel_capacity_bytes,
            d.channel_capacity_bytes,
            self.max_channel_capacity_bytes,
            || "settings.channel_capacity_bytes".into(),
            "max_channel_capacity_bytes",
        )?;
        s.channel_capacity = to_usize(cap(
            to_u64(s.channel_capacity),
            to_u64(d.channel_capacity),
            self.max_channel_capacity,
            || "settings.channel_capacity".into(),
            "max_channel_capacity",
        )?);
        s.max_output_bytes_per_call = cap(
            s.max_output_bytes_per_call,
            d.max_output_bytes_per_call,
            self.max_output_bytes_per_call,
            || "settings.max_output_bytes_per_call".into(),
            "max_output_bytes_per_call",
        )?;
        // The strategy must hold together; its counts are held to `max_restart_attempts`
        // and its delays raised to `min_restart_delay_ms`.
        s.restart.resolve().map_err(PlanError::Settings)?;
        let r = &mut s.restart;
        for (count, name) in [(&mut r.attempts, "attempts"), (&mut r.max_failures, "max_failures")] {
            if let Some(n) = count {
                *n = u32::try_from(cap(
                    u64::from(*n),
                    u64::MAX,
                    self.max_restart_attempts,
                    || format!("settings.restart.{name}"),
                    "max_restart_attempts",
                )?)
                .unwrap_or(u32::MAX);
            }
        }
        for ms in [&mut r.delay_ms, &mut r.initial_delay_ms, &mut r.max_delay_ms].into_iter().flatten() {
            *ms = (*ms).max(self.min_restart_delay_ms);
        }
        let c = &mut s.checkpoint;
        if let Some(ms) = &mut c.interval_ms {
            *ms = (*ms).max(self.min_checkpoint_interval_ms);
        }
        c.max_concurrent = to_usize(cap(
            to_u64(c.max_concurrent),
            to_u64(d.checkpoint.max_concurrent),
            self.max_concurrent_checkpoints,
            || "settings.checkpoint.max_concurrent".into(),
            "max_concurrent_checkpoints",
        )?);
        c.retained = to_usize(cap(
            to_u64(c.retained),
            to_u64(d.checkpoint.retained),
            self.max_retained_checkpoints,
            || "settings.checkpoint.retained".into(),
            "max_retained_checkpoints",
        )?);
        Ok(())
    }

    /// Holds a source's numeric config field: refused when given above `limit`, written as
    /// `limit` when absent and its default is above it.
    fn cap_config(
        &self,
        node: &mut super::NodeSpec,
        field: &str,
        default: u64,
        limit: u64,
        key: &'static str,
    ) -> Result<(), PlanError> {
        let Some(config) = node.config.as_object_mut() else { return Ok(()) };
        match config.get(field).map(|v| v.as_u64()) {
            Some(Some(value)) if value > limit => Err(PlanError::Limit {
                what: format!("node `{}`: config.{field}", node.id),
                value,
                limit,
                key,
                note: "",
            }),
            None if default > limit => {
                config.insert(field.into(), limit.into());
                Ok(())
            }
            // Within the limit, or not a number (the planner says what is wrong with it).
            _ => Ok(()),
        }
    }
}

/// The channels the runtime builds for `spec` (see `runtime::attempt`): per edge,
/// upstream × downstream parallelism, or the downstream parallelism for a forward edge
/// (explicit, or the default between nodes of equal parallelism). Edges to unknown nodes
/// count nothing (the planner refuses them).
pub fn channel_count(spec: &JobSpec) -> u64 {
    let parallelism = |id: &str| spec.nodes.iter().find(|n| n.id == id).map(|n| u64::from(n.parallelism));
    spec.edges.iter().fold(0u64, |sum, e| {
        let (Some(fp), Some(tp)) = (parallelism(&e.from), parallelism(&e.to)) else { return sum };
        let forward = match e.partitioning {
            Some(p) => p == Partitioning::Forward,
            None => fp == tp,
        };
        sum.saturating_add(if forward { tp } else { fp.saturating_mul(tp) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(settings: serde_json::Value, source_config: serde_json::Value) -> JobSpec {
        let mut config = serde_json::json!({ "mode": "words", "lines": 10 });
        for (k, v) in source_config.as_object().unwrap() {
            config[k] = v.clone();
        }
        serde_json::from_value(serde_json::json!({
            "nodes": [
                { "id": "in", "kind": "source", "connector": "generator", "parallelism": 4, "config": config },
                { "id": "out", "kind": "sink", "connector": "blackhole", "parallelism": 2 } ],
            "edges": [ { "from": "in", "to": "out", "partitioning": "hash" } ],
            "settings": settings
        }))
        .unwrap()
    }

    #[test]
    fn a_spec_may_lower_a_limit_but_not_raise_it() {
        let limits = PlanLimits { max_channel_capacity: 16, max_words_per_line: 4, ..PlanLimits::default() };
        let mut lowered =
            spec(serde_json::json!({ "channel_capacity": 2 }), serde_json::json!({ "words_per_line": 3 }));
        limits.apply(&mut lowered).unwrap();
        assert_eq!(lowered.settings.channel_capacity, 2);
        assert_eq!(lowered.nodes[0].config["words_per_line"], 3);
        let mut raised = spec(serde_json::json!({ "channel_capacity": 17 }), serde_json::json!({}));
        let e = limits.apply(&mut raised).unwrap_err().to_string();
        assert_eq!(
            e,
            "settings.channel_capacity 17 is above this server's limit of 16 (plan_limits.max_channel_capacity)"
        );
        // The default words_per_line (8) is above the limit: lowered, not refused.
        let mut default = spec(serde_json::json!({}), serde_json::json!({}));
        limits.apply(&mut default).unwrap();
        assert_eq!(default.nodes[0].config["words_per_line"], 4);
    }

    #[test]
    fn channel_bytes_are_held_to_the_job_wide_budget() {
        let limits = PlanLimits { max_buffered_bytes: 8 << 20, ..PlanLimits::default() };
        // 8 channels at the default 8 MiB: lowered to 1 MiB each.
        let mut default = spec(serde_json::json!({}), serde_json::json!({}));
        limits.apply(&mut default).unwrap();
        assert_eq!(default.settings.channel_capacity_bytes, 1 << 20);
        // A default first lowered by max_channel_capacity_bytes is still the spec's default.
        let capped = PlanLimits { max_channel_capacity_bytes: 4 << 20, ..limits.clone() };
        let mut default = spec(serde_json::json!({}), serde_json::json!({}));
        capped.apply(&mut default).unwrap();
        assert_eq!(default.settings.channel_capacity_bytes, 1 << 20);
        // Asked for: refused, naming the key.
        let mut asked = spec(serde_json::json!({ "channel_capacity_bytes": 2 << 20 }), serde_json::json!({}));
        let e = limits.apply(&mut asked).unwrap_err().to_string();
        assert!(e.contains("plan_limits.max_buffered_bytes"), "{e}");
        // A source's batch_bytes above the limit is refused; its default lowered.
        let small = PlanLimits { max_batch_bytes: 4096, ..PlanLimits::default() };
        let mut fat = spec(serde_json::json!({}), serde_json::json!({ "batch_bytes": 8192 }));
        let e = small.apply(&mut fat).unwrap_err().to_string();
        assert!(e.contains("config.batch_bytes") && e.contains("plan_limits.max_batch_bytes"), "{e}");
        let mut default = spec(serde_json::json!({}), serde_json::json!({}));
        small.apply(&mut default).unwrap();
        assert_eq!(default.nodes[0].config["batch_bytes"], 4096);
    }

    #[test]
    fn channels_count_as_the_runtime_builds_them() {
        let s = spec(serde_json::json!({}), serde_json::json!({}));
        assert_eq!(channel_count(&s), 8);
        let mut forward = s.clone();
        forward.nodes[1].parallelism = 4;
        forward.edges[0].partitioning = None;
        assert_eq!(channel_count(&forward), 4);
    }

    #[test]
    fn minimums_are_raised() {
        let mut s = spec(
            serde_json::json!({ "restart": { "delay_ms": 0 }, "checkpoint": { "interval_ms": 1 } }),
            serde_json::json!({}),
        );
        PlanLimits::default().apply(&mut s).unwrap();
        assert_eq!(s.settings.restart.delay_ms, Some(100));
        assert_eq!(s.settings.checkpoint.interval_ms, Some(100));
    }
}
