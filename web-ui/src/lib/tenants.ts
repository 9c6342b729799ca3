// The admin's tenant forms: quotas as text fields, Kafka grants as rows of prefixes. Pure.

import type { Quotas } from '../api/types';

/** The quotas the admin edits, in the order shown, with what each bounds. */
export const QUOTA_FIELDS: { key: keyof Quotas; label: string }[] = [
  { key: 'max_jobs', label: 'Jobs not ended' },
  { key: 'max_subtasks', label: 'Subtasks of those jobs' },
  { key: 'max_storage_bytes', label: 'Storage (bytes)' },
  { key: 'max_buffered_bytes', label: 'Data in flight (bytes)' },
  { key: 'max_memory_mb', label: 'Memory per operator instance (MiB)' },
  { key: 'max_cpu_ms', label: 'CPU per guest call (ms)' },
  { key: 'max_module_bytes', label: 'Module size (bytes)' },
  { key: 'max_log_bytes_per_job', label: 'Operator logs per job (bytes)' },
];

/** The form's text of `quotas`. */
export function quotaText(quotas: Quotas): Record<string, string> {
  return Object.fromEntries(QUOTA_FIELDS.map((f) => [f.key, quotas[f.key] == null ? '' : String(quotas[f.key])]));
}

/** The quotas a form holds: whole numbers ≥ 0 (`1G`, `512M`, `64K` for bytes); blank fields are left out. Throws naming the first bad one. */
export function parseQuotas(text: Record<string, string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of QUOTA_FIELDS) {
    const raw = (text[f.key] ?? '').trim();
    if (!raw) continue;
    const m = /^(\d+)\s*([KMG]i?B?)?$/i.exec(raw);
    if (!m) throw new Error(`${f.label}: "${raw}" is not a whole number`);
    const unit = (m[2] ?? '').toUpperCase()[0];
    const scale = unit === 'K' ? 1 << 10 : unit === 'M' ? 1 << 20 : unit === 'G' ? 1 << 30 : 1;
    const n = Number(m[1]) * scale;
    if (!Number.isSafeInteger(n)) throw new Error(`${f.label}: ${raw} is too large`);
    out[f.key] = n;
  }
  return out;
}

/** A grant as the form edits it. */
export interface GrantRow {
  connection: string;
  topics: string;
  groups: string;
}

/** Prefixes typed as a comma-separated list (blank entries dropped). */
export function parsePrefixes(text: string): string[] {
  return text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

/** The grants of the form's rows (rows without a connection are left out). */
export function grantsOf(rows: GrantRow[]): { connection: string; topic_prefixes: string[]; group_prefixes: string[] }[] {
  return rows
    .filter((r) => r.connection.trim())
    .map((r) => ({ connection: r.connection.trim(), topic_prefixes: parsePrefixes(r.topics), group_prefixes: parsePrefixes(r.groups) }));
}

/** The form's rows of `grants`. */
export function grantRows(grants: { connection: string; topic_prefixes?: string[]; group_prefixes?: string[] }[]): GrantRow[] {
  return grants.map((g) => ({ connection: g.connection, topics: (g.topic_prefixes ?? []).join(', '), groups: (g.group_prefixes ?? []).join(', ') }));
}
