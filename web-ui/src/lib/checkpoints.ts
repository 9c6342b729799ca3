// The checkpoint history as Flink shows it: table rows, counts and the min/avg/max summary,
// and what an empty history means. Pure.

import type {
  CheckpointCounts,
  CheckpointHistory,
  CheckpointSummary,
  CheckpointType,
  CheckpointView,
  JobSpec,
  JobStatus,
  MinAvgMax,
  SubtaskCheckpointView,
} from '../api/types';
import { NONE, formatBytes, formatDuration, formatInterval, formatTime } from './format';

export interface CheckpointRow {
  id: number;
  /** The API's status: `in_progress`, `completed` or `failed`. */
  status: string;
  statusLabel: string;
  /** `7/7` */
  acknowledged: string;
  /** Every subtask acknowledged. */
  allAcknowledged: boolean;
  triggerTime: string;
  latestAck: string;
  /** End-to-end duration; for one in progress, the time since its trigger so far. */
  duration: string;
  inProgress: boolean;
  stateSize: string;
  fullSize: string;
  /** Flink's "processed in-flight data": bytes processed during alignment. */
  processedInFlight: string;
  /** Bytes of in-flight records persisted with an unaligned checkpoint. */
  persistedInFlight: string;
  /** How its barriers were handled. */
  type: CheckpointType;
  /** `aligned`, `unaligned`, or `aligned → unaligned at +40 ms`. */
  typeLabel: string;
  /** A sentence saying what the type means, for a tooltip. */
  typeTitle: string;
  /** Small tags: final, stopped, savepoint, pinned, discarded. */
  tags: string[];
  failure: string | null;
  /** Its state can be inspected (completed and still retained). */
  browsable: boolean;
  savepoint: string | null;
}

const STATUS_LABELS: Record<string, string> = {
  in_progress: 'in progress',
  completed: 'completed',
  failed: 'failed',
};

export function statusLabel(status: string): string {
  return STATUS_LABELS[status] ?? status.replace(/_/g, ' ');
}

/** The end-to-end duration of a checkpoint; for one in progress, how long it has run by `now`. */
export function checkpointDuration(c: CheckpointView, now: number): number | null {
  if (typeof c.duration_ms === 'number') return c.duration_ms;
  if (typeof c.end_time_ms === 'number') return Math.max(0, c.end_time_ms - c.trigger_time_ms);
  if (c.status === 'in_progress') return Math.max(0, now - c.trigger_time_ms);
  return null;
}

/** How long after the trigger the checkpoint switched to unaligned; `null` when it did not. */
export function switchedAfter(c: Pick<CheckpointView, 'trigger_time_ms' | 'switched_to_unaligned_ms'>): number | null {
  if (typeof c.switched_to_unaligned_ms !== 'number') return null;
  return Math.max(0, c.switched_to_unaligned_ms - c.trigger_time_ms);
}

/** The checkpoint's type in a few words: `aligned`, `unaligned`, `aligned → unaligned at +40 ms`. */
export function checkpointTypeLabel(c: Pick<CheckpointView, 'checkpoint_type' | 'trigger_time_ms' | 'switched_to_unaligned_ms'>): string {
  switch (c.checkpoint_type) {
    case 'aligned':
      return 'aligned';
    case 'unaligned':
      return 'unaligned';
    case 'aligned_then_unaligned': {
      const after = switchedAfter(c);
      return after === null ? 'aligned → unaligned' : `aligned → unaligned at +${formatDuration(after)}`;
    }
    default:
      return String(c.checkpoint_type).replace(/_/g, ' ');
  }
}

/** What the checkpoint's type means. */
export function checkpointTypeTitle(c: Pick<CheckpointView, 'checkpoint_type'>): string {
  switch (c.checkpoint_type) {
    case 'aligned':
      return 'Every subtask aligned its barriers: no in-flight data was persisted';
    case 'unaligned':
      return 'Unaligned from the trigger: barriers overtook in-flight records, which were persisted with the checkpoint';
    case 'aligned_then_unaligned':
      return 'Began aligned; alignment outlasted aligned_timeout_ms, so subtasks switched to unaligned and persisted their in-flight records';
    default:
      return '';
  }
}

/** A subtask's part in an unaligned checkpoint: `aligned`, `unaligned`, `switched at +40 ms`. */
export function subtaskTypeLabel(
  s: Pick<SubtaskCheckpointView, 'unaligned' | 'switched_to_unaligned_ms'>,
  triggerTimeMs: number,
): string {
  if (typeof s.switched_to_unaligned_ms === 'number') {
    return `switched at +${formatDuration(Math.max(0, s.switched_to_unaligned_ms - triggerTimeMs))}`;
  }
  return s.unaligned ? 'unaligned' : 'aligned';
}

