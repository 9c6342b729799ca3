//! A sink that writes JSON lines, one file per subtask — or, in a checkpointed job, one file
//! per subtask and checkpoint, made visible when the checkpoint completes.
//!
//! Two-phase commit: records go to `<path>/.pending/part-<i>.inprogress`; at the barrier of
//! checkpoint `n` the file is flushed, synced and renamed to `.pending/part-<i>-<n>.jsonl`
//! (pre-commit: durable, invisible); when checkpoint `n` completes it is renamed to
//! `<path>/part-<i>-<n>.jsonl` (commit). A rename is atomic, and committing again finds the
//! file already in place, so a commit repeated after a crash changes nothing. On recovery
//! the files the restored checkpoint owns are committed and every other pending file of the
//! subtask is deleted.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConnectorError, Sink};
use crate::record::{Batch, msgpack_to_json};

/// Config of the file sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSinkConfig {
    /// Output directory; subtask `i` writes `part-<i>.jsonl` in it (checkpointed jobs:
    /// `part-<i>-<checkpoint>.jsonl`, one per checkpoint that saw output).
    pub path: PathBuf,
    /// Pause this long after each batch: a deliberately slow sink (tests).
    #[serde(default)]
    pub pause_ms_per_batch: u64,
}

/// Writes each record as `{"key": …, "value": …, "timestamp": …}` with key and value
/// decoded from MessagePack.
pub struct FileSink {
    dir: PathBuf,
    index: u32,
    transactional: bool,
    /// The file being written and its path.
    current: Option<(PathBuf, BufWriter<File>)>,
    pause: Option<std::time::Duration>,
}

fn io(path: &Path, source: std::io::Error) -> ConnectorError {
    ConnectorError::Io { path: path.display().to_string(), source }
}

impl FileSink {
    /// Opens subtask `index`'s output in `config.path` (created if needed). A plain sink
    /// replaces an older `part-<index>.jsonl`.
    pub fn open(config: &FileSinkConfig, index: u32, transactional: bool) -> Result<Self, ConnectorError> {
        std::fs::create_dir_all(&config.path).map_err(|e| io(&config.path, e))?;
        let pause = (config.pause_ms_per_batch > 0)
            .then(|| std::time::Duration::from_millis(config.pause_ms_per_batch));
        let mut sink = FileSink { dir: config.path.clone(), index, transactional, current: None, pause };
        if transactional {
            let pending = sink.pending_dir();
            std::fs::create_dir_all(&pending).map_err(|e| io(&pending, e))?;
        } else {
            let path = config.path.join(format!("part-{index}.jsonl"));
            let file = File::create(&path).map_err(|e| io(&path, e))?;
            sink.current = Some((path, BufWriter::with_capacity(1 << 16, file)));
        }
        Ok(sink)
    }

    fn pending_dir(&self) -> PathBuf {
        self.dir.join(".pending")
    }

    fn in_progress(&self) -> PathBuf {
        self.pending_dir().join(format!("part-{}.inprogress", self.index))
    }

    fn writer(&mut self) -> Result<&mut BufWriter<File>, ConnectorError> {
        if self.current.is_none() {
            let path = self.in_progress();
            let file = File::create(&path).map_err(|e| io(&path, e))?;
            self.current = Some((path, BufWriter::with_capacity(1 << 16, file)));
        }
        Ok(&mut self.current.as_mut().expect("just opened").1)
    }

    /// True if `name` is a pending or in-progress file of this subtask.
    fn owns(&self, name: &str) -> bool {
        let Some(rest) = name.strip_prefix(&format!("part-{}", self.index)) else { return false };
        rest == ".inprogress"
            || rest
                .strip_prefix('-')
                .and_then(|r| r.strip_suffix(".jsonl"))
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
    }
}

fn file_of(transaction: &serde_json::Value) -> Result<&str, ConnectorError> {
    transaction
        .get("file")
        .and_then(|f| f.as_str())
        .filter(|f| !f.contains('/') && !f.contains('\\') && f.starts_with("part-"))
        .ok_or_else(|| ConnectorError::NotATransaction {
            connector: "file sink",
            transaction: transaction.to_string(),
        })
}

