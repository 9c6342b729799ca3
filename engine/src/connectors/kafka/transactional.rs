//! The `transactional` Kafka sink: Flink's `KafkaSink` scheme, for `read_committed` consumers.
//!
//! - Each subtask writes through a transactional id `<prefix>-<subtask>-<k>`, a new `k` for each
//!   checkpoint's transaction. Before an id is first used, the highest `k` is noted durably in
//!   the store, so a recovery knows every id that may hold an open transaction.
//! - At the barrier of checkpoint *n* the transaction is flushed (every record acknowledged:
//!   pre-committed) and its transactional id, producer id and epoch go into the checkpoint.
//! - When *n* completes, EndTxn commits it. After a crash, the restored checkpoint's
//!   transactions are committed by the new process with the stored producer id and epoch
//!   (Flink's `resumeTransaction`; the `kafka-protocol` client lets any process send that
//!   EndTxn), so output pre-committed for a completed checkpoint is never lost — the hole
//!   Arroyo's sink leaves ("Restoring from commit phase not yet implemented").
//! - Then every other id from the lowest undecided `k` to the highest noted is fenced
//!   (InitProducerId bumps its epoch and aborts what it left open).
//!
//! A broker without transactions (Tansu: no EndTxn) is found out when the sink opens: it
//! aborts its first, empty transaction as a probe, and a broker that does not answer that is
//! refused with "the Kafka broker does not support transactions", within the request timeout.
//!
//! Every call to the broker (and the notes in the store) runs on a thread of the sink's own
//! ([`Io`]); the task hands it one call at a time and waits for it off the runtime
//! ([`wait_off_runtime`]), so a broker that stops answering holds no runtime worker.

use std::collections::BTreeSet;
use std::sync::mpsc::{SyncSender, sync_channel};

use kafka_protocol::records::Compression;
use serde::{Deserialize, Serialize};

use super::client::{Client, ProducerIdentity, encode_batch};
use super::sink::{SPILL_BYTES, SharedOutbox, SinkSettings, Staged, convert, wait_off_runtime};
use crate::connectors::{ConnectorError, Sink};
use crate::record::Batch;

/// Kafka error codes a commit of an already-decided transaction gets back.
const INVALID_PRODUCER_EPOCH: i16 = 47;
const INVALID_TXN_STATE: i16 = 48;
const PRODUCER_FENCED: i16 = 90;

/// What a checkpoint records of a pre-committed transaction.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PreCommitted {
    /// The transactional id.
    pub transactional_id: String,
    /// Its index `k`.
    pub k: u64,
    /// The producer id and epoch that hold it.
    pub producer: ProducerIdentity,
}

/// The note (in the store, per writer) of which ids may be in use.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Ids {
    /// Every `k` below this is decided (committed or fenced).
    low: u64,
    /// The highest `k` ever handed out.
    high: u64,
}

/// The open transaction.
struct Open {
    id: String,
    k: u64,
    producer: ProducerIdentity,
    partitions: BTreeSet<i32>,
    /// Next sequence number per partition.
    sequences: std::collections::BTreeMap<i32, i32>,
}

/// What the sink's thread owns: the client, the store's notes and the open transaction.
struct Io {
    settings: SinkSettings,
    client: Client,
    store: SharedOutbox,
    writer: String,
    index: u32,
    open: Option<Open>,
    next_k: u64,
}

/// One call for the sink's thread.
type Call = Box<dyn FnOnce(&mut Io) + Send>;

