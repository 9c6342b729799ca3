import { api } from '../api/client';
import { Empty, Loading, Pressure, Status } from '../components/Status';
import { usePoll } from '../hooks';
import { formatAgo, formatRate, shortId } from '../lib/format';
import { sortJobs } from '../lib/jobs';
import { links } from '../lib/router';

/** Every job of the tenant with its status and live throughput. */
export function JobsPage() {
  const jobs = usePoll('jobs', (signal) => api.jobs(signal), 1500, []);
  const list = jobs.data ? sortJobs(jobs.data) : null;
  const now = Date.now();
  return (
    <section class="card">
      <div class="card-head">
        <h1>Jobs</h1>
        {list && <span class="muted">{list.length} in all · live</span>}
        <div class="spacer" />
        <a class="btn primary" href={links.newJob()} data-testid="new-job">
          New job
        </a>
      </div>
      {!list && jobs.loading && <Loading what="jobs" />}
      {list && list.length === 0 && (
        <Empty testid="jobs-empty">
          No job yet. <a href={links.newJob()}>Create one</a> from a template or a spec of your own (or with{' '}
          <code>weir job submit spec.json</code>), or start one from a savepoint on the <a href={links.savepoints()}>Savepoints</a>{' '}
          page.
        </Empty>
      )}
      {list && list.length > 0 && (
        <div class="table-wrap" tabIndex={0}>
          <table class="table" data-testid="jobs-table">
            <thead>
              <tr>
                <th>Job</th>
                <th>Status</th>
                <th class="num">Source records/s</th>
                <th class="num">Sink records/s</th>
                <th>Backpressure</th>
                <th class="num">Subtasks</th>
                <th class="num">Restarts</th>
                <th>Started</th>
              </tr>
            </thead>
            <tbody>
              {list.map((j) => (
                <tr key={j.id} data-testid="job-row" data-job-id={j.id} data-status={j.status}>
                  <td>
                    <a href={links.job(j.id)} data-testid="job-link" class="strong">
                      {j.name || shortId(j.id)}
                    </a>
                    <div class="sub">
                      <code>{shortId(j.id)}</code>
                    </div>
                  </td>
                  <td>
                    <Status status={j.status} />
                    {j.status === 'failed' && j.error && <div class="failure clip" title={j.error}>{j.error}</div>}
                  </td>
                  <td class="num">{formatRate(j.source_records_per_second)}</td>
                  <td class="num">{formatRate(j.sink_records_per_second)}</td>
                  <td>
                    <Pressure share={j.backpressure} />
                  </td>
                  <td class="num">{j.subtasks}</td>
                  <td class="num">{j.restarts}</td>
                  <td title={new Date(j.start_ms ?? j.created_ms).toISOString()}>{formatAgo(j.start_ms ?? j.created_ms, now)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
