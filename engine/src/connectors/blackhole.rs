//! A sink that counts records and drops them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ConnectorError, Sink};
use crate::record::Batch;

/// Config of the blackhole sink.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlackholeConfig {
    /// Pause this long after each batch: a deliberately slow consumer (tests, demos).
    #[serde(default)]
    pub pause_ms_per_batch: u64,
}

/// Counts and drops records.
#[derive(Debug)]
pub struct BlackholeSink {
    config: BlackholeConfig,
    records: u64,
}

impl BlackholeSink {
    /// A new sink.
    pub fn new(config: BlackholeConfig) -> Self {
        BlackholeSink { config, records: 0 }
    }
}

impl Sink for BlackholeSink {
    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError> {
        self.records += batch.len() as u64;
        Ok(())
    }

    fn pause(&self) -> Option<Duration> {
        (self.config.pause_ms_per_batch > 0).then(|| Duration::from_millis(self.config.pause_ms_per_batch))
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }
}
