import { describe, expect, it } from 'vitest';
import {
  browsableCheckpoints,
  browsableSavepoints,
  canGoNext,
  canGoPrev,
  currentCursor,
  entryPlace,
  firstPage,
  nextPage,
  operatorChoices,
  pageRange,
  parseSourceKey,
  prevPage,
  showStateValue,
  sourceKey,
  stateNames,
  stateUrl,
} from './state';
import { checkpoint, failed, inProgress } from './fixtures.test-util';
import type { SavepointRecord } from '../api/types';

describe('stateUrl', () => {
  it('builds the checkpoint state path with limit, cursor and state filter', () => {
    expect(stateUrl({ kind: 'checkpoint', job: 'j1', checkpoint: 4 }, 'count', { cursor: '1.0', state: 'counts', limit: 20 })).toBe(
      '/jobs/j1/checkpoints/4/state/count?limit=20&cursor=1.0&state=counts',
    );
  });
  it('builds the savepoint state path, leaving out an empty cursor and blank filter', () => {
    expect(stateUrl({ kind: 'savepoint', savepoint: 'abc' }, 'count', { cursor: null, state: '  ' })).toBe(
      '/savepoints/abc/state/count?limit=50',
    );
  });
  it('encodes operator names and filters', () => {
    expect(stateUrl({ kind: 'savepoint', savepoint: 'abc' }, 'my op/1', { state: 'a&b' })).toBe(
      '/savepoints/abc/state/my%20op%2F1?limit=50&state=a%26b',
    );
  });
});

describe('source keys', () => {
  it('round-trips checkpoints and savepoints', () => {
    const cp = { kind: 'checkpoint' as const, job: '68db05a4', checkpoint: 12 };
    const sp = { kind: 'savepoint' as const, savepoint: '95e71bce' };
    expect(sourceKey(cp)).toBe('cp:68db05a4:12');
    expect(parseSourceKey(sourceKey(cp))).toEqual(cp);
    expect(parseSourceKey(sourceKey(sp))).toEqual(sp);
  });
  it('rejects anything else', () => {
    expect(parseSourceKey('')).toBeNull();
    expect(parseSourceKey('cp:job:x')).toBeNull();
    expect(parseSourceKey('zz:1')).toBeNull();
  });
});

describe('what can be browsed', () => {
  it('keeps completed, retained checkpoints only', () => {
    const list = [checkpoint(5), checkpoint(4, { retained: false }), inProgress(6), failed(3)];
    expect(browsableCheckpoints(list).map((c) => c.id)).toEqual([5]);
  });
  it('keeps completed savepoints only', () => {
    const sp = (id: string, status: SavepointRecord['status']): SavepointRecord => ({
      id,
      job: 'j',
      job_name: 'n',
      status,
      created_ms: 1,
      bytes: 0,
      entries: 0,
    });
    expect(browsableSavepoints([sp('a', 'completed'), sp('b', 'pending'), sp('c', 'failed')]).map((s) => s.id)).toEqual(['a']);
  });
  it('offers operators before sources and sinks', () => {
    const choices = operatorChoices([
      { id: 'lines', kind: 'source' },
      { id: 'split', kind: 'operator' },
      { id: 'count', kind: 'operator' },
      { id: 'out', kind: 'sink' },
    ]);
    expect(choices.map((c) => c.id)).toEqual(['split', 'count', 'lines', 'out']);
    expect(choices[0]!.label).toBe('split (operator)');
    expect(choices[2]!.stateful).toBe(false);
  });
});

describe('pager (cursor stack)', () => {
  it('starts on the first page without a cursor', () => {
    const p = firstPage();
    expect(currentCursor(p)).toBeNull();
    expect(canGoPrev(p)).toBe(false);
  });
  it('follows next cursors and steps back', () => {
    let p = firstPage();
    p = nextPage(p, '1.0');
    expect(currentCursor(p)).toBe('1.0');
    p = nextPage(p, '9.3');
    expect(currentCursor(p)).toBe('9.3');
    expect(canGoPrev(p)).toBe(true);
    p = prevPage(p);
    expect(currentCursor(p)).toBe('1.0');
    p = prevPage(p);
    expect(currentCursor(p)).toBeNull();
    expect(prevPage(p)).toBe(p);
  });
  it('replaces the forward history when a different next is followed after going back', () => {
    let p = nextPage(nextPage(firstPage(), 'a'), 'b');
    p = prevPage(p);
    p = nextPage(p, 'c');
    expect(p.cursors).toEqual([null, 'a', 'c']);
    expect(p.index).toBe(2);
  });
  it('stays put on the last page', () => {
    const p = firstPage();
    expect(nextPage(p, null)).toBe(p);
    expect(nextPage(p, undefined)).toBe(p);
    expect(nextPage(p, '')).toBe(p);
    expect(canGoNext(null)).toBe(false);
    expect(canGoNext('2.1')).toBe(true);
  });
  it('says which entries a page holds', () => {
    expect(pageRange(firstPage(), 50, 0)).toBe('No entries');
    expect(pageRange(firstPage(), 50, 50)).toBe('Page 1 · entries 1–50');
    expect(pageRange(nextPage(firstPage(), 'x'), 50, 7)).toBe('Page 2 · entries 51–57');
    expect(pageRange(nextPage(firstPage(), 'x'), 50, 0)).toBe('Page 2: no entries');
  });
});

describe('keys and values', () => {
  it('shows MessagePack-decoded values as JSON', () => {
    expect(showStateValue('w151')).toEqual({ text: '"w151"', hex: false });
    expect(showStateValue(309)).toEqual({ text: '309', hex: false });
    expect(showStateValue({ count: 2, words: ['a'] })).toEqual({ text: '{"count":2,"words":["a"]}', hex: false });
    expect(showStateValue(null)).toEqual({ text: 'null', hex: false });
    expect(showStateValue(undefined)).toEqual({ text: '—', hex: false });
  });
  it('shows hex keys (not MessagePack) as hex', () => {
    expect(showStateValue({ hex: '00ff10' })).toEqual({ text: '0x00ff10', hex: true });
  });
  it('does not mistake an object with a hex field among others for raw bytes', () => {
    expect(showStateValue({ hex: 'ab', other: 1 })).toEqual({ text: '{"hex":"ab","other":1}', hex: false });
    expect(showStateValue({ hex: 12 }).hex).toBe(false);
  });
  it('places keyed and operator state', () => {
    expect(entryPlace({ key_group: 12, subtask: null, state: 's', key: 1, value: 2 })).toBe('kg 12');
    expect(entryPlace({ key_group: null, subtask: 1, state: 's', key: 1, value: 2 })).toBe('subtask 1');
    expect(entryPlace({ state: 's', key: 1, value: 2 })).toBe('—');
  });
  it('collects state names', () => {
    expect(stateNames([{ state: 'b', key: 1, value: 1 }, { state: 'a', key: 1, value: 1 }, { state: 'b', key: 2, value: 1 }])).toEqual(['a', 'b']);
  });
});
