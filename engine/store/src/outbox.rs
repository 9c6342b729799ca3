//! The outbox: durable staging of opaque records for sinks that deliver to another system once
//! a checkpoint completed (the Kafka sink with `exactly_once` delivery).
//!
//! A sink subtask, the *writer* (named `<job>/<node>/<subtask>`), stages the output of
//! checkpoint `n` under *epoch* `n` ([`Store::outbox_stage`], records numbered per (writer,
//! epoch) from 0 in staging order). When checkpoint `n` completed it notes what it needs to
//! recognise a partial delivery ([`Store::outbox_set_note`], e.g. the target partitions' end
//! offsets), delivers the epoch page by page ([`Store::outbox_read`]) and drops it
//! ([`Store::outbox_drop`]). After a restart from checkpoint `c` it drops the epochs above `c`
//! ([`Store::outbox_discard_after`]: their checkpoint never completed) and delivers those up to
//! `c` that are still there ([`Store::outbox_epochs`]), with their notes.
//!
//! Invariants:
//! - **A staged epoch is on disk when `outbox_stage` returns**, and a note when
//!   `outbox_set_note` returns: both commit durably (fsync). The delivery of a completed
//!   checkpoint can therefore always re-read its output after a crash, whatever the sink
//!   buffered, and the note is on disk before the first record is delivered.
//! - Drops and discards commit without fsync and become durable with the next durable commit
//!   (the next stage, note or checkpoint completion). Losing one in a crash brings back an
//!   epoch the sink handles anyway: one it delivered but had not yet dropped (its note tells),
//!   or one above the restored checkpoint (discarded again at recovery).
//! - `(writer, epoch)` has a row in [`OUTBOX_EPOCHS`] holding its record count `n` if and only
//!   if it holds records, and then exactly the records of sequence `0..n`.
//! - Keys are tuples, so a writer's range never includes another writer whose name extends
//!   it (`a/b/1` and `a/b/10` are apart).
//! - Every byte is charged to the owner of the writer's job (`job/<job>`, the part of the
//!   writer's name before the first `/`) in the transaction that writes or removes it. Staging
//!   is refused at the owner's limit and at the disk floor, like stream staging; notes, drops
//!   and discards are never refused (they serve the delivery of counted work, which frees it).

use redb::{Durability, ReadableTable, WriteTransaction};

use crate::error::StoreError;
use crate::store::Store;
use crate::tables::{EPOCH_KEY, OUTBOX, OUTBOX_EPOCHS, OUTBOX_NOTES, RECORD_KEY, job_of};
use crate::usage::{Meter, Subject, charge};

/// Removes every record, count and note of `writer` with an epoch in `first..=last`, metering
/// what it frees; returns how many records.
fn remove_epochs(
    txn: &WriteTransaction,
    writer: &str,
    first: u64,
    last: u64,
    meter: &mut Meter,
) -> Result<u64, StoreError> {
    let mut removed = 0;
    txn.open_table(OUTBOX)?.retain_in((writer, first, 0)..=(writer, last, u64::MAX), |_, value| {
        meter.remove(writer.len() + RECORD_KEY, value.len());
        removed += 1;
        false
    })?;
    txn.open_table(OUTBOX_EPOCHS)?.retain_in((writer, first)..=(writer, last), |_, _| {
        meter.remove(writer.len() + EPOCH_KEY, 8);
        false
    })?;
    txn.open_table(OUTBOX_NOTES)?.retain_in((writer, first)..=(writer, last), |_, note| {
        meter.remove(writer.len() + EPOCH_KEY, note.len());
        false
    })?;
    Ok(removed)
}

/// The distinct writers in `table`'s keys from `from` (inclusive) to `to` (exclusive).
fn writers_in<V: redb::Value + 'static>(
    table: &impl ReadableTable<(&'static str, u64), V>,
    from: &str,
    to: &str,
) -> Result<Vec<String>, StoreError> {
    let mut writers: Vec<String> = Vec::new();
    for item in table.range((from, 0)..(to, 0))? {
        let (key, _) = item?;
        let writer = key.value().0;
        if writers.last().is_none_or(|last| last != writer) {
            writers.push(writer.to_owned());
        }
    }
    Ok(writers)
}

