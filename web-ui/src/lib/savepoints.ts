// Savepoints: trigger modes, progress, export file names, and the job spec to start a job
// from one. Pure.

import type { JobSpec, NodeSpec, SavepointDescription, SavepointMode, SavepointRecord } from '../api/types';
import { formatBytes, formatCount, formatDuration } from './format';

export const SAVEPOINT_MODES: { mode: SavepointMode; label: string; help: string }[] = [
  { mode: 'keep_running', label: 'Keep running', help: 'Take a savepoint; the job goes on.' },
  { mode: 'stop', label: 'Stop', help: 'Stop the sources, take a final savepoint; the job ends stopped.' },
  {
    mode: 'drain',
    label: 'Drain',
    help: 'Stop with drain: the pipeline empties (open windows fire), then the savepoint; the job finishes.',
  },
  { mode: 'cancel', label: 'Cancel', help: 'Take a savepoint, then cancel the job.' },
];

export function isSavepointMode(s: string): s is SavepointMode {
  return SAVEPOINT_MODES.some((m) => m.mode === s);
}

export type ProgressTone = 'busy' | 'ok' | 'error';

export interface SavepointProgress {
  status: SavepointRecord['status'];
  done: boolean;
  tone: ProgressTone;
  /** One sentence for people. */
  text: string;
  /** 0 to 1 for a progress bar; pending has no measurable share, so it is `null`. */
  share: number | null;
}

/** Where a triggered savepoint is: pending (waiting for its checkpoint), completed, failed. */
export function savepointProgress(sp: SavepointRecord, now: number = Date.now()): SavepointProgress {
  switch (sp.status) {
    case 'completed': {
      const took =
        typeof sp.completed_ms === 'number' ? ` in ${formatDuration(Math.max(0, sp.completed_ms - sp.created_ms))}` : '';
      return {
        status: 'completed',
        done: true,
        tone: 'ok',
        text: `Savepoint ${sp.id} completed${took}: ${formatBytes(sp.bytes)}, ${formatCount(sp.entries)} entries${
          typeof sp.checkpoint === 'number' ? ` (checkpoint ${sp.checkpoint})` : ''
        }.`,
        share: 1,
      };
    }
    case 'failed':
      return {
        status: 'failed',
        done: true,
        tone: 'error',
        text: `Savepoint ${sp.id} failed: ${sp.error ?? 'no reason given'}.`,
        share: null,
      };
    default: {
      const waited = formatDuration(Math.max(0, now - sp.created_ms));
      const cp = typeof sp.checkpoint === 'number' ? `checkpoint ${sp.checkpoint}` : 'its checkpoint';
      return {
        status: 'pending',
        done: false,
        tone: 'busy',
        text: `Savepoint ${sp.id} pending: waiting for ${cp} to complete and be copied (${waited} so far)…`,
        share: null,
      };
    }
  }
}

/** The file name of an export: the server's `Content-Disposition`, else `savepoint-<id>.weirsp`. */
export function filenameFromDisposition(header: string | null | undefined, id: string): string {
  const fallback = `savepoint-${id}.weirsp`;
  if (!header) return fallback;
  const star = /filename\*\s*=\s*(?:UTF-8'')?([^;]+)/i.exec(header);
  if (star) {
    try {
      const name = decodeURIComponent(star[1]!.trim().replace(/^"|"$/g, ''));
      if (safeName(name)) return name;
    } catch {
      // Fall through to the plain form.
    }
  }
  const plain = /filename\s*=\s*("([^"]*)"|[^;]+)/i.exec(header);
  if (plain) {
    const name = (plain[2] ?? plain[1] ?? '').trim();
    if (safeName(name)) return name;
  }
  return fallback;
}

function safeName(name: string): boolean {
  return name.length > 0 && !/[\\/]/.test(name) && name !== '.' && name !== '..';
}

/**
 * A spec skeleton from a savepoint's description, for when the job it came from is not on
 * this server (imported savepoints, deleted jobs): nodes with their ids, kinds,
 * parallelism and modules. Connectors' config must be filled in; edges too.
 */
export function specFromDescription(desc: SavepointDescription): JobSpec {
  const nodes: NodeSpec[] = desc.nodes.map((n) => {
    const node: NodeSpec = { id: n.id, kind: n.kind, parallelism: n.parallelism };
    if (n.module) node.module = n.module;
    if (n.connector) node.connector = n.connector;
    node.config = {};
    return node;
  });
  return { name: desc.job_name, nodes, edges: [], settings: { max_parallelism: desc.max_parallelism } };
}

export type ParsedSpec = { ok: true; spec: JobSpec } | { ok: false; error: string };

/** Reads the spec editor's text: JSON, an object with a `nodes` array. */
export function parseSpec(text: string): ParsedSpec {
  if (!text.trim()) return { ok: false, error: 'The spec is empty: write the job as JSON.' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    return { ok: false, error: `The spec is not valid JSON: ${msg}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, error: 'The spec must be a JSON object with a `nodes` array.' };
  }
  const nodes = (value as { nodes?: unknown }).nodes;
  if (!Array.isArray(nodes) || nodes.length === 0) {
    return { ok: false, error: 'The spec needs a non-empty `nodes` array.' };
  }
  return { ok: true, spec: value as JobSpec };
}

/** The spec as the editor shows it. */
export function specText(spec: JobSpec): string {
  return JSON.stringify(spec, null, 2);
}

/** Savepoints newest first. */
export function newestFirst(list: SavepointRecord[]): SavepointRecord[] {
  return [...list].sort((a, b) => b.created_ms - a.created_ms || (a.id < b.id ? 1 : -1));
}

/** Whether any savepoint in a list is still pending (the page polls faster then). */
export function anyPending(list: SavepointRecord[]): boolean {
  return list.some((s) => s.status === 'pending');
}

/** How a savepoint came to be: `keep running`, `stop`, …, or `imported`. */
export function savepointOrigin(sp: SavepointRecord): string {
  if (sp.origin) return `imported (was ${sp.origin.slice(0, 8)})`;
  if (!sp.mode) return 'imported';
  return sp.mode.replace('_', ' ');
}
