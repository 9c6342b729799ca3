//! The loops of the three kinds of subtask. Each runs as one tokio task.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::error::TaskError;
use super::input_gate::InputGate;
use super::message::Message;
use super::metrics::{JobMetrics, SubtaskMetrics};
use super::output::Output;
use super::watermark::WatermarkTracker;
use crate::connectors::{Sink, Source};
use crate::guest::OperatorInstance;
use crate::guest::bindings::Context;

/// Runs a source subtask: batches until exhausted, a watermark after each batch that
/// raises it, then the final watermark and end-of-stream.
pub async fn run_source(
    mut source: Box<dyn Source>,
    out_of_orderness_ms: Option<i64>,
    mut output: Output,
    metrics: Arc<SubtaskMetrics>,
    job: Arc<JobMetrics>,
) -> Result<(), TaskError> {
    let mut max_ts = i64::MIN;
    let mut watermark = i64::MIN;
    while let Some(batch) = source.next_batch()? {
        if let Some(delay) = out_of_orderness_ms {
            for e in &batch.entries {
                max_ts = max_ts.max(e.timestamp);
            }
            let w = max_ts.saturating_sub(delay).saturating_sub(1);
            if w > watermark {
                watermark = w;
            }
        }
        metrics.add_out(batch.len());
        job.source_batches.fetch_add(1, Ordering::Relaxed);
        output.emit(batch).await?;
        if out_of_orderness_ms.is_some() && watermark > i64::MIN {
            output.broadcast(Message::Watermark(watermark)).await?;
        }
        // A source that never fills a channel must still let other tasks run.
        tokio::task::yield_now().await;
    }
    output.broadcast(Message::Watermark(i64::MAX)).await?;
    output.broadcast(Message::EndOfStream).await?;
    Ok(())
}

/// Runs an operator subtask over its input gate until every input ended.
pub async fn run_operator(
    mut instance: OperatorInstance,
    context: Context,
    mut gate: InputGate,
    mut output: Output,
    metrics: Arc<SubtaskMetrics>,
) -> Result<(), TaskError> {
    instance.open(&context).await?;
    let mut watermarks = WatermarkTracker::new(gate.len());
    while let Some(next) = gate.next().await {
        let (channel, message) = next?;
        let advanced = match message {
            Message::Batch(batch) => {
                metrics.add_in(batch.len());
                let out = instance.process(gate.port(channel), &batch).await?;
                metrics.add_out(out.len());
                output.emit(out).await?;
                None
            }
            Message::Watermark(w) => watermarks.update(channel, w),
            Message::EndOfStream => watermarks.end(channel),
        };
        if let Some(w) = advanced {
            // Timers due at the new watermark fire first, in time order, then the operator
            // sees the watermark, then it goes downstream.
            while let Some((ts, key)) = instance.timers().pop_due(w) {
                let out = instance.on_timer(&key, ts).await?;
                metrics.add_out(out.len());
                output.emit(out).await?;
            }
            let out = instance.on_watermark(w).await?;
            metrics.add_out(out.len());
            output.emit(out).await?;
            output.broadcast(Message::Watermark(w)).await?;
        }
    }
    output.broadcast(Message::EndOfStream).await?;
    Ok(())
}

/// Runs a sink subtask until every input ended.
pub async fn run_sink(
    mut sink: Box<dyn Sink>,
    mut gate: InputGate,
    metrics: Arc<SubtaskMetrics>,
    job: Arc<JobMetrics>,
) -> Result<(), TaskError> {
    while let Some(next) = gate.next().await {
        let (_, message) = next?;
        if let Message::Batch(batch) = message {
            metrics.add_in(batch.len());
            job.sink_received();
            sink.write(&batch)?;
            if let Some(pause) = sink.pause() {
                tokio::time::sleep(pause).await;
            }
        }
    }
    sink.close()?;
    Ok(())
}
