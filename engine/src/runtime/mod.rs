//! The dataflow runtime: bounded channels, input gates, output routing, and the subtask
//! loops that move batches, watermarks and timers through a job.

mod channel;
mod error;
mod input_gate;
mod job;
mod message;
mod metrics;
mod output;
mod task;
mod watermark;

pub use channel::{ChannelStats, Closed, Receiver, Sender, channel};
pub use error::{JobError, TaskError};
pub use input_gate::{InputGate, UpstreamGone};
pub use job::{ChannelReport, JobReport, NodeReport, run_job};
pub use message::Message;
pub use metrics::{JobMetrics, SubtaskMetrics};
pub use output::{EdgeOutput, Output};
pub use watermark::WatermarkTracker;
