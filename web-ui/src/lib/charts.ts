// Series for the charts (uPlot's aligned data: x values, then one array per
// series with `null` for a gap). Pure.

import type { CheckpointView } from '../api/types';

export interface ChartSeries {
  label: string;
  /** Unit of the values, for axes and legends. */
  unit: 'ms' | 'bytes' | 'rate' | 'count';
  values: (number | null)[];
}

export interface ChartData {
  /** Checkpoint ids, or times in unix seconds; ascending (uPlot needs an ascending x). */
  x: number[];
  series: ChartSeries[];
}

/** Checkpoints oldest first, one per id. */
function ascending(checkpoints: CheckpointView[]): CheckpointView[] {
  const byId = new Map<number, CheckpointView>();
  for (const c of checkpoints) byId.set(c.id, c);
  return [...byId.values()].sort((a, b) => a.id - b.id);
}

/**
 * Duration per checkpoint id: end-to-end for completed ones; failed and in-progress ones
 * leave a gap (their duration is not comparable), and so do checkpoints not listed.
 */
export function durationSeries(checkpoints: CheckpointView[]): ChartData {
  const list = ascending(checkpoints);
  return {
    x: list.map((c) => c.id),
    series: [
      {
        label: 'End-to-end duration',
        unit: 'ms',
        values: list.map((c) => (c.status === 'completed' && typeof c.duration_ms === 'number' ? c.duration_ms : null)),
      },
      {
        label: 'Max alignment',
        unit: 'ms',
        values: list.map((c) => (c.status === 'completed' ? c.max_alignment_ms : null)),
      },
    ],
  };
}

/** Checkpointed (incremental) size and full size per checkpoint id, completed ones only. */
export function sizeSeries(checkpoints: CheckpointView[]): ChartData {
  const list = ascending(checkpoints);
  const completed = (c: CheckpointView) => c.status === 'completed';
  return {
    x: list.map((c) => c.id),
    series: [
      { label: 'Checkpointed size', unit: 'bytes', values: list.map((c) => (completed(c) ? c.state_size : null)) },
      { label: 'Full size', unit: 'bytes', values: list.map((c) => (completed(c) ? c.full_size : null)) },
    ],
  };
}

/** uPlot's `AlignedData` layout: `[x, ...series]`. */
export function toAligned(data: ChartData): [number[], ...(number | null)[][]] {
  return [data.x, ...data.series.map((s) => s.values)];
}

/** Whether a chart would show anything (at least one point in some series). */
export function hasPoints(data: ChartData): boolean {
  return data.series.some((s) => s.values.some((v) => v !== null));
}
