//! A job's operator logs (issue 42): every line its guests log or write to stdout and
//! stderr, numbered, kept in a ring of at most the tenant's `max_log_bytes_per_job` bytes,
//! durable across server restarts and charged to the tenant's storage like its job rows.
//! Lines arrive in memory ([`JobLogs`], the runtime's [`LogSink`]) and are written to
//! `weir.job_logs` ((tenant, job, seq) → JSON) by the job's sampler about once a second and
//! when a run ends; a reader sees both. Followers get new lines as they arrive.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redb::{ReadableDatabase as _, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use utoipa::ToSchema;

use crate::guest::logs::{LogLevel, LogLine, LogSink};
use crate::server::codec::{decode_record, encode_record};
use crate::server::error::{ServerError, ServerResult};
use crate::server::ledger::charge_row;

/// (tenant, job id, sequence number) → line (JSON).
pub(crate) const LOGS: TableDefinition<'_, (&str, &str, u64), &[u8]> = TableDefinition::new("weir.job_logs");

/// One kept line: its number in the job's log and the line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StoredLine {
    /// Its number in the job's log (1 for the first line ever; never reused).
    pub seq: u64,
    /// The line.
    #[serde(flatten)]
    pub line: LogLine,
}

/// Which lines a reader wants.
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    /// Only this node's.
    pub node: Option<String>,
    /// Only this subtask's.
    pub subtask: Option<u32>,
    /// Only lines at least this important.
    pub level: Option<LogLevel>,
    /// Only lines after this number.
    pub after: Option<u64>,
    /// Only lines at or after this time (unix ms).
    pub since_ms: Option<u64>,
}

impl LogFilter {
    /// `line` passes the filter.
    pub fn matches(&self, line: &StoredLine) -> bool {
        self.after.is_none_or(|a| line.seq > a)
            && self.since_ms.is_none_or(|t| line.line.time_ms >= t)
            && self.node.as_ref().is_none_or(|n| *n == line.line.node)
            && self.subtask.is_none_or(|s| s == line.line.subtask)
            && self.level.is_none_or(|l| line.line.level.at_least(l))
    }
}

/// How often the server's own log says that a job's operators logged past their rate.
const SUMMARY_EVERY: Duration = Duration::from_secs(10);

/// A job's log as it runs: lines not yet written, followers, and what was dropped.
#[derive(Debug)]
pub struct JobLogs {
    tenant: String,
    job: String,
    /// The ring's bound, in bytes of stored rows.
    max_bytes: u64,
    state: Mutex<State>,
    follow: broadcast::Sender<StoredLine>,
    /// Lines dropped: over an instance's rate, or over the ring before they were written.
    dropped: AtomicU64,
}

#[derive(Debug)]
struct State {
    next_seq: u64,
    /// Lines not yet written, oldest first, and their bytes.
    unwritten: VecDeque<StoredLine>,
    unwritten_bytes: u64,
    /// Bytes of the job's rows in the table (`None` until counted).
    stored_bytes: Option<u64>,
    /// Dropped since the last summary in the server's log, and when that was.
    unreported: u64,
    reported_at: Option<Instant>,
    /// (node, level; `None`: dropped) → lines since the metrics were last told.
    uncounted: BTreeMap<(String, Option<LogLevel>), u64>,
}

fn db_err(e: impl std::fmt::Display) -> ServerError {
    ServerError::internal(e)
}

/// Bytes a row of a line costs the tenant.
fn row_bytes(tenant: &str, job: &str, value_len: usize) -> u64 {
    weir_store::entry_bytes(tenant.len() + job.len() + 8, value_len).max(0) as u64
}

impl JobLogs {
    /// The log of job `job` of `tenant`, numbering on from the lines already stored.
    pub fn open(store: &weir_store::Store, tenant: &str, job: &str, max_bytes: u64) -> ServerResult<Self> {
        let txn = store.database()?.begin_read().map_err(db_err)?;
        let last = match txn.open_table(LOGS) {
            Ok(t) => t
                .range((tenant, job, 0)..=(tenant, job, u64::MAX))
                .map_err(db_err)?
                .next_back()
                .transpose()
                .map_err(db_err)?
                .map_or(0, |(k, _)| k.value().2),
            Err(redb::TableError::TableDoesNotExist(_)) => 0,
            Err(e) => return Err(db_err(e)),
        };
        let (follow, _) = broadcast::channel(1024);
        Ok(JobLogs {
            tenant: tenant.to_string(),
            job: job.to_string(),
            max_bytes,
            state: Mutex::new(State {
                next_seq: last + 1,
                unwritten: VecDeque::new(),
                unwritten_bytes: 0,
                stored_bytes: None,
                unreported: 0,
                reported_at: None,
                uncounted: BTreeMap::new(),
            }),
            follow,
            dropped: AtomicU64::new(0),
        })
    }

