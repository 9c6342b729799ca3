//! A source that reads JSON-lines files, cut into splits: byte ranges of one file, so one
//! file is read by several subtasks (Hadoop's and Spark's rule). A split `[start, end)` owns
//! every line that *starts* in it: its reader begins after the first `\n` at or after
//! `start - 1` (at 0 for `start = 0`) and reads past `end` to finish its last line, so every
//! line belongs to exactly one split whatever the cuts are.
//!
//! At a fresh start every subtask lists the files (in name order) and cuts each into splits
//! of `total / n` bytes, `n` the number of `split_bytes` pieces rounded up to a multiple of
//! `p` (none below `min(split_bytes, 1 MiB)`), so a large file gives every subtask an equal
//! share; split `k` of that list belongs to subtask `k % p`.
//! The position is the list of the subtask's splits with the offset reached in each (the
//! start of the next line to read): a restore hands each subtask exactly its splits, and a
//! rescale ([`rescale`]) reassigns the unfinished splits, cutting the largest remainders
//! until every new subtask has one.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{BatchLimit, ConfigError, ConnectorError, Origin, Rejected, RescaleError, Source, bad_position};
use crate::record::Batch;
use crate::record::json::{FieldPicks, Transcoder, msgpack_i64};

/// Default largest split: 64 MiB.
pub const DEFAULT_SPLIT_BYTES: u64 = 64 << 20;
/// A fresh plan or a rescale cuts no split below this (nor below `split_bytes`).
const MIN_SPLIT_BYTES: u64 = 1 << 20;
/// Bytes per read; the buffer grows only for a longer line.
const READ_BYTES: usize = 1 << 20;

fn default_split_bytes() -> u64 {
    DEFAULT_SPLIT_BYTES
}

fn to_end_of_file() -> u64 {
    u64::MAX
}

/// Config of the file source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSourceConfig {
    /// A file, or a directory whose regular files (not starting with `.`) are read.
    pub path: PathBuf,
    /// Field of each JSON object whose value becomes the record key.
    #[serde(default)]
    pub key_field: Option<String>,
    /// Field holding the event time (integer ms); records without it get time 0.
    #[serde(default)]
    pub timestamp_field: Option<String>,
    /// Largest split (byte range of a file read by one subtask) at a fresh start; at least 1.
    #[serde(default = "default_split_bytes")]
    pub split_bytes: u64,
}

impl FileSourceConfig {
    /// A config reading `path` with default settings.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileSourceConfig {
            path: path.into(),
            key_field: None,
            timestamp_field: None,
            split_bytes: DEFAULT_SPLIT_BYTES,
        }
    }

    /// Checks the settings' ranges (at plan time).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.split_bytes == 0 {
            return Err(ConfigError::OutOfRange(
                "file: split_bytes must be at least 1 (bytes per split of a file)".into(),
            ));
        }
        Ok(())
    }

    fn min_split(&self) -> u64 {
        self.split_bytes.min(MIN_SPLIT_BYTES)
    }
}

/// Where a file-source subtask stands in one of its splits: what a checkpoint records.
/// Positions without `start`/`end` (written before splits existed) mean the whole file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePosition {
    /// The file.
    pub file: PathBuf,
    /// First byte of the split: it owns the lines that start in `[start, end)`.
    #[serde(default)]
    pub start: u64,
    /// End of the split (exclusive); `u64::MAX`: to the end of the file.
    #[serde(default = "to_end_of_file")]
    pub end: u64,
    /// Byte offset of the next line to read (`start` before the split is begun); at or past
    /// `end` when the split is finished.
    pub offset: u64,
    /// Lines read from `start` to `offset` (the line number in the file for a split at 0).
    pub line: u64,
}

impl FilePosition {
    fn finished(&self) -> bool {
        self.offset >= self.end
    }
}

/// A split being read (named `Partition` for [`FileSource::record`]).
struct Partition {
    path: PathBuf,
    start: u64,
    end: u64,
    offset: u64,
    line: u64,
    /// The file ended before `end`.
    done: bool,
}

impl Partition {
    fn from_position(p: &FilePosition) -> Self {
        Partition {
            path: p.file.clone(),
            start: p.start,
            end: p.end,
            offset: p.offset,
            line: p.line,
            done: false,
        }
    }
}

/// The open file of the split being read: `buf[lo..hi]` is read but not consumed.
struct Cursor {
    file: File,
    lo: usize,
    hi: usize,
    eof: bool,
}

