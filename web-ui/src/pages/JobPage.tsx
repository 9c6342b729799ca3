import { useState } from 'preact/hooks';
import { api } from '../api/client';
import type { JobDetail, JobException, RestoreReport } from '../api/types';
import { CheckpointHistory } from '../components/CheckpointHistory';
import { JobGraph } from '../components/JobGraph';
import { JobLogs } from '../components/JobLogs';
import { LiveCharts } from '../components/LiveCharts';
import { OperatorsTable } from '../components/OperatorsTable';
import { SavepointTrigger, SavepointsTable } from '../components/Savepoints';
import { UpgradeCard } from '../components/Upgrade';
import { Empty, Loading, Status } from '../components/Status';
import { useErrors } from '../errors-context';
import { usePoll } from '../hooks';
import { ApiError } from '../lib/errors';
import { formatAgo, formatBytes, formatRate, formatTime, shortId } from '../lib/format';
import { jobActions } from '../lib/jobs';
import { links } from '../lib/router';
import { anyPending } from '../lib/savepoints';

/** One job: status and actions, the graph with live figures, checkpoints, savepoints. */
export function JobPage({ id }: { id: string }) {
  const job = usePoll(`job:${id}`, (signal) => api.job(id, signal), 1500, [id]);
  const modules = usePoll('modules', (signal) => api.modules(signal), 30_000, []);
  const [savepointsFast, setSavepointsFast] = useState(false);
  const savepoints = usePoll(
    `job-savepoints:${id}`,
    async (signal) => {
      const list = await api.jobSavepoints(id, signal);
      setSavepointsFast(anyPending(list));
      return list;
    },
    savepointsFast ? 1000 : 3000,
    [id],
  );

  const j = job.data;
  if (!j) {
    if (job.error instanceof ApiError && job.error.status === 404) {
      return (
        <section class="card">
          <h1>No such job</h1>
          <Empty>
            There is no job <code>{id}</code> for this tenant: it may belong to another tenant, or the link is wrong. Go back to
            the <a href={links.jobs()}>jobs</a>.
          </Empty>
        </section>
      );
    }
    return (
      <section class="card">
        <p class="crumbs">
          <a href={links.jobs()}>Jobs</a> /
        </p>
        {job.loading ? <Loading what="the job" /> : <Empty>The job could not be loaded; the page retries on its own.</Empty>}
      </section>
    );
  }

  return (
    <div class="stack">
      <JobHeader job={j} onChange={job.refresh} />
      <UpgradeCard job={j} modules={modules.data ?? null} onChange={job.refresh} />
      {j.restored_from && <Restored report={j.restored_from} />}

      <section class="card" id="graph">
        <div class="card-head">
          <h2>Dataflow</h2>
          <span class="muted">
            {j.vertices.length} nodes · {j.subtasks} subtasks · live, every 1.5 s
          </span>
        </div>
        <JobGraph vertices={j.vertices} edges={j.edges} modules={modules.data} />
        <OperatorsTable vertices={j.vertices} modules={modules.data} />
        <LiveCharts job={j} />
      </section>

      <CheckpointHistory job={j} />

      <Exceptions jobId={j.id} />

      <JobLogs jobId={j.id} />

      <section class="card" id="savepoints">
        <div class="card-head">
          <h2>Savepoints</h2>
        </div>
        <SavepointTrigger
          jobId={j.id}
          status={j.status}
          onChange={() => {
            savepoints.refresh();
            job.refresh();
          }}
        />
        {savepoints.data ? (
          <SavepointsTable savepoints={savepoints.data} showJob={false} onChange={savepoints.refresh} />
        ) : (
          <Loading what="savepoints" />
        )}
      </section>
    </div>
  );
}