    /// New lines as they arrive.
    pub fn subscribe(&self) -> broadcast::Receiver<StoredLine> {
        self.follow.subscribe()
    }

    /// Lines dropped so far (over an instance's rate, or over the ring before written).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The lines not yet written that pass `filter`, oldest first.
    pub fn unwritten(&self, filter: &LogFilter) -> Vec<StoredLine> {
        let Ok(state) = self.state.lock() else { return Vec::new() };
        state.unwritten.iter().filter(|l| filter.matches(l)).cloned().collect()
    }

    /// Writes the lines that arrived since the last call, charged to the tenant, and drops
    /// the oldest rows past the ring's bound.
    pub fn flush(&self, store: &weir_store::Store) -> ServerResult<()> {
        let (lines, stored) = {
            let Ok(state) = self.state.lock() else { return Ok(()) };
            (state.unwritten.iter().cloned().collect::<Vec<_>>(), state.stored_bytes)
        };
        if lines.is_empty() && stored.is_some() {
            return Ok(());
        }
        let (tenant, job) = (self.tenant.as_str(), self.job.as_str());
        let key_len = tenant.len() + job.len() + 8;
        let txn = store.database()?.begin_write().map_err(db_err)?;
        let mut stored = match stored {
            Some(b) => b,
            None => {
                let t = txn.open_table(LOGS).map_err(db_err)?;
                let mut sum = 0;
                for row in t.range((tenant, job, 0)..=(tenant, job, u64::MAX)).map_err(db_err)? {
                    sum += row_bytes(tenant, job, row.map_err(db_err)?.1.value().len());
                }
                sum
            }
        };
        let last = lines.last().map(|l| l.seq);
        {
            let mut t = txn.open_table(LOGS).map_err(db_err)?;
            for line in &lines {
                let value = encode_record(line)?;
                t.insert((tenant, job, line.seq), value.as_slice()).map_err(db_err)?;
                charge_row(&txn, tenant, key_len, (None, Some(value.len())), 0, false)?;
                stored += row_bytes(tenant, job, value.len());
            }
            let mut old = Vec::new();
            if stored > self.max_bytes {
                for row in t.range((tenant, job, 0)..=(tenant, job, u64::MAX)).map_err(db_err)? {
                    let (k, v) = row.map_err(db_err)?;
                    let len = v.value().len();
                    old.push((k.value().2, len));
                    stored -= row_bytes(tenant, job, len).min(stored);
                    if stored <= self.max_bytes {
                        break;
                    }
                }
            }
            for (seq, len) in old {
                t.remove((tenant, job, seq)).map_err(db_err)?;
                charge_row(&txn, tenant, key_len, (Some(len), None), 0, false)?;
            }
        }
        txn.commit().map_err(db_err)?;
        if let Ok(mut state) = self.state.lock() {
            state.stored_bytes = Some(stored);
            if let Some(last) = last {
                while state.unwritten.front().is_some_and(|l| l.seq <= last) {
                    let l = state.unwritten.pop_front().expect("a line");
                    state.unwritten_bytes -= l.line.message.len() as u64 + 64;
                }
            }
        }
        Ok(())
    }

    /// Lines kept and dropped per (node, level; `None`: dropped) since the last call.
    pub fn counts(&self) -> BTreeMap<(String, Option<LogLevel>), u64> {
        self.state.lock().map(|mut s| std::mem::take(&mut s.uncounted)).unwrap_or_default()
    }

    fn report_dropped(&self, state: &mut State, node: &str, n: u64) {
        *state.uncounted.entry((node.to_string(), None)).or_default() += n;
        self.dropped.fetch_add(n, Ordering::Relaxed);
        state.unreported += n;
        if state.reported_at.is_none_or(|t| t.elapsed() >= SUMMARY_EVERY) {
            // The server's own log keeps one line per burst, not the lines.
            tracing::warn!(
                tenant = %self.tenant,
                job = %self.job,
                dropped = state.unreported,
                "operators logged past their rate; lines dropped"
            );
            state.unreported = 0;
            state.reported_at = Some(Instant::now());
        }
    }
}

impl LogSink for JobLogs {
    fn append(&self, line: LogLine) {
        let Ok(mut state) = self.state.lock() else { return };
        *state.uncounted.entry((line.node.clone(), Some(line.level))).or_default() += 1;
        let stored = StoredLine { seq: state.next_seq, line };
        state.next_seq += 1;
        state.unwritten_bytes += stored.line.message.len() as u64 + 64;
        state.unwritten.push_back(stored.clone());
        // Not yet written and already past the ring: the oldest go (a writer that cannot
        // keep up never holds more than the ring in memory).
        while state.unwritten_bytes > self.max_bytes {
            let Some(l) = state.unwritten.pop_front() else { break };
            state.unwritten_bytes -= l.line.message.len() as u64 + 64;
            self.report_dropped(&mut state, &l.line.node, 1);
        }
        drop(state);
        let _ = self.follow.send(stored);
    }

