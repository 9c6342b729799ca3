//! The source loop without wasmtime: a scripted source, its output read by the test, the
//! coordinator played by the test through the control channel (a real snapshot writer over
//! a store in a temporary directory).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64};
use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;
use weir_store::Store;

use super::*;
use crate::connectors::ConnectorError;
use crate::connectors::kafka::client::KafkaError;
use crate::plan::Partitioning;
use crate::record::Batch;
use crate::runtime::channel::{Receiver, channel};
use crate::runtime::output::EdgeOutput;
use crate::runtime::snapshot_writer::{WriterConfig, snapshot_writer};
use crate::runtime::stop::StopSignal;

const WAIT: Duration = Duration::from_secs(30);

/// What the test tells the scripted source, and what the source saw.
#[derive(Default)]
struct Script {
    /// Records the source may still emit (one per batch, event time = its index).
    available: AtomicU64,
    /// Records emitted: the position.
    emitted: AtomicU64,
    idle: AtomicBool,
    /// The source's own watermark; `i64::MIN` for none.
    watermark: AtomicI64,
    /// `next_batch` returns `None` (end of input).
    finish: AtomicBool,
    /// `checkpoint_completed` fails.
    fail_completion: AtomicBool,
    completed: Mutex<Vec<(u64, serde_json::Value)>>,
}

struct Scripted(Arc<Script>);

impl Source for Scripted {
    fn next_batch(&mut self) -> Result<Option<Batch>, ConnectorError> {
        let s = &self.0;
        if s.finish.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let mut batch = Batch::empty();
        if s.available.load(Ordering::SeqCst) > 0 {
            s.available.fetch_sub(1, Ordering::SeqCst);
            let n = s.emitted.fetch_add(1, Ordering::SeqCst);
            batch.push(&[], &n.to_le_bytes(), n as i64);
        }
        Ok(Some(batch))
    }

    fn position(&self) -> serde_json::Value {
        json!({ "emitted": self.0.emitted.load(Ordering::SeqCst) })
    }

    fn seek(&mut self, _: &serde_json::Value) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn watermark(&self) -> Option<i64> {
        Some(self.0.watermark.load(Ordering::SeqCst)).filter(|w| *w > i64::MIN)
    }

    fn idle(&self) -> bool {
        self.0.idle.load(Ordering::SeqCst)
    }

    fn checkpoint_completed(&mut self, id: u64, position: &serde_json::Value) -> Result<(), ConnectorError> {
        if self.0.fail_completion.load(Ordering::SeqCst) {
            return Err(ConnectorError::Kafka(KafkaError::NotAuthorized {
                what: "the consumer group refused the offsets".into(),
                code: "GroupAuthorizationFailed".into(),
            }));
        }
        self.0.completed.lock().unwrap().push((id, position.clone()));
        Ok(())
    }
}

fn script() -> Arc<Script> {
    Arc::new(Script { watermark: AtomicI64::new(i64::MIN), ..Script::default() })
}

/// The source's output: one channel to the test.
fn output() -> (Output, Receiver) {
    let (tx, rx) = channel(64, ("src".into(), 0), ("test".into(), 0));
    (Output::new(vec![EdgeOutput::new(Partitioning::Forward, vec![tx], 128, 0)]), rx)
}

async fn recv(rx: &mut Receiver) -> Message {
    tokio::time::timeout(WAIT, rx.recv()).await.expect("a message in time").expect("the source is running")
}

/// The next message that is not a batch (batches counted into `batches`).
async fn next_control(rx: &mut Receiver, batches: &mut usize) -> Message {
    loop {
        match recv(rx).await {
            Message::Batch(_) => *batches += 1,
            other => return other,
        }
    }
}

/// A checkpointed source task over `source`; returns its handle, the control sender and
/// the coordinator's inbox.
fn start_checkpointed(
    store: &Store,
    source: Scripted,
    output: Output,
) -> (
    tokio::task::JoinHandle<Result<(), TaskError>>,
    mpsc::UnboundedSender<Control>,
    mpsc::UnboundedReceiver<ToCoordinator>,
) {
    let (to_coordinator, inbox) = mpsc::unbounded_channel();
    let (control_tx, control) = mpsc::unbounded_channel();
    let (writer, writer_task) = snapshot_writer(WriterConfig {
        job: "job".into(),
        operator: "src".into(),
        subtask: 0,
        task: 0,
        max_parallelism: 128,
        max_chain_length: 8,
        previous: Default::default(),
        storage: Arc::new(store.clone()),
        coordinator: to_coordinator.clone(),
        faults: None,
    });
    tokio::spawn(writer_task);
    let checkpointing = Checkpointing {
        task: 0,
        node: "src".into(),
        subtask: 0,
        control,
        coordinator: to_coordinator,
        writer,
        faults: None,
        restored: TaskState::default(),
        final_id: None,
        control_closed: false,
        stop: Arc::new(StopSignal::default()),
        channel_capacity_bytes: 8 << 20,
        restored_id: 0,
        dead_letters: Arc::default(),
    };
    // Watermarks off: the output is batches and barriers.
    let handle = tokio::spawn(run_source(
        Box::new(source),
        None,
        None,
        output,
        Arc::default(),
        Arc::default(),
        Some(checkpointing),
    ));
    (handle, control_tx, inbox)
}

