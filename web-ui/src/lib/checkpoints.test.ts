import { describe, expect, it } from 'vitest';
import type { CheckpointHistory, JobSpec } from '../api/types';
import {
  checkpointDuration,
  checkpointInterval,
  checkpointRow,
  checkpointRows,
  checkpointSettingsLine,
  checkpointTypeLabel,
  countsLines,
  emptyHistoryMessage,
  subtaskTypeLabel,
  summaryLines,
  switchedAfter,
} from './checkpoints';
import { NONE } from './format';
import { T0, checkpoint, failed, inProgress } from './fixtures.test-util';

const emptyHistory: CheckpointHistory = {
  counts: { total: 0, in_progress: 0, completed: 0, failed: 0, unaligned: 0, switched_to_unaligned: 0 },
  summary: {
    duration_ms: { min: 0, avg: 0, max: 0 },
    state_size: { min: 0, avg: 0, max: 0 },
    full_size: { min: 0, avg: 0, max: 0 },
    max_alignment_ms: { min: 0, avg: 0, max: 0 },
    alignment_bytes: { min: 0, avg: 0, max: 0 },
    persisted_in_flight_bytes: { min: 0, avg: 0, max: 0 },
  },
  latest: { completed: null, failed: null },
  data: [],
};

describe('checkpointRow', () => {
  it("shows a completed checkpoint with Flink's columns", () => {
    const r = checkpointRow(checkpoint(3, { alignment_bytes: 2048, processed_in_flight_bytes: 2048 }), T0 + 10_000);
    expect(r.id).toBe(3);
    expect(r.status).toBe('completed');
    expect(r.statusLabel).toBe('completed');
    expect(r.acknowledged).toBe('7/7');
    expect(r.allAcknowledged).toBe(true);
    expect(r.triggerTime).toBe('15:56:13');
    expect(r.latestAck).toBe('15:56:13');
    expect(r.duration).toBe('151 ms');
    expect(r.stateSize).toBe('6.99 KiB');
    expect(r.fullSize).toBe('21.5 KiB');
    expect(r.processedInFlight).toBe('2.00 KiB');
    expect(r.persistedInFlight).toBe('0 B');
    expect(r.type).toBe('aligned');
    expect(r.typeLabel).toBe('aligned');
    expect(r.tags).toEqual([]);
    expect(r.browsable).toBe(true);
  });

  it('shows an in-progress checkpoint without end time: elapsed so far, no sizes', () => {
    const c = inProgress(5, 3);
    const r = checkpointRow(c, c.trigger_time_ms + 1234);
    expect(r.inProgress).toBe(true);
    expect(r.statusLabel).toBe('in progress');
    expect(r.acknowledged).toBe('3/7');
    expect(r.allAcknowledged).toBe(false);
    expect(r.duration).toBe('1.23 s…');
    expect(r.stateSize).toBe(NONE);
    expect(r.processedInFlight).toBe(NONE);
    expect(r.browsable).toBe(false);
  });

  it('shows an in-progress checkpoint no subtask acknowledged yet', () => {
    const r = checkpointRow(inProgress(6, 0), T0);
    expect(r.latestAck).toBe(NONE);
    expect(r.acknowledged).toBe('0/7');
  });

  it('shows a failed checkpoint with its failure and no sizes', () => {
    const r = checkpointRow(failed(4), T0 + 100_000);
    expect(r.status).toBe('failed');
    expect(r.failure).toBe('checkpoint 4 expired after 60000 ms');
    expect(r.duration).toBe('1m 00s');
    expect(r.stateSize).toBe(NONE);
    expect(r.browsable).toBe(false);
    // A failed checkpoint is not "discarded": it never had state.
    expect(r.tags).not.toContain('discarded');
  });

  it('tags final, stopped, savepoint, pinned and discarded checkpoints', () => {
    const r = checkpointRow(
      checkpoint(9, { is_final: true, stopped: true, savepoint: 'ab'.repeat(16), pinned: true, retained: false }),
      T0,
    );
    expect(r.tags).toEqual(['final', 'stopped', 'savepoint', 'pinned', 'discarded']);
    expect(r.browsable).toBe(false);
    expect(r.savepoint).toBe('ab'.repeat(16));
  });

  it('shows an unaligned checkpoint with the in-flight data it persisted', () => {
    const r = checkpointRow(
      checkpoint(1, { unaligned: true, checkpoint_type: 'unaligned', persisted_in_flight_bytes: 3 * 1024 * 1024, processed_in_flight_bytes: 512 }),
      T0,
    );
    expect(r.type).toBe('unaligned');
    expect(r.typeLabel).toBe('unaligned');
    expect(r.typeTitle).toMatch(/overtook/);
    expect(r.persistedInFlight).toBe('3.00 MiB');
    expect(r.processedInFlight).toBe('512 B');
  });

  it('shows when a checkpoint switched from aligned to unaligned, after its trigger', () => {
    const c = checkpoint(2, { unaligned: true, checkpoint_type: 'aligned_then_unaligned', persisted_in_flight_bytes: 100 });
    const r = checkpointRow({ ...c, switched_to_unaligned_ms: c.trigger_time_ms + 40 }, T0);
    expect(r.type).toBe('aligned_then_unaligned');
    expect(r.typeLabel).toBe('aligned → unaligned at +40 ms');
    expect(r.typeTitle).toMatch(/aligned_timeout_ms/);
    expect(r.persistedInFlight).toBe('100 B');
  });
});