/// A `transactional` sink subtask.
pub struct TransactionalSink {
    settings: SinkSettings,
    index: u32,
    partitions: i32,
    buffer: Vec<Staged>,
    buffered_bytes: usize,
    /// To the sink's thread: one call at a time.
    calls: SyncSender<Call>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for TransactionalSink {
    /// Ends the sink's thread and waits for it (its call in flight ends within the request
    /// timeout), so that the client and the store are released when the sink is: a restart's
    /// recovery never overlaps this attempt's calls.
    fn drop(&mut self) {
        drop(std::mem::replace(&mut self.calls, sync_channel(0).0));
        if let Some(thread) = self.thread.take() {
            let _ = wait_off_runtime(|| thread.join());
        }
    }
}

/// The transactions a checkpoint recorded.
fn pre_committed(transactions: &[serde_json::Value]) -> Result<Vec<PreCommitted>, ConnectorError> {
    transactions.iter().map(|t| serde_json::from_value(t.clone())).collect::<Result<_, _>>().map_err(|e| {
        ConnectorError::Unreadable { what: "a pre-committed transaction", reason: e.to_string() }
    })
}

/// The outbox epoch the id note lives under (no checkpoint has id 0).
const IDS_NOTE: u64 = 0;

const THREAD: &str = "Kafka transactional producer";

impl TransactionalSink {
    /// Opens subtask `index`; checks that the broker can commit transactions.
    pub fn open(
        settings: SinkSettings,
        store: Option<SharedOutbox>,
        writer: String,
        index: u32,
    ) -> Result<Self, ConnectorError> {
        let store = store.ok_or_else(|| ConnectorError::NoStore {
            what: "the `kafka` sink with `transactional` delivery".into(),
        })?;
        // Opening runs on a blocking thread (the runtime's `open_connector`).
        let mut client = Client::connect(settings.client.clone())?;
        let topics = client.partitions(std::slice::from_ref(&settings.topic))?;
        let partitions = topics.first().map(|t| t.partitions.len() as i32).unwrap_or(0);
        if partitions == 0 {
            return Err(ConnectorError::NoPartitions(settings.topic.clone()));
        }
        let mut io = Io { settings: settings.clone(), client, store, writer, index, open: None, next_k: 0 };
        let (calls, incoming) = sync_channel::<Call>(1);
        let thread = std::thread::Builder::new()
            .name(format!("weir-kafka-txn-{index}"))
            .spawn(move || {
                while let Ok(call) = incoming.recv() {
                    call(&mut io);
                }
            })
            .map_err(|source| ConnectorError::Thread { what: "transactional producer", source })?;
        Ok(TransactionalSink {
            settings,
            index,
            partitions,
            buffer: Vec::new(),
            buffered_bytes: 0,
            calls,
            thread: Some(thread),
        })
    }

    /// Runs `f` on the sink's thread and waits for it, off the runtime.
    fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Io) -> Result<T, ConnectorError> + Send + 'static,
    ) -> Result<T, ConnectorError> {
        let (answer, answered) = sync_channel(1);
        let call: Call = Box::new(move |io| {
            let _ = answer.send(f(io));
        });
        wait_off_runtime(|| {
            self.calls.send(call).map_err(|_| ConnectorError::ThreadEnded(THREAD))?;
            answered.recv().map_err(|_| ConnectorError::ThreadEnded(THREAD))?
        })
    }

    /// Produces the buffer into the open transaction (on the sink's thread) and waits for
    /// every acknowledgement.
    fn flush(&mut self) -> Result<(), ConnectorError> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let records = std::mem::take(&mut self.buffer);
        self.buffered_bytes = 0;
        self.call(move |io| io.produce(records))
    }
}

impl Io {
    fn id(&self, k: u64) -> String {
        format!("{}-{}-{k}", self.settings.transactional_id_prefix, self.index)
    }

