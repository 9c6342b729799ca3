// Upgrading a running job: the form's request (only what changed), and the words for an
// upgrade's phase, a version's outcome and a node's check. Pure.

import type { JobDetail, NodeCheck, Upgrade, UpgradeRequest, VersionOutcome } from '../api/types';

/** What the Upgrade form edits: per operator its module, per node its parallelism. */
export interface UpgradeForm {
  modules: Record<string, string>;
  parallelism: Record<string, number>;
  graceSeconds: number;
  drain: boolean;
  allowNonRestoredState: boolean;
}

/** The form for `job` as it runs. */
export function upgradeForm(job: JobDetail): UpgradeForm {
  const modules: Record<string, string> = {};
  const parallelism: Record<string, number> = {};
  for (const v of job.vertices) {
    if (v.kind === 'operator' && v.module) modules[v.id] = v.module;
    parallelism[v.id] = v.parallelism;
  }
  return { modules, parallelism, graceSeconds: 10, drain: false, allowNonRestoredState: false };
}

/** The request for `form` against `job`: only the modules and parallelism that changed. */
export function upgradeRequest(job: JobDetail, form: UpgradeForm, dryRun: boolean): UpgradeRequest {
  const modules: Record<string, string> = {};
  const parallelism: Record<string, number> = {};
  for (const v of job.vertices) {
    const m = form.modules[v.id];
    if (v.kind === 'operator' && m && m !== v.module) modules[v.id] = m;
    const p = form.parallelism[v.id];
    if (typeof p === 'number' && Number.isFinite(p) && p !== v.parallelism) parallelism[v.id] = p;
  }
  return {
    modules,
    parallelism,
    drain: form.drain,
    allow_non_restored_state: form.allowNonRestoredState,
    grace_period_ms: Math.max(0, Math.round(form.graceSeconds * 1000)),
    dry_run: dryRun,
  };
}

/** Whether the form changes anything. */
export function changesAnything(job: JobDetail, form: UpgradeForm): boolean {
  const r = upgradeRequest(job, form, true);
  return Object.keys(r.modules ?? {}).length > 0 || Object.keys(r.parallelism ?? {}).length > 0;
}

/** An upgrade in progress, in words. */
export function upgradePhaseText(u: Upgrade, now = Date.now()): string {
  const to = `version ${u.from_version} → ${u.to_version}`;
  switch (u.phase) {
    case 'stopping':
      return `${to}: stopping the old version at a savepoint`;
    case 'restoring':
      return `${to}: starting the new version from the savepoint`;
    case 'probation': {
      const left = u.probation_until_ms ? Math.max(0, Math.ceil((u.probation_until_ms - now) / 1000)) : null;
      return `${to}: the new version runs on probation${left === null ? '' : `, ${left} s left`} (no checkpoint until it ends; a failure rolls it back)`;
    }
    case 'rolling_back':
      return `${to}: rolling back to version ${u.from_version}${u.rollback_reason ? ` — ${u.rollback_reason}` : ''}`;
  }
}

/** A version's outcome, in words. */
export function outcomeText(outcome: VersionOutcome): string {
  switch (outcome) {
    case 'current':
      return 'current';
    case 'upgrading':
      return 'upgrading';
    case 'replaced':
      return 'replaced';
    case 'rolled_back':
      return 'rolled back';
    case 'abandoned':
      return 'abandoned';
  }
}

/** What a node gets from the savepoint, in words. */
export function nodeCheckText(n: NodeCheck): string {
  const parts: string[] = [];
  if (n.from_parallelism == null) parts.push('new node, starts empty');
  else if (!n.has_state) parts.push('no state');
  else parts.push('state carried over');
  if (n.from_parallelism != null && n.from_parallelism !== n.parallelism) {
    parts.push(`rescaled ${n.from_parallelism} → ${n.parallelism}`);
  }
  if (n.migrates && n.state_versions) parts.push(`migrated v${n.state_versions[0]} → v${n.state_versions[1]}`);
  return parts.join(', ');
}
