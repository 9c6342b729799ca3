import { useMemo, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { CheckpointDetail, MinAvgMax } from '../api/types';
import { Empty, Loading, Status } from '../components/Status';
import { Timeline } from '../components/Timeline';
import { useNow, usePoll } from '../hooks';
import { checkpointRow, subtaskTypeLabel } from '../lib/checkpoints';
import { ApiError } from '../lib/errors';
import { NONE, formatBytes, formatDuration, formatTimeMs, shortId } from '../lib/format';
import { links } from '../lib/router';

/** One checkpoint: per operator and per subtask timings, a timeline, links to its state. */
export function CheckpointPage({ job, checkpoint }: { job: string; checkpoint: number }) {
  // Fast while in progress; a finished checkpoint only changes when retention drops it.
  const [fast, setFast] = useState(true);
  const detail = usePoll(
    `checkpoint:${job}:${checkpoint}`,
    async (signal) => {
      const d = await api.checkpoint(job, checkpoint, signal);
      setFast(d.status === 'in_progress');
      return d;
    },
    fast ? 1000 : 5000,
    [job, checkpoint],
  );
  const jobInfo = usePoll(`checkpoint-job:${job}`, (signal) => api.job(job, signal), 10_000, [job]);
  const d = detail.data;
  const inProgress = d?.status === 'in_progress';
  const now = useNow(500, inProgress);
  const parallelism = useMemo(
    () => new Map((jobInfo.data?.vertices ?? []).map((v) => [v.id, v.parallelism] as [string, number])),
    [jobInfo.data?.vertices.map((v) => `${v.id}:${v.parallelism}`).join(',')],
  );

  const crumbs = (
    <p class="crumbs">
      <a href={links.jobs()}>Jobs</a> / <a href={links.job(job)}>{jobInfo.data?.name ?? shortId(job)}</a> / checkpoints /{' '}
      {checkpoint}
    </p>
  );

  if (!d) {
    const notFound = detail.error instanceof ApiError && detail.error.status === 404;
    return (
      <section class="card">
        {crumbs}
        {notFound ? (
          <Empty>
            No checkpoint {checkpoint} of this job: it may not have been triggered yet. See the job’s{' '}
            <a href={`${links.job(job)}`}>checkpoint history</a>.
          </Empty>
        ) : (
          <Loading what={`checkpoint ${checkpoint}`} />
        )}
      </section>
    );
  }

  const row = checkpointRow(d, now);
  return (
    <div class="stack" data-testid="checkpoint-detail" data-checkpoint-id={d.id} data-status={d.status}>
      <section class="card">
        {crumbs}
        <div class="card-head wrap">
          <h1>Checkpoint {d.id}</h1>
          <Status status={d.status} label={row.statusLabel} />
          {row.tags.map((t) => (
            <span class={`tag tag-${t}`} key={t}>
              {t}
            </span>
          ))}
        </div>
        {d.failure && (
          <div class="job-error failed" role="alert">
            <strong>Failed:</strong> {d.failure}
          </div>
        )}
        <dl class="facts">
          <Fact label="Acknowledged" value={row.acknowledged} />
          <Fact label="Trigger time" value={formatTimeMs(d.trigger_time_ms)} />
          <Fact label="Latest acknowledgement" value={formatTimeMs(d.latest_ack_time_ms ?? null)} />
          <Fact label="End to end" value={row.duration} />
          <Fact label="Checkpointed size" value={row.stateSize} />
          <Fact label="Full size" value={row.fullSize} />
          <Fact label="Processed in-flight" value={row.processedInFlight} />
          <Fact label="Persisted in-flight" value={row.persistedInFlight} />
          <Fact label="Max alignment" value={formatDuration(d.max_alignment_ms)} />
          <Fact label="Type" value={row.typeLabel} title={row.typeTitle} testid="checkpoint-type" />
        </dl>
        {!d.retained && d.status === 'completed' && (
          <p class="muted">Retention has discarded this checkpoint’s state: its figures remain, its state cannot be browsed.</p>
        )}
      </section>

      <section class="card">
        <div class="card-head">
          <h2>Timeline</h2>
          <span class="muted">per subtask, from the trigger</span>
        </div>
        <Timeline detail={d} parallelism={parallelism} now={now} />
      </section>

      <OperatorsSection detail={d} job={job} />
      <SubtasksSection detail={d} parallelism={parallelism} />
    </div>
  );
}

function Fact({ label, value, title, testid }: { label: string; value: string; title?: string; testid?: string }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd title={title} data-testid={testid}>
        {value}
      </dd>
    </div>
  );
}

/** Average, with the range below it. */
function Mam({ m, f }: { m: MinAvgMax; f: (n: number) => string }) {
  return (
    <>
      {f(m.avg)}
      <div class="sub" title="minimum – maximum over subtasks">
        {f(m.min)} – {f(m.max)}
      </div>
    </>
  );
}

