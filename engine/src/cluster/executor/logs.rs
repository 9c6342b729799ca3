//! A part's operator log lines on their way to the controller (issue 42): the subtasks here
//! log into a [`ShippedLogs`] (each instance held to its rate first), which the part sends
//! over the session every [`LOGS_EVERY`] and once more before `Ended`. The controller keeps
//! them in the job's log, as it does its own subtasks' lines. Between two messages a part
//! holds at most [`MAX_SHIPPED_LOG_BYTES`] of text; what is over it is dropped and counted.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::cluster::protocol::{AttemptId, LOGS_EVERY, MAX_SHIPPED_LOG_BYTES, ToController};
use crate::guest::logs::{LogLine, LogSink};

/// The lines of a part's subtasks not yet shipped.
#[derive(Debug, Default)]
pub(super) struct ShippedLogs {
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    lines: Vec<LogLine>,
    bytes: usize,
    /// (node, subtask) → lines dropped since the last message.
    dropped: BTreeMap<(String, u32), u64>,
}

/// Bytes a line costs in a message: its text, its node and a little for the rest.
fn line_bytes(line: &LogLine) -> usize {
    line.message.len() + line.node.len() + 32
}

impl LogSink for ShippedLogs {
    fn append(&self, line: LogLine) {
        let Ok(mut held) = self.held.lock() else { return };
        let bytes = line_bytes(&line);
        if held.bytes + bytes > MAX_SHIPPED_LOG_BYTES {
            *held.dropped.entry((line.node, line.subtask)).or_default() += 1;
            return;
        }
        held.bytes += bytes;
        held.lines.push(line);
    }

    fn dropped(&self, node: &str, subtask: u32, dropped: u64) {
        if let Ok(mut held) = self.held.lock() {
            *held.dropped.entry((node.to_string(), subtask)).or_default() += dropped;
        }
    }
}

impl ShippedLogs {
    /// The message of what is held (and holds nothing after); `None` when nothing is.
    pub(super) fn take(&self, attempt: &AttemptId) -> Option<ToController> {
        let mut held = self.held.lock().ok()?;
        if held.lines.is_empty() && held.dropped.is_empty() {
            return None;
        }
        let Held { lines, dropped, .. } = std::mem::take(&mut *held);
        let dropped = dropped.into_iter().map(|((node, subtask), n)| (node, subtask, n)).collect();
        Some(ToController::Logs { attempt: attempt.clone(), lines, dropped })
    }

    /// Ships what is held every [`LOGS_EVERY`] until the session ends (or the task is
    /// aborted, when the part ends).
    pub(super) async fn ship(self: Arc<Self>, outbox: mpsc::Sender<ToController>, attempt: AttemptId) {
        let mut every = tokio::time::interval(LOGS_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if let Some(message) = self.take(&attempt)
                && outbox.send(message).await.is_err()
            {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::logs::LogLevel;

    fn line(i: usize, text: usize) -> LogLine {
        LogLine {
            time_ms: i as u64,
            node: "op".into(),
            subtask: 1,
            attempt: 0,
            level: LogLevel::Info,
            message: "x".repeat(text),
        }
    }

    #[test]
    fn a_part_holds_a_bounded_batch_and_counts_what_is_over_it() {
        let logs = ShippedLogs::default();
        let attempt = AttemptId { job: "j".into(), attempt: 7 };
        assert!(logs.take(&attempt).is_none());
        // 4 KiB lines: the buffer takes what fits, the rest is counted per subtask.
        let fit = MAX_SHIPPED_LOG_BYTES / (4096 + 2 + 32);
        for i in 0..fit + 10 {
            logs.append(line(i, 4096));
        }
        logs.dropped("op", 1, 5);
        let Some(ToController::Logs { lines, dropped, .. }) = logs.take(&attempt) else { panic!() };
        assert_eq!(lines.len(), fit);
        assert!(lines.windows(2).all(|w| w[0].time_ms < w[1].time_ms), "in order");
        assert_eq!(dropped, [("op".to_string(), 1, 15)]);
        // Taken: empty again, and room for more.
        assert!(logs.take(&attempt).is_none());
        logs.append(line(0, 10));
        let Some(ToController::Logs { lines, dropped, .. }) = logs.take(&attempt) else { panic!() };
        assert_eq!((lines.len(), dropped.len()), (1, 0));
    }
}
