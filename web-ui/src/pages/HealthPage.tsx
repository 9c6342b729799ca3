import { useMemo } from 'preact/hooks';
import { api } from '../api/client';
import { Loading } from '../components/Status';
import { usePoll } from '../hooks';
import { formatBytes, formatCount, formatDuration } from '../lib/format';
import { metricValue, parseMetrics } from '../lib/prometheus';

/** The admin's view of the server: its store, its disk, its process, its workers and tenants. */
export function HealthPage() {
  const health = usePoll('health', (signal) => api.health(signal), 3000, []);
  const metrics = usePoll('server-metrics', (signal) => api.serverMetrics(signal), 3000, []);
  const m = useMemo(() => (metrics.data ? parseMetrics(metrics.data) : null), [metrics.data]);
  const h = health.data;
  const rows: [string, string, string][] = [];
  if (h) {
    rows.push(['status', 'Serving', h.status]);
    rows.push(['store', 'Store', h.store + (h.store_error ? ` — ${h.store_error}` : '')]);
    rows.push(['store-reopens', 'Store reopened since start', formatCount(h.store_reopens)]);
    if (h.store_last_failure) rows.push(['store-last-failure', 'Last store failure', h.store_last_failure]);
    rows.push(['disk-free', 'Free on the data disk', h.disk_free_bytes == null ? 'unknown' : formatBytes(h.disk_free_bytes)]);
    rows.push(['disk-reserved', 'Kept free (writes that would pass it answer 507)', h.disk_reserved_bytes == null ? '—' : formatBytes(h.disk_reserved_bytes)]);
  }
  if (m) {
    const version = m.get('weir_build_info')?.[0]?.labels.version;
    const up = metricValue(m, 'weir_uptime_seconds');
    const rss = metricValue(m, 'process_resident_memory_bytes');
    const fds = metricValue(m, 'process_open_fds');
    const cpu = metricValue(m, 'process_cpu_seconds_total');
    const workers = m.get('weir_worker_up') ?? [];
    const tenants = new Set((m.get('weir_tenant_quota') ?? []).map((s) => s.labels.tenant));
    rows.push(['version', 'Version', version ?? '—']);
    rows.push(['uptime', 'Up for', up == null ? '—' : formatDuration(up * 1000)]);
    rows.push(['rss', 'Resident memory', rss == null ? '—' : formatBytes(rss)]);
    rows.push(['fds', 'Open file descriptors', fds == null ? '—' : formatCount(fds)]);
    rows.push(['cpu', 'CPU time used', cpu == null ? '—' : formatDuration(cpu * 1000)]);
    rows.push(['workers', 'Workers live', `${workers.filter((w) => w.value === 1).length} of ${workers.length}`]);
    rows.push(['tenants', 'Tenants', formatCount(tenants.size)]);
  }
  return (
    <section class="card">
      <div class="card-head">
        <h1>Server</h1>
        <span class="muted">/healthz and the process's metrics · live</span>
      </div>
      {rows.length === 0 && <Loading what="the server's health" />}
      {rows.length > 0 && (
        <div class="table-wrap" tabIndex={0}>
          <table class="table" data-testid="health-table">
            <tbody>
              {rows.map(([key, what, value]) => (
                <tr key={key} data-testid="health-row" data-key={key}>
                  <th scope="row">{what}</th>
                  <td data-testid="health-value">{value}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
