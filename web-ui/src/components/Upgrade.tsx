import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { JobDetail, Module, UpgradeAnswer } from '../api/types';
import { useErrors } from '../errors-context';
import { useNow, usePoll } from '../hooks';
import { errorToMessage } from '../lib/errors';
import { formatTime, shortId } from '../lib/format';
import { moduleLabel } from '../lib/jobs';
import { changesAnything, nodeCheckText, outcomeText, upgradeForm, upgradePhaseText, upgradeRequest, type UpgradeForm } from '../lib/upgrade';
import { Empty, Loading } from './Status';

/**
 * Upgrade a running job in one step: pick new modules and parallelism, check them against a
 * savepoint of the job (nothing stops), then upgrade — the job stops at a savepoint, the new
 * version starts from it on probation and is rolled back if it fails. While an upgrade runs,
 * where it is.
 */
export function UpgradeCard({ job, modules, onChange }: { job: JobDetail; modules: Module[] | null; onChange: () => void }) {
  const { report } = useErrors();
  const [form, setForm] = useState<UpgradeForm>(() => upgradeForm(job));
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState<'check' | 'upgrade' | null>(null);
  const [answer, setAnswer] = useState<UpgradeAnswer | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const upgrade = job.upgrade;
  const now = useNow(500, Boolean(upgrade));

  const edit = (change: (f: UpgradeForm) => void) => {
    const next = structuredClone(form);
    change(next);
    setForm(next);
    setAnswer(null);
    setRefusal(null);
  };
  const run = async (dryRun: boolean) => {
    if (!dryRun && !window.confirm(`Upgrade job ${job.name} to version ${answer?.check.to_version ?? ''}? It stops at a savepoint and the new version starts from it.`)) {
      return;
    }
    setBusy(dryRun ? 'check' : 'upgrade');
    setRefusal(null);
    try {
      const a = await api.upgradeJob(job.id, upgradeRequest(job, form, dryRun));
      setAnswer(dryRun ? a : null);
      if (!dryRun) {
        setOpen(false);
        setForm(upgradeForm(a.job));
      }
      onChange();
    } catch (e) {
      // A refusal (the state does not fit, a quota) is the check's answer, not a page error.
      setRefusal(errorToMessage(e).text);
      if (!dryRun) report(e, 'upgrade');
    } finally {
      setBusy(null);
    }
  };

  if (upgrade) {
    return (
      <section class="card" id="upgrade" data-testid="upgrade-progress" aria-live="polite">
        <div class="card-head">
          <h2>Upgrading</h2>
        </div>
        <p data-testid="upgrade-phase">{upgradePhaseText(upgrade, now)}</p>
        {upgrade.savepoint && (
          <p class="muted">
            savepoint <code title={upgrade.savepoint}>{shortId(upgrade.savepoint)}</code>
          </p>
        )}
      </section>
    );
  }
  const operators = job.vertices.filter((v) => v.kind === 'operator');
  const running = job.status === 'running';
  return (
    <section class="card" id="upgrade">
      <div class="card-head">
        <h2>Upgrade</h2>
        <span class="muted">version {job.version}</span>
        <div class="spacer" />
        <button type="button" class="btn" data-testid="upgrade-open" aria-expanded={open} disabled={!running} onClick={() => setOpen(!open)}
          title={running ? 'New modules or parallelism, with the state carried over and a rollback if the new version fails' : 'Only a running job is upgraded'}>
          {open ? 'Close' : 'Upgrade…'}
        </button>
      </div>
      {open && (
        <form class="stack" onSubmit={(e) => { e.preventDefault(); void run(true); }}>
          <div class="table-wrap" tabIndex={0}>
            <table class="table compact">
              <thead>
                <tr>
                  <th>Node</th>
                  <th>Module</th>
                  <th class="num">Parallelism</th>
                </tr>
              </thead>
              <tbody>
                {job.vertices.map((v) => (
                  <tr key={v.id}>
                    <td>{v.id}</td>
                    <td>
                      {v.kind === 'operator' ? (
                        <select aria-label={`module of ${v.id}`} data-testid={`upgrade-module-${v.id}`} value={form.modules[v.id] ?? ''}
                          onChange={(e) => edit((f) => { f.modules[v.id] = (e.target as HTMLSelectElement).value; })}>
                          {v.module && !(modules ?? []).some((m) => m.id === v.module) && <option value={v.module}>{moduleLabel(v.module, modules)}</option>}
                          {(modules ?? []).map((m) => (
                            <option key={m.id} value={m.id}>
                              {m.name} ({m.id.slice(0, 8)}){m.id === v.module ? ' — running' : ''}
                            </option>
                          ))}
                        </select>
                      ) : (
                        <span class="muted">{v.connector ?? v.kind}</span>
                      )}
                    </td>
                    <td class="num">
                      <input type="number" min={1} max={1024} aria-label={`parallelism of ${v.id}`} data-testid={`upgrade-parallelism-${v.id}`}
                        value={form.parallelism[v.id]} style="width: 5em"
                        onInput={(e) => edit((f) => { f.parallelism[v.id] = Number((e.target as HTMLInputElement).value); })} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div class="row wrap">
            <label>
              Probation (s){' '}
              <input type="number" min={0} max={600} value={form.graceSeconds} data-testid="upgrade-grace" style="width: 5em"
                onInput={(e) => edit((f) => { f.graceSeconds = Number((e.target as HTMLInputElement).value); })} />
            </label>
            <label>
              <input type="checkbox" checked={form.drain} onChange={(e) => edit((f) => { f.drain = (e.target as HTMLInputElement).checked; })} /> Drain (fire every timer first)
            </label>
            <label>
              <input type="checkbox" checked={form.allowNonRestoredState}
                onChange={(e) => edit((f) => { f.allowNonRestoredState = (e.target as HTMLInputElement).checked; })} /> Drop state without a place
            </label>
          </div>
          <div class="row">
            <button type="submit" class="btn" data-testid="upgrade-check" disabled={busy !== null || !changesAnything(job, form)}>
              {busy === 'check' ? 'Checking…' : 'Check compatibility'}
            </button>
            <button type="button" class="btn primary" data-testid="upgrade-confirm" disabled={busy !== null || !answer} onClick={() => void run(false)}
              title={answer ? 'Stop at a savepoint and start the new version from it' : 'Check first'}>
              {busy === 'upgrade' ? 'Upgrading…' : 'Upgrade'}
            </button>
            {operators.length === 0 && <span class="muted">The job has no operator: only parallelism changes.</span>}
          </div>
          {refusal && (
            <div class="job-error failed" role="alert" data-testid="upgrade-refusal">
              <strong>Refused, nothing was stopped:</strong> <span class="error-message">{refusal}</span>
            </div>
          )}
          {answer && (
            <div data-testid="upgrade-answer">
              <p>
                Compatible: version {answer.check.from_version} → {answer.check.to_version}, checked against savepoint{' '}
                <code>{shortId(answer.check.check.savepoint)}</code>.
              </p>
              <ul>
                {answer.check.check.nodes.map((n) => (
                  <li key={n.id}>
                    <strong>{n.id}</strong>: {nodeCheckText(n)}
                  </li>
                ))}
              </ul>
              {answer.check.check.dropped.map((d) => (
                <p class="warn-box" key={d}>Dropped: {d}</p>
              ))}
            </div>
          )}
        </form>
      )}
      <Versions jobId={job.id} version={job.version} modules={modules} />
    </section>
  );
}

/** The job's versions, newest first. */
function Versions({ jobId, version, modules }: { jobId: string; version: number; modules: Module[] | null }) {
  const versions = usePoll(`job-versions:${jobId}:${version}`, (signal) => api.jobVersions(jobId, signal), 5000, [jobId, version]);
  const list = versions.data;
  if (!list) return <Loading what="the versions" />;
  if (list.length <= 1) return <Empty>Version 1 is the only one: the job was never upgraded.</Empty>;
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table compact" data-testid="versions">
        <thead>
          <tr>
            <th class="num">Version</th>
            <th>Created</th>
            <th>Outcome</th>
            <th>Modules</th>
            <th>Parallelism</th>
            <th>Reason</th>
          </tr>
        </thead>
        <tbody>
          {[...list].reverse().map((v) => (
            <tr key={v.version} data-testid="version-row">
              <td class="num">{v.version}</td>
              <td>{formatTime(v.created_ms)}</td>
              <td>{outcomeText(v.outcome)}</td>
              <td>
                {v.modules.map((m) => (
                  <div key={m.node} title={m.digest}>
                    {m.node}: {m.name ?? moduleLabel(m.digest, modules)}
                    {/^[0-9a-f]{64}$/.test(m.digest) && <code> {m.digest.slice(0, 8)}</code>}
                  </div>
                ))}
              </td>
              <td>{v.spec.nodes.map((n) => `${n.id} ${n.parallelism ?? 1}`).join(', ')}</td>
              <td class="error-message">{v.reason ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
