//! An operator instance's log lines (issue 42): what the guest logs through the `logging`
//! import and writes to its stdout and stderr, each line with its level, time and where it
//! came from, held to a rate per instance and handed to the job's [`LogSink`]. The server
//! keeps them per job for the tenant (`server/jobs/logs.rs`); `weir run` writes them to its
//! own log.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use wasmtime_wasi_io::bytes::Bytes;
use wasmtime_wasi_io::poll::Pollable;
use wasmtime_wasi_io::streams::{OutputStream, StreamError};

/// How important a line is; `stdout` and `stderr` are what the guest wrote there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// `trace`.
    Trace,
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `warn`.
    Warn,
    /// `error`.
    Error,
    /// A line the guest wrote to its stdout (a Python `print`).
    Stdout,
    /// A line the guest wrote to its stderr.
    Stderr,
}

impl LogLevel {
    /// The level's name.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Trace => "trace",
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warn => "warn",
            LogLevel::Error => "error",
            LogLevel::Stdout => "stdout",
            LogLevel::Stderr => "stderr",
        }
    }

    /// At least as important as `min` (stdout ranks as info, stderr as warn).
    pub fn at_least(self, min: LogLevel) -> bool {
        let rank = |l: LogLevel| match l {
            LogLevel::Stdout => LogLevel::Info,
            LogLevel::Stderr => LogLevel::Warn,
            other => other,
        };
        rank(self) >= rank(min)
    }
}

/// One line of an operator's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LogLine {
    /// When, unix ms.
    pub time_ms: u64,
    /// The operator's node.
    pub node: String,
    /// Its subtask.
    pub subtask: u32,
    /// The job's attempt it ran in (0: the first; one more per restart).
    pub attempt: u32,
    /// The level.
    pub level: LogLevel,
    /// The text (at most [`MAX_LOG_LINE`] bytes; longer ones are cut and end in `…`).
    pub message: String,
}

/// Where an instance's lines go: the job's log.
pub trait LogSink: Send + Sync + std::fmt::Debug {
    /// Keeps `line`.
    fn append(&self, line: LogLine);
    /// `dropped` lines of `node`'s subtask `subtask` were over its rate since the last call.
    fn dropped(&self, node: &str, subtask: u32, dropped: u64) {
        let _ = (node, subtask, dropped);
    }
}

/// A sink that writes the lines to the process's own log (`tracing`, target `weir::guest`):
/// `weir run`, and jobs without a job log.
#[derive(Debug, Default)]
pub struct TracingSink;

impl LogSink for TracingSink {
    fn append(&self, line: LogLine) {
        let LogLine { node, subtask, level, message, .. } = line;
        let operator = format!("{node}/{subtask}");
        match level {
            LogLevel::Trace => tracing::trace!(target: "weir::guest", %operator, "{message}"),
            LogLevel::Debug => tracing::debug!(target: "weir::guest", %operator, "{message}"),
            LogLevel::Info | LogLevel::Stdout => {
                tracing::info!(target: "weir::guest", %operator, "{message}")
            }
            LogLevel::Warn | LogLevel::Stderr => {
                tracing::warn!(target: "weir::guest", %operator, "{message}")
            }
            LogLevel::Error => tracing::error!(target: "weir::guest", %operator, "{message}"),
        }
    }
}

/// Longest line kept; longer lines are cut.
pub const MAX_LOG_LINE: usize = 4096;

/// How much one instance may log: lines and bytes per second, with a burst of one second's
/// worth. What is over it is dropped and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogRate {
    /// Lines per second.
    pub lines_per_second: u32,
    /// Bytes of text per second.
    pub bytes_per_second: u32,
}

impl Default for LogRate {
    fn default() -> Self {
        LogRate { lines_per_second: 100, bytes_per_second: 64 << 10 }
    }
}