export function checkpointRow(c: CheckpointView, now: number = Date.now()): CheckpointRow {
  const inProgress = c.status === 'in_progress';
  const completed = c.status === 'completed';
  const duration = checkpointDuration(c, now);
  const tags: string[] = [];
  if (c.is_final) tags.push('final');
  if (c.stopped) tags.push('stopped');
  if (c.savepoint) tags.push('savepoint');
  if (c.pinned) tags.push('pinned');
  if (completed && !c.retained) tags.push('discarded');
  return {
    id: c.id,
    status: c.status,
    statusLabel: statusLabel(c.status),
    acknowledged: `${c.acknowledged_subtasks}/${c.total_subtasks}`,
    allAcknowledged: c.total_subtasks > 0 && c.acknowledged_subtasks >= c.total_subtasks,
    triggerTime: formatTime(c.trigger_time_ms, now),
    latestAck: formatTime(c.latest_ack_time_ms ?? null, now),
    duration: duration === null ? NONE : inProgress ? `${formatDuration(duration)}…` : formatDuration(duration),
    inProgress,
    // Sizes of a checkpoint that did not complete mean nothing yet.
    stateSize: completed ? formatBytes(c.state_size) : NONE,
    fullSize: completed ? formatBytes(c.full_size) : NONE,
    processedInFlight: inProgress ? NONE : formatBytes(c.processed_in_flight_bytes),
    persistedInFlight: inProgress ? NONE : formatBytes(c.persisted_in_flight_bytes),
    type: c.checkpoint_type,
    typeLabel: checkpointTypeLabel(c),
    typeTitle: checkpointTypeTitle(c),
    tags,
    failure: c.failure ?? null,
    browsable: completed && c.retained,
    savepoint: c.savepoint ?? null,
  };
}

export function checkpointRows(history: CheckpointHistory | null | undefined, now: number = Date.now()): CheckpointRow[] {
  if (!history) return [];
  // Newest first, whatever order the list came in.
  return [...history.data].sort((a, b) => b.id - a.id).map((c) => checkpointRow(c, now));
}

export interface SummaryLine {
  label: string;
  min: string;
  avg: string;
  max: string;
}

/** The min/avg/max table over completed checkpoints; empty when none completed. */
export function summaryLines(summary: CheckpointSummary | null | undefined, counts: CheckpointCounts | null | undefined): SummaryLine[] {
  if (!summary || !counts || counts.completed === 0) return [];
  const line = (label: string, m: MinAvgMax, f: (n: number) => string): SummaryLine => ({
    label,
    min: f(m.min),
    avg: f(m.avg),
    max: f(m.max),
  });
  return [
    line('End-to-end duration', summary.duration_ms, formatDuration),
    line('Checkpointed data size', summary.state_size, formatBytes),
    line('Full checkpoint data size', summary.full_size, formatBytes),
    line('Max alignment duration', summary.max_alignment_ms, formatDuration),
    line('Processed in-flight data', summary.alignment_bytes, formatBytes),
    line('Persisted in-flight data', summary.persisted_in_flight_bytes, formatBytes),
  ];
}

export interface CountsLine {
  label: string;
  value: number;
}

export function countsLines(counts: CheckpointCounts | null | undefined): CountsLine[] {
  if (!counts) return [];
  return [
    { label: 'Triggered', value: counts.total },
    { label: 'In progress', value: counts.in_progress },
    { label: 'Completed', value: counts.completed },
    { label: 'Failed', value: counts.failed },
    { label: 'Unaligned', value: counts.unaligned },
  ];
}

/**
 * The job's checkpoint interval in ms: `null` when checkpoints are on demand only.
 * Absent settings mean the server's default of 1000 ms.
 */
export function checkpointInterval(spec: JobSpec | null | undefined): number | null {
  const cp = spec?.settings?.checkpoint;
  if (!cp || !('interval_ms' in cp) || cp.interval_ms === undefined) return 1000;
  if (cp.interval_ms === null || cp.interval_ms === 0) return null;
  return cp.interval_ms;
}

const ACTIVE: JobStatus[] = ['running', 'restarting'];

/** Why the history is empty, and what to do about it. */
export function emptyHistoryMessage(spec: JobSpec | null | undefined, status: JobStatus | null | undefined): string {
  const interval = checkpointInterval(spec);
  const active = status ? ACTIVE.includes(status) : true;
  if (!active) {
    return `No checkpoint: the job is ${status} and took none while it ran.`;
  }
  if (interval === null) {
    return 'No checkpoint yet: checkpoints of this job are on demand (no interval is set). Trigger one.';
  }
  return `No checkpoint yet: the job checkpoints ${formatInterval(interval)}; the first one is coming. You can also trigger one now.`;
}

/** A one-line description of the checkpointing settings: `every 2 s, 2 retained, timeout 60.0 s`. */
export function checkpointSettingsLine(spec: JobSpec | null | undefined): string {
  const interval = checkpointInterval(spec);
  const cp = spec?.settings?.checkpoint;
  const parts = [interval === null ? 'on demand only' : formatInterval(interval)];
  if (typeof cp?.retained === 'number') parts.push(`${cp.retained} retained`);
  if (typeof cp?.timeout_ms === 'number') parts.push(`timeout ${formatDuration(cp.timeout_ms)}`);
  return parts.join(', ');
}
