import { useMemo, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { JobDetail } from '../api/types';
import { useErrors } from '../errors-context';
import { useNow, usePoll } from '../hooks';
import { durationSeries, hasPoints, sizeSeries } from '../lib/charts';
import {
  checkpointRows,
  checkpointSettingsLine,
  countsLines,
  emptyHistoryMessage,
  summaryLines,
} from '../lib/checkpoints';
import { jobActions } from '../lib/jobs';
import { links } from '../lib/router';
import { Chart } from './Chart';
import { Empty, Loading, Status } from './Status';

const LIMIT = 100;
const SHOWN = 20;

/** Flink's checkpoint history of a job: counts, summary, charts, the table; trigger one. */
export function CheckpointHistory({ job }: { job: JobDetail }) {
  const history = usePoll(`checkpoints:${job.id}`, (signal) => api.checkpoints(job.id, LIMIT, signal), 2000, [job.id]);
  const { report } = useErrors();
  const [triggering, setTriggering] = useState(false);
  const [triggered, setTriggered] = useState<number | null>(null);
  const [showAll, setShowAll] = useState(false);
  const anyInProgress = (history.data?.counts.in_progress ?? 0) > 0;
  const now = useNow(500, anyInProgress);
  const rows = useMemo(() => checkpointRows(history.data, now), [history.data, now]);
  const durations = useMemo(() => durationSeries(history.data?.data ?? []), [history.data]);
  const sizes = useMemo(() => sizeSeries(history.data?.data ?? []), [history.data]);
  const canTrigger = jobActions(job.status).checkpoint;

  const trigger = async () => {
    setTriggering(true);
    try {
      const t = await api.triggerCheckpoint(job.id);
      setTriggered(t.id);
      history.refresh();
    } catch (e) {
      report(e);
    } finally {
      setTriggering(false);
    }
  };

  const h = history.data;
  const summary = summaryLines(h?.summary, h?.counts);
  const shown = showAll ? rows : rows.slice(0, SHOWN);

  return (
    <section class="card" id="checkpoints">
      <div class="card-head">
        <h2>Checkpoints</h2>
        <span class="muted">{checkpointSettingsLine(job.spec)}</span>
        <div class="spacer" />
        {triggered !== null && (
          <span class="muted" data-testid="trigger-checkpoint-result">
            Triggered checkpoint {triggered}
          </span>
        )}
        <button
          type="button"
          class="btn"
          data-testid="trigger-checkpoint"
          disabled={triggering || !canTrigger}
          title={canTrigger ? 'Take a checkpoint now' : `The job is ${job.status}: only a running job takes checkpoints`}
          onClick={trigger}
        >
          {triggering ? 'Triggering…' : 'Trigger checkpoint'}
        </button>
      </div>

      {!h && history.loading && <Loading what="checkpoints" />}
      {h && h.counts.total === 0 && rows.length === 0 && (
        <Empty testid="checkpoints-empty">{emptyHistoryMessage(job.spec, job.status)}</Empty>
      )}
      {h && (h.counts.total > 0 || rows.length > 0) && (
        <>
          <div class="summary" data-testid="checkpoint-summary">
            <div class="counts">
              {countsLines(h.counts).map((c) => (
                <div class={`count count-${c.label.toLowerCase().replace(' ', '-')}`} key={c.label}>
                  <div class="count-value">{c.value}</div>
                  <div class="count-label">{c.label}</div>
                </div>
              ))}
              {h.latest.failed && (
                <div class="latest-failed">
                  Latest failure: checkpoint {h.latest.failed.id}
                  {h.latest.failed.failure ? `: ${h.latest.failed.failure}` : ''}
                </div>
              )}
            </div>
            {summary.length > 0 ? (
              <div class="table-wrap" tabIndex={0}>
                <table class="table compact">
                  <thead>
                    <tr>
                      <th />
                      <th class="num">Minimum</th>
                      <th class="num">Average</th>
                      <th class="num">Maximum</th>
                    </tr>
                  </thead>
                  <tbody>
                    {summary.map((l) => (
                      <tr key={l.label}>
                        <th scope="row">{l.label}</th>
                        <td class="num">{l.min}</td>
                        <td class="num">{l.avg}</td>
                        <td class="num">{l.max}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            ) : (
              <p class="muted">No checkpoint completed yet: the summary covers completed checkpoints.</p>
            )}
          </div>

          <div class="charts">
            <Chart testid="chart-duration" title="Duration by checkpoint" data={durations} />
            <Chart testid="chart-size" title="Size by checkpoint" data={sizes} />
          </div>
          {!hasPoints(durations) && <p class="muted">The charts show completed checkpoints; none yet.</p>}

          <div class="table-wrap" tabIndex={0}>
            <table class="table wrap-head" data-testid="checkpoints-table">
              <thead>
                <tr>
                  <th>ID</th>
                  <th>Status</th>
                  <th class="num">Acknowledged</th>
                  <th>Trigger time</th>
                  <th>Latest ack</th>
                  <th class="num">End to end</th>
                  <th class="num">Checkpointed size</th>
                  <th class="num">Full size</th>
                  <th class="num">Processed in-flight</th>
                  <th class="num">Persisted in-flight</th>
                  <th>Type</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {shown.map((r) => (
                  <tr key={r.id} data-testid="checkpoint-row" data-checkpoint-id={r.id} data-status={r.status} class={`status-${r.status}`}>
                    <td>
                      <a href={links.checkpoint(job.id, r.id)} data-testid="checkpoint-link">
                        {r.id}
                      </a>
                    </td>
                    <td>
                      <Status status={r.status} label={r.statusLabel} />
                      {r.failure && <div class="failure">{r.failure}</div>}
                    </td>
                    <td class={`num${r.allAcknowledged ? '' : ' partial'}`}>{r.acknowledged}</td>
                    <td>{r.triggerTime}</td>
                    <td>{r.latestAck}</td>
                    <td class="num">{r.duration}</td>
                    <td class="num">{r.stateSize}</td>
                    <td class="num">{r.fullSize}</td>
                    <td class="num">{r.processedInFlight}</td>
                    <td class="num">{r.persistedInFlight}</td>
                    <td class={`type type-${r.type}`} title={r.typeTitle} data-testid="checkpoint-type" data-type={r.type}>
                      {r.typeLabel}
                    </td>
                    <td class="tags">
                      {r.tags.map((t) => (
                        <span class={`tag tag-${t}`} key={t} title={t === 'discarded' ? 'Its state is no longer kept' : undefined}>
                          {t}
                        </span>
                      ))}
                      {r.browsable && (
                        <a class="tag tag-link" href={links.state({ kind: 'checkpoint', job: job.id, checkpoint: r.id })}>
                          state
                        </a>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {rows.length > SHOWN && (
            <button type="button" class="btn small ghost" onClick={() => setShowAll(!showAll)}>
              {showAll ? `Show the latest ${SHOWN}` : `Show all ${rows.length} listed`}
            </button>
          )}
        </>
      )}
    </section>
  );
}
