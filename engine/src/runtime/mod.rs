//! The dataflow runtime: bounded channels, input gates, output routing, and the subtask
//! loops that move batches, watermarks and timers through a job.

pub mod barrier;
mod channel;
pub mod checkpoint;
mod error;
pub mod faults;
mod input_gate;
mod job;
mod message;
mod metrics;
mod output;
mod task;
mod watermark;

pub use channel::{ChannelStats, Closed, Receiver, Sender, channel};
pub use checkpoint::JobEvent;
pub use error::{JobError, TaskError};
pub use input_gate::{InputGate, UpstreamGone};
pub use job::{
    ChannelReport, CheckpointTrigger, JobReport, NodeReport, RunEnv, StopMode, StopSignal, commit_latest,
    instance_limits, run_job, run_job_checkpointed,
};
pub use message::{Barrier, Message};
pub use metrics::{JobMetrics, SubtaskMetrics};
pub use output::{EdgeOutput, Output};
pub use watermark::WatermarkTracker;
