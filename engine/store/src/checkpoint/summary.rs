//! The checkpoint history of a job in brief ([`HistorySummary`]), kept up to date in the
//! transaction of every change of a history row, so that a history page reads the summary and
//! the rows it shows instead of decoding the whole history.

use redb::{Durability, ReadableTable, WriteTransaction};
use serde::{Deserialize, Serialize};

use crate::checkpoint::history::{decode_meta, read_meta};
use crate::error::StoreError;
use crate::meta::{CheckpointMeta, CheckpointStatus};
use crate::store::Store;
use crate::tables::{CHECKPOINTS, SUMMARIES};

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
///
/// Invariant: every [`Stat`] counts every completed checkpoint (`duration_ms.count` of
/// them); a summary stored before a statistic existed is brought up to it by
/// `Self::backfill`.
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
    /// The summed subtask `persisted_in_flight_bytes` of each completed one.
    #[serde(default)]
    pub persisted_in_flight_bytes: Stat,
    /// Completed ones taken unaligned (by at least one subtask, also after a switch from
    /// aligned).
    #[serde(default)]
    pub unaligned: u64,
    /// Completed ones that at least one subtask switched from aligned to unaligned.
    #[serde(default)]
    pub switched_to_unaligned: u64,
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
            self.persisted_in_flight_bytes
                .add(new.subtasks.iter().map(|s| s.persisted_in_flight_bytes).sum::<u64>() as f64);
            self.unaligned +=
                u64::from(new.subtasks.iter().any(|s| s.unaligned || s.switched_to_unaligned_ms.is_some()));
            self.switched_to_unaligned +=
                u64::from(new.subtasks.iter().any(|s| s.switched_to_unaligned_ms.is_some()));
        }
        if new.status == CheckpointStatus::Failed {
            self.latest_failed = Some(self.latest_failed.map_or(new.id, |l| l.max(new.id)));
        }
    }

    /// Brings a summary stored before the unaligned statistics up to them: the checkpoints it
    /// counted were all aligned and persisted no in-flight data (Weir had no unaligned
    /// checkpoints), so each adds a 0.
    fn backfill(mut self) -> Self {
        let missing = self.duration_ms.count.saturating_sub(self.persisted_in_flight_bytes.count);
        if missing > 0 {
            self.persisted_in_flight_bytes.add(0.0);
            self.persisted_in_flight_bytes.count += missing - 1;
        }
        self
    }
}

/// A stored summary, brought up to the current statistics.
fn decode(bytes: &[u8]) -> Option<HistorySummary> {
    rmp_serde::from_slice::<HistorySummary>(bytes).ok().map(HistorySummary::backfill)
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
    let stored = summaries.get(job)?.and_then(|v| decode(v.value()));
    let summary = match stored {
        Some(mut summary) => {
            for (old, new) in changes {
                summary.apply(old.as_ref(), new);
            }
            summary
        }
        None => recount(&txn.open_table(CHECKPOINTS)?, job)?,
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
                && let Some(summary) = decode(v.value())
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
        read_meta(&txn.open_table(CHECKPOINTS)?, job, id)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::SubtaskStats;

    fn completed(id: u64, subtasks: Vec<SubtaskStats>) -> CheckpointMeta {
        CheckpointMeta {
            status: CheckpointStatus::Completed,
            duration_ms: Some(10.0),
            subtasks,
            ..CheckpointMeta::new("j", id, 1)
        }
    }

    fn subtask(persisted: u64, unaligned: bool, switched: Option<u64>) -> SubtaskStats {
        SubtaskStats {
            unaligned,
            persisted_in_flight_bytes: persisted,
            switched_to_unaligned_ms: switched,
            ..SubtaskStats::default()
        }
    }

    #[test]
    fn completed_checkpoints_count_persisted_in_flight_bytes_and_unaligned_ones() {
        let mut summary = HistorySummary::default();
        summary.apply(None, &completed(1, vec![subtask(0, false, None), subtask(0, false, None)]));
        summary.apply(None, &completed(2, vec![subtask(300, true, None), subtask(200, true, None)]));
        summary.apply(None, &completed(3, vec![subtask(0, false, None), subtask(40, true, Some(17))]));
        // Still in progress: not counted until it completes.
        let in_progress =
            CheckpointMeta { subtasks: vec![subtask(1000, true, None)], ..CheckpointMeta::new("j", 4, 1) };
        summary.apply(None, &in_progress);
        let s = summary.persisted_in_flight_bytes;
        assert_eq!((s.count, s.sum, s.min, s.max), (3, 540.0, 0.0, 500.0));
        assert_eq!((summary.unaligned, summary.switched_to_unaligned), (2, 1));
        summary.apply(
            Some(&in_progress),
            &CheckpointMeta { status: CheckpointStatus::Completed, ..in_progress.clone() },
        );
        let s = summary.persisted_in_flight_bytes;
        assert_eq!((s.count, s.sum, s.max), (4, 1540.0, 1000.0));
        assert_eq!(summary.unaligned, 3);
    }

    /// A summary as stored before the unaligned statistics existed.
    #[derive(Serialize)]
    struct OldSummary {
        total: u64,
        in_progress: u64,
        completed: u64,
        failed: u64,
        latest_completed: Option<u64>,
        latest_failed: Option<u64>,
        duration_ms: Stat,
        state_size: Stat,
        full_size: Stat,
        max_alignment_ms: Stat,
        alignment_bytes: Stat,
    }

    #[test]
    fn an_old_stored_summary_decodes_with_a_zero_for_each_checkpoint_it_counted() {
        let stat = Stat { count: 5, sum: 50.0, min: 1.0, max: 20.0 };
        let old = OldSummary {
            total: 6,
            in_progress: 0,
            completed: 5,
            failed: 1,
            latest_completed: Some(6),
            latest_failed: Some(2),
            duration_ms: stat,
            state_size: stat,
            full_size: stat,
            max_alignment_ms: stat,
            alignment_bytes: stat,
        };
        let mut summary = decode(&rmp_serde::to_vec_named(&old).expect("encoded")).expect("decodes");
        assert_eq!((summary.completed, summary.duration_ms), (5, stat));
        assert_eq!(summary.persisted_in_flight_bytes, Stat { count: 5, sum: 0.0, min: 0.0, max: 0.0 });
        assert_eq!((summary.unaligned, summary.switched_to_unaligned), (0, 0));
        // Then it goes on counting.
        summary.apply(None, &completed(7, vec![subtask(64, true, None)]));
        assert_eq!(summary.persisted_in_flight_bytes, Stat { count: 6, sum: 64.0, min: 0.0, max: 64.0 });
        assert_eq!(summary.unaligned, 1);
        // A current summary is left as it is.
        assert_eq!(decode(&encode(&summary).expect("encoded")), Some(summary));
    }
}
