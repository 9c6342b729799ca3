import { describe, expect, it } from 'vitest';
import type { JobDetail } from '../api/types';
import { addSample, kafkaLagSeries, lagSeries, rateSeries } from './live';

type V = JobDetail['vertices'][number];

/** A job of a Kafka source `in` (lag `kafka`) and an operator `op` (event-time lag `lag`). */
function job(rateIn: number, lag: number | null, kafka: number | null): Pick<JobDetail, 'vertices'> {
  const vertex = (id: string, over: Partial<V>): V =>
    ({ id, kind: 'operator', records_in_per_second: 0, records_out_per_second: 0, subtasks: [], ...over }) as V;
  return {
    vertices: [
      vertex('in', {
        kind: 'source',
        records_out_per_second: rateIn,
        subtasks: [{ kafka_lag: kafka == null ? [] : [{ topic: 't', partition: 0, lag: kafka }] } as V['subtasks'][number]],
      }),
      vertex('op', {
        records_in_per_second: rateIn,
        subtasks: [{ watermark_ms: lag == null ? null : 1, event_time_lag_ms: lag } as V['subtasks'][number]],
      }),
    ],
  };
}

describe('live history', () => {
  it('adds a sample per poll and forgets those older than its reach', () => {
    let h = addSample([], job(10, 5000, 3), 1_000, 10_000);
    h = addSample(h, job(20, 6000, 0), 2_000, 10_000);
    expect(h.map((s) => s.t)).toEqual([1_000, 2_000]);
    // The same poll twice, or an older one: kept once.
    expect(addSample(h, job(30, 1, 1), 2_000, 10_000)).toBe(h);
    h = addSample(h, job(30, 7000, 8), 11_500, 10_000);
    expect(h.map((s) => s.t)).toEqual([2_000, 11_500]);
  });

  it('plots rates per node (a source by what it emits), event-time lag and Kafka lag in time', () => {
    let h = addSample([], job(10, null, 3), 1_000);
    h = addSample(h, job(20, 6000, 0), 2_000);
    const kinds = { in: 'source', op: 'operator' };
    const rates = rateSeries(h, kinds);
    expect(rates.x).toEqual([1, 2]);
    expect(rates.series.map((s) => [s.label, s.unit, s.values])).toEqual([
      ['in', 'rate', [10, 20]],
      ['op', 'rate', [10, 20]],
    ]);
    // Only nodes with a watermark; a gap before it had one.
    expect(lagSeries(h).series).toEqual([{ label: 'op', unit: 'ms', values: [null, 6000] }]);
    expect(kafkaLagSeries(h).series).toEqual([{ label: 'in', unit: 'count', values: [3, 0] }]);
  });

  it('has no series without samples', () => {
    expect(rateSeries([], {}).series).toEqual([]);
    expect(lagSeries([]).x).toEqual([]);
  });
});
