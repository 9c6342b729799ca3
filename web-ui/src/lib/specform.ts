// The form of the "New job" page, which edits the same spec as its text: what the form shows
// of a spec (name, each node's parallelism and module, the checkpoint interval and mode), and
// a form edit applied to the spec, which the page then prints as the new text. Pure.

import type { CheckpointSettings, Module } from '../api/types';

export type CheckpointMode = NonNullable<CheckpointSettings['mode']>;

export const CHECKPOINT_MODES: CheckpointMode[] = ['aligned', 'unaligned'];

export interface FormNode {
  /** The node's index in `nodes`. */
  index: number;
  id: string;
  kind: string;
  /** As the spec has it: `null` when absent (the server's default: 1), `'invalid'` when not a number. */
  parallelism: number | null | 'invalid';
  /** Operators' module, as the spec names it (`null` when absent). */
  module: string | null;
  /** Sources' and sinks' connector. */
  connector: string | null;
}

export interface SpecForm {
  name: string;
  nodes: FormNode[];
  /** `undefined`: absent (the default, 1000 ms); `null`: no periodic checkpoints; `'invalid'`: not a number. */
  intervalMs: number | null | undefined | 'invalid';
  /** `undefined`: absent (the default, aligned). */
  mode: CheckpointMode | undefined | 'invalid';
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** What the form shows of a spec; `null` when the value is not an object with a `nodes` array. */
export function specForm(spec: unknown): SpecForm | null {
  if (!isObj(spec) || !Array.isArray(spec.nodes)) return null;
  const nodes = spec.nodes.map((n, index): FormNode => {
    const node = isObj(n) ? n : {};
    const p = node.parallelism;
    return {
      index,
      id: str(node.id),
      kind: str(node.kind),
      parallelism: p === undefined ? null : typeof p === 'number' && Number.isInteger(p) ? p : 'invalid',
      module: typeof node.module === 'string' ? node.module : null,
      connector: typeof node.connector === 'string' ? node.connector : null,
    };
  });
  const checkpoint = isObj(spec.settings) && isObj(spec.settings.checkpoint) ? spec.settings.checkpoint : {};
  const interval = checkpoint.interval_ms;
  const mode = checkpoint.mode;
  return {
    name: str(spec.name),
    nodes,
    intervalMs: interval === undefined || interval === null ? interval : typeof interval === 'number' ? interval : 'invalid',
    mode: mode === undefined ? undefined : CHECKPOINT_MODES.includes(mode as CheckpointMode) ? (mode as CheckpointMode) : 'invalid',
  };
}

/** One change made in the form. */
export type FormEdit =
  | { field: 'name'; name: string }
  /** `null` removes it (the default, 1). */
  | { field: 'parallelism'; node: number; parallelism: number | null }
  | { field: 'module'; node: number; module: string }
  /** `undefined` removes it (the default, 1000 ms); `null` checkpoints on demand only. */
  | { field: 'interval'; intervalMs: number | null | undefined }
  /** `undefined` removes it (the default, aligned). */
  | { field: 'mode'; mode: CheckpointMode | undefined };

/**
 * `obj` with `key` set to `value`: in its place when present, else after the last of `after`
 * that it has (else last), so that a field the form adds sits where one would write it.
 */
function withKey(obj: Obj, key: string, value: unknown, after: string[] = []): Obj {
  if (key in obj) return { ...obj, [key]: value };
  const keys = Object.keys(obj);
  const anchor = Math.max(-1, ...after.map((a) => keys.indexOf(a)));
  if (anchor === -1 || anchor === keys.length - 1) return { ...obj, [key]: value };
  const out: Obj = {};
  keys.forEach((k, i) => {
    out[k] = obj[k];
    if (i === anchor) out[key] = value;
  });
  return out;
}

function without(obj: Obj, key: string): Obj {
  const { [key]: _gone, ...rest } = obj;
  return rest;
}

/**
 * The spec with one form edit applied (a new value; `spec` is not changed). Settings objects the
 * edit empties are removed, so that an edit undone gives the spec back.
 */
export function applyEdit(spec: unknown, edit: FormEdit): unknown {
  if (!isObj(spec)) return spec;
  switch (edit.field) {
    case 'name':
      return withKey(spec, 'name', edit.name);
    case 'parallelism':
    case 'module': {
      if (!Array.isArray(spec.nodes) || !isObj(spec.nodes[edit.node])) return spec;
      const node = spec.nodes[edit.node] as Obj;
      let changed: Obj;
      if (edit.field === 'module') changed = withKey(node, 'module', edit.module, ['id', 'kind', 'parallelism']);
      else if (edit.parallelism === null) changed = without(node, 'parallelism');
      else changed = withKey(node, 'parallelism', edit.parallelism, ['id', 'kind']);
      return { ...spec, nodes: spec.nodes.map((n, i) => (i === edit.node ? changed : n)) };
    }
    case 'interval':
    case 'mode': {
      const [key, value] = edit.field === 'interval' ? ['interval_ms', edit.intervalMs] : ['mode', edit.mode];
      const settings = isObj(spec.settings) ? spec.settings : {};
      const checkpoint = isObj(settings.checkpoint) ? settings.checkpoint : {};
      const nextCheckpoint = value === undefined ? without(checkpoint, key) : withKey(checkpoint, key, value, ['interval_ms']);
      const nextSettings =
        Object.keys(nextCheckpoint).length === 0 ? without(settings, 'checkpoint') : withKey(settings, 'checkpoint', nextCheckpoint);
      if (Object.keys(nextSettings).length === 0) return without(spec, 'settings');
      return withKey(spec, 'settings', nextSettings, ['edges', 'nodes']);
    }
  }
}

/** A spec as the editor shows it: JSON, two spaces. */
export function specText(spec: unknown): string {
  return JSON.stringify(spec, null, 2);
}

export interface ModuleOption {
  value: string;
  label: string;
}

/**
 * The modules an operator may run: the tenant's (by name, the latest upload of each name),
 * the `builtin:` ones, and `current` (what the spec names) when it is none of them.
 */
export function moduleOptions(modules: Module[], builtins: string[], current: string | null): ModuleOption[] {
  const latest = new Map<string, Module>();
  for (const m of [...modules].sort((a, b) => a.created_ms - b.created_ms)) latest.set(m.name, m);
  const options: ModuleOption[] = [...latest.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((m) => ({ value: m.name, label: `${m.name} (uploaded, ${m.id.slice(0, 8)})` }));
  for (const b of builtins) options.push({ value: b, label: b });
  if (current !== null && !options.some((o) => o.value === current)) {
    const byId = modules.find((m) => m.id === current);
    options.unshift({ value: current, label: byId ? `${byId.name} (${current.slice(0, 8)})` : current });
  }
  return options;
}