function JobHeader({ job, onChange }: { job: JobDetail; onChange: () => void }) {
  const { report } = useErrors();
  const [busy, setBusy] = useState<string | null>(null);
  const can = jobActions(job.status);
  const act = async (what: 'stop' | 'cancel' | 'restart') => {
    if (
      what === 'cancel' &&
      !window.confirm(`Cancel job ${job.name}? It ends at once, without a final checkpoint; restart resumes it from its latest checkpoint.`)
    ) {
      return;
    }
    setBusy(what);
    try {
      if (what === 'stop') await api.stopJob(job.id);
      else if (what === 'cancel') await api.cancelJob(job.id);
      else await api.restartJob(job.id);
      onChange();
    } catch (e) {
      report(e);
    } finally {
      setBusy(null);
    }
  };
  const source = job.vertices.filter((v) => v.kind === 'source').reduce((s, v) => s + v.records_out_per_second, 0);
  const sink = job.vertices.filter((v) => v.kind === 'sink').reduce((s, v) => s + v.records_in_per_second, 0);
  const failed = job.status === 'failed';

  return (
    <section class="card">
      <p class="crumbs">
        <a href={links.jobs()}>Jobs</a> / <code>{shortId(job.id)}</code>
      </p>
      <div class="card-head wrap">
        <h1>{job.name || shortId(job.id)}</h1>
        <Status status={job.status} data-testid="job-status" />
        <div class="spacer" />
        <div class="actions">
          <button type="button" class="btn" data-testid="job-stop" disabled={!can.stop || busy !== null} onClick={() => act('stop')} title="Stop: a final checkpoint commits every output; restart resumes from it">
            {busy === 'stop' ? 'Stopping…' : 'Stop'}
          </button>
          <button type="button" class="btn danger" data-testid="job-cancel" disabled={!can.cancel || busy !== null} onClick={() => act('cancel')} title="Cancel at once, without a final checkpoint">
            {busy === 'cancel' ? 'Canceling…' : 'Cancel'}
          </button>
          <button type="button" class="btn" data-testid="job-restart" disabled={!can.restart || busy !== null} onClick={() => act('restart')} title="Restart from the latest checkpoint (a running job is cancelled first)">
            {busy === 'restart' ? 'Restarting…' : 'Restart'}
          </button>
        </div>
      </div>
      {job.error && (
        <div class={`job-error ${failed ? 'failed' : 'recovered'}`} data-testid="job-error" role={failed ? 'alert' : undefined}>
          <strong>{failed ? 'The job failed' : `Last failure (the job restarted ${job.restarts} time${job.restarts === 1 ? '' : 's'})`}:</strong>{' '}
          <span class="error-message">{job.error}</span>
          {failed && <div class="hint">Fix the cause, then restart it: it resumes from its latest checkpoint.</div>}
        </div>
      )}
      <dl class="facts">
        <div>
          <dt>Status</dt>
          <dd>{job.status}</dd>
        </div>
        <div>
          <dt>Source records/s</dt>
          <dd>{formatRate(source)}</dd>
        </div>
        <div>
          <dt>Sink records/s</dt>
          <dd>{formatRate(sink)}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd title={formatTime(job.start_ms ?? job.created_ms)}>{formatAgo(job.start_ms ?? job.created_ms)}</dd>
        </div>
        {job.end_ms ? (
          <div>
            <dt>Ended</dt>
            <dd>{formatTime(job.end_ms)}</dd>
          </div>
        ) : null}
        <div>
          <dt>Restarts</dt>
          <dd>{job.restarts}</dd>
        </div>
        <div>
          <dt>Latest checkpoint</dt>
          <dd>
            {job.latest_checkpoint ? (
              <a href={links.checkpoint(job.id, job.latest_checkpoint.id)}>
                #{job.latest_checkpoint.id} · {formatBytes(job.latest_checkpoint.full_size)} · {formatAgo(job.latest_checkpoint.end_time_ms ?? null)}
              </a>
            ) : (
              'none'
            )}
          </dd>
        </div>
      </dl>
    </section>
  );
}

