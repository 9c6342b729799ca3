import { describe, expect, it } from 'vitest';
import type { SavepointRecord } from '../api/types';
import {
  anyPending,
  filenameFromDisposition,
  isSavepointMode,
  newestFirst,
  parseSpec,
  savepointOrigin,
  savepointProgress,
  specFromDescription,
  specText,
} from './savepoints';

const ID = '95e71bce39ccf6cd8d9776f6a7efe8ac';

function sp(over: Partial<SavepointRecord> = {}): SavepointRecord {
  return {
    id: ID,
    job: '68db05a4674bd33f7b5105a1d5e8f3f5',
    job_name: 'wordcount',
    mode: 'keep_running',
    status: 'pending',
    checkpoint: 7,
    error: null,
    created_ms: 1_000_000,
    completed_ms: null,
    bytes: 0,
    entries: 0,
    origin: null,
    description: null,
    ...over,
  };
}

describe('savepointProgress', () => {
  it('is busy while pending, naming the checkpoint and the time waited', () => {
    const p = savepointProgress(sp(), 1_002_500);
    expect(p.done).toBe(false);
    expect(p.tone).toBe('busy');
    expect(p.status).toBe('pending');
    expect(p.text).toBe(`Savepoint ${ID} pending: waiting for checkpoint 7 to complete and be copied (2.50 s so far)…`);
  });
  it('pending before its checkpoint is known', () => {
    expect(savepointProgress(sp({ checkpoint: null }), 1_000_000).text).toContain('waiting for its checkpoint');
  });
  it('is done when completed, with size, entries and time taken', () => {
    const p = savepointProgress(sp({ status: 'completed', completed_ms: 1_000_816, bytes: 4109, entries: 498 }));
    expect(p.done).toBe(true);
    expect(p.tone).toBe('ok');
    expect(p.share).toBe(1);
    expect(p.text).toBe(`Savepoint ${ID} completed in 816 ms: 4.01 KiB, 498 entries (checkpoint 7).`);
  });
  it('is done with the error when failed', () => {
    const p = savepointProgress(sp({ status: 'failed', error: 'checkpoint 7 failed: expired' }));
    expect(p.done).toBe(true);
    expect(p.tone).toBe('error');
    expect(p.text).toBe(`Savepoint ${ID} failed: checkpoint 7 failed: expired.`);
  });
});

describe('filenameFromDisposition', () => {
  it("takes the server's file name", () => {
    expect(filenameFromDisposition(`attachment; filename="savepoint-${ID}.weirsp"`, ID)).toBe(`savepoint-${ID}.weirsp`);
    expect(filenameFromDisposition('attachment; filename=plain.weirsp', ID)).toBe('plain.weirsp');
    expect(filenameFromDisposition("attachment; filename*=UTF-8''s%C3%A9.weirsp", ID)).toBe('sé.weirsp');
  });
  it('falls back to savepoint-<id>.weirsp without a usable name', () => {
    expect(filenameFromDisposition(null, ID)).toBe(`savepoint-${ID}.weirsp`);
    expect(filenameFromDisposition('attachment', ID)).toBe(`savepoint-${ID}.weirsp`);
    expect(filenameFromDisposition('attachment; filename="../../etc/passwd"', ID)).toBe(`savepoint-${ID}.weirsp`);
  });
});

describe('specs for starting a job from a savepoint', () => {
  it('builds a skeleton from the description', () => {
    const spec = specFromDescription({
      format: 1,
      job_name: 'wordcount',
      max_parallelism: 128,
      nodes: [
        { id: 'lines', kind: 'source', parallelism: 1, connector: 'generator' },
        { id: 'count', kind: 'operator', parallelism: 2, module: 'ce8a', state_version: 0 },
      ],
    });
    expect(spec).toEqual({
      name: 'wordcount',
      nodes: [
        { id: 'lines', kind: 'source', parallelism: 1, connector: 'generator', config: {} },
        { id: 'count', kind: 'operator', parallelism: 2, module: 'ce8a', config: {} },
      ],
      edges: [],
      settings: { max_parallelism: 128 },
    });
  });
  it('parses the editor text', () => {
    const text = specText({ name: 'x', nodes: [{ id: 'a', kind: 'source', parallelism: 3 }] });
    const parsed = parseSpec(text);
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(parsed.spec.nodes[0]!.parallelism).toBe(3);
  });
  it('refuses text that is not a spec', () => {
    expect(parseSpec('  ')).toEqual({ ok: false, error: 'The spec is empty: write the job as JSON.' });
    const bad = parseSpec('{"nodes": [}');
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error).toMatch(/^The spec is not valid JSON: /);
    expect(parseSpec('[1]')).toEqual({ ok: false, error: 'The spec must be a JSON object with a `nodes` array.' });
    expect(parseSpec('{"nodes": []}')).toEqual({ ok: false, error: 'The spec needs a non-empty `nodes` array.' });
  });
});

describe('lists', () => {
  it('sorts newest first and sees pending ones', () => {
    const list = [sp({ id: 'a', created_ms: 1, status: 'completed' }), sp({ id: 'b', created_ms: 3 }), sp({ id: 'c', created_ms: 2, status: 'failed' })];
    expect(newestFirst(list).map((s) => s.id)).toEqual(['b', 'c', 'a']);
    expect(anyPending(list)).toBe(true);
    expect(anyPending([list[0]!])).toBe(false);
  });
  it('says how a savepoint came to be', () => {
    expect(savepointOrigin(sp({ mode: 'keep_running' }))).toBe('keep running');
    expect(savepointOrigin(sp({ mode: 'drain' }))).toBe('drain');
    expect(savepointOrigin(sp({ mode: null, origin: 'abcdef0123456789' }))).toBe('imported (was abcdef01)');
    expect(savepointOrigin(sp({ mode: null }))).toBe('imported');
  });
  it('knows the modes', () => {
    expect(isSavepointMode('drain')).toBe(true);
    expect(isSavepointMode('pause')).toBe(false);
  });
});
