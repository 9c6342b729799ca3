//! The coordinator's state machine without wasmtime: a real store in a temporary
//! directory (behind a `FaultyStorage` that fails every `complete` while enabled), the tasks
//! played by the test through the coordinator's channels.

use weir_store::{CheckpointStatus, FaultyStorage, Store};

use super::*;

const WAIT: Duration = Duration::from_secs(30);
const JOB: &str = "job";

/// A running coordinator over three tasks: source `src/0` (task 0), operator `op/0`
/// (task 1), sink `out/0` (task 2).
struct Run {
    controls: Vec<mpsc::UnboundedReceiver<Control>>,
    inbox: mpsc::UnboundedSender<ToCoordinator>,
    triggers: mpsc::UnboundedSender<TriggerRequest>,
    events: broadcast::Receiver<JobEvent>,
    storage: Arc<FaultyStorage<Store>>,
    stop: Arc<StopSignal>,
    handle: tokio::task::JoinHandle<Result<u64, JobError>>,
}

fn settings() -> CheckpointSettings {
    CheckpointSettings { interval_ms: None, ..CheckpointSettings::default() }
}

fn start(store: Store, settings: CheckpointSettings) -> Run {
    // Probability 1 while enabled: `complete` (and `write_subtask`, which the coordinator
    // never calls) fails; off until a test turns it on.
    let storage = Arc::new(FaultyStorage::new(store, 0, 1.0));
    storage.set_enabled(false);
    let tasks = [("src", true), ("op", false), ("out", false)]
        .map(|(node, is_source)| TaskInfo { node: node.into(), subtask: 0, is_source })
        .to_vec();
    let (mut controls, mut senders) = (Vec::new(), Vec::new());
    for _ in &tasks {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push(tx);
        controls.push(rx);
    }
    let (inbox, inbox_rx) = mpsc::unbounded_channel();
    let (triggers, requests) = mpsc::unbounded_channel();
    let (events_tx, events) = broadcast::channel(64);
    let stop = Arc::new(StopSignal::default());
    let coordinator = Coordinator {
        job: JOB.into(),
        settings,
        storage: storage.clone(),
        tasks,
        controls: senders,
        inbox: inbox_rx,
        requests: Arc::new(tokio::sync::Mutex::new(requests)),
        events: events_tx,
        faults: None,
        stop: stop.clone(),
        hold: Arc::default(),
    };
    let handle = tokio::spawn(coordinator.run());
    Run { controls, inbox, triggers, events, storage, stop, handle }
}

fn new_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("weir.redb")).unwrap();
    (dir, store)
}

impl Run {
    async fn trigger(&self) -> Result<u64, TriggerError> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.triggers.send(TriggerRequest { reply, pin: false }).unwrap();
        tokio::time::timeout(WAIT, rx).await.expect("trigger reply in time").expect("reply sent")
    }

    async fn control(&mut self, task: usize) -> Control {
        tokio::time::timeout(WAIT, self.controls[task].recv()).await.expect("control in time").expect("open")
    }

    async fn event(&mut self) -> JobEvent {
        tokio::time::timeout(WAIT, self.events.recv()).await.expect("event in time").expect("open")
    }

    fn ack(&self, id: u64, task: usize) {
        let node = ["src", "op", "out"][task];
        let stats = SubtaskStats { operator: node.into(), subtask: 0, ..SubtaskStats::default() };
        let state = SubtaskState { bytes_written: 10, ..SubtaskState::default() };
        self.inbox.send(ToCoordinator::Ack { id, task, state, stats }).unwrap();
    }

    fn ack_all(&self, id: u64) {
        (0..3).for_each(|task| self.ack(id, task));
    }

    fn decline(&self, id: u64, task: usize, reason: &str) {
        self.inbox.send(ToCoordinator::Decline { id, task, reason: reason.into() }).unwrap();
    }

    fn history(&self) -> Vec<CheckpointMeta> {
        self.storage.inner().history(JOB).unwrap()
    }

    async fn result(self) -> Result<u64, JobError> {
        tokio::time::timeout(WAIT, self.handle).await.expect("coordinator ended in time").expect("no panic")
    }
}

fn is_trigger(control: Control, want_id: u64, want_final: bool) -> bool {
    matches!(control, Control::Trigger { id, is_final, .. } if id == want_id && is_final == want_final)
}

