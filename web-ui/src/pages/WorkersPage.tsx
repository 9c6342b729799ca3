import { api } from '../api/client';
import type { WorkerView } from '../api/types';
import { Empty, Loading, Status } from '../components/Status';
import { usePoll } from '../hooks';
import { formatDuration, formatTime } from '../lib/format';

/** The workers registered with this server (the admin's view): live ones first, then lost. */
export function WorkersPage() {
  const workers = usePoll('workers', (signal) => api.workers(signal), 2000, []);
  const list = workers.data;
  const live = list ? list.filter((w) => w.status === 'live') : [];
  const slots = live.reduce((n, w) => n + w.slots, 0);
  const used = live.reduce((n, w) => n + w.used_slots, 0);
  return (
    <section class="card">
      <div class="card-head">
        <h1>Workers</h1>
        {list && (
          <span class="muted" data-testid="workers-summary">
            {live.length} live · {used} of {slots} slots in use · live
          </span>
        )}
      </div>
      {!list && workers.loading && <Loading what="workers" />}
      {list && list.length === 0 && (
        <Empty testid="workers-empty">
          No worker has registered: jobs run in the server’s own process. Start workers with{' '}
          <code>weir worker --controller ADDR</code> (the server needs <code>cluster.listen</code>; see docs/cluster.md).
        </Empty>
      )}
      {list && list.length > 0 && (
        <div class="table-wrap" tabIndex={0}>
          <table class="table" data-testid="workers-table">
            <thead>
              <tr>
                <th>Worker</th>
                <th>Status</th>
                <th>Data address</th>
                <th class="num">Slots used</th>
                <th class="num">Subtasks</th>
                <th class="num">Heartbeat</th>
                <th>Registered</th>
                <th>Version</th>
              </tr>
            </thead>
            <tbody>
              {list.map((w) => (
                <WorkerRow key={w.id} w={w} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function WorkerRow({ w }: { w: WorkerView }) {
  return (
    <tr data-testid="worker-row" data-worker-id={w.id} data-worker-status={w.status}>
      <td>
        <strong>{w.name}</strong> <span class="muted">#{w.id}</span>
        <div class="muted small" title="where its control session comes from">
          {w.peer}
        </div>
      </td>
      <td>
        <Status status={w.status === 'live' ? 'running' : 'failed'} label={w.status} />
        {w.lost_reason && <div class="muted small">{w.lost_reason}</div>}
      </td>
      <td>
        <code>{w.data_addr}</code>
      </td>
      <td class="num" data-testid="worker-slots">
        {w.used_slots} / {w.slots}
      </td>
      <td class="num" data-testid="worker-subtasks">
        {w.subtasks}
      </td>
      <td class="num" data-testid="worker-heartbeat" title={w.status === 'live' ? 'since its last heartbeat' : 'since it was lost'}>
        {formatDuration(w.heartbeat_age_ms)} ago
      </td>
      <td>{formatTime(w.registered_ms)}</td>
      <td>{w.version}</td>
    </tr>
  );
}
