// A tenant's use of its quotas, as its page shows them. Pure.

import type { TenantView } from '../api/types';
import { formatBytes, formatCount } from './format';

/** One quota: what it bounds, the limit, and the use where one is counted (shares 0–1). */
export interface QuotaRow {
  key: string;
  what: string;
  limit: string;
  used: string | null;
  share: number | null;
}

const share = (used: number, limit: number) => (limit > 0 ? Math.min(1, used / limit) : 1);

/** Every quota of the tenant, with its use for those counted across its jobs. */
export function quotaRows(t: Pick<TenantView, 'quotas' | 'usage'>): QuotaRow[] {
  // The server sends every quota; the schema marks them optional (they have defaults).
  const quotas = t.quotas;
  const q = {
    max_jobs: quotas.max_jobs ?? 0,
    max_subtasks: quotas.max_subtasks ?? 0,
    max_storage_bytes: quotas.max_storage_bytes ?? 0,
    max_buffered_bytes: quotas.max_buffered_bytes,
    max_memory_mb: quotas.max_memory_mb ?? 0,
    max_cpu_ms: quotas.max_cpu_ms ?? 0,
    max_module_bytes: quotas.max_module_bytes ?? 0,
    max_log_bytes_per_job: quotas.max_log_bytes_per_job,
  };
  const u = t.usage;
  const rows: QuotaRow[] = [
    { key: 'max_jobs', what: 'Jobs not ended', limit: formatCount(q.max_jobs), used: formatCount(u.jobs), share: share(u.jobs, q.max_jobs) },
    {
      key: 'max_subtasks',
      what: 'Subtasks of those jobs',
      limit: formatCount(q.max_subtasks),
      used: formatCount(u.subtasks),
      share: share(u.subtasks, q.max_subtasks),
    },
    {
      key: 'max_storage_bytes',
      what: 'Storage: modules, stream records, state, logs',
      limit: formatBytes(q.max_storage_bytes),
      used: formatBytes(u.storage_bytes),
      share: share(u.storage_bytes, q.max_storage_bytes),
    },
  ];
  if (q.max_buffered_bytes != null) {
    rows.push({
      key: 'max_buffered_bytes',
      what: 'Data in flight in the channels of those jobs',
      limit: formatBytes(q.max_buffered_bytes),
      used: formatBytes(u.buffered_bytes),
      share: share(u.buffered_bytes, q.max_buffered_bytes),
    });
  }
  rows.push(
    { key: 'max_memory_mb', what: 'Memory of one operator instance', limit: `${formatCount(q.max_memory_mb)} MiB`, used: null, share: null },
    { key: 'max_cpu_ms', what: 'CPU time of one guest call', limit: `${formatCount(q.max_cpu_ms)} ms`, used: null, share: null },
    { key: 'max_module_bytes', what: 'Size of one module', limit: formatBytes(q.max_module_bytes), used: null, share: null },
  );
  if (q.max_log_bytes_per_job != null) {
    rows.push({ key: 'max_log_bytes_per_job', what: "One job's operator logs", limit: formatBytes(q.max_log_bytes_per_job), used: null, share: null });
  }
  return rows;
}
