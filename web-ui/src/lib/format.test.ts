import { describe, expect, it } from 'vitest';
import {
  NONE,
  formatAgo,
  formatBytes,
  formatCount,
  formatDuration,
  formatInterval,
  formatPercent,
  formatRate,
  formatTime,
  formatTimeMs,
  shortId,
} from './format';

describe('formatBytes', () => {
  it('shows small sizes in bytes', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1)).toBe('1 B');
    expect(formatBytes(1023)).toBe('1023 B');
  });
  it('uses binary units with digits by magnitude', () => {
    expect(formatBytes(1024)).toBe('1.00 KiB');
    expect(formatBytes(7162)).toBe('6.99 KiB');
    expect(formatBytes(29650)).toBe('29.0 KiB');
    expect(formatBytes(150 * 1024)).toBe('150 KiB');
    expect(formatBytes(5 * 1024 * 1024)).toBe('5.00 MiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.00 GiB');
  });
  it('moves to the next unit instead of showing 1024 KiB', () => {
    expect(formatBytes(1024 * 1024 - 1)).toBe('1.00 MiB');
  });
  it('shows a dash for missing or invalid values', () => {
    expect(formatBytes(null)).toBe(NONE);
    expect(formatBytes(undefined)).toBe(NONE);
    expect(formatBytes(-1)).toBe(NONE);
    expect(formatBytes(Number.NaN)).toBe(NONE);
  });
});

describe('formatDuration', () => {
  it('keeps sub-millisecond precision', () => {
    expect(formatDuration(0)).toBe('0 ms');
    expect(formatDuration(0.080655)).toBe('0.081 ms');
    expect(formatDuration(6.26575)).toBe('6.27 ms');
  });
  it('rounds milliseconds, then switches to seconds', () => {
    expect(formatDuration(156.616187)).toBe('157 ms');
    expect(formatDuration(999.4)).toBe('999 ms');
    expect(formatDuration(999.6)).toBe('1.00 s');
    expect(formatDuration(1234)).toBe('1.23 s');
    expect(formatDuration(12_345)).toBe('12.3 s');
  });
  it('shows minutes, hours and days', () => {
    expect(formatDuration(125_000)).toBe('2m 05s');
    expect(formatDuration(3_720_000)).toBe('1h 02m');
    expect(formatDuration(3 * 86_400_000 + 2 * 3_600_000)).toBe('3d 2h');
  });
  it('shows a dash for null and negatives', () => {
    expect(formatDuration(null)).toBe(NONE);
    expect(formatDuration(-5)).toBe(NONE);
  });
});

describe('formatRate', () => {
  it('formats records per second', () => {
    expect(formatRate(0)).toBe('0/s');
    expect(formatRate(0.5)).toBe('0.5/s');
    expect(formatRate(931.01)).toBe('931/s');
    expect(formatRate(2048.03)).toBe('2.05k/s');
    expect(formatRate(16384.26)).toBe('16.4k/s');
    expect(formatRate(999.7)).toBe('1.00k/s');
    expect(formatRate(1_200_000)).toBe('1.20M/s');
    expect(formatRate(250_000)).toBe('250k/s');
  });
  it('shows a dash for invalid rates', () => {
    expect(formatRate(Number.POSITIVE_INFINITY)).toBe(NONE);
    expect(formatRate(-1)).toBe(NONE);
  });
});

describe('formatCount and formatPercent', () => {
  it('groups thousands', () => {
    expect(formatCount(0)).toBe('0');
    expect(formatCount(999)).toBe('999');
    expect(formatCount(1234567)).toBe('1,234,567');
    expect(formatCount(-12345)).toBe('-12,345');
  });
  it('shows shares as whole percentages, clamped', () => {
    expect(formatPercent(0)).toBe('0%');
    expect(formatPercent(0.004)).toBe('<1%');
    expect(formatPercent(0.372)).toBe('37%');
    expect(formatPercent(1.4)).toBe('100%');
    expect(formatPercent(null)).toBe(NONE);
  });
});

describe('times (tests run with TZ=UTC)', () => {
  const t = Date.UTC(2026, 10, 29, 15, 56, 7, 338);
  it('shows the clock time on the same day', () => {
    expect(formatTime(t, t + 60_000)).toBe('15:56:07');
  });
  it('adds the date on another day', () => {
    expect(formatTime(t, t + 86_400_000)).toBe('2026-11-29 15:56:07');
  });
  it('shows milliseconds for checkpoint timings', () => {
    expect(formatTimeMs(t)).toBe('15:56:07.338');
  });
  it('treats missing times as none', () => {
    expect(formatTime(null)).toBe(NONE);
    expect(formatTime(0)).toBe(NONE);
    expect(formatTimeMs(undefined)).toBe(NONE);
  });
  it('says how long ago', () => {
    expect(formatAgo(t, t + 500)).toBe('just now');
    expect(formatAgo(t, t + 12_000)).toBe('12 s ago');
    expect(formatAgo(t, t + 5 * 60_000)).toBe('5 min ago');
    expect(formatAgo(t, t + 3 * 3_600_000)).toBe('3 h ago');
    expect(formatAgo(t, t + 2 * 86_400_000)).toBe('2 d ago');
  });
});

describe('small helpers', () => {
  it('shortens ids', () => {
    expect(shortId('68db05a4674bd33f7b5105a1d5e8f3f5')).toBe('68db05a4');
    expect(shortId('abc')).toBe('abc');
    expect(shortId(null)).toBe(NONE);
  });
  it('says intervals in round units', () => {
    expect(formatInterval(2000)).toBe('every 2 s');
    expect(formatInterval(500)).toBe('every 500 ms');
    expect(formatInterval(120_000)).toBe('every 2 min');
    expect(formatInterval(1500)).toBe('every 1.50 s');
  });
});
