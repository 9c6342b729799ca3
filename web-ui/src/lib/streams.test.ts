import { describe, expect, it } from 'vitest';
import type { JobSummary } from '../api/types';
import { appendTail, recordsFromLines, streamUsers, tailStart } from './streams';

describe('records from JSON lines', () => {
  it('takes objects with a value as records and anything else as a bare value', () => {
    expect(recordsFromLines('{"key": "k", "value": {"n": 1}}\n\n"hello"\n3\n{"n": 2}\n')).toEqual([
      { key: 'k', value: { n: 1 } },
      { value: 'hello' },
      { value: 3 },
      { value: { n: 2 } },
    ]);
  });
  it('names the first bad line', () => {
    expect(() => recordsFromLines('1\n{oops\n')).toThrow('line 2: not JSON');
    expect(() => recordsFromLines('{"value": 1, "colour": 2}')).toThrow('line 1: a record has no field `colour`');
    expect(() => recordsFromLines('  \n')).toThrow('no records to push');
  });
});

describe('stream users', () => {
  const job = (id: string, nodes: unknown[], dead_letter: unknown = null) =>
    ({ id, name: `job-${id}`, status: 'running', spec: { name: id, nodes, edges: [], dead_letter } }) as unknown as JobSummary;
  it('finds the jobs reading and writing a stream', () => {
    const jobs = [
      job('a', [
        { id: 'in', kind: 'source', connector: 'stream', config: { stream: 'lines' } },
        { id: 'out', kind: 'sink', connector: 'stream', config: { stream: 'counts' } },
      ]),
      job('b', [{ id: 'in', kind: 'source', connector: 'stream', config: { stream: 'counts' } }], {
        connector: 'stream',
        config: { stream: 'lines' },
      }),
      job('c', [{ id: 'gen', kind: 'source', connector: 'generator', config: {} }]),
    ];
    const lines = streamUsers(jobs, 'lines');
    expect(lines.readers.map((u) => [u.job, u.node])).toEqual([['a', 'in']]);
    expect(lines.writers.map((u) => [u.job, u.node])).toEqual([['b', 'dead-letters']]);
    const counts = streamUsers(jobs, 'counts');
    expect(counts.readers.map((u) => u.jobName)).toEqual(['job-b']);
    expect(counts.writers.map((u) => u.jobName)).toEqual(['job-a']);
  });
});

describe('tail', () => {
  it('appends new offsets only and keeps the newest', () => {
    const r = (offset: number) => ({ offset });
    expect(appendTail([r(1), r(2)], [r(2), r(3), r(4)], 3)).toEqual([r(2), r(3), r(4)]);
    expect(appendTail([], [r(0)])).toEqual([r(0)]);
    expect(tailStart(120, 50)).toBe(70);
    expect(tailStart(10, 50)).toBe(0);
  });
});