describe('subtaskTypeLabel', () => {
  it('tells an aligned, an unaligned and a switched subtask apart', () => {
    expect(subtaskTypeLabel({ unaligned: false, switched_to_unaligned_ms: null }, T0)).toBe('aligned');
    expect(subtaskTypeLabel({ unaligned: true, switched_to_unaligned_ms: null }, T0)).toBe('unaligned');
    expect(subtaskTypeLabel({ unaligned: true, switched_to_unaligned_ms: T0 + 1500 }, T0)).toBe('switched at +1.50 s');
    // A clock that went back does not show a negative moment.
    expect(subtaskTypeLabel({ unaligned: true, switched_to_unaligned_ms: T0 - 5 }, T0)).toBe('switched at +0 ms');
  });
});

describe('checkpointTypeLabel', () => {
  it('says aligned → unaligned without a moment when none is known', () => {
    expect(checkpointTypeLabel({ checkpoint_type: 'aligned_then_unaligned', trigger_time_ms: T0, switched_to_unaligned_ms: null })).toBe(
      'aligned → unaligned',
    );
    expect(switchedAfter({ trigger_time_ms: T0, switched_to_unaligned_ms: T0 + 7 })).toBe(7);
    expect(switchedAfter({ trigger_time_ms: T0, switched_to_unaligned_ms: null })).toBeNull();
  });
});

describe('checkpointDuration', () => {
  it('prefers the reported duration, then end - trigger, then the time so far', () => {
    expect(checkpointDuration(checkpoint(1), T0)).toBe(150.5);
    expect(checkpointDuration(checkpoint(1, { duration_ms: null }), T0)).toBe(150);
    expect(checkpointDuration(inProgress(1), T0 + 700)).toBe(700);
    expect(checkpointDuration(checkpoint(1, { status: 'failed', duration_ms: null, end_time_ms: null }), T0)).toBeNull();
  });
});

describe('checkpointRows', () => {
  it('is empty for an empty or missing history', () => {
    expect(checkpointRows(emptyHistory)).toEqual([]);
    expect(checkpointRows(null)).toEqual([]);
  });
  it('lists newest first whatever the input order', () => {
    const rows = checkpointRows({ ...emptyHistory, data: [checkpoint(1), inProgress(3), failed(2)] }, T0);
    expect(rows.map((r) => r.id)).toEqual([3, 2, 1]);
    expect(rows.map((r) => r.status)).toEqual(['in_progress', 'failed', 'completed']);
  });
});

describe('summary and counts', () => {
  it('has no summary before a checkpoint completed', () => {
    expect(summaryLines(emptyHistory.summary, emptyHistory.counts)).toEqual([]);
    expect(summaryLines(null, null)).toEqual([]);
  });
  it('formats min/avg/max per figure', () => {
    const lines = summaryLines(
      {
        ...emptyHistory.summary,
        duration_ms: { min: 62.26775, avg: 108.491127, max: 1500 },
        state_size: { min: 7162, avg: 7348, max: 7483 },
        persisted_in_flight_bytes: { min: 0, avg: 1536, max: 4096 },
      },
      { total: 4, in_progress: 0, completed: 3, failed: 1, unaligned: 2, switched_to_unaligned: 1 },
    );
    expect(lines[0]).toEqual({ label: 'End-to-end duration', min: '62 ms', avg: '108 ms', max: '1.50 s' });
    expect(lines[1]).toEqual({ label: 'Checkpointed data size', min: '6.99 KiB', avg: '7.18 KiB', max: '7.31 KiB' });
    expect(lines.map((l) => l.label)).toContain('Processed in-flight data');
    expect(lines.find((l) => l.label === 'Persisted in-flight data')).toEqual({
      label: 'Persisted in-flight data',
      min: '0 B',
      avg: '1.50 KiB',
      max: '4.00 KiB',
    });
  });
  it('lists counts by status, and how many completed unaligned', () => {
    const lines = countsLines({ total: 5, in_progress: 1, completed: 3, failed: 1, unaligned: 2, switched_to_unaligned: 1 });
    expect(lines.map((c) => c.value)).toEqual([5, 1, 3, 1, 2]);
    expect(lines[4]?.label).toBe('Unaligned');
    expect(countsLines(undefined)).toEqual([]);
  });
});

describe('empty history', () => {
  const spec = (checkpointSettings: unknown): JobSpec =>
    ({ nodes: [], settings: { checkpoint: checkpointSettings } }) as unknown as JobSpec;

  it('knows the interval: given, default, or on demand', () => {
    expect(checkpointInterval(spec({ interval_ms: 2000 }))).toBe(2000);
    expect(checkpointInterval({ nodes: [] })).toBe(1000);
    expect(checkpointInterval(spec({}))).toBe(1000);
    expect(checkpointInterval(spec({ interval_ms: null }))).toBeNull();
    expect(checkpointInterval(spec({ interval_ms: 0 }))).toBeNull();
  });
  it('says a running job checkpoints every N', () => {
    expect(emptyHistoryMessage(spec({ interval_ms: 2000 }), 'running')).toBe(
      'No checkpoint yet: the job checkpoints every 2 s; the first one is coming. You can also trigger one now.',
    );
  });
  it('says checkpoints are on demand when there is no interval', () => {
    expect(emptyHistoryMessage(spec({ interval_ms: null }), 'running')).toMatch(/on demand.*Trigger one/);
  });
  it('says an ended job took none', () => {
    expect(emptyHistoryMessage(spec({ interval_ms: 2000 }), 'canceled')).toBe(
      'No checkpoint: the job is canceled and took none while it ran.',
    );
  });
  it('describes the settings in one line', () => {
    expect(checkpointSettingsLine(spec({ interval_ms: 2000, retained: 2, timeout_ms: 60000 }))).toBe(
      'every 2 s, 2 retained, timeout 1m 00s',
    );
    expect(checkpointSettingsLine(spec({ interval_ms: null }))).toBe('on demand only');
  });
});
