//! What the running jobs' subtasks do on one worker: summed by the job manager from its
//! live samples (`JobManager::worker_loads`), shown by the API and the metrics. A leaf, so
//! that both can name it.

/// What the running jobs' subtasks do on one worker.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkerLoad {
    /// Subtasks of running jobs it runs.
    pub subtasks: u32,
    /// Records they take in per second, summed.
    pub records_in_per_second: f64,
    /// Records they emit per second, summed.
    pub records_out_per_second: f64,
    /// Those of them that waited for room downstream at least half of the last sample.
    pub backpressured: u32,
}

/// The backpressure from which [`WorkerLoad::backpressured`] counts a subtask.
const BACKPRESSURED: f64 = 0.5;

impl WorkerLoad {
    /// Counts one more subtask with these rates and this backpressure (0 to 1).
    pub fn add(&mut self, records_in_per_second: f64, records_out_per_second: f64, backpressure: f64) {
        self.subtasks += 1;
        self.records_in_per_second += records_in_per_second;
        self.records_out_per_second += records_out_per_second;
        self.backpressured += u32::from(backpressure >= BACKPRESSURED);
    }
}