fn trigger(id: u64, is_final: bool) -> Control {
    Control::Trigger { id, triggered: Instant::now(), is_final, unaligned_after: None }
}

async fn emit(script: &Script, rx: &mut Receiver, records: u64) {
    script.available.fetch_add(records, Ordering::SeqCst);
    let mut seen = 0;
    while seen < records {
        if let Message::Batch(b) = recv(rx).await {
            seen += b.len() as u64;
        }
    }
}

async fn barrier(rx: &mut Receiver, id: u64) {
    let mut batches = 0;
    match next_control(rx, &mut batches).await {
        Message::Barrier(b) => assert_eq!(b.id, id),
        other => panic!("expected barrier {id}, got {other:?}"),
    }
}

/// `checkpoint_completed` gets the position recorded at that checkpoint's trigger, not the
/// position at completion; a checkpoint completed after a later one, or aborted, is never
/// reported.
#[tokio::test]
async fn checkpoint_completed_gets_the_position_of_its_trigger() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let s = script();
    let (output, mut rx) = output();
    let (handle, control, _inbox) = start_checkpointed(&store, Scripted(s.clone()), output);

    emit(&s, &mut rx, 3).await;
    control.send(trigger(1, false)).unwrap();
    barrier(&mut rx, 1).await;
    emit(&s, &mut rx, 2).await;
    control.send(trigger(2, false)).unwrap();
    barrier(&mut rx, 2).await;
    control.send(trigger(3, false)).unwrap();
    barrier(&mut rx, 3).await;
    // The source moves on before checkpoint 2 completes.
    emit(&s, &mut rx, 4).await;
    control.send(Control::Completed(2)).unwrap();
    control.send(Control::Completed(1)).unwrap();
    control.send(Control::Aborted(3)).unwrap();
    emit(&s, &mut rx, 1).await;
    control.send(trigger(4, true)).unwrap();
    barrier(&mut rx, 4).await;
    control.send(Control::Completed(4)).unwrap();
    let mut batches = 0;
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::EndOfStream);
    tokio::time::timeout(WAIT, handle).await.unwrap().unwrap().expect("the source ends cleanly");
    let completed = s.completed.lock().unwrap().clone();
    assert_eq!(completed, vec![(2, json!({ "emitted": 5 })), (4, json!({ "emitted": 10 }))]);
}

/// An error from `checkpoint_completed` fails the task.
#[tokio::test]
async fn a_failed_completion_fails_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    let s = script();
    s.fail_completion.store(true, Ordering::SeqCst);
    let (output, mut rx) = output();
    let (handle, control, _inbox) = start_checkpointed(&store, Scripted(s.clone()), output);
    control.send(trigger(1, false)).unwrap();
    barrier(&mut rx, 1).await;
    control.send(Control::Completed(1)).unwrap();
    let result = tokio::time::timeout(WAIT, handle).await.unwrap().unwrap();
    let err = result.expect_err("the completion error fails the task");
    assert!(err.to_string().contains("refused the offsets"), "{err}");
}

/// Idle notices go out once per idle period; the source is active again by a batch, by its
/// watermark advancing, or (with its current watermark) when it stops being idle; its own
/// watermark goes out when it advances, never backwards.
#[tokio::test]
async fn idle_and_own_watermarks_reach_the_output() {
    let s = script();
    let (output, mut rx) = output();
    let handle = tokio::spawn(run_source(
        Box::new(Scripted(s.clone())),
        Some(0),
        None,
        output,
        Arc::default(),
        Arc::default(),
        None,
    ));
    let mut batches = 0;
    s.watermark.store(100, Ordering::SeqCst);
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::Watermark(100));
    s.idle.store(true, Ordering::SeqCst);
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::Idle);
    // Still idle and nothing new: the next message is what follows, not another notice.
    s.idle.store(false, Ordering::SeqCst);
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::Watermark(100), "active again");
    s.idle.store(true, Ordering::SeqCst);
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::Idle);
    // A lower watermark is never sent; a batch reactivates without a watermark.
    s.watermark.store(50, Ordering::SeqCst);
    s.idle.store(false, Ordering::SeqCst);
    s.available.store(1, Ordering::SeqCst);
    match recv(&mut rx).await {
        // Either the loop saw the source active before the batch (the current watermark
        // says so) or the batch came first.
        Message::Watermark(w) => {
            assert_eq!(w, 100);
            assert!(matches!(recv(&mut rx).await, Message::Batch(_)));
        }
        Message::Batch(_) => {}
        other => panic!("expected the batch, got {other:?}"),
    }
    s.watermark.store(200, Ordering::SeqCst);
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::Watermark(200));
    s.finish.store(true, Ordering::SeqCst);
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::Watermark(i64::MAX));
    assert_eq!(next_control(&mut rx, &mut batches).await, Message::EndOfStream);
    tokio::time::timeout(WAIT, handle).await.unwrap().unwrap().unwrap();
    assert_eq!(batches, 0);
}