#[tokio::test]
async fn a_trigger_reaches_the_sources_only_and_every_ack_completes_it() {
    let (_dir, store) = new_store();
    let mut run = start(store, settings());
    assert_eq!(run.trigger().await, Ok(1));
    assert!(is_trigger(run.control(0).await, 1, false));
    run.ack_all(1);
    // Non-sources got no trigger: their first message is the completion.
    for task in 0..3 {
        assert_eq!(run.control(task).await, Control::Completed(1), "task {task}");
    }
    assert!(matches!(
        run.event().await,
        JobEvent::CheckpointCompleted { id: 1, is_final: false, size: 30, .. }
    ));
    let (meta, manifest) = run.storage.inner().latest_completed(JOB).unwrap().expect("completed");
    assert_eq!((meta.id, meta.status, meta.state_size), (1, CheckpointStatus::Completed, 30));
    assert_eq!(manifest.keys().collect::<Vec<_>>(), ["op", "out", "src"]);
    assert_eq!(meta.subtasks.len(), 3);
    run.handle.abort();
}

#[tokio::test]
async fn a_checkpoint_waits_for_every_subtask() {
    let (_dir, store) = new_store();
    let mut run = start(store, settings());
    assert_eq!(run.trigger().await, Ok(1));
    // Two of three acks (one of them twice) do not complete it: the decline that follows
    // in the same inbox still finds it pending and fails it.
    run.ack(1, 0);
    run.ack(1, 1);
    run.ack(1, 1);
    run.decline(1, 2, "out/0: disk full");
    assert_eq!(run.event().await, JobEvent::CheckpointFailed { id: 1, reason: "out/0: disk full".into() });
    assert!(is_trigger(run.control(0).await, 1, false));
    for task in 0..3 {
        assert_eq!(run.control(task).await, Control::Aborted(1), "task {task}");
    }
    let history = run.history();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].status, CheckpointStatus::Failed);
    assert_eq!(history[0].failure.as_deref(), Some("out/0: disk full"));
    // A late ack of the failed checkpoint is ignored; the next one gets a new id.
    run.ack(1, 2);
    assert_eq!(run.trigger().await, Ok(2));
    run.handle.abort();
}

#[tokio::test]
async fn an_expired_checkpoint_is_aborted_with_every_later_one() {
    let (_dir, store) = new_store();
    let settings = CheckpointSettings { timeout_ms: 200, max_concurrent: 2, ..settings() };
    let mut run = start(store, settings);
    assert_eq!(run.trigger().await, Ok(1));
    assert_eq!(run.trigger().await, Ok(2));
    let JobEvent::CheckpointFailed { id: 1, reason } = run.event().await else {
        panic!("checkpoint 1 fails first")
    };
    assert!(reason.contains("expired before completing (200 ms timeout)"), "{reason}");
    let JobEvent::CheckpointFailed { id: 2, reason } = run.event().await else { panic!("then checkpoint 2") };
    // Checkpoint 2 expired at about the same time, or was aborted because 1 failed.
    assert!(reason.contains("expired") || reason == "aborted because checkpoint 1 failed", "{reason}");
    let history = run.history();
    assert!(history.iter().all(|m| m.status == CheckpointStatus::Failed), "{history:?}");
    run.handle.abort();
}

#[tokio::test]
async fn a_decline_aborts_the_pending_checkpoints_after_it_but_not_before() {
    let (_dir, store) = new_store();
    let settings = CheckpointSettings { max_concurrent: 3, ..settings() };
    let mut run = start(store, settings);
    for id in 1..=3 {
        assert_eq!(run.trigger().await, Ok(id));
    }
    run.decline(2, 1, "op/0: cannot snapshot");
    assert_eq!(
        run.event().await,
        JobEvent::CheckpointFailed { id: 2, reason: "op/0: cannot snapshot".into() }
    );
    assert_eq!(
        run.event().await,
        JobEvent::CheckpointFailed { id: 3, reason: "aborted because checkpoint 2 failed".into() }
    );
    // Checkpoint 1 is still pending and completes.
    run.ack_all(1);
    assert!(matches!(run.event().await, JobEvent::CheckpointCompleted { id: 1, .. }));
    let statuses: Vec<_> = run.history().iter().map(|m| (m.id, m.status)).collect();
    assert_eq!(
        statuses,
        [(1, CheckpointStatus::Completed), (2, CheckpointStatus::Failed), (3, CheckpointStatus::Failed)]
    );
    run.handle.abort();
}

#[tokio::test]
async fn failures_past_the_tolerable_number_fail_the_job_and_a_success_resets_the_count() {
    let (_dir, store) = new_store();
    let settings = CheckpointSettings { tolerable_failures: 1, ..settings() };
    let mut run = start(store, settings);
    assert_eq!(run.trigger().await, Ok(1));
    run.decline(1, 0, "first");
    assert!(matches!(run.event().await, JobEvent::CheckpointFailed { id: 1, .. }));
    assert_eq!(run.trigger().await, Ok(2));
    run.ack_all(2);
    assert!(matches!(run.event().await, JobEvent::CheckpointCompleted { id: 2, .. }));
    assert_eq!(run.trigger().await, Ok(3));
    run.decline(3, 0, "second");
    assert!(matches!(run.event().await, JobEvent::CheckpointFailed { id: 3, .. }));
    // One failure in a row so far: tolerated.
    assert_eq!(run.trigger().await, Ok(4));
    run.decline(4, 2, "third");
    match run.result().await {
        Err(JobError::CheckpointsFailed { failures: 2, tolerable: 1, last }) => assert_eq!(last, "third"),
        other => panic!("expected the job to fail, got {other:?}"),
    }
}

