// State inspection: where state comes from, page URLs, the cursor stack for next/previous,
// and how keys and values are shown. Pure.

import type { CheckpointView, NodeDescription, SavepointRecord, StateItem, Vertex } from '../api/types';

/** A retained checkpoint of a job, or a savepoint. */
export type StateSource =
  | { kind: 'checkpoint'; job: string; checkpoint: number }
  | { kind: 'savepoint'; savepoint: string };

export interface StateQuery {
  cursor?: string | null;
  state?: string | null;
  limit?: number;
}

export const DEFAULT_STATE_LIMIT = 50;

/** The API path (under /api/v1) of a page of an operator's state. */
export function stateUrl(source: StateSource, operator: string, query: StateQuery = {}): string {
  const enc = encodeURIComponent;
  const base =
    source.kind === 'checkpoint'
      ? `/jobs/${enc(source.job)}/checkpoints/${source.checkpoint}/state/${enc(operator)}`
      : `/savepoints/${enc(source.savepoint)}/state/${enc(operator)}`;
  const q = new URLSearchParams();
  q.set('limit', String(query.limit ?? DEFAULT_STATE_LIMIT));
  if (query.cursor) q.set('cursor', query.cursor);
  if (query.state && query.state.trim()) q.set('state', query.state.trim());
  return `${base}?${q.toString()}`;
}

/** A source as the value of a `<select>` option: `cp:<job>:<id>` or `sp:<id>`. */
export function sourceKey(source: StateSource): string {
  return source.kind === 'checkpoint' ? `cp:${source.job}:${source.checkpoint}` : `sp:${source.savepoint}`;
}

export function parseSourceKey(key: string): StateSource | null {
  const cp = /^cp:([^:]+):(\d+)$/.exec(key);
  if (cp) return { kind: 'checkpoint', job: cp[1]!, checkpoint: Number(cp[2]) };
  const sp = /^sp:([^:]+)$/.exec(key);
  if (sp) return { kind: 'savepoint', savepoint: sp[1]! };
  return null;
}

/** Checkpoints whose state can be read: completed and still retained. */
export function browsableCheckpoints(checkpoints: CheckpointView[]): CheckpointView[] {
  return checkpoints.filter((c) => c.status === 'completed' && c.retained);
}

/** Savepoints whose state can be read: completed. */
export function browsableSavepoints(savepoints: SavepointRecord[]): SavepointRecord[] {
  return savepoints.filter((s) => s.status === 'completed');
}

export interface OperatorChoice {
  id: string;
  label: string;
  /** Operators hold state; sources and sinks seldom do, but may. */
  stateful: boolean;
}

/** The nodes to offer for a source: operators first, then sources and sinks. */
export function operatorChoices(nodes: (Pick<Vertex, 'id' | 'kind'> | NodeDescription)[]): OperatorChoice[] {
  const out = nodes.map((n) => ({ id: n.id, label: `${n.id} (${n.kind})`, stateful: n.kind === 'operator' }));
  return [...out.filter((o) => o.stateful), ...out.filter((o) => !o.stateful)];
}

/**
 * Paging through a cursor-based list: `cursors[i]` is the cursor that fetched page `i`
 * (`null` for the first). Next pushes the page's `next`; previous steps back.
 */
export interface Pager {
  cursors: (string | null)[];
  index: number;
}

export function firstPage(): Pager {
  return { cursors: [null], index: 0 };
}

export function currentCursor(p: Pager): string | null {
  return p.cursors[p.index] ?? null;
}

export function canGoNext(next: string | null | undefined): boolean {
  return typeof next === 'string' && next.length > 0;
}

export function canGoPrev(p: Pager): boolean {
  return p.index > 0;
}

/** The pager after following the current page's `next` (unchanged on the last page). */
export function nextPage(p: Pager, next: string | null | undefined): Pager {
  if (!canGoNext(next)) return p;
  return { cursors: [...p.cursors.slice(0, p.index + 1), next as string], index: p.index + 1 };
}

/** The pager one page back (unchanged on the first page). Later cursors are kept. */
export function prevPage(p: Pager): Pager {
  if (p.index === 0) return p;
  return { cursors: p.cursors, index: p.index - 1 };
}

/** `Entries 51–100` for the page shown, or `No entries`. */
export function pageRange(p: Pager, limit: number, count: number): string {
  if (count === 0) return p.index === 0 ? 'No entries' : `Page ${p.index + 1}: no entries`;
  const first = p.index * limit + 1;
  return `Page ${p.index + 1} · entries ${first}–${first + count - 1}`;
}

export interface ShownValue {
  text: string;
  /** Raw bytes shown as hex: the state was not MessagePack. */
  hex: boolean;
}

/** A key or value as JSON text; `{"hex": "..."}` (bytes that are not MessagePack) as hex. */
export function showStateValue(v: unknown): ShownValue {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const keys = Object.keys(v);
    const hex = (v as Record<string, unknown>).hex;
    if (keys.length === 1 && typeof hex === 'string') {
      return { text: `0x${hex}`, hex: true };
    }
  }
  if (v === undefined) return { text: '—', hex: false };
  return { text: JSON.stringify(v), hex: false };
}

/** Where an entry lives: `key group 12` for keyed state, `subtask 1` for operator state. */
export function entryPlace(item: StateItem): string {
  if (typeof item.key_group === 'number') return `kg ${item.key_group}`;
  if (typeof item.subtask === 'number') return `subtask ${item.subtask}`;
  return '—';
}

/** The state names seen on a page, for the filter's suggestions. */
export function stateNames(items: StateItem[]): string[] {
  return [...new Set(items.map((i) => i.state))].sort();
}