/// One instance's log: where it goes, its place, its rate and what was dropped.
#[derive(Debug)]
pub struct InstanceLogs {
    sink: Arc<dyn LogSink>,
    node: String,
    subtask: u32,
    attempt: u32,
    rate: LogRate,
    lines: f64,
    bytes: f64,
    refilled: Instant,
    /// Lines dropped over the rate since the sink was told.
    dropped: u64,
    /// Lines dropped over the rate in the instance's life.
    dropped_total: u64,
    /// Partial lines of stdout and stderr (no newline yet).
    partial: [Vec<u8>; 2],
}

impl InstanceLogs {
    /// The log of subtask `subtask` of `node` in attempt `attempt`, into `sink`.
    pub fn new(sink: Arc<dyn LogSink>, node: &str, subtask: u32, attempt: u32, rate: LogRate) -> Self {
        InstanceLogs {
            sink,
            node: node.to_string(),
            subtask,
            attempt,
            rate,
            lines: f64::from(rate.lines_per_second),
            bytes: f64::from(rate.bytes_per_second),
            refilled: Instant::now(),
            dropped: 0,
            dropped_total: 0,
            partial: [Vec::new(), Vec::new()],
        }
    }

    /// Lines dropped over the rate so far.
    pub fn dropped_total(&self) -> u64 {
        self.dropped_total
    }

    /// Keeps a line, if the rate allows.
    pub fn line(&mut self, level: LogLevel, mut message: String) {
        if message.len() > MAX_LOG_LINE {
            let mut cut = MAX_LOG_LINE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push('…');
        }
        let now = Instant::now();
        let elapsed = now.duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        let (max_lines, max_bytes) =
            (f64::from(self.rate.lines_per_second), f64::from(self.rate.bytes_per_second));
        self.lines = (self.lines + elapsed * max_lines).min(max_lines);
        self.bytes = (self.bytes + elapsed * max_bytes).min(max_bytes);
        let size = message.len() as f64;
        if self.lines < 1.0 || self.bytes < size {
            self.dropped += 1;
            self.dropped_total += 1;
            return;
        }
        self.lines -= 1.0;
        self.bytes -= size;
        if self.dropped > 0 {
            self.sink.dropped(&self.node, self.subtask, std::mem::take(&mut self.dropped));
        }
        self.sink.append(LogLine {
            time_ms: crate::clock::unix_ms(),
            node: self.node.clone(),
            subtask: self.subtask,
            attempt: self.attempt,
            level,
            message,
        });
    }

    /// Bytes the guest wrote to stdout (`stream` 0) or stderr (1): each complete line is kept.
    fn write(&mut self, stream: usize, mut bytes: &[u8]) {
        let level = if stream == 0 { LogLevel::Stdout } else { LogLevel::Stderr };
        while let Some(end) = bytes.iter().position(|b| *b == b'\n') {
            let mut line = std::mem::take(&mut self.partial[stream]);
            line.extend_from_slice(&bytes[..end]);
            bytes = &bytes[end + 1..];
            let text = String::from_utf8_lossy(&line).trim_end_matches('\r').to_string();
            self.line(level, text);
        }
        let partial = &mut self.partial[stream];
        // A line that never ends is cut at the longest line and kept as it is.
        let room = (MAX_LOG_LINE + 1).saturating_sub(partial.len());
        partial.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if partial.len() > MAX_LOG_LINE {
            let line = std::mem::take(partial);
            self.line(level, String::from_utf8_lossy(&line).into_owned());
        }
    }
}

impl Drop for InstanceLogs {
    fn drop(&mut self) {
        for stream in 0..2 {
            if !self.partial[stream].is_empty() {
                self.write(stream, b"\n");
            }
        }
        if self.dropped > 0 {
            self.sink.dropped(&self.node, self.subtask, self.dropped);
        }
    }
}

/// The guest's stdout or stderr: lines into the instance's log.
#[derive(Debug, Clone)]
pub(crate) struct GuestOutput {
    pub(crate) logs: Arc<Mutex<InstanceLogs>>,
    /// 0: stdout, 1: stderr.
    pub(crate) stream: usize,
}

