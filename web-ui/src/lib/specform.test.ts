import { describe, expect, it } from 'vitest';
import type { Module } from '../api/types';
import { parseJson } from './jsonpos';
import { applyEdit, moduleOptions, specForm, specText, type FormEdit } from './specform';
import { TEMPLATES, templateById } from './templates';

const wordcount = () => templateById('wordcount')!.build() as unknown as Record<string, any>;

/** Text → value, as the page reads the editor. */
const parse = (text: string) => {
  const p = parseJson(text);
  if (!p.ok) throw new Error(p.error.message);
  return p.value;
};

describe('specForm', () => {
  it('shows the name, every node, and the checkpoint settings', () => {
    const f = specForm(wordcount())!;
    expect(f.name).toBe('wordcount');
    expect(f.nodes.map((n) => [n.index, n.id, n.kind, n.parallelism, n.module, n.connector])).toEqual([
      [0, 'lines', 'source', 1, null, 'stream'],
      [1, 'split', 'operator', 2, 'builtin:tokenizer', null],
      [2, 'count', 'operator', 2, 'builtin:wordcount', null],
      [3, 'out', 'sink', 2, null, 'stream'],
    ]);
    expect(f.intervalMs).toBe(1000);
    expect(f.mode).toBeUndefined();
  });

  it('tells absent from invalid', () => {
    const s = wordcount();
    delete s.nodes[0].parallelism;
    s.nodes[1].parallelism = 'x';
    s.settings = { checkpoint: { interval_ms: null, mode: 'sideways' } };
    const f = specForm(s)!;
    expect(f.nodes[0]!.parallelism).toBeNull();
    expect(f.nodes[1]!.parallelism).toBe('invalid');
    expect(f.intervalMs).toBeNull();
    expect(f.mode).toBe('invalid');
    expect(specForm({ nodes: [] })).toEqual({ name: '', nodes: [], intervalMs: undefined, mode: undefined });
    expect(specForm({ settings: { checkpoint: { interval_ms: 'often' } }, nodes: [null] })).toMatchObject({
      intervalMs: 'invalid',
      nodes: [{ index: 0, id: '', kind: '', parallelism: null, module: null, connector: null }],
    });
  });

  it('is null for what is no spec', () => {
    expect(specForm(null)).toBeNull();
    expect(specForm([])).toBeNull();
    expect(specForm({ nodes: 'x' })).toBeNull();
  });
});