/// What a sink uses of the outbox: the [`Store`]'s methods of the same names, or, for a
/// sink on a worker, the same calls carried to the controller's store.
pub trait Outbox: Send + Sync + 'static {
    /// [`Store::outbox_stage`].
    fn outbox_stage(&self, writer: &str, epoch: u64, records: &[Vec<u8>]) -> Result<(), StoreError>;
    /// [`Store::outbox_epochs`].
    fn outbox_epochs(&self, writer: &str) -> Result<Vec<u64>, StoreError>;
    /// [`Store::outbox_read`].
    fn outbox_read(
        &self,
        writer: &str,
        epoch: u64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;
    /// [`Store::outbox_set_note`].
    fn outbox_set_note(&self, writer: &str, epoch: u64, note: &[u8]) -> Result<(), StoreError>;
    /// [`Store::outbox_note`].
    fn outbox_note(&self, writer: &str, epoch: u64) -> Result<Option<Vec<u8>>, StoreError>;
    /// [`Store::outbox_drop`].
    fn outbox_drop(&self, writer: &str, upto: u64) -> Result<u64, StoreError>;
    /// [`Store::outbox_discard_after`].
    fn outbox_discard_after(&self, writer: &str, checkpoint: u64) -> Result<u64, StoreError>;
}

impl Outbox for Store {
    fn outbox_stage(&self, writer: &str, epoch: u64, records: &[Vec<u8>]) -> Result<(), StoreError> {
        Store::outbox_stage(self, writer, epoch, records)
    }

    fn outbox_epochs(&self, writer: &str) -> Result<Vec<u64>, StoreError> {
        Store::outbox_epochs(self, writer)
    }

    fn outbox_read(
        &self,
        writer: &str,
        epoch: u64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        Store::outbox_read(self, writer, epoch, from, limit)
    }

    fn outbox_set_note(&self, writer: &str, epoch: u64, note: &[u8]) -> Result<(), StoreError> {
        Store::outbox_set_note(self, writer, epoch, note)
    }

    fn outbox_note(&self, writer: &str, epoch: u64) -> Result<Option<Vec<u8>>, StoreError> {
        Store::outbox_note(self, writer, epoch)
    }

    fn outbox_drop(&self, writer: &str, upto: u64) -> Result<u64, StoreError> {
        Store::outbox_drop(self, writer, upto)
    }

    fn outbox_discard_after(&self, writer: &str, checkpoint: u64) -> Result<u64, StoreError> {
        Store::outbox_discard_after(self, writer, checkpoint)
    }
}

impl Store {
    /// Appends `records` (opaque bytes, encoded by the sink) to what `writer` staged under
    /// `epoch`, in order; their sequence numbers continue those of the epoch (from 0). One
    /// durable transaction: the records are on disk when this returns. Fails with
    /// [`StoreError::QuotaExceeded`] at the job owner's storage limit and with
    /// [`StoreError::DiskFull`] at the disk floor, storing nothing. Staging nothing is a no-op.
    pub fn outbox_stage(&self, writer: &str, epoch: u64, records: &[Vec<u8>]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        self.check_disk(records.iter().map(|r| (r.len() + writer.len() + RECORD_KEY) as u64).sum())?;
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        {
            let mut counts = txn.open_table(OUTBOX_EPOCHS)?;
            let first = counts.get((writer, epoch))?.map_or(0, |v| v.value());
            let mut outbox = txn.open_table(OUTBOX)?;
            for (seq, record) in (first..).zip(records) {
                let old = outbox.insert((writer, epoch, seq), record.as_slice())?.map(|v| v.value().len());
                meter.put(writer.len() + RECORD_KEY, record.len(), old);
            }
            let old = counts.insert((writer, epoch), first + records.len() as u64)?.map(|_| 8);
            meter.put(writer.len() + EPOCH_KEY, 8, old);
        }
        charge(&txn, Subject::Job(job_of(writer)), meter.0, true)?;
        txn.commit()?;
        Ok(())
    }

    /// The epochs under which `writer` has records staged, ascending.
    pub fn outbox_epochs(&self, writer: &str) -> Result<Vec<u64>, StoreError> {
        let txn = self.read_txn()?;
        let counts = txn.open_table(OUTBOX_EPOCHS)?;
        let mut epochs = Vec::new();
        for item in counts.range((writer, 0)..=(writer, u64::MAX))? {
            epochs.push(item?.0.value().1);
        }
        Ok(epochs)
    }

