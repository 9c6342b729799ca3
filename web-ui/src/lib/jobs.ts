// Jobs: status tones, which actions apply, module names, backpressure levels. Pure.

import type { JobStatus, JobSummary, Module, Vertex } from '../api/types';
import { formatCount, formatDuration } from './format';

export type Tone = 'ok' | 'busy' | 'warn' | 'error' | 'idle';

export function statusTone(status: string): Tone {
  switch (status) {
    case 'running':
    case 'completed':
      return 'ok';
    case 'restarting':
    case 'stopping':
    case 'pending':
    case 'in_progress':
      return 'busy';
    case 'failed':
      return 'error';
    case 'canceled':
      return 'warn';
    default:
      return 'idle';
  }
}

export const ENDED: JobStatus[] = ['finished', 'canceled', 'failed'];

export interface JobActions {
  stop: boolean;
  cancel: boolean;
  restart: boolean;
  checkpoint: boolean;
}

/** Which buttons make sense for a job in this status (the API has the last word). */
export function jobActions(status: JobStatus): JobActions {
  return {
    stop: status === 'running',
    cancel: status === 'running' || status === 'restarting' || status === 'stopping' || status === 'stopped',
    restart: status !== 'finished' && status !== 'stopping',
    checkpoint: status === 'running',
  };
}

/** A module reference for people: the uploaded name when known, `builtin:x` as is, else a short id. */
export function moduleLabel(ref: string | null | undefined, modules: Module[] | null | undefined): string | null {
  if (!ref) return null;
  if (ref.startsWith('builtin:')) return ref;
  const m = modules?.find((x) => x.id === ref);
  if (m) return m.name;
  return /^[0-9a-f]{64}$/.test(ref) ? ref.slice(0, 12) : ref;
}

export type PressureLevel = 'none' | 'low' | 'high';

/** Flink's thresholds: up to 10% is OK, up to 50% low, above high. */
export function pressureLevel(share: number): PressureLevel {
  if (!(share > 0.1)) return 'none';
  return share > 0.5 ? 'high' : 'low';
}

/** What a node is, for its box in the graph: `operator · p=2`. */
export function vertexKindLine(v: Pick<Vertex, 'kind' | 'parallelism'>): string {
  return `${v.kind} · p=${v.parallelism}`;
}

/** The second line of a node: its module or connector. */
export function vertexWhat(v: Pick<Vertex, 'module' | 'connector'>, modules: Module[] | null | undefined): string {
  const mod = moduleLabel(v.module, modules);
  if (mod) return `module ${mod}`;
  if (v.connector) return `connector ${v.connector}`;
  return '';
}

/** Jobs for the list: active ones first, then by creation time, newest first. */
export function sortJobs(jobs: JobSummary[]): JobSummary[] {
  const rank = (s: JobStatus) => (ENDED.includes(s) ? 1 : 0);
  return [...jobs].sort((a, b) => rank(a.status) - rank(b.status) || b.created_ms - a.created_ms);
}

/** What the event-time column says of some subtasks: the lowest watermark, the largest lag, all idle, the Kafka lag summed. */
export interface EventTime {
  watermarkMs: number | null;
  lagMs: number | null;
  idle: boolean;
  kafkaLag: number | null;
}

/** The event time of a node from its subtasks' live figures. */
export function eventTime(
  subtasks: { watermark_ms?: number | null; event_time_lag_ms?: number | null; idle?: boolean; kafka_lag?: { lag: number }[] }[],
): EventTime {
  const marks = subtasks.map((s) => s.watermark_ms).filter((w): w is number => w != null);
  const lags = subtasks.map((s) => s.event_time_lag_ms).filter((l): l is number => l != null);
  const kafka = subtasks.flatMap((s) => s.kafka_lag ?? []);
  return {
    watermarkMs: marks.length === subtasks.length && marks.length > 0 ? Math.min(...marks) : null,
    lagMs: lags.length > 0 ? Math.max(...lags) : null,
    idle: subtasks.length > 0 && subtasks.every((s) => s.idle === true),
    kafkaLag: kafka.length > 0 ? kafka.reduce((sum, p) => sum + p.lag, 0) : null,
  };
}

/** The event-time column's text: the lag behind the clock (or the watermark), idleness and the Kafka lag. */
export function eventTimeText(e: EventTime): string {
  const parts: string[] = [];
  if (e.lagMs != null) parts.push(`${formatDuration(e.lagMs)} behind`);
  else if (e.watermarkMs != null) parts.push('input ended');
  if (e.idle) parts.push('idle');
  if (e.kafkaLag != null) parts.push(`Kafka lag ${formatCount(e.kafkaLag)}`);
  return parts.join(' · ') || '—';
}
