import { describe, expect, it } from 'vitest';
import type { CheckpointDetail, SubtaskCheckpointView } from '../api/types';
import { niceStep, timelineGeometry } from './timeline';

const T = 1_795_967_775_338;

function sub(operator: string, subtask: number, over: Partial<SubtaskCheckpointView> = {}): SubtaskCheckpointView {
  return {
    operator,
    subtask,
    ack_time_ms: T + 100,
    sync_ms: 10,
    async_ms: 30,
    alignment_ms: 20,
    alignment_bytes: 0,
    processed_in_flight_bytes: 0,
    unaligned: false,
    persisted_in_flight_bytes: 0,
    switched_to_unaligned_ms: null,
    start_delay_ms: 40,
    state_bytes: 10,
    full_state_bytes: 10,
    ...over,
  };
}

function op(id: string) {
  const z = { min: 0, avg: 0, max: 0 };
  return {
    id,
    acknowledged_subtasks: 0,
    state_size: 0,
    full_size: 0,
    max_end_to_end_ms: 0,
    sync_ms: z,
    async_ms: z,
    alignment_ms: z,
    alignment_bytes: z,
    processed_in_flight_bytes: 0,
    persisted_in_flight_bytes: 0,
    unaligned_subtasks: 0,
    switched_to_unaligned_ms: null,
    start_delay_ms: z,
  };
}

type D = Pick<CheckpointDetail, 'trigger_time_ms' | 'end_time_ms' | 'duration_ms' | 'status' | 'operators' | 'subtasks'>;

const opts = { width: 420, labelWidth: 100, rightPadding: 20, rowHeight: 10, groupGap: 5, axisHeight: 20 };

describe('timelineGeometry', () => {
  it('draws the four phases back to back from the trigger, to scale', () => {
    const d: D = {
      trigger_time_ms: T,
      end_time_ms: T + 100,
      duration_ms: 100,
      status: 'completed',
      operators: [op('count')],
      subtasks: [sub('count', 0)],
    };
    const tl = timelineGeometry(d, { count: 1 }, T + 1000, opts);
    expect(tl.spanMs).toBe(100);
    expect(tl.plotLeft).toBe(100);
    expect(tl.plotRight).toBe(400);
    const [row] = tl.rows;
    expect(row!.acked).toBe(true);
    expect(row!.segments.map((s) => [s.phase, s.startMs, s.endMs])).toEqual([
      ['start_delay', 0, 40],
      ['alignment', 40, 60],
      ['sync', 60, 70],
      ['async', 70, 100],
    ]);
    // 300 px for 100 ms: 3 px per ms.
    expect(row!.segments[0]!.x).toBe(100);
    expect(row!.segments[0]!.width).toBeCloseTo(120);
    expect(row!.segments[3]!.x).toBeCloseTo(310);
    expect(row!.ackMs).toBe(100);
    expect(row!.ackX).toBeCloseTo(400);
  });

  it('gives subtasks without an acknowledgement a pending row (in progress: up to now)', () => {
    const d: D = {
      trigger_time_ms: T,
      end_time_ms: null,
      duration_ms: null,
      status: 'in_progress',
      operators: [op('split'), op('count')],
      subtasks: [sub('split', 1, { ack_time_ms: T + 50, start_delay_ms: 10, alignment_ms: 0, sync_ms: 5, async_ms: 20 })],
    };
    const tl = timelineGeometry(d, { split: 2, count: 2 }, T + 200, opts);
    expect(tl.rows.map((r) => `${r.operator}#${r.subtask}:${r.acked}`)).toEqual([
      'split#0:false',
      'split#1:true',
      'count#0:false',
      'count#1:false',
    ]);
    expect(tl.spanMs).toBe(200);
    const pending = tl.rows[0]!;
    expect(pending.segments).toEqual([]);
    expect(pending.ackX).toBeNull();
    expect(pending.pendingX).toBeCloseTo(400);
    expect(pending.title).toContain('no acknowledgement yet');
    // Groups per operator, with a gap between them.
    expect(tl.groups.map((g) => g.operator)).toEqual(['split', 'count']);
    expect(tl.groups[1]!.y).toBe(tl.groups[0]!.y + tl.groups[0]!.height + opts.groupGap);
  });

  it('ends the pending bars of a failed checkpoint at its end time', () => {
    const d: D = {
      trigger_time_ms: T,
      end_time_ms: T + 80,
      duration_ms: null,
      status: 'failed',
      operators: [op('count')],
      subtasks: [],
    };
    const tl = timelineGeometry(d, { count: 1 }, T + 10_000, opts);
    expect(tl.spanMs).toBe(80);
    expect(tl.rows[0]!.pendingX).toBeCloseTo(400);
    expect(tl.rows[0]!.title).not.toContain('yet');
  });

  it('widens the span to the latest acknowledgement and sorts subtasks', () => {
    const d: D = {
      trigger_time_ms: T,
      end_time_ms: T + 50,
      duration_ms: 50,
      status: 'completed',
      operators: [op('a')],
      subtasks: [sub('a', 1, { ack_time_ms: T + 150 }), sub('a', 0, { ack_time_ms: T + 20 })],
    };
    const tl = timelineGeometry(d, {}, T, opts);
    expect(tl.spanMs).toBe(150);
    expect(tl.rows.map((r) => r.subtask)).toEqual([0, 1]);
  });

  it('clamps negative figures to zero and has a non-zero span for an empty checkpoint', () => {
    const d: D = {
      trigger_time_ms: T,
      end_time_ms: T,
      duration_ms: 0,
      status: 'completed',
      operators: [op('a')],
      subtasks: [sub('a', 0, { start_delay_ms: -3, alignment_ms: 0, sync_ms: 0, async_ms: 0, ack_time_ms: T })],
    };
    const tl = timelineGeometry(d, {}, T, opts);
    expect(tl.spanMs).toBe(1);
    expect(tl.rows[0]!.segments.every((s) => s.width === 0)).toBe(true);
    expect(tl.ticks[0]!.label).toBe('0');
  });

  it('puts round ticks along the axis', () => {
    const d: D = {
      trigger_time_ms: T,
      end_time_ms: T + 100,
      duration_ms: 100,
      status: 'completed',
      operators: [op('count')],
      subtasks: [sub('count', 0)],
    };
    const tl = timelineGeometry(d, {}, T, opts);
    expect(tl.ticks.map((t) => t.ms)).toEqual([0, 20, 40, 60, 80, 100]);
    expect(tl.ticks.map((t) => t.label)).toEqual(['0', '20 ms', '40 ms', '60 ms', '80 ms', '100 ms']);
  });
});

describe('niceStep', () => {
  it('picks 1, 2 or 5 times a power of ten', () => {
    expect(niceStep(100)).toBe(20);
    expect(niceStep(1000)).toBe(200);
    expect(niceStep(7)).toBe(2);
    expect(niceStep(0.5)).toBe(0.1);
    expect(niceStep(0)).toBe(1);
  });
});