function OperatorsSection({ detail, job }: { detail: CheckpointDetail; job: string }) {
  const browsable = detail.status === 'completed' && detail.retained;
  return (
    <section class="card">
      <div class="card-head">
        <h2>Operators</h2>
        <span class="muted">average over subtasks, with the minimum – maximum below</span>
      </div>
      <div class="table-wrap" tabIndex={0}>
        <table class="table wrap-head" data-testid="checkpoint-operators-table">
          <thead>
            <tr>
              <th>Operator</th>
              <th class="num">Acknowledged</th>
              <th class="num">End to end (max)</th>
              <th class="num">Checkpointed size</th>
              <th class="num">Full size</th>
              <th class="num">Start delay</th>
              <th class="num">Alignment</th>
              <th class="num">Alignment bytes</th>
              <th class="num">Persisted in-flight</th>
              <th class="num">Unaligned subtasks</th>
              <th class="num">Sync</th>
              <th class="num">Async</th>
              <th>State</th>
            </tr>
          </thead>
          <tbody>
            {detail.operators.map((o) => (
              <tr key={o.id} data-testid="checkpoint-operator-row" data-operator={o.id}>
                <td>
                  <strong>{o.id}</strong>
                </td>
                <td class="num">{o.acknowledged_subtasks}</td>
                <td class="num">{o.acknowledged_subtasks ? formatDuration(o.max_end_to_end_ms) : NONE}</td>
                <td class="num">{formatBytes(o.state_size)}</td>
                <td class="num">{formatBytes(o.full_size)}</td>
                <td class="num">{o.acknowledged_subtasks ? <Mam m={o.start_delay_ms} f={formatDuration} /> : NONE}</td>
                <td class="num">{o.acknowledged_subtasks ? <Mam m={o.alignment_ms} f={formatDuration} /> : NONE}</td>
                <td class="num">{o.acknowledged_subtasks ? <Mam m={o.alignment_bytes} f={formatBytes} /> : NONE}</td>
                <td class="num">{o.acknowledged_subtasks ? formatBytes(o.persisted_in_flight_bytes) : NONE}</td>
                <td class="num" data-testid="operator-unaligned-subtasks">
                  {o.acknowledged_subtasks ? `${o.unaligned_subtasks}/${o.acknowledged_subtasks}` : NONE}
                </td>
                <td class="num">{o.acknowledged_subtasks ? <Mam m={o.sync_ms} f={formatDuration} /> : NONE}</td>
                <td class="num">{o.acknowledged_subtasks ? <Mam m={o.async_ms} f={formatDuration} /> : NONE}</td>
                <td>
                  {browsable ? (
                    <a href={links.state({ kind: 'checkpoint', job, checkpoint: detail.id }, o.id)} data-testid="operator-state-link">
                      Browse&nbsp;state
                    </a>
                  ) : (
                    <span class="muted" title="Only a completed checkpoint that is still retained has state to browse">
                      {NONE}
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function SubtasksSection({ detail, parallelism }: { detail: CheckpointDetail; parallelism: Map<string, number> }) {
  // Acknowledged subtasks, then those the job has that did not acknowledge.
  const rows: { operator: string; subtask: number; s: CheckpointDetail['subtasks'][number] | null }[] = [];
  const order = [...detail.operators.map((o) => o.id)];
  for (const s of detail.subtasks) if (!order.includes(s.operator)) order.push(s.operator);
  for (const op of order) {
    const acks = detail.subtasks.filter((s) => s.operator === op);
    const count = Math.max(parallelism.get(op) ?? 0, ...acks.map((s) => s.subtask + 1));
    for (let i = 0; i < count; i++) rows.push({ operator: op, subtask: i, s: acks.find((a) => a.subtask === i) ?? null });
  }
  return (
    <section class="card">
      <div class="card-head">
        <h2>Subtasks</h2>
      </div>
      <div class="table-wrap" tabIndex={0}>
        <table class="table wrap-head" data-testid="subtasks-table">
          <thead>
            <tr>
              <th>Operator</th>
              <th class="num">Subtask</th>
              <th>Acknowledged at</th>
              <th class="num">End to end</th>
              <th class="num">Start delay</th>
              <th class="num">Alignment</th>
              <th>Type</th>
              <th class="num">Processed in-flight</th>
              <th class="num">Persisted in-flight</th>
              <th class="num">Sync</th>
              <th class="num">Async</th>
              <th class="num">State bytes</th>
              <th class="num">Full state</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ operator, subtask, s }) => (
              <tr key={`${operator}#${subtask}`} data-testid="subtask-row" data-operator={operator} data-subtask={subtask} data-acked={s ? 'true' : 'false'} class={s ? undefined : 'pending'}>
                <td>{operator}</td>
                <td class="num">{subtask}</td>
                {s ? (
                  <>
                    <td>{formatTimeMs(s.ack_time_ms)}</td>
                    <td class="num">{formatDuration(Math.max(0, s.ack_time_ms - detail.trigger_time_ms))}</td>
                    <td class="num">{formatDuration(s.start_delay_ms)}</td>
                    <td class="num">{formatDuration(s.alignment_ms)}</td>
                    <td data-testid="subtask-type">{subtaskTypeLabel(s, detail.trigger_time_ms)}</td>
                    <td class="num">{formatBytes(s.processed_in_flight_bytes)}</td>
                    <td class="num">{formatBytes(s.persisted_in_flight_bytes)}</td>
                    <td class="num">{formatDuration(s.sync_ms)}</td>
                    <td class="num">{formatDuration(s.async_ms)}</td>
                    <td class="num">{formatBytes(s.state_bytes)}</td>
                    <td class="num">{formatBytes(s.full_state_bytes)}</td>
                  </>
                ) : (
                  <td colSpan={11} class="muted">
                    {detail.status === 'in_progress' ? 'not acknowledged yet' : 'did not acknowledge'}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