/// A file-source subtask.
pub struct FileSource {
    config: FileSourceConfig,
    batch: BatchLimit,
    partitions: Vec<Partition>,
    current: usize,
    cursor: Option<Cursor>,
    /// Read buffer, reused across splits.
    buf: Vec<u8>,
    /// `on_error` is not `fail`: lines that cannot be read are left out and kept here.
    reject: bool,
    rejected: Vec<Rejected>,
    /// Scratch of the per-line conversion, borrowed only inside `record`.
    lines: std::cell::RefCell<LineScratch>,
}

/// What converting a line reuses: no allocation per record.
struct LineScratch {
    transcoder: Transcoder,
    picks: FieldPicks,
    value: Vec<u8>,
}

impl std::fmt::Debug for FileSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileSource").field("position", &self.position()).finish()
    }
}

fn io(path: &Path, source: std::io::Error) -> ConnectorError {
    ConnectorError::Io { path: path.display().to_string(), source }
}

/// The files of `config` in name order, with their lengths.
fn list_files(config: &FileSourceConfig) -> Result<Vec<(PathBuf, u64)>, ConnectorError> {
    let meta = std::fs::metadata(&config.path).map_err(|e| io(&config.path, e))?;
    let mut files = Vec::new();
    if meta.is_dir() {
        for entry in std::fs::read_dir(&config.path).map_err(|e| io(&config.path, e))? {
            let entry = entry.map_err(|e| io(&config.path, e))?;
            let hidden = entry.file_name().to_string_lossy().starts_with('.');
            if !hidden && entry.file_type().map_err(|e| io(&entry.path(), e))?.is_file() {
                let len = entry.metadata().map_err(|e| io(&entry.path(), e))?.len();
                files.push((entry.path(), len));
            }
        }
        files.sort();
    } else {
        files.push((config.path.clone(), meta.len()));
    }
    Ok(files)
}

/// Every split of a fresh start at `parallelism`, in (file, start) order. Every subtask
/// computes the same list (the input files must not change while the job runs).
fn plan(files: &[(PathBuf, u64)], config: &FileSourceConfig, parallelism: u32) -> Vec<FilePosition> {
    let total: u64 = files.iter().map(|(_, len)| len).sum();
    // As many splits of at most `split_bytes` as needed, rounded up to a multiple of the
    // parallelism so the subtasks get equal shares; none below `min_split`.
    let p = u64::from(parallelism.max(1));
    let pieces = (total.div_ceil(config.split_bytes.max(1)).div_ceil(p) * p).max(1);
    let size = total.div_ceil(pieces).max(config.min_split()).min(config.split_bytes).max(1);
    let mut splits = Vec::new();
    for (path, len) in files {
        let mut start = 0;
        while start < *len {
            let end = start.saturating_add(size).min(*len);
            splits.push(FilePosition { file: path.clone(), start, end, offset: start, line: 0 });
            start = end;
        }
    }
    splits
}

/// Positions for `parallelism` subtasks from the positions that `old.len()` subtasks recorded
/// (a savepoint restored at another parallelism). The unfinished splits are cut (the largest
/// remainder `[offset, end)` in halves, never below `min(split_bytes, 1 MiB)`) until there are
/// `parallelism` of them or none can be cut, then split `k` goes to subtask `k % parallelism`.
/// A remainder owns the same lines as before (those starting in it), so none is lost or
/// repeated.
pub(crate) fn rescale(
    config: &FileSourceConfig,
    old: &[Option<serde_json::Value>],
    parallelism: u32,
) -> Result<Vec<Option<serde_json::Value>>, RescaleError> {
    let mut splits: Vec<FilePosition> = Vec::new();
    for (s, position) in old.iter().enumerate() {
        let position = position.as_ref().ok_or(RescaleError::NoFilePosition(s))?;
        let mine: Vec<FilePosition> = serde_json::from_value(position.clone())
            .map_err(|_| RescaleError::Unreadable { connector: "file", position: position.to_string() })?;
        splits.extend(mine);
    }
    splits.sort_by(|a, b| (&a.file, a.start).cmp(&(&b.file, b.start)));
    for w in splits.windows(2) {
        if w[0].file == w[1].file && w[0].end > w[1].start {
            return Err(RescaleError::Overlap {
                file: w[0].file.display().to_string(),
                first: (w[0].start, w[0].end),
                second: (w[1].start, w[1].end),
            });
        }
    }
    splits.retain(|s| !s.finished());
    let min = config.min_split();
    while splits.len() < parallelism as usize {
        let Some((i, rest)) = splits
            .iter()
            .enumerate()
            .filter(|(_, s)| s.end != u64::MAX)
            .map(|(i, s)| (i, s.end - s.offset))
            .max_by_key(|(i, rest)| (*rest, std::cmp::Reverse(*i)))
        else {
            break;
        };
        if rest < 2 * min.max(1) {
            break;
        }
        let mid = splits[i].offset + rest / 2;
        let tail = FilePosition {
            file: splits[i].file.clone(),
            start: mid,
            end: splits[i].end,
            offset: mid,
            line: 0,
        };
        splits[i].end = mid;
        splits.insert(i + 1, tail);
    }
    let p = parallelism.max(1) as usize;
    Ok((0..p)
        .map(|s| {
            let mine: Vec<&FilePosition> = splits.iter().skip(s).step_by(p).collect();
            Some(serde_json::to_value(mine).expect("positions serialize"))
        })
        .collect())
}