impl Sink for FileSink {
    fn pause(&self) -> Option<std::time::Duration> {
        self.pause
    }

    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError> {
        let out = self.writer()?;
        let mut failed = None;
        for r in batch.iter() {
            let line = serde_json::json!({
                "key": msgpack_to_json(r.key),
                "value": msgpack_to_json(r.value),
                "timestamp": r.timestamp,
            });
            if let Err(e) = serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::from) {
                failed = Some(e);
                break;
            }
            if let Err(e) = out.write_all(b"\n") {
                failed = Some(e);
                break;
            }
        }
        match failed {
            Some(e) => Err(io(&self.current.as_ref().expect("open").0, e)),
            None => Ok(()),
        }
    }

    fn precommit(&mut self, epoch: u64) -> Result<Option<serde_json::Value>, ConnectorError> {
        if !self.transactional {
            return Ok(None);
        }
        let Some((path, mut out)) = self.current.take() else { return Ok(None) };
        out.flush().map_err(|e| io(&path, e))?;
        let file = out.into_inner().map_err(|e| io(&path, e.into_error()))?;
        file.sync_data().map_err(|e| io(&path, e))?;
        let name = format!("part-{}-{epoch:020}.jsonl", self.index);
        let target = self.pending_dir().join(&name);
        std::fs::rename(&path, &target).map_err(|e| io(&target, e))?;
        Ok(Some(serde_json::json!({ "file": name })))
    }

    fn commit(&mut self, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        for t in transactions {
            let name = file_of(t)?;
            let from = self.pending_dir().join(name);
            let to = self.dir.join(name);
            match std::fs::rename(&from, &to) {
                Ok(()) => {}
                // Committed before (a repeated commit after a crash).
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && to.exists() => {}
                Err(e) => return Err(io(&from, e)),
            }
        }
        Ok(())
    }

    fn recover(
        &mut self,
        _checkpoint: u64,
        transactions: &[serde_json::Value],
    ) -> Result<(), ConnectorError> {
        self.commit(transactions)?;
        let pending = self.pending_dir();
        let entries = std::fs::read_dir(&pending).map_err(|e| io(&pending, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io(&pending, e))?;
            let name = entry.file_name();
            if self.owns(&name.to_string_lossy()) {
                std::fs::remove_file(entry.path()).map_err(|e| io(&entry.path(), e))?;
            }
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        match self.current.take() {
            Some((path, mut out)) if !self.transactional => out.flush().map_err(|e| io(&path, e)),
            // Output after the final checkpoint cannot exist; an empty in-progress file can.
            Some((path, _)) => std::fs::remove_file(&path).map_err(|e| io(&path, e)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(values: &[u64]) -> Batch {
        let mut b = Batch::empty();
        for v in values {
            b.push(&[], &crate::record::to_msgpack(v), 0);
        }
        b
    }

    fn visible(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("part-"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn two_phase_commit_hides_output_until_commit_and_recovery_discards_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let config = FileSinkConfig { path: dir.path().to_path_buf(), pause_ms_per_batch: 0 };
        let mut sink = FileSink::open(&config, 1, true).unwrap();
        sink.write(&batch(&[1, 2])).unwrap();
        let t1 = sink.precommit(1).unwrap().unwrap();
        assert_eq!(sink.precommit(2).unwrap(), None, "nothing written since");
        sink.write(&batch(&[3])).unwrap();
        let t3 = sink.precommit(3).unwrap().unwrap();
        sink.write(&batch(&[4])).unwrap();
        assert!(visible(dir.path()).is_empty(), "nothing visible before a commit");
        sink.commit(std::slice::from_ref(&t1)).unwrap();
        sink.commit(std::slice::from_ref(&t1)).unwrap(); // idempotent
        assert_eq!(visible(dir.path()), vec![format!("part-1-{:020}.jsonl", 1)]);
        drop(sink);

        // Restart from checkpoint 1 (which did not own t3): t3 and the in-progress file go.
        let mut sink = FileSink::open(&config, 1, true).unwrap();
        let other = FileSink::open(&config, 11, true).unwrap();
        drop(other);
        std::fs::write(dir.path().join(".pending/part-11-00000000000000000009.jsonl"), "{}\n").unwrap();
        sink.recover(1, &[t1]).unwrap();
        assert_eq!(visible(dir.path()), vec![format!("part-1-{:020}.jsonl", 1)]);
        let mut left: Vec<_> = std::fs::read_dir(dir.path().join(".pending"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, vec!["part-11-00000000000000000009.jsonl"], "another subtask's file is kept");
        assert!(sink.commit(&[t3]).is_err(), "a discarded transaction cannot be committed");
        let text = std::fs::read_to_string(dir.path().join(format!("part-1-{:020}.jsonl", 1))).unwrap();
        assert_eq!(text.lines().count(), 2);
    }
}
