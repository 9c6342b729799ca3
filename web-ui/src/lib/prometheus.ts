// Prometheus' text format, read for the admin's health page. Pure.

/** One sample: its labels and value. */
export interface Sample {
  labels: Record<string, string>;
  value: number;
}

/** The samples of `text` by metric name (comments and malformed lines skipped). */
export function parseMetrics(text: string): Map<string, Sample[]> {
  const out = new Map<string, Sample[]>();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const value = Number(m[4]);
    if (Number.isNaN(value) && m[4] !== 'NaN') continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    const list = out.get(m[1]!) ?? [];
    list.push({ labels, value });
    out.set(m[1]!, list);
  }
  return out;
}

/** The value of metric `name` (the first sample; the sum with `sum`). */
export function metricValue(metrics: Map<string, Sample[]>, name: string, sum = false): number | null {
  const samples = metrics.get(name);
  if (!samples || samples.length === 0) return null;
  return sum ? samples.reduce((a, s) => a + s.value, 0) : samples[0]!.value;
}
