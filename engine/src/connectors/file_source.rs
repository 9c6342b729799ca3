//! A source that reads JSON-lines files. Each file is a partition; subtask `i` of `p` reads
//! the files whose index (in name order) is `i` modulo `p`. The position is the byte offset
//! reached in each file.

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConnectorError, Source, bad_position};
use crate::record::Batch;
use crate::record::json::{FieldPicks, Transcoder, msgpack_i64};

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
}

/// Where a file-source subtask stands in one of its files: what a checkpoint records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FilePosition {
    /// The file.
    pub file: PathBuf,
    /// Byte offset of the next line to read.
    pub offset: u64,
    /// Number of lines read before `offset` (so errors after a resume name the right line).
    pub line: u64,
}

struct Partition {
    path: PathBuf,
    offset: u64,
    line: u64,
    reader: Option<BufReader<File>>,
    done: bool,
}

/// A file-source subtask.
pub struct FileSource {
    config: FileSourceConfig,
    batch_size: usize,
    partitions: Vec<Partition>,
    current: usize,
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

impl FileSource {
    /// Lists the files and keeps those of subtask `index`.
    pub fn open(
        config: &FileSourceConfig,
        batch_size: usize,
        index: u32,
        parallelism: u32,
    ) -> Result<Self, ConnectorError> {
        let meta = std::fs::metadata(&config.path).map_err(|e| io(&config.path, e))?;
        let mut files = Vec::new();
        if meta.is_dir() {
            for entry in std::fs::read_dir(&config.path).map_err(|e| io(&config.path, e))? {
                let entry = entry.map_err(|e| io(&config.path, e))?;
                let hidden = entry.file_name().to_string_lossy().starts_with('.');
                if !hidden && entry.file_type().map_err(|e| io(&entry.path(), e))?.is_file() {
                    files.push(entry.path());
                }
            }
            files.sort();
        } else {
            files.push(config.path.clone());
        }
        let partitions = files
            .into_iter()
            .enumerate()
            .filter(|(i, _)| *i as u64 % u64::from(parallelism) == u64::from(index))
            .map(|(_, path)| Partition { path, offset: 0, line: 0, reader: None, done: false })
            .collect();
        let picks = FieldPicks::new(config.key_field.as_deref(), config.timestamp_field.as_deref());
        let lines = LineScratch { transcoder: Transcoder::new(), picks, value: Vec::new() }.into();
        Ok(FileSource { config: config.clone(), batch_size, partitions, current: 0, lines })
    }

    /// Resumes each file at its recorded position (from a checkpoint). Positions of files
    /// this subtask does not read are ignored.
    pub fn seek(&mut self, positions: &[FilePosition]) {
        for pos in positions {
            if let Some(p) = self.partitions.iter_mut().find(|p| p.path == pos.file) {
                p.offset = pos.offset;
                p.line = pos.line;
                p.reader = None;
                p.done = false;
            }
        }
    }

    /// The position in every file of this subtask.
    pub fn positions(&self) -> Vec<FilePosition> {
        self.partitions
            .iter()
            .map(|p| FilePosition { file: p.path.clone(), offset: p.offset, line: p.line })
            .collect()
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
}

impl Source for FileSource {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        let mut batch = Batch::with_capacity(self.batch_size, self.batch_size * 64);
        let mut line = String::new();
        while batch.len() < self.batch_size && self.current < self.partitions.len() {
            let idx = self.current;
            if self.partitions[idx].done {
                self.current += 1;
                continue;
            }
            if self.partitions[idx].reader.is_none() {
                let p = &mut self.partitions[idx];
                let mut file = File::open(&p.path).map_err(|e| io(&p.path, e))?;
                file.seek(SeekFrom::Start(p.offset)).map_err(|e| io(&p.path, e))?;
                p.reader = Some(BufReader::with_capacity(1 << 16, file));
            }
            line.clear();
            let p = &mut self.partitions[idx];
            let n = p.reader.as_mut().expect("opened").read_line(&mut line).map_err(|e| io(&p.path, e))?;
            if n == 0 {
                p.done = true;
                p.reader = None;
                continue;
            }
            p.offset += n as u64;
            p.line += 1;
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let p = &self.partitions[idx];
            self.record(p, text, &mut batch)?;
        }
        if batch.is_empty() { Ok(None) } else { Ok(Some(batch)) }
    }

