import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { toAligned, type ChartData } from '../lib/charts';
import { formatBytes, formatCount, formatDuration, formatRate } from '../lib/format';

const COLORS = ['#176b87', '#d9822b', '#6a4c93', '#2a9d8f', '#c44536', '#7f8c8d'];

const FORMATS: Record<ChartData['series'][number]['unit'], (v: number) => string> = {
  ms: formatDuration,
  bytes: formatBytes,
  rate: formatRate,
  count: formatCount,
};

/**
 * A uPlot line chart, as wide as its box: of checkpoint figures by checkpoint id (`x`
 * `checkpoint`), or of live figures over time (`x` `time`, in unix seconds).
 */
export function Chart({
  data,
  testid,
  title,
  height = 180,
  x = 'checkpoint',
}: {
  data: ChartData;
  testid: string;
  title: string;
  height?: number;
  x?: 'checkpoint' | 'time';
}) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const unit = data.series[0]?.unit ?? 'ms';
  const fmt = FORMATS[unit];
  const shape = data.series.map((s) => s.label).join('|');
  const time = x === 'time';

  // Built once per set of series; later data only updates it.
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height,
      legend: { show: true, live: true },
      cursor: { points: { size: 6 } },
      scales: { x: { time } },
      axes: [
        time
          ? { size: 50 }
          : {
              label: 'checkpoint',
              labelSize: 18,
              size: 34,
              values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')),
            },
        { size: 64, values: (_u, splits) => splits.map((v) => fmt(v)) },
      ],
      series: [
        time
          ? { label: 'time', value: (_u, v) => (v == null ? '—' : new Date(v * 1000).toLocaleTimeString()) }
          : { label: 'checkpoint', value: (_u, v) => (v == null ? '—' : `#${v}`) },
        ...data.series.map((s, i) => ({
          label: s.label,
          stroke: COLORS[i % COLORS.length]!,
          width: 2,
          spanGaps: false,
          points: { show: true, size: time ? 3 : 5 },
          value: (_u: uPlot, v: number | null) => (v == null ? '—' : fmt(v)),
        })),
      ],
    };
    const u = new uPlot(opts, toAligned(data) as uPlot.AlignedData, el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      const w = el.clientWidth;
      if (w > 0) u.setSize({ width: Math.max(200, w), height });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape, unit, height, time]);

  useEffect(() => {
    plot.current?.setData(toAligned(data) as uPlot.AlignedData);
  }, [data]);

  return (
    <figure
      class="chart"
      data-testid={testid}
      data-points={data.x.length}
      data-last={data.x[data.x.length - 1] ?? ''}
      data-labels={data.series.map((s) => s.label).join(',')}
      data-latest={data.series.map((s) => s.values[s.values.length - 1] ?? '').join(',')}
    >
      <figcaption>{title}</figcaption>
      <div ref={box} class="chart-box" />
    </figure>
  );
}
