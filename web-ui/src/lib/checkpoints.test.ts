import { describe, expect, it } from 'vitest';
import type { CheckpointHistory, JobSpec } from '../api/types';
import {
  checkpointDuration,
  checkpointInterval,
  checkpointRow,
  checkpointRows,
  checkpointSettingsLine,
  countsLines,
  emptyHistoryMessage,
  summaryLines,
} from './checkpoints';
import { NONE } from './format';
import { T0, checkpoint, failed, inProgress } from './fixtures.test-util';

const emptyHistory: CheckpointHistory = {
  counts: { total: 0, in_progress: 0, completed: 0, failed: 0 },
  summary: {
    duration_ms: { min: 0, avg: 0, max: 0 },
    state_size: { min: 0, avg: 0, max: 0 },
    full_size: { min: 0, avg: 0, max: 0 },
    max_alignment_ms: { min: 0, avg: 0, max: 0 },
    alignment_bytes: { min: 0, avg: 0, max: 0 },
  },
  latest: { completed: null, failed: null },
  data: [],
};

describe('checkpointRow', () => {
  it("shows a completed checkpoint with Flink's columns", () => {
    const r = checkpointRow(checkpoint(3, { alignment_bytes: 2048 }), T0 + 10_000);
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
    expect(r.alignment).toBe('aligned');
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

  it('marks unaligned checkpoints', () => {
    expect(checkpointRow(checkpoint(1, { unaligned: true })).alignment).toBe('unaligned');
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
      },
      { total: 4, in_progress: 0, completed: 3, failed: 1 },
    );
    expect(lines[0]).toEqual({ label: 'End-to-end duration', min: '62 ms', avg: '108 ms', max: '1.50 s' });
    expect(lines[1]).toEqual({ label: 'Checkpointed data size', min: '6.99 KiB', avg: '7.18 KiB', max: '7.31 KiB' });
    expect(lines.map((l) => l.label)).toContain('Processed in-flight data');
  });
  it('lists counts by status', () => {
    expect(countsLines({ total: 5, in_progress: 1, completed: 3, failed: 1 }).map((c) => c.value)).toEqual([5, 1, 3, 1]);
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
