import { describe, expect, it } from 'vitest';
import { quotaRows } from './account';

describe('quota rows', () => {
  it('shows use against the counted quotas and the per-instance limits alone', () => {
    const rows = quotaRows({
      quotas: {
        max_jobs: 4,
        max_subtasks: 10,
        max_memory_mb: 512,
        max_cpu_ms: 10_000,
        max_module_bytes: 32 << 20,
        max_storage_bytes: 1 << 30,
        max_buffered_bytes: 2 << 30,
        max_log_bytes_per_job: 1 << 20,
      },
      usage: { jobs: 3, subtasks: 12, storage_bytes: 1 << 29, buffered_bytes: 0 },
    });
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(byKey.max_jobs).toMatchObject({ used: '3', limit: '4', share: 0.75 });
    // Over the quota (the admin lowered it): full, not more.
    expect(byKey.max_subtasks!.share).toBe(1);
    expect(byKey.max_storage_bytes!.share).toBe(0.5);
    expect(byKey.max_memory_mb).toMatchObject({ used: null, share: null, limit: '512 MiB' });
    expect(rows.map((r) => r.key)).toEqual([
      'max_jobs',
      'max_subtasks',
      'max_storage_bytes',
      'max_buffered_bytes',
      'max_memory_mb',
      'max_cpu_ms',
      'max_module_bytes',
      'max_log_bytes_per_job',
    ]);
  });
});
