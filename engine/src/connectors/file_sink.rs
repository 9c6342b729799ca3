//! A sink that writes JSON lines, one file per subtask.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConnectorError, Sink};
use crate::record::{Batch, msgpack_to_json};

/// Config of the file sink.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSinkConfig {
    /// Output directory; subtask `i` writes `part-<i>.jsonl` in it.
    pub path: PathBuf,
}

/// Writes each record as `{"key": …, "value": …, "timestamp": …}` with key and value
/// decoded from MessagePack.
pub struct FileSink {
    path: PathBuf,
    out: BufWriter<File>,
}

impl FileSink {
    /// Creates `path/part-<index>.jsonl` (and the directory), replacing an older file.
    pub fn open(config: &FileSinkConfig, index: u32) -> Result<Self, ConnectorError> {
        let io = |path: &PathBuf, source| ConnectorError::Io { path: path.display().to_string(), source };
        std::fs::create_dir_all(&config.path).map_err(|e| io(&config.path, e))?;
        let path = config.path.join(format!("part-{index}.jsonl"));
        let file = File::create(&path).map_err(|e| io(&path, e))?;
        Ok(FileSink { path, out: BufWriter::with_capacity(1 << 16, file) })
    }

    fn io(&self, source: std::io::Error) -> ConnectorError {
        ConnectorError::Io { path: self.path.display().to_string(), source }
    }
}

impl Sink for FileSink {
    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError> {
        for r in batch.iter() {
            let line = serde_json::json!({
                "key": msgpack_to_json(r.key),
                "value": msgpack_to_json(r.value),
                "timestamp": r.timestamp,
            });
            serde_json::to_writer(&mut self.out, &line).map_err(|e| self.io(e.into()))?;
            self.out.write_all(b"\n").map_err(|e| self.io(e))?;
        }
        Ok(())
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        self.out.flush().map_err(|e| self.io(e))
    }
}