#[tokio::test]
async fn a_failed_completion_aborts_the_checkpoint() {
    let (_dir, store) = new_store();
    let mut run = start(store, settings());
    run.storage.set_enabled(true);
    assert_eq!(run.trigger().await, Ok(1));
    run.ack_all(1);
    let JobEvent::CheckpointFailed { id: 1, reason } = run.event().await else {
        panic!("checkpoint 1 fails")
    };
    assert!(reason.starts_with("completing failed"), "{reason}");
    assert!(run.storage.inner().latest_completed(JOB).unwrap().is_none());
    run.storage.set_enabled(false);
    assert_eq!(run.trigger().await, Ok(2));
    run.ack_all(2);
    assert!(matches!(run.event().await, JobEvent::CheckpointCompleted { id: 2, .. }));
    run.handle.abort();
}

#[tokio::test]
async fn the_final_checkpoint_follows_the_end_of_every_source_and_ends_the_run() {
    let (_dir, store) = new_store();
    let mut run = start(store, settings());
    run.stop.request(crate::runtime::StopMode::Suspend, true);
    run.inbox.send(ToCoordinator::SourceFinished { task: 0, stopped: true }).unwrap();
    assert!(is_trigger(run.control(0).await, 1, true));
    // While finishing, on-demand triggers are refused.
    assert_eq!(run.trigger().await, Err(TriggerError::Finishing));
    run.ack_all(1);
    let storage = run.storage.clone();
    assert_eq!(run.result().await.unwrap(), 1);
    let (meta, _) = storage.inner().latest_completed(JOB).unwrap().expect("final checkpoint");
    assert!(meta.is_final && meta.stopped && meta.pinned, "{meta:?}");
}

#[tokio::test]
async fn a_failed_final_checkpoint_is_triggered_again() {
    let (_dir, store) = new_store();
    let mut run = start(store, settings());
    run.inbox.send(ToCoordinator::SourceFinished { task: 0, stopped: false }).unwrap();
    assert!(is_trigger(run.control(0).await, 1, true));
    run.decline(1, 1, "op/0: failed");
    assert_eq!(run.control(0).await, Control::Aborted(1));
    assert!(is_trigger(run.control(0).await, 2, true));
    run.ack_all(2);
    assert_eq!(run.result().await.unwrap(), 2);
}

#[tokio::test]
async fn periodic_checkpoints_and_ids_that_continue_across_runs() {
    let (_dir, store) = new_store();
    let mut run = start(store.clone(), CheckpointSettings { interval_ms: Some(20), ..settings() });
    assert!(is_trigger(run.control(0).await, 1, false));
    run.ack_all(1);
    assert_eq!(run.control(0).await, Control::Completed(1));
    assert!(is_trigger(run.control(0).await, 2, false));
    run.handle.abort();
    let _ = run.handle.await;
    // A new run (a restart) continues after the largest id the store has seen.
    let run = start(store, settings());
    assert_eq!(run.trigger().await, Ok(3));
    run.handle.abort();
}

#[tokio::test]
async fn an_on_demand_trigger_waits_while_max_concurrent_checkpoints_are_in_flight() {
    let (_dir, store) = new_store();
    let mut run = start(store, settings());
    assert_eq!(run.trigger().await, Ok(1));
    let (reply, mut waiting) = tokio::sync::oneshot::channel();
    run.triggers.send(TriggerRequest { reply, pin: true }).unwrap();
    assert!(is_trigger(run.control(0).await, 1, false));
    // The second request is answered only once checkpoint 1 ended.
    assert!(waiting.try_recv().is_err());
    run.ack_all(1);
    let second = tokio::time::timeout(WAIT, waiting).await.unwrap().unwrap();
    assert_eq!(second, Ok(2));
    assert_eq!(run.control(0).await, Control::Completed(1));
    assert!(is_trigger(run.control(0).await, 2, false));
    assert!(run.history().iter().any(|m| m.id == 2 && m.pinned));
    run.handle.abort();
}

#[tokio::test]
async fn the_run_fails_when_every_task_is_gone() {
    let (_dir, store) = new_store();
    let Run { inbox, handle, .. } = start(store, settings());
    drop(inbox);
    let result = tokio::time::timeout(WAIT, handle).await.unwrap().unwrap();
    assert!(matches!(result, Err(JobError::TasksGone)), "{result:?}");
}
