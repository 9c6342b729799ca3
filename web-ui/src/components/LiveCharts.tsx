import { useEffect, useMemo, useState } from 'preact/hooks';
import type { JobDetail } from '../api/types';
import { hasPoints } from '../lib/charts';
import { addSample, kafkaLagSeries, lagSeries, rateSeries, type LiveSample } from '../lib/live';
import { Chart } from './Chart';

/**
 * A running job's figures over time, from the polls since the page opened: records per
 * second per node, the event-time lag per node (now − its lowest watermark) and each Kafka
 * source's consumer lag.
 */
export function LiveCharts({ job }: { job: JobDetail }) {
  const [history, setHistory] = useState<{ id: string; samples: LiveSample[] }>({ id: job.id, samples: [] });

  useEffect(() => {
    if (job.status !== 'running') return;
    setHistory((h) => ({ id: job.id, samples: addSample(h.id === job.id ? h.samples : [], job, Date.now()) }));
  }, [job]);

  const samples = history.id === job.id ? history.samples : [];
  const kinds = useMemo(() => Object.fromEntries(job.vertices.map((v) => [v.id, v.kind])), [job.vertices]);
  const rates = useMemo(() => rateSeries(samples, kinds), [samples, kinds]);
  const lags = useMemo(() => lagSeries(samples), [samples]);
  const kafka = useMemo(() => kafkaLagSeries(samples), [samples]);

  if (samples.length === 0) {
    return job.status === 'running' ? null : <p class="muted">Live charts show while the job runs.</p>;
  }
  return (
    <div class="charts" data-testid="live-charts">
      <Chart x="time" testid="chart-rates" title="Records per second, by node" data={rates} />
      {hasPoints(lags) && <Chart x="time" testid="chart-event-lag" title="Event-time lag (now − watermark), by node" data={lags} />}
      {hasPoints(kafka) && <Chart x="time" testid="chart-kafka-lag" title="Kafka consumer lag (records), by source" data={kafka} />}
    </div>
  );
}