    fn dropped(&self, node: &str, subtask: u32, dropped: u64) {
        let _ = subtask;
        if let Ok(mut state) = self.state.lock() {
            self.report_dropped(&mut state, node, dropped);
        }
    }
}

/// The stored lines of job `job` of `tenant` that pass `filter`, oldest first, at most `limit`.
pub(crate) fn list(
    store: &weir_store::Store,
    tenant: &str,
    job: &str,
    filter: &LogFilter,
    limit: usize,
) -> ServerResult<Vec<StoredLine>> {
    let txn = store.database()?.begin_read().map_err(db_err)?;
    let t = match txn.open_table(LOGS) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(db_err(e)),
    };
    let from = filter.after.map_or(0, |a| a.saturating_add(1));
    let mut out = Vec::new();
    for row in t.range((tenant, job, from)..=(tenant, job, u64::MAX)).map_err(db_err)? {
        let (_, v) = row.map_err(db_err)?;
        let line: StoredLine = decode_record(v.value())?;
        if filter.matches(&line) {
            out.push(line);
            if out.len() >= limit {
                break;
            }
        }
    }
    Ok(out)
}

/// Bytes of every tenant's log rows, as [`JobLogs::flush`] charges them (for the recount).
pub(crate) fn rows_per_tenant(txn: &redb::ReadTransaction) -> ServerResult<BTreeMap<String, i64>> {
    super::exceptions::rows_per_tenant_of(txn, LOGS)
}

pub use crate::server::tenants::DEFAULT_LOG_BYTES;

impl super::JobManager {
    /// Job `id`'s log, opened on its first run since the server started (`None` when the
    /// store cannot be read: the run logs to the server's own log).
    pub(super) fn job_logs(&self, tenant: &str, id: &str) -> Option<std::sync::Arc<JobLogs>> {
        let mut logs = self.inner.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(l) = logs.get(id) {
            return Some(l.clone());
        }
        let max_bytes = crate::server::tenants::Tenants::over(&self.inner.store)
            .get(tenant)
            .map_or(DEFAULT_LOG_BYTES, |t| t.quotas.max_log_bytes_per_job);
        match JobLogs::open(&self.inner.store, tenant, id, max_bytes) {
            Ok(l) => {
                let l = std::sync::Arc::new(l);
                logs.insert(id.to_string(), l.clone());
                Some(l)
            }
            Err(e) => {
                tracing::warn!(
                    tenant,
                    job = id,
                    "cannot open the job's log; its operators log to the server's: {e}"
                );
                None
            }
        }
    }

    /// The log of job `id` if it ran since the server started.
    pub(super) fn running_logs(&self, id: &str) -> Option<std::sync::Arc<JobLogs>> {
        self.inner.logs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id).cloned()
    }

    /// Counts what `logs` kept and dropped, and writes what it holds (a failure is logged:
    /// the job goes on).
    pub(super) async fn flush_logs(&self, logs: Option<std::sync::Arc<JobLogs>>) {
        let Some(logs) = logs else { return };
        for ((node, level), n) in logs.counts() {
            self.inner.telemetry.log_lines(&logs.tenant, &logs.job, &node, level.map(LogLevel::name), n);
        }
        let store = self.inner.store.clone();
        let flushed = tokio::task::spawn_blocking(move || logs.flush(&store)).await;
        if let Ok(Err(e)) | Err(e) = flushed.map_err(ServerError::internal) {
            tracing::warn!("cannot write a job's operator log: {e}");
        }
    }

    /// Job `id`'s log lines that pass `filter`, oldest first, at most `limit`: those written
    /// and those still in memory.
    pub fn logs(
        &self,
        tenant: &str,
        id: &str,
        filter: &LogFilter,
        limit: usize,
    ) -> ServerResult<Vec<StoredLine>> {
        self.get(tenant, id)?;
        let mut lines = list(&self.inner.store, tenant, id, filter, limit)?;
        if let Some(logs) = self.running_logs(id) {
            let last = lines.last().map_or(0, |l| l.seq);
            lines.extend(logs.unwritten(filter).into_iter().filter(|l| l.seq > last));
        }
        lines.truncate(limit);
        Ok(lines)
    }

    /// New lines of job `id` as they arrive (`None` when it has not run since the server
    /// started: nothing new will come until it does).
    pub fn follow_logs(
        &self,
        tenant: &str,
        id: &str,
    ) -> ServerResult<Option<broadcast::Receiver<StoredLine>>> {
        self.get(tenant, id)?;
        Ok(self.running_logs(id).map(|l| l.subscribe()))
    }
}
