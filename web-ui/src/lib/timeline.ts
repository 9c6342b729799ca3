// The geometry of a checkpoint's timeline: per subtask a bar from the trigger through start
// delay, alignment, synchronous and asynchronous parts, and a mark at its acknowledgement.
// Subtasks that have not acknowledged get a pending bar. Pure.

import type { CheckpointDetail, SubtaskCheckpointView } from '../api/types';
import { formatDuration } from './format';

export type Phase = 'start_delay' | 'alignment' | 'sync' | 'async';

export const PHASES: { phase: Phase; label: string }[] = [
  { phase: 'start_delay', label: 'Start delay' },
  { phase: 'alignment', label: 'Alignment' },
  { phase: 'sync', label: 'Sync' },
  { phase: 'async', label: 'Async' },
];

export interface Segment {
  phase: Phase;
  /** Milliseconds from the trigger. */
  startMs: number;
  endMs: number;
  x: number;
  width: number;
}

export interface TimelineRow {
  operator: string;
  subtask: number;
  acked: boolean;
  y: number;
  segments: Segment[];
  /** Acknowledgement, ms from the trigger (null when not acknowledged). */
  ackMs: number | null;
  ackX: number | null;
  /** A subtask that did not acknowledge: its bar runs from the trigger to here. */
  pendingX: number | null;
  /** A tooltip. */
  title: string;
}

export interface TimelineGroup {
  operator: string;
  y: number;
  height: number;
}

export interface Tick {
  ms: number;
  x: number;
  label: string;
}

export interface Timeline {
  rows: TimelineRow[];
  groups: TimelineGroup[];
  ticks: Tick[];
  /** Milliseconds the axis spans. */
  spanMs: number;
  width: number;
  height: number;
  /** Left of the bars: room for labels. */
  plotLeft: number;
  plotRight: number;
  axisY: number;
}

export interface TimelineOptions {
  width: number;
  labelWidth: number;
  rowHeight: number;
  groupGap: number;
  axisHeight: number;
  rightPadding: number;
}

export const DEFAULT_TIMELINE: TimelineOptions = {
  width: 800,
  labelWidth: 120,
  rowHeight: 18,
  groupGap: 10,
  axisHeight: 22,
  rightPadding: 16,
};

/** A round step for about `target` ticks over `span`: 1, 2 or 5 times a power of ten. */
export function niceStep(span: number, target = 5): number {
  if (!(span > 0)) return 1;
  const raw = span / target;
  const pow = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) {
    if (m * pow >= raw) return m * pow;
  }
  return 10 * pow;
}

function phasesOf(s: SubtaskCheckpointView): { phase: Phase; ms: number }[] {
  const nonNeg = (n: number) => (Number.isFinite(n) && n > 0 ? n : 0);
  return [
    { phase: 'start_delay', ms: nonNeg(s.start_delay_ms) },
    { phase: 'alignment', ms: nonNeg(s.alignment_ms) },
    { phase: 'sync', ms: nonNeg(s.sync_ms) },
    { phase: 'async', ms: nonNeg(s.async_ms) },
  ];
}

/**
 * Lays out the timeline of a checkpoint.
 *
 * `parallelism` gives each operator's subtask count (from the job's graph): subtasks it
 * names that are missing from the checkpoint's acknowledgements get pending rows. `now`
 * ends the pending bars of a checkpoint still in progress.
 */