describe('applyEdit', () => {
  it('changes only what the form changed, and leaves the spec it was given alone', () => {
    const s = wordcount();
    const before = structuredClone(s);
    const next = applyEdit(s, { field: 'parallelism', node: 2, parallelism: 4 }) as Record<string, any>;
    expect(s).toEqual(before);
    expect(next.nodes[2].parallelism).toBe(4);
    expect({ ...next, nodes: next.nodes.filter((_: unknown, i: number) => i !== 2) }).toEqual({
      ...before,
      nodes: before.nodes.filter((_: unknown, i: number) => i !== 2),
    });
  });

  it('adds a field where one writes it, and removes it for the default', () => {
    const s = { name: 'x', nodes: [{ id: 'a', kind: 'operator', config: {} }] };
    const withP = applyEdit(s, { field: 'parallelism', node: 0, parallelism: 3 });
    expect(Object.keys((withP as any).nodes[0])).toEqual(['id', 'kind', 'parallelism', 'config']);
    const withM = applyEdit(withP, { field: 'module', node: 0, module: 'builtin:wordcount' });
    expect(Object.keys((withM as any).nodes[0])).toEqual(['id', 'kind', 'parallelism', 'module', 'config']);
    expect(applyEdit(withP, { field: 'parallelism', node: 0, parallelism: null })).toEqual(s);
  });

  it('creates the checkpoint settings it needs, and removes those it empties', () => {
    const s = { name: 'x', nodes: [], edges: [] };
    const a = applyEdit(s, { field: 'interval', intervalMs: 250 });
    expect(a).toEqual({ name: 'x', nodes: [], edges: [], settings: { checkpoint: { interval_ms: 250 } } });
    const b = applyEdit(a, { field: 'mode', mode: 'unaligned' });
    expect((b as any).settings.checkpoint).toEqual({ interval_ms: 250, mode: 'unaligned' });
    const c = applyEdit(b, { field: 'interval', intervalMs: null });
    expect((c as any).settings.checkpoint).toEqual({ interval_ms: null, mode: 'unaligned' });
    const d = applyEdit(applyEdit(c, { field: 'interval', intervalMs: undefined }), { field: 'mode', mode: undefined });
    expect(d).toEqual(s);
    // Other settings stay.
    const other = { nodes: [], settings: { max_parallelism: 64, checkpoint: { interval_ms: 5 } } };
    expect(applyEdit(other, { field: 'interval', intervalMs: undefined })).toEqual({ nodes: [], settings: { max_parallelism: 64 } });
  });

  it('renames, and ignores what it cannot apply', () => {
    expect(applyEdit({ nodes: [] }, { field: 'name', name: 'y' })).toEqual({ nodes: [], name: 'y' });
    expect(applyEdit('x', { field: 'name', name: 'y' })).toBe('x');
    const s = { nodes: [] };
    expect(applyEdit(s, { field: 'parallelism', node: 3, parallelism: 2 })).toBe(s);
  });

  it('round-trips every template: form → spec → text → form', () => {
    for (const t of TEMPLATES) {
      const spec = t.build();
      const form = specForm(spec)!;
      // Writing back what the form shows changes nothing.
      const same: FormEdit[] = [
        { field: 'name', name: form.name },
        ...form.nodes.flatMap((n): FormEdit[] => [
          { field: 'parallelism', node: n.index, parallelism: n.parallelism === 'invalid' ? null : n.parallelism },
          ...(n.module !== null ? [{ field: 'module' as const, node: n.index, module: n.module }] : []),
        ]),
        { field: 'interval', intervalMs: form.intervalMs === 'invalid' ? undefined : form.intervalMs },
      ];
      expect(same.reduce<unknown>(applyEdit, spec), t.id).toEqual(spec);
      expect(specText(same.reduce<unknown>(applyEdit, spec))).toBe(specText(spec));
      // Each edit shows in the form read back from the text.
      const edited = [
        { field: 'name', name: `${t.id}-2` },
        { field: 'parallelism', node: form.nodes.length - 1, parallelism: 3 },
        { field: 'interval', intervalMs: 750 },
        { field: 'mode', mode: 'unaligned' },
      ] satisfies FormEdit[];
      const back = specForm(parse(specText(edited.reduce<unknown>(applyEdit, spec))))!;
      expect(back.name).toBe(`${t.id}-2`);
      expect(back.nodes[form.nodes.length - 1]!.parallelism).toBe(3);
      expect(back.intervalMs).toBe(750);
      expect(back.mode).toBe('unaligned');
      expect(back.nodes.slice(0, -1)).toEqual(form.nodes.slice(0, -1));
    }
  });

  it('prints the spec as the editor shows it', () => {
    expect(specText({ a: [1] })).toBe('{\n  "a": [\n    1\n  ]\n}');
  });
});

describe('moduleOptions', () => {
  const mod = (id: string, name: string, created: number): Module => ({ id, name, size: 1, created_ms: created, exports: [] });
  it('lists the tenant’s modules by name (the latest of each), then the builtins', () => {
    const modules = [mod('b'.repeat(64), 'tok', 2), mod('a'.repeat(64), 'tok', 1), mod('c'.repeat(64), 'agg', 3)];
    expect(moduleOptions(modules, ['builtin:wordcount'], 'builtin:wordcount')).toEqual([
      { value: 'agg', label: 'agg (uploaded, cccccccc)' },
      { value: 'tok', label: 'tok (uploaded, bbbbbbbb)' },
      { value: 'builtin:wordcount', label: 'builtin:wordcount' },
    ]);
  });
  it('keeps what the spec names when it is none of them', () => {
    const modules = [mod('a'.repeat(64), 'tok', 1)];
    expect(moduleOptions(modules, [], 'a'.repeat(64))[0]).toEqual({ value: 'a'.repeat(64), label: 'tok (aaaaaaaa)' });
    expect(moduleOptions([], [], 'gone')).toEqual([{ value: 'gone', label: 'gone' }]);
    expect(moduleOptions([], ['builtin:x'], null)).toEqual([{ value: 'builtin:x', label: 'builtin:x' }]);
  });
});