/// The next line of `buf[lo..hi]`, reading more as needed: `(start, end)` in `buf` without
/// the `\n`, and the bytes consumed (with it); `None` at the end of the file.
fn next_line(c: &mut Cursor, buf: &mut Vec<u8>) -> std::io::Result<Option<(usize, usize, usize)>> {
    let mut scanned = c.lo;
    loop {
        if let Some(i) = memchr::memchr(b'\n', &buf[scanned..c.hi]) {
            let (s, e) = (c.lo, scanned + i);
            c.lo = e + 1;
            return Ok(Some((s, e, e + 1 - s)));
        }
        scanned = c.hi;
        if c.eof {
            if c.lo == c.hi {
                return Ok(None);
            }
            let (s, e) = (c.lo, c.hi);
            c.lo = c.hi;
            return Ok(Some((s, e, e - s)));
        }
        if c.lo > 0 {
            buf.copy_within(c.lo..c.hi, 0);
            (scanned, c.hi, c.lo) = (scanned - c.lo, c.hi - c.lo, 0);
        }
        if c.hi == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match c.file.read(&mut buf[c.hi..]) {
            Ok(0) => c.eof = true,
            Ok(n) => c.hi += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The 1-based number of the line starting at byte `at` of `path` (counts the `\n` before it;
/// only on an error, so reading stays free of it).
fn line_number(path: &Path, at: u64) -> Result<u64, ConnectorError> {
    let mut file = File::open(path).map_err(|e| io(path, e))?.take(at);
    let mut buf = vec![0; READ_BYTES];
    let mut lines = 1;
    loop {
        match file.read(&mut buf) {
            Ok(0) => return Ok(lines),
            Ok(n) => lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(path, e)),
        }
    }
}

impl FileSource {
    /// Lists the files, cuts them into splits and keeps those of subtask `index`.
    pub fn open(
        config: &FileSourceConfig,
        batch: impl Into<BatchLimit>,
        index: u32,
        parallelism: u32,
    ) -> Result<Self, ConnectorError> {
        let files = list_files(config)?;
        let p = parallelism.max(1) as usize;
        let partitions = plan(&files, config, parallelism)
            .iter()
            .skip(index as usize)
            .step_by(p)
            .map(Partition::from_position)
            .collect();
        let picks = FieldPicks::new(config.key_field.as_deref(), config.timestamp_field.as_deref());
        let lines = LineScratch { transcoder: Transcoder::new(), picks, value: Vec::new() }.into();
        Ok(FileSource {
            config: config.clone(),
            batch: batch.into(),
            partitions,
            current: 0,
            cursor: None,
            buf: Vec::new(),
            reject: false,
            rejected: Vec::new(),
            lines,
        })
    }

    /// Resumes from a checkpoint: this subtask reads exactly `positions`' splits, each from
    /// its recorded offset.
    pub fn seek(&mut self, positions: &[FilePosition]) {
        self.partitions = positions.iter().map(Partition::from_position).collect();
        self.current = 0;
        self.cursor = None;
    }

    /// The position in every split of this subtask.
    pub fn positions(&self) -> Vec<FilePosition> {
        self.partitions
            .iter()
            .map(|p| FilePosition {
                file: p.path.clone(),
                start: p.start,
                end: p.end,
                offset: p.offset,
                line: p.line,
            })
            .collect()
    }

    /// Opens split `idx` at its offset; a split begun mid-line skips to after the next `\n`
    /// (that line belongs to the split before).
    fn open_split(&mut self, idx: usize) -> Result<(), ConnectorError> {
        if self.buf.len() < READ_BYTES {
            self.buf.resize(READ_BYTES, 0);
        }
        let p = &mut self.partitions[idx];
        let mut file = File::open(&p.path).map_err(|e| io(&p.path, e))?;
        let from = p.offset.saturating_sub(1);
        file.seek(SeekFrom::Start(from)).map_err(|e| io(&p.path, e))?;
        let mut cursor = Cursor { file, lo: 0, hi: 0, eof: false };
        if p.offset > 0 {
            match next_line(&mut cursor, &mut self.buf).map_err(|e| io(&p.path, e))? {
                Some((_, _, n)) => p.offset = from + n as u64,
                None => p.done = true,
            }
        }
        self.cursor = Some(cursor);
        Ok(())
    }

    fn record(&self, p: &Partition, text: &str, batch: &mut Batch) -> Result<(), ConnectorError> {
        let parse_err = |message: String| ConnectorError::Parse {
            path: p.path.display().to_string(),
            line: p.line,
            message,
        };
        let mut scratch = self.lines.borrow_mut();
        let LineScratch { transcoder, picks, value } = &mut *scratch;
        value.clear();
        transcoder
            .transcode(text.as_bytes(), value, picks)
            .map_err(|e| parse_err(format!("not valid JSON: {e}")))?;
        let key = picks.key.clone().map_or(&[][..], |r| &value[r]);
        let ts = match (&self.config.timestamp_field, picks.time.clone()) {
            (Some(f), Some(r)) => msgpack_i64(&value[r.clone()]).ok_or_else(|| {
                let v = crate::record::msgpack_to_json(&value[r]);
                parse_err(format!("field `{f}` is not an integer: {v}"))
            })?,
            _ => 0,
        };
        batch.push(key, value, ts);
        Ok(())
    }

    /// The line number in the file of the line starting at `at` in split `p`: counted only
    /// for a split that does not start at 0 (the others count their lines as they read).
    fn line_of(&self, p: &Partition, at: u64) -> Result<u64, ConnectorError> {
        if p.start == 0 { Ok(p.line) } else { line_number(&p.path, at) }
    }
}

impl Source for FileSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        let (records, bytes) = self.batch.reserve(64);
        let mut batch = Batch::with_capacity(records, bytes);
        while !self.batch.is_full(&batch) && self.current < self.partitions.len() {
            let idx = self.current;
            let p = &self.partitions[idx];
            if p.done || p.offset >= p.end {
                self.current += 1;
                self.cursor = None;
                continue;
            }
            if self.cursor.is_none() {
                self.open_split(idx)?;
                continue;
            }
            let p = &mut self.partitions[idx];
            let cursor = self.cursor.as_mut().expect("opened");
            let Some((s, e, n)) = next_line(cursor, &mut self.buf).map_err(|e| io(&p.path, e))? else {
                p.done = true;
                continue;
            };
            let line_start = p.offset;
            p.offset += n as u64;
            p.line += 1;
            let p = &self.partitions[idx];
            let failed = match std::str::from_utf8(&self.buf[s..e]) {
                Ok(text) if text.trim().is_empty() => continue,
                Ok(text) => match self.record(p, text.trim(), &mut batch) {
                    Ok(()) => continue,
                    Err(ConnectorError::Parse { path, line: _, message }) if p.start > 0 => {
                        ConnectorError::Parse { path, line: self.line_of(p, line_start)?, message }
                    }
                    Err(other) => other,
                },
                Err(err) => ConnectorError::Parse {
                    path: p.path.display().to_string(),
                    line: self.line_of(p, line_start)?,
                    message: format!("not valid UTF-8: {err}"),
                },
            };
            let ConnectorError::Parse { path, line, message } = failed else { return Err(failed) };
            if !self.reject {
                return Err(ConnectorError::Parse { path, line, message });
            }
            let reason = if message.starts_with("not valid UTF-8") {
                "bad_utf8"
            } else if message.starts_with("field") {
                "bad_event_time"
            } else {
                "bad_json"
            };
            self.rejected.push(Rejected {
                reason: reason.into(),
                error: format!("{path}:{line}: {message}"),
                origin: Origin::File { path, line },
                key: Vec::new(),
                value: self.buf[s..e].to_vec(),
                timestamp: None,
            });
        }
        if batch.is_empty() { Ok(None) } else { Ok(Some(batch)) }
    }

    fn reject_bad_records(&mut self) {
        self.reject = true;
    }

    fn take_rejected(&mut self) -> Vec<Rejected> {
        std::mem::take(&mut self.rejected)
    }

    fn position(&self) -> serde_json::Value {
        serde_json::to_value(self.positions()).expect("positions serialize")
    }

    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let positions: Vec<FilePosition> =
            serde_json::from_value(position.clone()).map_err(|_| bad_position(position))?;
        FileSource::seek(self, &positions);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
