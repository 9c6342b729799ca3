import { describe, expect, it } from 'vitest';
import type { JobSummary, Module } from '../api/types';
import {
  eventTime,
  eventTimeText,
  jobActions,
  moduleLabel,
  pressureLevel,
  sortJobs,
  statusTone,
  vertexKindLine,
  vertexWhat,
} from './jobs';

const mod = (id: string, name: string): Module => ({ id, name, size: 1, created_ms: 1, exports: [] });
const HASH = 'ce8a4f8b4f78b2f665b0c1e8a44433ab9acdd77d4567155381939f8b091e9083';

describe('jobs', () => {
  it('gives statuses a tone', () => {
    expect(statusTone('running')).toBe('ok');
    expect(statusTone('failed')).toBe('error');
    expect(statusTone('restarting')).toBe('busy');
    expect(statusTone('stopped')).toBe('idle');
    expect(statusTone('in_progress')).toBe('busy');
  });
  it('offers the actions that fit the status', () => {
    expect(jobActions('running')).toEqual({ stop: true, cancel: true, restart: true, checkpoint: true });
    expect(jobActions('stopped')).toEqual({ stop: false, cancel: true, restart: true, checkpoint: false });
    expect(jobActions('failed')).toEqual({ stop: false, cancel: false, restart: true, checkpoint: false });
    expect(jobActions('finished')).toEqual({ stop: false, cancel: false, restart: false, checkpoint: false });
  });
  it('names modules', () => {
    expect(moduleLabel(HASH, [mod(HASH, 'wordcount')])).toBe('wordcount');
    expect(moduleLabel(HASH, [])).toBe('ce8a4f8b4f78');
    expect(moduleLabel('builtin:identity', null)).toBe('builtin:identity');
    expect(moduleLabel(null, [])).toBeNull();
  });
  it('grades backpressure', () => {
    expect(pressureLevel(0)).toBe('none');
    expect(pressureLevel(0.1)).toBe('none');
    expect(pressureLevel(0.3)).toBe('low');
    expect(pressureLevel(0.9)).toBe('high');
    expect(pressureLevel(Number.NaN)).toBe('none');
  });
  it('describes vertices', () => {
    expect(vertexKindLine({ kind: 'operator', parallelism: 2 })).toBe('operator · p=2');
    expect(vertexWhat({ module: HASH, connector: null }, [mod(HASH, 'wordcount')])).toBe('module wordcount');
    expect(vertexWhat({ module: null, connector: 'generator' }, [])).toBe('connector generator');
    expect(vertexWhat({}, [])).toBe('');
  });
  it('lists active jobs first, newest first', () => {
    const j = (id: string, status: JobSummary['status'], created_ms: number) => ({ id, status, created_ms }) as JobSummary;
    expect(sortJobs([j('a', 'failed', 5), j('b', 'running', 1), j('c', 'running', 3), j('d', 'stopped', 2)]).map((x) => x.id)).toEqual([
      'c',
      'd',
      'b',
      'a',
    ]);
  });
});

describe('event time', () => {
  it('takes the lowest watermark, the largest lag and sums the Kafka lag', () => {
    const e = eventTime([
      { watermark_ms: 1000, event_time_lag_ms: 5000, kafka_lag: [{ lag: 3 }, { lag: 4 }] },
      { watermark_ms: 900, event_time_lag_ms: 7000, idle: true, kafka_lag: [{ lag: 10 }] },
    ]);
    expect(e).toEqual({ watermarkMs: 900, lagMs: 7000, idle: false, kafkaLag: 17 });
    expect(eventTimeText(e)).toMatch(/behind · Kafka lag 17$/);
  });
  it('has no watermark until every subtask has one, and says when all are idle', () => {
    const e = eventTime([{ watermark_ms: 1000, idle: true }, { idle: true }]);
    expect(e.watermarkMs).toBeNull();
    expect(e.idle).toBe(true);
    expect(eventTimeText(e)).toBe('idle');
    expect(eventTimeText(eventTime([]))).toBe('—');
  });
});