    fn position(&self) -> serde_json::Value {
        serde_json::to_value(self.positions()).expect("positions serialize")
    }

    fn seek(&mut self, position: &serde_json::Value) -> Result<(), ConnectorError> {
        let positions: Vec<FilePosition> =
            serde_json::from_value(position.clone()).map_err(|_| bad_position(position))?;
        FileSource::seek(self, &positions);
        self.current = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(source: &mut FileSource) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while let Some(b) = source.next_batch().unwrap() {
            for r in b.iter() {
                out.push(crate::record::msgpack_to_json(r.value));
            }
        }
        out
    }

    #[test]
    fn reads_partitions_records_offsets_and_resumes() {
        let dir = tempfile::tempdir().unwrap();
        for f in 0..3 {
            let lines: String =
                (0..5).map(|i| format!("{{\"f\": {f}, \"i\": {i}, \"ts\": {}}}\n", 10 * i)).collect();
            std::fs::write(dir.path().join(format!("in-{f}.jsonl")), lines).unwrap();
        }
        std::fs::write(dir.path().join(".hidden"), "not json").unwrap();
        let config = FileSourceConfig {
            path: dir.path().to_path_buf(),
            key_field: Some("f".into()),
            timestamp_field: Some("ts".into()),
        };
        // Subtask 0 of 2 owns files 0 and 2.
        let mut s = FileSource::open(&config, 2, 0, 2).unwrap();
        let first = s.next_batch().unwrap().unwrap();
        let r: Vec<_> = first.iter().collect();
        assert_eq!((r[1].timestamp, crate::record::msgpack_to_json(r[1].key)), (10, serde_json::json!(0)));
        let position = s.positions();
        assert_eq!(serde_json::to_value(&position).unwrap(), s.position());
        let offset = position[0].offset;
        let text = std::fs::read_to_string(dir.path().join("in-0.jsonl")).unwrap();
        let two_lines: usize = text.lines().take(2).map(|l| l.len() + 1).sum();
        assert_eq!(offset, two_lines as u64, "the offset is just past the two lines read");
        let rest = values(&mut s);
        assert_eq!(rest.len(), 8);
        assert!(rest.iter().all(|v| v["f"] != 1));

        // A new subtask resumed at the recorded offset reads exactly the rest.
        let mut resumed = FileSource::open(&config, 2, 0, 2).unwrap();
        resumed.seek(&position);
        assert_eq!(values(&mut resumed), rest);
    }

    #[test]
    fn a_malformed_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"a\": 1}\n{oops\n").unwrap();
        let config = FileSourceConfig { path, key_field: None, timestamp_field: None };
        let mut s = FileSource::open(&config, 10, 0, 1).unwrap();
        let e = s.next_batch().unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:2: not valid JSON"), "{e}");

        // Resumed past the first line, the error still names line 2.
        let mut resumed = FileSource::open(&config, 10, 0, 1).unwrap();
        resumed.seek(&[FilePosition { file: config.path.clone(), offset: 9, line: 1 }]);
        let e = resumed.next_batch().unwrap_err().to_string();
        assert!(e.contains("bad.jsonl:2: not valid JSON"), "{e}");
    }

    #[test]
    fn keys_times_and_values_are_those_of_the_json_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.jsonl");
        let first = r#"{"z": [1, {"y": 2, "x": "é"}], "id": {"b": 1, "a": -7}, "ts": 1700000000000}"#;
        std::fs::write(&path, format!("{first}\n  \n{{\"id\": 3}}\n{{\"ts\": 1.5}}\n")).unwrap();
        let config =
            FileSourceConfig { path, key_field: Some("id".into()), timestamp_field: Some("ts".into()) };
        let mut s = FileSource::open(&config, 2, 0, 1).unwrap();
        let batch = s.next_batch().unwrap().unwrap();
        let r: Vec<_> = batch.iter().collect();
        let value: serde_json::Value = serde_json::from_str(first).unwrap();
        assert_eq!(r[0].value, &crate::record::to_msgpack(&value)[..]);
        assert_eq!(r[0].key, &crate::record::to_msgpack(&value["id"])[..]);
        assert_eq!((r[0].timestamp, r[1].timestamp, r[1].key), (1_700_000_000_000, 0, &[3u8][..]));
        let e = s.next_batch().unwrap_err().to_string();
        assert!(e.contains("in.jsonl:4: field `ts` is not an integer: 1.5"), "{e}");
    }
}