    /// Up to `limit` records of (writer, epoch) from sequence number `from` on, with their
    /// sequence numbers (empty at or past the end). Reads only what it returns.
    pub fn outbox_read(
        &self,
        writer: &str,
        epoch: u64,
        from: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let mut records = Vec::new();
        if limit == 0 {
            return Ok(records);
        }
        let txn = self.read_txn()?;
        let outbox = txn.open_table(OUTBOX)?;
        for item in outbox.range((writer, epoch, from)..=(writer, epoch, u64::MAX))? {
            let (key, value) = item?;
            records.push((key.value().2, value.value().to_vec()));
            if records.len() == limit {
                break;
            }
        }
        Ok(records)
    }

    /// How many records (writer, epoch) holds. One point read.
    pub fn outbox_count(&self, writer: &str, epoch: u64) -> Result<u64, StoreError> {
        let txn = self.read_txn()?;
        Ok(txn.open_table(OUTBOX_EPOCHS)?.get((writer, epoch))?.map_or(0, |v| v.value()))
    }

    /// Stores `note` for (writer, epoch), replacing the previous one, durably: it is on disk
    /// when this returns. Keep it small (e.g. the target partitions' end offsets, noted before
    /// the epoch's first record is delivered). Charged to the job's owner but never refused
    /// (by the limit or the disk floor): it serves the delivery that frees the epoch.
    pub fn outbox_set_note(&self, writer: &str, epoch: u64, note: &[u8]) -> Result<(), StoreError> {
        let txn = self.write_txn(Durability::Immediate)?;
        let mut meter = Meter::default();
        {
            let mut notes = txn.open_table(OUTBOX_NOTES)?;
            let old = notes.insert((writer, epoch), note)?.map(|v| v.value().len());
            meter.put(writer.len() + EPOCH_KEY, note.len(), old);
        }
        charge(&txn, Subject::Job(job_of(writer)), meter.0, false)?;
        txn.commit()?;
        Ok(())
    }

    /// The note of (writer, epoch), if one was set and not dropped since.
    pub fn outbox_note(&self, writer: &str, epoch: u64) -> Result<Option<Vec<u8>>, StoreError> {
        let txn = self.read_txn()?;
        Ok(txn.open_table(OUTBOX_NOTES)?.get((writer, epoch))?.map(|v| v.value().to_vec()))
    }

    /// Drops every epoch `<= upto` of `writer` (delivered): records, counts and notes, in one
    /// transaction (not durable on its own, see the module's invariants); returns how many
    /// records. Never refused.
    pub fn outbox_drop(&self, writer: &str, upto: u64) -> Result<u64, StoreError> {
        self.outbox_remove(writer, 0, upto)
    }

    /// Drops every epoch `> checkpoint` of `writer` (the output of checkpoints that never
    /// completed), like [`Store::outbox_drop`]; returns how many records.
    pub fn outbox_discard_after(&self, writer: &str, checkpoint: u64) -> Result<u64, StoreError> {
        match checkpoint.checked_add(1) {
            Some(first) => self.outbox_remove(writer, first, u64::MAX),
            None => Ok(0),
        }
    }

