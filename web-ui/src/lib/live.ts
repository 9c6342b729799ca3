// A running job's live figures over time, as the job page polls them (Flink's UI keeps its
// metric history the same way: in the page, from the moment it opened). Pure.

import type { JobDetail } from '../api/types';
import type { ChartData } from './charts';
import { eventTime } from './jobs';

/** One poll of the job: per node, its rates, event-time lag and Kafka lag. */
export interface LiveSample {
  /** When, unix ms. */
  t: number;
  nodes: LiveNode[];
}

export interface LiveNode {
  id: string;
  recordsIn: number;
  recordsOut: number;
  /** The node's largest event-time lag (ms), while it has a watermark. */
  lagMs: number | null;
  /** A Kafka source's records behind, summed over its partitions. */
  kafkaLag: number | null;
}

/** How far back the charts reach. */
export const KEEP_MS = 5 * 60_000;

/** `history` with the sample of `job` taken at `now` (unix ms) added, and samples older than `keepMs` gone. */
export function addSample(history: LiveSample[], job: Pick<JobDetail, 'vertices'>, now: number, keepMs = KEEP_MS): LiveSample[] {
  const sample: LiveSample = {
    t: now,
    nodes: job.vertices.map((v) => {
      const e = eventTime(v.subtasks);
      return { id: v.id, recordsIn: v.records_in_per_second, recordsOut: v.records_out_per_second, lagMs: e.lagMs, kafkaLag: e.kafkaLag };
    }),
  };
  const last = history[history.length - 1];
  const kept = history.filter((s) => s.t > now - keepMs && s.t < now);
  return last && last.t >= now ? history : [...kept, sample];
}

/** One series per node that has a value of `pick` in some sample; x in unix seconds (uPlot's time scale). */
function series(history: LiveSample[], pick: (n: LiveNode) => number | null, unit: ChartData['series'][number]['unit']): ChartData {
  const ids: string[] = [];
  for (const s of history) for (const n of s.nodes) if (pick(n) != null && !ids.includes(n.id)) ids.push(n.id);
  return {
    x: history.map((s) => s.t / 1000),
    series: ids.map((id) => ({
      label: id,
      unit,
      values: history.map((s) => {
        const n = s.nodes.find((m) => m.id === id);
        return n ? pick(n) : null;
      }),
    })),
  };
}

/** Records in per second, per node that receives records (sources: the records they emit). */
export function rateSeries(history: LiveSample[], kinds: Record<string, string>): ChartData {
  return series(history, (n) => (kinds[n.id] === 'source' ? n.recordsOut : n.recordsIn), 'rate');
}

/** Event-time lag (now − watermark, ms) per node that has a watermark. */
export function lagSeries(history: LiveSample[]): ChartData {
  return series(history, (n) => n.lagMs, 'ms');
}

/** Kafka consumer lag (records) per Kafka source. */
export function kafkaLagSeries(history: LiveSample[]): ChartData {
  return series(history, (n) => n.kafkaLag, 'count');
}
