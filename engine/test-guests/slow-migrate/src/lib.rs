//! A test component for the engine: a word count with the example's state ("counts",
//! `KeyedState<String, u64>`) at schema version 1, which says it migrates version 0 (the
//! example's) but sleeps for an hour in the migration (waiting in `wasi:io/poll`, using no
//! CPU). Starting it from a savepoint of the example therefore sleeps in `restore`: tests
//! check that the host bounds that call in wall time and holds no lock other tenants need.

use weir_guest::{KeyedState, Operator, Output, Record, Result, States};

/// The operator.
#[derive(Default, States)]
pub struct SlowMigrate {
    counts: KeyedState<String, u64>,
}

impl Operator for SlowMigrate {
    const STATE_VERSION: u32 = 1;
    const MIGRATES_FROM: &'static [u32] = &[0];

    fn migrate(_from_version: u32, _state: &str, _key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        std::thread::sleep(std::time::Duration::from_secs(3600));
        Ok(Some(value.to_vec()))
    }

    fn process(&mut self, record: Record<'_>, out: &mut Output) -> Result<()> {
        let word: &str = record.key()?;
        let count = self.counts.get_or_insert_with(word, || 0);
        *count += 1;
        out.emit(word, &*count, record.timestamp())
    }
}

weir_guest::export_operator!(SlowMigrate, name = "slow-migrate");