    /// Drops everything every writer of job `job` staged (writers `<job>/...`, and a writer
    /// named `<job>` itself), records and notes, in one transaction; returns how many records.
    /// For when a job's data is deleted; never refused.
    pub fn outbox_drop_job(&self, job: &str) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        let mut removed = 0;
        // Every name that starts with "<job>/" sorts from "<job>/" up to "<job>0" ('0' follows '/').
        let (from, to) = (format!("{job}/"), format!("{job}0"));
        let mut writers = vec![job.to_owned()];
        writers.extend(writers_in(&txn.open_table(OUTBOX_EPOCHS)?, &from, &to)?);
        writers.extend(writers_in(&txn.open_table(OUTBOX_NOTES)?, &from, &to)?);
        writers.sort();
        writers.dedup();
        for writer in &writers {
            removed += remove_epochs(&txn, writer, 0, u64::MAX, &mut meter)?;
        }
        charge(&txn, Subject::Job(job), meter.0, false)?;
        txn.commit()?;
        Ok(removed)
    }

    /// Removes the epochs `first..=last` of `writer` and credits their bytes, in one
    /// transaction without fsync.
    fn outbox_remove(&self, writer: &str, first: u64, last: u64) -> Result<u64, StoreError> {
        let txn = self.write_txn(Durability::None)?;
        let mut meter = Meter::default();
        let removed = remove_epochs(&txn, writer, first, last, &mut meter)?;
        charge(&txn, Subject::Job(job_of(writer)), meter.0, false)?;
        txn.commit()?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;
    use proptest::test_runner::RngSeed;

    use super::*;
    use crate::usage::entry_bytes;

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("weir.redb")).unwrap();
        (dir, store)
    }

    fn recs(prefix: &str, n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("{prefix}-{i}").into_bytes()).collect()
    }

    fn all(store: &Store, writer: &str, epoch: u64) -> Vec<(u64, Vec<u8>)> {
        store.outbox_read(writer, epoch, 0, usize::MAX).unwrap()
    }

    /// The owners that store something, with their bytes.
    fn nonzero(map: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
        map.into_iter().filter(|(_, bytes)| *bytes != 0).collect()
    }

    /// What the ledger says `owner` stores.
    fn ledger(store: &Store, owner: &str) -> u64 {
        store.usage_ledger().unwrap().get(owner).copied().unwrap_or(0)
    }

    #[test]
    fn records_keep_their_order_and_numbers_across_stage_calls() {
        let (_dir, store) = open();
        store.outbox_stage("j/n/0", 7, &recs("a", 3)).unwrap();
        store.outbox_stage("j/n/0", 9, &recs("c", 1)).unwrap();
        store.outbox_stage("j/n/0", 7, &recs("b", 2)).unwrap();
        store.outbox_stage("j/n/0", 7, &[]).unwrap();
        let expected: Vec<(u64, Vec<u8>)> =
            (0..).zip(recs("a", 3).into_iter().chain(recs("b", 2))).collect::<Vec<_>>();
        assert_eq!(all(&store, "j/n/0", 7), expected);
        assert_eq!(all(&store, "j/n/0", 9), vec![(0, b"c-0".to_vec())]);
        assert_eq!(store.outbox_count("j/n/0", 7).unwrap(), 5);
        assert_eq!(store.outbox_count("j/n/0", 8).unwrap(), 0);
        assert_eq!(store.outbox_epochs("j/n/0").unwrap(), vec![7, 9]);
        assert_eq!(store.outbox_epochs("j/n/1").unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn a_large_epoch_reads_in_pages() {
        let (_dir, store) = open();
        let records = recs("r", 20_000);
        for chunk in records.chunks(6_000) {
            store.outbox_stage("j/n/0", 1, chunk).unwrap();
        }
        assert_eq!(store.outbox_count("j/n/0", 1).unwrap(), 20_000);
        let mut read = Vec::new();
        let mut from = 0;
        loop {
            let page = store.outbox_read("j/n/0", 1, from, 777).unwrap();
            assert!(page.len() <= 777);
            let Some((last, _)) = page.last() else { break };
            assert_eq!(page[0].0, from, "a page starts where it was asked to");
            from = last + 1;
            read.extend(page.into_iter().map(|(_, r)| r));
        }
        assert_eq!(read, records);
        assert_eq!(store.outbox_read("j/n/0", 1, 19_999, 10).unwrap(), vec![(19_999, b"r-19999".to_vec())]);
        assert!(store.outbox_read("j/n/0", 1, 20_000, 10).unwrap().is_empty());
        assert!(store.outbox_read("j/n/0", 1, 0, 0).unwrap().is_empty());
    }

    #[test]
    fn a_note_is_overwritten_and_goes_with_its_epoch() {
        let (_dir, store) = open();
        assert_eq!(store.outbox_note("j/n/0", 3).unwrap(), None);
        store.outbox_set_note("j/n/0", 3, b"offsets 1").unwrap();
        store.outbox_set_note("j/n/0", 3, b"offsets 22").unwrap();
        store.outbox_set_note("j/n/0", 4, b"four").unwrap();
        assert_eq!(store.outbox_note("j/n/0", 3).unwrap(), Some(b"offsets 22".to_vec()));
        assert_eq!(store.outbox_note("j/n/1", 3).unwrap(), None);
        store.outbox_set_note("j/n/0", 3, b"").unwrap();
        assert_eq!(store.outbox_note("j/n/0", 3).unwrap(), Some(Vec::new()), "an empty note is a note");
        assert!(store.outbox_epochs("j/n/0").unwrap().is_empty(), "a note alone stages nothing");
        store.outbox_drop("j/n/0", 3).unwrap();
        assert_eq!(store.outbox_note("j/n/0", 3).unwrap(), None);
        assert_eq!(store.outbox_note("j/n/0", 4).unwrap(), Some(b"four".to_vec()));
        store.outbox_discard_after("j/n/0", 3).unwrap();
        assert_eq!(store.outbox_note("j/n/0", 4).unwrap(), None);
    }

    #[test]
    fn drop_and_discard_stop_at_their_bounds() {
        let (_dir, store) = open();
        let w = "j/n/0";
        for epoch in 1..=5 {
            store.outbox_stage(w, epoch, &recs(&epoch.to_string(), epoch as usize)).unwrap();
            store.outbox_set_note(w, epoch, b"n").unwrap();
        }
        store.outbox_stage(w, u64::MAX, &recs("max", 1)).unwrap();
        assert_eq!(store.outbox_drop(w, 2).unwrap(), 3, "epochs 1 and 2 held 1 + 2 records");
        assert_eq!(store.outbox_epochs(w).unwrap(), vec![3, 4, 5, u64::MAX]);
        assert_eq!(store.outbox_note(w, 2).unwrap(), None);
        assert_eq!(store.outbox_note(w, 3).unwrap(), Some(b"n".to_vec()));
        assert_eq!(store.outbox_discard_after(w, 4).unwrap(), 6, "epoch 5 and the last");
        assert_eq!(store.outbox_epochs(w).unwrap(), vec![3, 4]);
        assert_eq!(store.outbox_note(w, 4).unwrap(), Some(b"n".to_vec()));
        assert_eq!(store.outbox_note(w, 5).unwrap(), None);
        assert_eq!(store.outbox_discard_after(w, u64::MAX).unwrap(), 0);
        assert_eq!(store.outbox_drop(w, 2).unwrap(), 0, "a repeated drop drops nothing");
        assert_eq!(store.outbox_epochs(w).unwrap(), vec![3, 4]);
        assert_eq!(store.outbox_drop(w, u64::MAX).unwrap(), 7);
        assert!(store.outbox_epochs(w).unwrap().is_empty());
        assert_eq!(store.outbox_count(w, 3).unwrap(), 0);
        // A dropped epoch staged again starts from 0.
        store.outbox_stage(w, 3, &recs("again", 1)).unwrap();
        assert_eq!(all(&store, w, 3), vec![(0, b"again-0".to_vec())]);
    }

    #[test]
    fn writers_whose_names_extend_one_another_are_apart() {
        let (_dir, store) = open();
        let writers = ["a/b/1", "a/b/10", "a/b/1/x", "a", "ab/b/1", "a./b/1", "a0/b/1"];
        for (i, w) in writers.iter().enumerate() {
            store.outbox_stage(w, 1, &recs(w, i + 1)).unwrap();
            store.outbox_set_note(w, 1, w.as_bytes()).unwrap();
        }
        for (i, w) in writers.iter().enumerate() {
            assert_eq!(all(&store, w, 1), (0..).zip(recs(w, i + 1)).collect::<Vec<_>>(), "{w}");
        }
        store.outbox_drop("a/b/1", 1).unwrap();
        assert_eq!(store.outbox_count("a/b/10", 1).unwrap(), 2);
        assert_eq!(store.outbox_count("a/b/1/x", 1).unwrap(), 3);
        store.outbox_discard_after("a/b/10", 0).unwrap();
        assert_eq!(store.outbox_count("a/b/1/x", 1).unwrap(), 3);
        // Job "a" owns "a" and "a/...", not "ab/...", "a./..." or "a0/...".
        assert_eq!(store.outbox_drop_job("a").unwrap(), 3 + 4);
        for w in ["a/b/1/x", "a"] {
            assert!(store.outbox_epochs(w).unwrap().is_empty(), "{w}");
            assert_eq!(store.outbox_note(w, 1).unwrap(), None, "{w}");
        }
        for (i, w) in writers.iter().enumerate().skip(4) {
            assert_eq!(store.outbox_count(w, 1).unwrap(), i as u64 + 1, "{w}");
            assert_eq!(store.outbox_note(w, 1).unwrap(), Some(w.as_bytes().to_vec()), "{w}");
        }
    }

    #[test]
    fn staging_is_charged_to_the_jobs_owner_and_every_removal_gives_it_back() {
        let (_dir, store) = open();
        store.set_owners(&[("job/j".into(), "t1".into()), ("job/k".into(), "t2".into())]).unwrap();
        // Something else of t1's, so that "back to before" is not just "back to 0".
        store.outbox_stage("j/other/0", 1, &recs("keep", 3)).unwrap();
        let before = ledger(&store, "t1");
        assert!(before > 0);

        let w = "j/n/0";
        store.outbox_stage(w, 1, &recs("x", 10)).unwrap();
        store.outbox_stage(w, 2, &[vec![7; 5000]]).unwrap();
        store.outbox_set_note(w, 2, b"note").unwrap();
        let expected = 10 * entry_bytes(w.len() + RECORD_KEY, 3)
            + entry_bytes(w.len() + RECORD_KEY, 5000)
            + 2 * entry_bytes(w.len() + EPOCH_KEY, 8)
            + entry_bytes(w.len() + EPOCH_KEY, 4);
        assert_eq!(ledger(&store, "t1"), before + expected as u64);
        assert_eq!(ledger(&store, "t2"), 0, "another tenant's job is not charged");
        let recount = nonzero(store.scan_usage().unwrap());
        assert_eq!(nonzero(store.usage_ledger().unwrap()), recount, "the ledger is the recount");
        store.outbox_drop(w, 1).unwrap();
        store.outbox_discard_after(w, 1).unwrap();
        assert_eq!(ledger(&store, "t1"), before);

        store.outbox_stage(w, 3, &recs("y", 4)).unwrap();
        store.outbox_set_note(w, 3, b"n").unwrap();
        store.outbox_set_note("j/n/1", 3, b"a note alone").unwrap();
        store.outbox_stage("k/n/0", 3, &recs("z", 2)).unwrap();
        store.outbox_drop_job("j").unwrap();
        assert_eq!(ledger(&store, "t1"), 0, "the job's outbox is gone, the other writer's too");
        assert!(ledger(&store, "t2") > 0);
        assert_eq!(nonzero(store.usage_ledger().unwrap()), nonzero(store.scan_usage().unwrap()));
    }

    #[test]
    fn staging_past_the_limit_or_the_disk_floor_stores_nothing() {
        let (_dir, store) = open();
        store.set_owners(&[("job/j".into(), "t".into())]).unwrap();
        let w = "j/n/0";
        store.outbox_stage(w, 1, &recs("a", 2)).unwrap();
        let used = ledger(&store, "t");
        store.set_limit("t", Some(used)).unwrap();
        let err = store.outbox_stage(w, 1, &recs("b", 1)).unwrap_err();
        assert!(matches!(err, StoreError::QuotaExceeded { ref owner, .. } if owner == "t"), "{err}");
        assert_eq!(store.outbox_count(w, 1).unwrap(), 2);
        assert_eq!(ledger(&store, "t"), used);
        // Delivery is never refused: a note at the limit, then the drop.
        store.outbox_set_note(w, 1, b"offsets").unwrap();
        store.outbox_drop(w, 1).unwrap();
        assert_eq!(ledger(&store, "t"), 0);
        store.set_limit("t", None).unwrap();

        // The floor: admit (by number only) all but 64 KiB above the reserve, so that the
        // stage's minimum of 64 KiB is one byte too many. The admission lasts as long as the
        // floor's measurement (100 ms): on a slow machine it may be gone before the stage, so
        // try a few times.
        store.set_min_free_bytes(u64::MAX);
        let mut refused = None;
        for _ in 0..20 {
            let space = store.disk_space().unwrap();
            let room = space.free_bytes.saturating_sub(space.reserved_bytes);
            if room > 64 << 10 {
                let _ = store.check_disk(room - (64 << 10) + 1);
            }
            match store.outbox_stage(w, 2, &recs("c", 1)) {
                Err(e) => {
                    refused = Some(e);
                    break;
                }
                Ok(()) => store.outbox_drop(w, 2).map(|_| ()).unwrap(),
            }
        }
        let err = refused.expect("the floor never refused the stage in 20 tries");
        assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
        assert!(err.is_disk_full());
        assert_eq!(store.outbox_count(w, 2).unwrap(), 0);
    }

    #[test]
    fn a_reopened_store_keeps_everything() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("weir.redb");
        let store = Store::open(&path).unwrap();
        store.set_owners(&[("job/j".into(), "t".into())]).unwrap();
        store.outbox_stage("j/n/0", 1, &recs("a", 3)).unwrap();
        store.outbox_stage("j/n/0", 2, &recs("b", 2)).unwrap();
        store.outbox_set_note("j/n/0", 2, b"note").unwrap();
        store.outbox_stage("j/n/10", 2, &recs("c", 1)).unwrap();
        // Not durable on its own; the next stage makes it so.
        store.outbox_drop("j/n/0", 1).unwrap();
        store.outbox_stage("j/n/0", 3, &recs("d", 1)).unwrap();
        let usage = store.usage_ledger().unwrap();
        store.reopen().unwrap();
        assert_eq!(all(&store, "j/n/0", 2), (0..).zip(recs("b", 2)).collect::<Vec<_>>());
        drop(store);

        let store = Store::open(&path).unwrap();
        assert_eq!(store.outbox_epochs("j/n/0").unwrap(), vec![2, 3]);
        assert_eq!(all(&store, "j/n/0", 2), (0..).zip(recs("b", 2)).collect::<Vec<_>>());
        assert_eq!(all(&store, "j/n/0", 3), vec![(0, b"d-0".to_vec())]);
        assert_eq!(all(&store, "j/n/10", 2), vec![(0, b"c-0".to_vec())]);
        assert_eq!(store.outbox_note("j/n/0", 2).unwrap(), Some(b"note".to_vec()));
        assert_eq!(store.usage_ledger().unwrap(), usage);
        store.outbox_stage("j/n/0", 2, &recs("e", 1)).unwrap();
        assert_eq!(store.outbox_read("j/n/0", 2, 2, 5).unwrap(), vec![(2, b"e-0".to_vec())], "numbers go on");
    }

    /// Writers of jobs "j", "j1" and "j." (names that extend one another), and a writer named
    /// like its job.
    const WRITERS: [&str; 5] = ["j/n/1", "j/n/10", "j", "j1/n/1", "j./n/1"];
    const JOBS: [&str; 3] = ["j", "j1", "j."];
    const OWNERS: [(&str, &str); 3] = [("j", "t1"), ("j1", "t2"), ("j.", "t2")];
    const SEED: u64 = 0x0b0c_5eed;

    #[derive(Debug, Clone)]
    enum Op {
        Stage { writer: usize, epoch: u64, records: Vec<Vec<u8>> },
        Note { writer: usize, epoch: u64, note: Vec<u8> },
        Drop { writer: usize, upto: u64 },
        Discard { writer: usize, after: u64 },
        DropJob { job: usize },
        Read { writer: usize, epoch: u64, from: u64, limit: usize },
    }

    fn epoch() -> impl Strategy<Value = u64> {
        prop_oneof![9 => 0..6u64, 1 => Just(u64::MAX)]
    }

    fn op() -> impl Strategy<Value = Op> {
        let writer = 0..WRITERS.len();
        let bytes = || prop::collection::vec(any::<u8>(), 0..300);
        prop_oneof![
            5 => (writer.clone(), epoch(), prop::collection::vec(bytes(), 0..12))
                .prop_map(|(writer, epoch, records)| Op::Stage { writer, epoch, records }),
            2 => (writer.clone(), epoch(), bytes()).prop_map(|(writer, epoch, note)| Op::Note { writer, epoch, note }),
            2 => (writer.clone(), epoch()).prop_map(|(writer, upto)| Op::Drop { writer, upto }),
            2 => (writer.clone(), epoch()).prop_map(|(writer, after)| Op::Discard { writer, after }),
            1 => (0..JOBS.len()).prop_map(|job| Op::DropJob { job }),
            2 => (writer, epoch(), 0..14u64, 0..6usize)
                .prop_map(|(writer, epoch, from, limit)| Op::Read { writer, epoch, from, limit }),
        ]
    }

    #[derive(Default)]
    struct Model {
        records: BTreeMap<(String, u64), Vec<Vec<u8>>>,
        notes: BTreeMap<(String, u64), Vec<u8>>,
    }

    impl Model {
        fn remove(&mut self, keep: impl Fn(&str, u64) -> bool) {
            self.records.retain(|(w, e), _| keep(w, *e));
            self.notes.retain(|(w, e), _| keep(w, *e));
        }

        /// What the ledger should say per owner, charged as the module does.
        fn ledger(&self) -> BTreeMap<String, u64> {
            let owner =
                |w: &str| OWNERS.iter().find(|(job, _)| *job == job_of(w)).map(|(_, o)| o.to_string());
            let mut out: BTreeMap<String, i64> = BTreeMap::new();
            for ((w, _), records) in &self.records {
                let mut bytes = entry_bytes(w.len() + EPOCH_KEY, 8);
                bytes += records.iter().map(|r| entry_bytes(w.len() + RECORD_KEY, r.len())).sum::<i64>();
                *out.entry(owner(w).unwrap()).or_default() += bytes;
            }
            for ((w, _), note) in &self.notes {
                *out.entry(owner(w).unwrap()).or_default() += entry_bytes(w.len() + EPOCH_KEY, note.len());
            }
            out.into_iter().filter(|(_, b)| *b != 0).map(|(o, b)| (o, b as u64)).collect()
        }
    }

    fn apply(store: &Store, model: &mut Model, op: &Op) -> Result<(), TestCaseError> {
        match op {
            Op::Stage { writer, epoch, records } => {
                store.outbox_stage(WRITERS[*writer], *epoch, records).unwrap();
                if !records.is_empty() {
                    let staged = model.records.entry((WRITERS[*writer].to_owned(), *epoch)).or_default();
                    staged.extend(records.iter().cloned());
                }
            }
            Op::Note { writer, epoch, note } => {
                store.outbox_set_note(WRITERS[*writer], *epoch, note).unwrap();
                model.notes.insert((WRITERS[*writer].to_owned(), *epoch), note.clone());
            }
            Op::Drop { writer, upto } => {
                store.outbox_drop(WRITERS[*writer], *upto).unwrap();
                model.remove(|w, e| w != WRITERS[*writer] || e > *upto);
            }
            Op::Discard { writer, after } => {
                store.outbox_discard_after(WRITERS[*writer], *after).unwrap();
                model.remove(|w, e| w != WRITERS[*writer] || e <= *after);
            }
            Op::DropJob { job } => {
                store.outbox_drop_job(JOBS[*job]).unwrap();
                model.remove(|w, _| job_of(w) != JOBS[*job]);
            }
            Op::Read { writer, epoch, from, limit } => {
                let got = store.outbox_read(WRITERS[*writer], *epoch, *from, *limit).unwrap();
                let staged = model.records.get(&(WRITERS[*writer].to_owned(), *epoch));
                let expected: Vec<(u64, Vec<u8>)> = (0..)
                    .zip(staged.into_iter().flatten().cloned())
                    .skip(*from as usize)
                    .take(*limit)
                    .collect();
                prop_assert_eq!(got, expected, "seed {:#x}", SEED);
            }
        }
        Ok(())
    }

    fn check(store: &Store, model: &Model) -> Result<(), TestCaseError> {
        for w in WRITERS {
            let epochs: Vec<u64> = model.records.keys().filter(|(mw, _)| mw == w).map(|(_, e)| *e).collect();
            prop_assert_eq!(store.outbox_epochs(w).unwrap(), epochs.clone(), "{} (seed {:#x})", w, SEED);
            for e in epochs {
                let staged = &model.records[&(w.to_owned(), e)];
                prop_assert_eq!(store.outbox_count(w, e).unwrap(), staged.len() as u64);
                let expected: Vec<(u64, Vec<u8>)> = (0..).zip(staged.iter().cloned()).collect();
                prop_assert_eq!(all(store, w, e), expected, "{} {} (seed {:#x})", w, e, SEED);
            }
            for e in (0..6).chain([u64::MAX]) {
                let note = model.notes.get(&(w.to_owned(), e)).cloned();
                prop_assert_eq!(store.outbox_note(w, e).unwrap(), note, "{} {} (seed {:#x})", w, e, SEED);
            }
        }
        let ledger = nonzero(store.usage_ledger().unwrap());
        prop_assert_eq!(&ledger, &model.ledger(), "the ledger (seed {:#x})", SEED);
        let scanned = nonzero(store.scan_usage().unwrap());
        prop_assert_eq!(&ledger, &scanned, "the ledger against the recount (seed {:#x})", SEED);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 48,
            rng_seed: RngSeed::Fixed(SEED),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn the_outbox_behaves_like_a_map(ops in prop::collection::vec(op(), 1..30)) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("weir.redb");
            let store = Store::open(&path).unwrap();
            let owners: Vec<(String, String)> =
                OWNERS.iter().map(|(job, owner)| (format!("job/{job}"), owner.to_string())).collect();
            store.set_owners(&owners).unwrap();
            let mut model = Model::default();
            for op in &ops {
                apply(&store, &mut model, op)?;
                check(&store, &model)?;
            }
            // Everything survives a restart; then dropping every job leaves nothing charged.
            drop(store);
            let store = Store::open(&path).unwrap();
            check(&store, &model)?;
            for job in JOBS {
                store.outbox_drop_job(job).unwrap();
            }
            prop_assert!(store.usage_ledger().unwrap().values().all(|b| *b == 0), "seed {:#x}", SEED);
        }
    }
}
