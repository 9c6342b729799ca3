//! The checkpoint history of a job in brief ([`HistorySummary`]), kept up to date in the
//! transaction of every change of a history row, so that a history page reads the summary and
//! the rows it shows instead of decoding the whole history.

use redb::{Durability, ReadableTable, TableDefinition, WriteTransaction};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{CheckpointMeta, CheckpointStatus};
use crate::error::StoreError;
use crate::store::{CHECKPOINTS, Store, decode_meta};

/// job → [`HistorySummary`] (MessagePack with field names).
pub(crate) const SUMMARIES: TableDefinition<'_, &str, &[u8]> =
    TableDefinition::new("weir.checkpoint_summaries");

/// Count, sum, minimum and maximum of one statistic over completed checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Stat {
    /// Values added.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// The smallest (0 when none).
    pub min: f64,
    /// The largest (0 when none).
    pub max: f64,
}

impl Stat {
    fn add(&mut self, value: f64) {
        if self.count == 0 {
            (self.min, self.max) = (value, value);
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.count += 1;
        self.sum += value;
    }
}

/// A job's checkpoint history in brief: counts by status, the latest completed and failed
/// ids, and statistics over the completed checkpoints.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HistorySummary {
    /// History rows.
    pub total: u64,
    /// Rows in progress.
    pub in_progress: u64,
    /// Rows completed.
    pub completed: u64,
    /// Rows failed.
    pub failed: u64,
    /// The newest completed checkpoint.
    pub latest_completed: Option<u64>,
    /// The newest failed checkpoint.
    pub latest_failed: Option<u64>,
    /// `duration_ms` of the completed ones.
    pub duration_ms: Stat,
    /// `state_size` of the completed ones.
    pub state_size: Stat,
    /// `full_size` of the completed ones.
    pub full_size: Stat,
    /// The largest subtask `alignment_ms` of each completed one.
    pub max_alignment_ms: Stat,
    /// The summed subtask `alignment_bytes` of each completed one.
    pub alignment_bytes: Stat,
}

impl HistorySummary {
    fn count(&mut self, status: CheckpointStatus, up: bool) {
        let field = match status {
            CheckpointStatus::InProgress => &mut self.in_progress,
            CheckpointStatus::Completed => &mut self.completed,
            CheckpointStatus::Failed => &mut self.failed,
        };
        *field = if up { *field + 1 } else { field.saturating_sub(1) };
    }

    /// Accounts for a history row that was `old` (none: a new row) and is now `new`.
    pub(crate) fn apply(&mut self, old: Option<&CheckpointMeta>, new: &CheckpointMeta) {
        match old {
            Some(old) => self.count(old.status, false),
            None => self.total += 1,
        }
        self.count(new.status, true);
        let was_completed = old.is_some_and(|o| o.status == CheckpointStatus::Completed);
        if new.status == CheckpointStatus::Completed && !was_completed {
            self.latest_completed = Some(self.latest_completed.map_or(new.id, |l| l.max(new.id)));
            self.duration_ms.add(new.duration_ms.unwrap_or_default());
            self.state_size.add(new.state_size as f64);
            self.full_size.add(new.full_size as f64);
            self.max_alignment_ms.add(new.subtasks.iter().map(|s| s.alignment_ms).fold(0.0, f64::max));
            self.alignment_bytes.add(new.subtasks.iter().map(|s| s.alignment_bytes).sum::<u64>() as f64);
        }
        if new.status == CheckpointStatus::Failed {
            self.latest_failed = Some(self.latest_failed.map_or(new.id, |l| l.max(new.id)));
        }
    }
}

fn encode(summary: &HistorySummary) -> Result<Vec<u8>, StoreError> {
    rmp_serde::to_vec_named(summary).map_err(|e| StoreError::Encode {
        what: "a checkpoint history summary".into(),
        detail: e.to_string(),
    })
}

/// Recounts `job`'s summary from its history rows (a store from before summaries).
fn recount(
    table: &impl ReadableTable<(&'static str, u64), &'static [u8]>,
    job: &str,
) -> Result<HistorySummary, StoreError> {
    let mut summary = HistorySummary::default();
    for item in table.range((job, 0)..=(job, u64::MAX))? {
        let (key, bytes) = item?;
        summary.apply(None, &decode_meta(job, key.value().1, bytes.value())?);
    }
    Ok(summary)
}

/// Applies the history-row changes `(old, new)` of `job` made in `txn` to its summary (a
/// missing summary is recounted from the rows, which already hold the changes).
pub(crate) fn update(
    txn: &WriteTransaction,
    job: &str,
    changes: &[(Option<CheckpointMeta>, CheckpointMeta)],
) -> Result<(), StoreError> {
    if changes.is_empty() {
        return Ok(());
    }
    let mut summaries = txn.open_table(SUMMARIES)?;
    let stored = summaries.get(job)?.map(|v| rmp_serde::from_slice::<HistorySummary>(v.value()));
    let summary = match stored {
        Some(Ok(mut summary)) => {
            for (old, new) in changes {
                summary.apply(old.as_ref(), new);
            }
            summary
        }
        _ => recount(&txn.open_table(CHECKPOINTS)?, job)?,
    };
    summaries.insert(job, encode(&summary)?.as_slice())?;
    Ok(())
}

impl Store {
    /// The summary of `job`'s checkpoint history (recounted, and stored, for a job whose
    /// history predates summaries).
    pub fn history_summary(&self, job: &str) -> Result<HistorySummary, StoreError> {
        {
            let txn = self.read_txn()?;
            if let Some(v) = txn.open_table(SUMMARIES)?.get(job)?
                && let Ok(summary) = rmp_serde::from_slice(v.value())
            {
                return Ok(summary);
            }
        }
        let txn = self.write_txn(Durability::None)?;
        let summary = recount(&txn.open_table(CHECKPOINTS)?, job)?;
        txn.open_table(SUMMARIES)?.insert(job, encode(&summary)?.as_slice())?;
        txn.commit()?;
        Ok(summary)
    }

    /// History row `id` of `job`, without its manifest.
    pub fn history_row(&self, job: &str, id: u64) -> Result<Option<CheckpointMeta>, StoreError> {
        let txn = self.read_txn()?;
        crate::store::read_meta(&txn.open_table(CHECKPOINTS)?, job, id)
    }

    /// Up to `limit` history rows of `job`, newest first, read by key range.
    pub fn history_page(&self, job: &str, limit: usize) -> Result<Vec<CheckpointMeta>, StoreError> {
        let txn = self.read_txn()?;
        let table = txn.open_table(CHECKPOINTS)?;
        let mut out = Vec::new();
        for item in table.range((job, 0)..=(job, u64::MAX))?.rev().take(limit) {
            let (key, bytes) = item?;
            out.push(decode_meta(job, key.value().1, bytes.value())?);
        }
        Ok(out)
    }
}
