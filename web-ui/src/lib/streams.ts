// Streams: records typed as JSON lines, which jobs read and write a stream, a live tail. Pure.

import type { JobSummary } from '../api/types';

/** A record to push, as `POST /api/v1/streams/{name}/records` takes it. */
export interface PushRecord {
  key?: unknown;
  value: unknown;
  timestamp?: number | null;
  partition?: number | null;
}

/**
 * Records from JSON lines, as `weir stream push` reads them: a line that is an object with a
 * `value` field is a whole record (`{"key": …, "value": …, "timestamp": …, "partition": …}`),
 * any other JSON is a bare value. Blank lines are skipped. Throws naming the first bad line.
 */
export function recordsFromLines(text: string): PushRecord[] {
  const out: PushRecord[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      throw new Error(`line ${i + 1}: not JSON`);
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && 'value' in v) {
      const r = v as Record<string, unknown>;
      const unknownField = Object.keys(r).find((k) => !['key', 'value', 'timestamp', 'partition'].includes(k));
      if (unknownField) throw new Error(`line ${i + 1}: a record has no field \`${unknownField}\``);
      out.push(r as unknown as PushRecord);
    } else {
      out.push({ value: v });
    }
  });
  if (out.length === 0) throw new Error('no records to push');
  return out;
}

/** A job that reads or writes a stream, and its node there. */
export interface StreamUser {
  job: string;
  jobName: string;
  status: string;
  node: string;
}

/** The jobs whose stream sources read `stream` and whose stream sinks write it (also dead letters to it). */
export function streamUsers(jobs: JobSummary[], stream: string): { readers: StreamUser[]; writers: StreamUser[] } {
  const readers: StreamUser[] = [];
  const writers: StreamUser[] = [];
  for (const j of jobs) {
    for (const n of j.spec.nodes) {
      if (n.connector !== 'stream' || (n.config as { stream?: unknown } | undefined)?.stream !== stream) continue;
      const user = { job: j.id, jobName: j.name, status: j.status, node: n.id };
      if (n.kind === 'source') readers.push(user);
      else if (n.kind === 'sink') writers.push(user);
    }
    const dl = j.spec.dead_letter;
    if (dl?.connector === 'stream' && dl.config?.stream === stream) {
      writers.push({ job: j.id, jobName: j.name, status: j.status, node: 'dead-letters' });
    }
  }
  return { readers, writers };
}

/** Records of a live tail: `kept` with `more` added, at most `max` of the newest, one per offset. */
export function appendTail<R extends { offset: number }>(kept: R[], more: R[], max = 200): R[] {
  const last = kept.length > 0 ? kept[kept.length - 1]!.offset : -1;
  const merged = [...kept, ...more.filter((r) => r.offset > last)];
  return merged.length > max ? merged.slice(merged.length - max) : merged;
}

/** Where a tail of a partition with `end` records starts so that it shows the last `last` of them. */
export function tailStart(end: number, last = 50): number {
  return Math.max(0, end - last);
}
