import { describe, expect, it } from 'vitest';
import type { JobDetail } from '../api/types';
import { changesAnything, nodeCheckText, outcomeText, upgradeForm, upgradePhaseText, upgradeRequest } from './upgrade';

const job = {
  vertices: [
    { id: 'in', kind: 'source', parallelism: 1, module: null },
    { id: 'count', kind: 'operator', parallelism: 2, module: 'aa' },
    { id: 'out', kind: 'sink', parallelism: 2, module: null },
  ],
} as unknown as JobDetail;

describe('upgrade', () => {
  it('asks only for what the form changed', () => {
    const form = upgradeForm(job);
    expect(changesAnything(job, form)).toBe(false);
    form.modules.count = 'bb';
    form.parallelism.count = 3;
    form.graceSeconds = 2.5;
    expect(changesAnything(job, form)).toBe(true);
    expect(upgradeRequest(job, form, true)).toEqual({
      modules: { count: 'bb' },
      parallelism: { count: 3 },
      drain: false,
      allow_non_restored_state: false,
      grace_period_ms: 2500,
      dry_run: true,
    });
  });
  it('says where an upgrade is', () => {
    const u = { from_version: 1, to_version: 2, phase: 'probation', probation_until_ms: 10_500, grace_period_ms: 1, allow_non_restored_state: false, started_ms: 1 } as const;
    expect(upgradePhaseText(u, 8_000)).toContain('3 s left');
    expect(upgradePhaseText({ ...u, phase: 'rolling_back', rollback_reason: 'boom' })).toContain('rolling back to version 1 — boom');
    expect(outcomeText('rolled_back')).toBe('rolled back');
  });
  it('says what a node gets', () => {
    expect(nodeCheckText({ id: 'c', has_state: true, from_parallelism: 2, parallelism: 3, migrates: true, state_versions: [0, 1] })).toBe(
      'state carried over, rescaled 2 → 3, migrated v0 → v1',
    );
    expect(nodeCheckText({ id: 'n', has_state: false, parallelism: 1, migrates: false })).toBe('new node, starts empty');
  });
});
