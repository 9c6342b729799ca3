// Formatting of figures for people: bytes, durations, rates, times. Pure functions.

/** What a missing or meaningless figure shows. */
export const NONE = '—';

function isNum(n: number | null | undefined): n is number {
  return typeof n === 'number' && Number.isFinite(n);
}

function trim(value: number, digits: number): string {
  return value.toFixed(digits);
}

/** Bytes in binary units: `0 B`, `512 B`, `6.99 KiB`, `14.2 MiB`, `120 GiB`. */
export function formatBytes(bytes: number | null | undefined): string {
  if (!isNum(bytes) || bytes < 0) return NONE;
  if (bytes < 1024) return `${Math.round(bytes)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  // 1023.99 KiB would round to "1024 KiB": move to the next unit instead.
  if (value >= 999.5 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = value < 10 ? 2 : value < 100 ? 1 : 0;
  return `${trim(value, digits)} ${units[unit]}`;
}

/**
 * A duration given in milliseconds: `0.081 ms`, `6.27 ms`, `157 ms`, `1.23 s`, `2m 05s`,
 * `1h 02m`.
 */
export function formatDuration(ms: number | null | undefined): string {
  if (!isNum(ms) || ms < 0) return NONE;
  if (ms === 0) return '0 ms';
  if (ms < 1) return `${trim(ms, 3)} ms`;
  if (ms < 10) return `${trim(ms, 2)} ms`;
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 59.995) return `${trim(s, s < 10 ? 2 : 1)} s`;
  const totalSeconds = Math.round(s);
  if (totalSeconds < 3600) {
    const m = Math.floor(totalSeconds / 60);
    const rest = totalSeconds % 60;
    return `${m}m ${String(rest).padStart(2, '0')}s`;
  }
  const totalMinutes = Math.round(totalSeconds / 60);
  const h = Math.floor(totalMinutes / 60);
  const m = totalMinutes % 60;
  if (h < 48) return `${h}h ${String(m).padStart(2, '0')}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}

/** A count with thousands grouping: `1,234,567`. */
export function formatCount(n: number | null | undefined): string {
  if (!isNum(n)) return NONE;
  const rounded = Math.round(n);
  const sign = rounded < 0 ? '-' : '';
  return sign + String(Math.abs(rounded)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** Records per second: `0/s`, `0.5/s`, `931/s`, `2.05k/s`, `16.4k/s`, `1.20M/s`. */
export function formatRate(perSecond: number | null | undefined): string {
  if (!isNum(perSecond) || perSecond < 0) return NONE;
  if (perSecond === 0) return '0/s';
  if (perSecond < 1) return `${trim(perSecond, 1)}/s`;
  if (perSecond < 999.5) return `${Math.round(perSecond)}/s`;
  const units: [number, string][] = [
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  for (const [scale, unit] of units) {
    const v = perSecond / scale;
    if (v >= 0.9995 || scale === 1e3) {
      const digits = v < 9.995 ? 2 : v < 99.95 ? 1 : 0;
      return `${trim(v, digits)}${unit}/s`;
    }
  }
  return `${Math.round(perSecond)}/s`;
}

/** A share from 0 to 1 as a whole percentage: `0%`, `37%`, `100%`. */
export function formatPercent(share: number | null | undefined): string {
  if (!isNum(share)) return NONE;
  const clamped = Math.min(1, Math.max(0, share));
  const pct = clamped * 100;
  if (pct > 0 && pct < 1) return '<1%';
  return `${Math.round(pct)}%`;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

/**
 * A unix time in ms as local clock time, `15:56:07`; with the date, `2026-11-29 15:56:07`,
 * when it is not on the same day as `now`.
 */
export function formatTime(ms: number | null | undefined, now: number = Date.now()): string {
  if (!isNum(ms) || ms <= 0) return NONE;
  const d = new Date(ms);
  const n = new Date(now);
  const clock = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  const sameDay =
    d.getFullYear() === n.getFullYear() && d.getMonth() === n.getMonth() && d.getDate() === n.getDate();
  if (sameDay) return clock;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${clock}`;
}

/** Clock time with milliseconds, for checkpoint timings: `15:56:07.338`. */
export function formatTimeMs(ms: number | null | undefined): string {
  if (!isNum(ms) || ms <= 0) return NONE;
  const d = new Date(ms);
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

/** How long ago: `just now`, `12 s ago`, `5 min ago`, `3 h ago`, `2 d ago`. */
export function formatAgo(ms: number | null | undefined, now: number = Date.now()): string {
  if (!isNum(ms) || ms <= 0) return NONE;
  const s = Math.floor((now - ms) / 1000);
  if (s < 2) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** The first characters of a long hex id: `68db05a4`. */
export function shortId(id: string | null | undefined, length = 8): string {
  if (!id) return NONE;
  return id.length > length ? id.slice(0, length) : id;
}

/** A checkpoint interval for sentences: `every 2 s`, `every 500 ms`. */
export function formatInterval(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `every ${ms / 60_000} min`;
  if (ms >= 1000 && ms % 1000 === 0) return `every ${ms / 1000} s`;
  if (ms < 1000) return `every ${Math.round(ms)} ms`;
  return `every ${formatDuration(ms)}`;
}