    fn ids(&self) -> Result<Ids, ConnectorError> {
        match self.store.outbox_note(&self.writer, IDS_NOTE)? {
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| ConnectorError::Unreadable {
                what: "the transactional-id note",
                reason: e.to_string(),
            }),
            None => Ok(Ids::default()),
        }
    }

    fn set_ids(&self, ids: &Ids) -> Result<(), ConnectorError> {
        let bytes = serde_json::to_vec(ids).expect("two numbers");
        self.store.outbox_set_note(&self.writer, IDS_NOTE, &bytes).map_err(ConnectorError::from)
    }

    fn timeout_ms(&self) -> i32 {
        self.settings.transaction_timeout.as_millis().min(i32::MAX as u128) as i32
    }

    /// Begins the next transaction (noting its id first: invariant K5).
    fn begin(&mut self) -> Result<(), ConnectorError> {
        let k = self.next_k;
        let mut ids = self.ids()?;
        ids.high = ids.high.max(k);
        self.set_ids(&ids)?;
        let id = self.id(k);
        let producer = self.client.init_producer_id(Some(&id), self.timeout_ms())?;
        self.next_k = k + 1;
        self.open =
            Some(Open { id, k, producer, partitions: BTreeSet::new(), sequences: Default::default() });
        Ok(())
    }

    /// Produces `records` into the open transaction and waits for every acknowledgement.
    fn produce(&mut self, records: Vec<Staged>) -> Result<(), ConnectorError> {
        if self.open.is_none() {
            self.begin()?;
        }
        let mut by_partition: std::collections::BTreeMap<i32, Vec<super::client::ProduceRecord>> =
            Default::default();
        for s in records {
            by_partition.entry(s.partition).or_default().push(s.record);
        }
        let open = self.open.as_mut().expect("begun above");
        let new: Vec<i32> = by_partition.keys().filter(|p| !open.partitions.contains(p)).copied().collect();
        if !new.is_empty() {
            self.client.add_partitions_to_txn(&open.id, open.producer, &self.settings.topic, &new)?;
            open.partitions.extend(new);
        }
        for (partition, records) in by_partition {
            let mut start = 0;
            while start < records.len() {
                let mut end = start;
                let mut bytes = 0;
                while end < records.len()
                    && (end == start || bytes + records[end].size() <= self.settings.max_request_bytes)
                {
                    bytes += records[end].size();
                    end += 1;
                }
                let seq = open.sequences.get(&partition).copied().unwrap_or(0);
                let batch =
                    encode_batch(&records[start..end], Some((open.producer, seq)), true, Compression::None)?;
                // One attempt: a failed send fails the task, and recovery aborts (fences) this
                // transaction — nothing of it is ever committed twice or half.
                self.client.produce(&self.settings.topic, partition, batch, Some(&open.id))?;
                open.sequences.insert(partition, seq.wrapping_add((end - start) as i32));
                start = end;
            }
        }
        Ok(())
    }

    /// Commits a pre-committed transaction (again, after a crash: an already committed one is
    /// answered with an error that means it is decided).
    fn commit_one(&mut self, t: &PreCommitted) -> Result<(), ConnectorError> {
        match self.client.end_txn(&t.transactional_id, t.producer, true) {
            Ok(()) => Ok(()),
            Err(e)
                if matches!(e.code(), Some(INVALID_TXN_STATE | PRODUCER_FENCED | INVALID_PRODUCER_EPOCH)) =>
            {
                tracing::info!(id = %t.transactional_id, error = %e, "the transaction was decided before");
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The probe, then K5: the restored checkpoint's transactions `owned` committed with their
    /// stored producer id and epoch before every other id is fenced.
    fn recover(&mut self, owned: Vec<PreCommitted>) -> Result<(), ConnectorError> {
        // The probe: a broker that cannot end a transaction is refused here, not at the first
        // checkpoint's commit.
        let mut ids = self.ids()?;
        let probe = self.id(ids.high + 1);
        let producer = self.client.init_producer_id(Some(&probe), self.timeout_ms())?;
        match self.client.end_txn(&probe, producer, false) {
            Ok(()) => {}
            Err(e) if e.code().is_some() => {} // answered (an empty transaction): supported
            Err(e) => return Err(ConnectorError::NoTransactions(e)),
        }
        for t in &owned {
            self.commit_one(t)?;
        }
        // Fence every other id that may hold an open transaction.
        let committed: BTreeSet<u64> = owned.iter().map(|t| t.k).collect();
        for k in ids.low..=ids.high + 1 {
            if !committed.contains(&k) {
                let id = self.id(k);
                self.client.init_producer_id(Some(&id), self.timeout_ms())?;
            }
        }
        ids.high += 2;
        ids.low = ids.high;
        self.set_ids(&ids)?;
        self.next_k = ids.high;
        Ok(())
    }
}

impl Sink for TransactionalSink {
    fn write(&mut self, batch: &Batch) -> Result<(), ConnectorError> {
        self.buffered_bytes += convert(&self.settings, self.index, self.partitions, batch, &mut self.buffer)?;
        if self.buffered_bytes >= SPILL_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn precommit(&mut self, _epoch: u64) -> Result<Option<serde_json::Value>, ConnectorError> {
        self.flush()?;
        let Some(open) = self.call(|io| Ok(io.open.take()))? else { return Ok(None) };
        let t = PreCommitted { transactional_id: open.id, k: open.k, producer: open.producer };
        Ok(Some(serde_json::to_value(t).expect("plain fields")))
    }

    fn commit(&mut self, transactions: &[serde_json::Value]) -> Result<(), ConnectorError> {
        let due = pre_committed(transactions)?;
        self.call(move |io| due.iter().try_for_each(|t| io.commit_one(t)))
    }

    fn recover(
        &mut self,
        _checkpoint: u64,
        transactions: &[serde_json::Value],
    ) -> Result<(), ConnectorError> {
        let owned = pre_committed(transactions)?;
        self.call(move |io| io.recover(owned))
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        // The final checkpoint pre-committed and committed everything; an open transaction here
        // holds nothing.
        Ok(())
    }
}
