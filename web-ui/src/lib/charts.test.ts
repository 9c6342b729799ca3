import { describe, expect, it } from 'vitest';
import { durationSeries, hasPoints, sizeSeries, toAligned } from './charts';
import { checkpoint, failed, inProgress } from './fixtures.test-util';

describe('checkpoint chart series', () => {
  it('is empty for an empty history', () => {
    const d = durationSeries([]);
    expect(d.x).toEqual([]);
    expect(d.series.every((s) => s.values.length === 0)).toBe(true);
    expect(hasPoints(d)).toBe(false);
  });

  it('orders by checkpoint id ascending (the API lists newest first)', () => {
    const d = durationSeries([checkpoint(3, { duration_ms: 30 }), checkpoint(1, { duration_ms: 10 }), checkpoint(2, { duration_ms: 20 })]);
    expect(d.x).toEqual([1, 2, 3]);
    expect(d.series[0]!.values).toEqual([10, 20, 30]);
  });

  it('leaves gaps for in-progress and failed checkpoints', () => {
    const list = [inProgress(4), failed(3), checkpoint(2, { duration_ms: 20, state_size: 100, full_size: 300 }), checkpoint(1, { duration_ms: 10, state_size: 50, full_size: 200 })];
    const d = durationSeries(list);
    expect(d.x).toEqual([1, 2, 3, 4]);
    expect(d.series[0]!.values).toEqual([10, 20, null, null]);
    const s = sizeSeries(list);
    expect(s.series.map((x) => x.label)).toEqual(['Checkpointed size', 'Full size']);
    expect(s.series[0]!.values).toEqual([50, 100, null, null]);
    expect(s.series[1]!.values).toEqual([200, 300, null, null]);
    expect(hasPoints(s)).toBe(true);
  });

  it('has no points when nothing completed', () => {
    expect(hasPoints(durationSeries([inProgress(1), failed(2)]))).toBe(false);
  });

  it('keeps one point per id', () => {
    const d = sizeSeries([checkpoint(1, { state_size: 1 }), checkpoint(1, { state_size: 2 })]);
    expect(d.x).toEqual([1]);
  });

  it("converts to uPlot's aligned layout", () => {
    const d = durationSeries([checkpoint(1, { duration_ms: 10, max_alignment_ms: 1 })]);
    expect(toAligned(d)).toEqual([[1], [10], [1]]);
  });
});