impl wasmtime_wasi::cli::IsTerminal for GuestOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl wasmtime_wasi::cli::StdoutStream for GuestOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi_io::async_trait]
impl OutputStream for GuestOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        if let Ok(mut logs) = self.logs.lock() {
            logs.write(self.stream, &bytes);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(64 << 10)
    }
}

#[wasmtime_wasi_io::async_trait]
impl Pollable for GuestOutput {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for GuestOutput {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if let Ok(mut logs) = self.logs.lock() {
            logs.write(self.stream, buf);
        }
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default)]
    struct Kept(Mutex<Vec<LogLine>>, Mutex<u64>);

    impl LogSink for Kept {
        fn append(&self, line: LogLine) {
            self.0.lock().unwrap().push(line);
        }
        fn dropped(&self, _node: &str, _subtask: u32, dropped: u64) {
            *self.1.lock().unwrap() += dropped;
        }
    }

    #[test]
    fn lines_past_the_rate_are_dropped_and_counted() {
        let kept = Arc::new(Kept::default());
        let rate = LogRate { lines_per_second: 10, bytes_per_second: 1 << 20 };
        let mut logs = InstanceLogs::new(kept.clone(), "op", 1, 2, rate);
        for i in 0..50 {
            logs.line(LogLevel::Info, format!("line {i}"));
        }
        let lines = kept.0.lock().unwrap().clone();
        // The burst (one second's worth), and perhaps one more refilled meanwhile.
        assert!((10..=11).contains(&lines.len()), "{}", lines.len());
        assert_eq!(lines[0].message, "line 0");
        assert_eq!((lines[0].node.as_str(), lines[0].subtask, lines[0].attempt), ("op", 1, 2));
        assert_eq!(logs.dropped_total(), 50 - lines.len() as u64);
        drop(logs);
        assert_eq!(*kept.1.lock().unwrap(), 50 - lines.len() as u64);
    }

    #[test]
    fn stdout_is_cut_into_lines_and_long_lines_are_cut() {
        let kept = Arc::new(Kept::default());
        let logs = Arc::new(Mutex::new(InstanceLogs::new(kept.clone(), "op", 0, 0, LogRate::default())));
        let mut out = GuestOutput { logs: logs.clone(), stream: 0 };
        OutputStream::write(&mut out, Bytes::from_static(b"hello\nwor")).unwrap();
        OutputStream::write(&mut out, Bytes::from_static(b"ld\r\npartial")).unwrap();
        let mut long = vec![b'x'; MAX_LOG_LINE + 10];
        long.push(b'\n');
        let mut err = GuestOutput { logs: logs.clone(), stream: 1 };
        OutputStream::write(&mut err, Bytes::from(long)).unwrap();
        drop((out, err));
        drop(Arc::into_inner(logs).unwrap());
        let lines: Vec<(LogLevel, usize, String)> = kept
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|l| (l.level, l.message.len(), l.message.chars().take(8).collect()))
            .collect();
        assert_eq!(lines[0], (LogLevel::Stdout, 5, "hello".into()));
        assert_eq!(lines[1], (LogLevel::Stdout, 5, "world".into()));
        assert_eq!(lines[2].0, LogLevel::Stderr);
        assert!(lines[2].1 <= MAX_LOG_LINE + 3, "cut: {}", lines[2].1);
        assert_eq!(lines.last().unwrap().2, "partial", "{lines:?}");
    }

    #[test]
    fn levels_rank_stdout_as_info_and_stderr_as_warn() {
        assert!(LogLevel::Stdout.at_least(LogLevel::Info) && !LogLevel::Stdout.at_least(LogLevel::Warn));
        assert!(LogLevel::Stderr.at_least(LogLevel::Warn) && !LogLevel::Stderr.at_least(LogLevel::Error));
        assert!(LogLevel::Error.at_least(LogLevel::Trace));
    }
}