export function timelineGeometry(
  detail: Pick<CheckpointDetail, 'trigger_time_ms' | 'end_time_ms' | 'duration_ms' | 'status' | 'operators' | 'subtasks'>,
  parallelism: Map<string, number> | Record<string, number> = {},
  now: number = Date.now(),
  options: Partial<TimelineOptions> = {},
): Timeline {
  const o = { ...DEFAULT_TIMELINE, ...options };
  const par = parallelism instanceof Map ? parallelism : new Map(Object.entries(parallelism));
  const trigger = detail.trigger_time_ms;

  // Operators in the checkpoint's (graph) order, then any others the acks name.
  const order: string[] = [];
  for (const op of detail.operators) if (!order.includes(op.id)) order.push(op.id);
  for (const s of detail.subtasks) if (!order.includes(s.operator)) order.push(s.operator);
  for (const id of par.keys()) if (!order.includes(id)) order.push(id);

  // Where bars of subtasks that never acknowledged end.
  const pendingEnd =
    typeof detail.end_time_ms === 'number'
      ? Math.max(0, detail.end_time_ms - trigger)
      : detail.status === 'in_progress'
        ? Math.max(0, now - trigger)
        : 0;

  interface Raw {
    operator: string;
    subtask: number;
    sub: SubtaskCheckpointView | null;
  }
  const raws: Raw[] = [];
  for (const op of order) {
    const acks = detail.subtasks.filter((s) => s.operator === op).sort((a, b) => a.subtask - b.subtask);
    const count = Math.max(par.get(op) ?? 0, acks.length ? Math.max(...acks.map((s) => s.subtask)) + 1 : 0);
    for (let i = 0; i < count; i++) {
      raws.push({ operator: op, subtask: i, sub: acks.find((s) => s.subtask === i) ?? null });
    }
  }

  // The span: the latest of every acknowledgement, phase end, the duration and pending bars.
  let span = Math.max(0, typeof detail.duration_ms === 'number' ? detail.duration_ms : 0);
  for (const r of raws) {
    if (r.sub) {
      const phaseEnd = phasesOf(r.sub).reduce((t, p) => t + p.ms, 0);
      const ack = r.sub.ack_time_ms > 0 ? r.sub.ack_time_ms - trigger : 0;
      span = Math.max(span, phaseEnd, ack);
    } else {
      span = Math.max(span, pendingEnd);
    }
  }
  if (!(span > 0)) span = 1;

  const plotLeft = o.labelWidth;
  const plotRight = Math.max(plotLeft + 10, o.width - o.rightPadding);
  const scale = (plotRight - plotLeft) / span;
  const xOf = (ms: number) => plotLeft + Math.min(span, Math.max(0, ms)) * scale;

  const rows: TimelineRow[] = [];
  const groups: TimelineGroup[] = [];
  let y = o.axisHeight;
  let current: string | null = null;
  for (const r of raws) {
    if (r.operator !== current) {
      if (current !== null) y += o.groupGap;
      current = r.operator;
      groups.push({ operator: r.operator, y, height: 0 });
    }
    const group = groups[groups.length - 1]!;
    if (r.sub) {
      let t = 0;
      const segments: Segment[] = [];
      for (const p of phasesOf(r.sub)) {
        const start = t;
        t += p.ms;
        segments.push({ phase: p.phase, startMs: start, endMs: t, x: xOf(start), width: xOf(t) - xOf(start) });
      }
      const ackMs = r.sub.ack_time_ms > 0 ? Math.max(0, r.sub.ack_time_ms - trigger) : null;
      rows.push({
        operator: r.operator,
        subtask: r.subtask,
        acked: true,
        y,
        segments,
        ackMs,
        ackX: ackMs === null ? null : xOf(ackMs),
        pendingX: null,
        title:
          `${r.operator} #${r.subtask}: start delay ${formatDuration(r.sub.start_delay_ms)}, ` +
          `alignment ${formatDuration(r.sub.alignment_ms)}, sync ${formatDuration(r.sub.sync_ms)}, ` +
          `async ${formatDuration(r.sub.async_ms)}` +
          (ackMs === null ? '' : `, acknowledged at +${formatDuration(ackMs)}`),
      });
    } else {
      rows.push({
        operator: r.operator,
        subtask: r.subtask,
        acked: false,
        y,
        segments: [],
        ackMs: null,
        ackX: null,
        pendingX: pendingEnd > 0 ? xOf(pendingEnd) : null,
        title: `${r.operator} #${r.subtask}: no acknowledgement${detail.status === 'in_progress' ? ' yet' : ''}`,
      });
    }
    y += o.rowHeight;
    group.height = y - group.y;
  }

  const step = niceStep(span);
  const ticks: Tick[] = [];
  for (let ms = 0; ms <= span + 1e-9; ms += step) {
    ticks.push({ ms, x: xOf(ms), label: ms === 0 ? '0' : formatDuration(ms) });
    if (ticks.length > 50) break;
  }

  return {
    rows,
    groups,
    ticks,
    spanMs: span,
    width: o.width,
    height: y + 4,
    plotLeft,
    plotRight,
    axisY: o.axisHeight - 4,
  };
}