function Restored({ report }: { report: RestoreReport }) {
  return (
    <section class="card restored" data-testid="job-restored-from">
      <div class="card-head">
        <h2>Started from a savepoint</h2>
        <span class="muted">
          savepoint <code title={report.savepoint}>{shortId(report.savepoint)}</code> → checkpoint {report.checkpoint}
        </span>
        <div class="spacer" />
        <a class="btn small ghost" href={links.state({ kind: 'savepoint', savepoint: report.savepoint })}>
          Savepoint state
        </a>
      </div>
      <div class="table-wrap" tabIndex={0}>
        <table class="table compact">
          <thead>
            <tr>
              <th>Node</th>
              <th>Restored</th>
              <th class="num">Parallelism</th>
              <th class="num">Keyed entries</th>
              <th>State schema</th>
            </tr>
          </thead>
          <tbody>
            {report.nodes.map((n) => (
              <tr key={n.id}>
                <td>{n.id}</td>
                <td>{n.restored ? 'yes' : 'no state in the savepoint'}</td>
                <td class="num">
                  {typeof n.from_parallelism === 'number' && n.from_parallelism !== n.parallelism
                    ? `${n.from_parallelism} → ${n.parallelism}`
                    : n.parallelism}
                </td>
                <td class="num">{n.keyed_entries}</td>
                <td>
                  {n.state_versions ? `v${n.state_versions[0]} → v${n.state_versions[1]}` : '—'}
                  {n.migrated ? ' (migrated)' : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {report.dropped.length > 0 && (
        <div class="warn-box">
          Dropped state (allowed with allow_non_restored_state):
          <ul>
            {report.dropped.map((d) => (
              <li key={d}>{d}</li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}

/** Who a failure was down to, in words. */
const CLASS_NAMES: Record<string, string> = {
  user_code: 'operator code',
  bad_data: 'bad input',
  external: 'external system',
  platform: 'platform (uses up no attempt)',
};

/** Where a failure happened: node and subtask, and the worker. */
function where(e: JobException): string {
  const at = e.node != null ? `${e.node} #${e.subtask ?? '?'}` : '';
  const on = e.worker != null ? `worker ${e.worker}` : '';
  return [at, on].filter(Boolean).join(' on ') || '—';
}

/** The job's exception history: its last 100 failures, newest first. */
function Exceptions({ jobId }: { jobId: string }) {
  const exceptions = usePoll(`job-exceptions:${jobId}`, (signal) => api.jobExceptions(jobId, signal), 3000, [jobId]);
  const list = exceptions.data;
  return (
    <section class="card" id="exceptions" data-testid="exceptions">
      <div class="card-head">
        <h2>Exceptions</h2>
        <span class="muted">the last 100 failures, newest first</span>
      </div>
      {!list ? (
        <Loading what="the exception history" />
      ) : list.length === 0 ? (
        <Empty>No failures.</Empty>
      ) : (
        <div class="table-wrap" tabIndex={0}>
          <table class="table compact">
            <thead>
              <tr>
                <th class="num">#</th>
                <th>Time</th>
                <th class="num">Restart</th>
                <th>Class</th>
                <th>Where</th>
                <th>Action</th>
                <th>Error</th>
              </tr>
            </thead>
            <tbody>
              {list.map((e) => (
                <tr key={e.seq} data-testid="exception-row">
                  <td class="num">{e.seq}</td>
                  <td>{formatTime(e.time_ms)}</td>
                  <td class="num">{e.attempt}</td>
                  <td>{e.class ? CLASS_NAMES[e.class] ?? e.class : '—'}</td>
                  <td>{where(e)}</td>
                  <td>{exceptionAction(e.action, e.delay_ms)}</td>
                  <td class="error-message">{e.error}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** What Weir did about a failure, as the Exceptions card says it. */
function exceptionAction(action: string, delayMs?: number | null): string {
  switch (action) {
    case 'restarted':
      return `restarted after ${delayMs ?? 0} ms`;
    case 'dead_lettered':
      return 'record sent to the dead letters';
    case 'skipped':
      return 'record skipped';
    case 'rolled_back':
      return 'upgrade rolled back to the version before';
    default:
      return 'failed';
  }
}
