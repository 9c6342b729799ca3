import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { Answer, JobSummary } from '../api/types';
import { Empty, Loading } from '../components/Status';
import { useErrors } from '../errors-context';
import { usePoll } from '../hooks';
import { errorToMessage } from '../lib/errors';
import { formatCount, formatTimeMs } from '../lib/format';
import { links } from '../lib/router';
import { appendTail, recordsFromLines, streamUsers, tailStart, type StreamUser } from '../lib/streams';

type StreamInfo = Answer<'list_streams'>['data'][number];
type StoredRecord = Answer<'read_records'>['data'][number];

/** The tenant's streams (its hosted jobs' inputs and outputs); one of them tailed, and records pushed to it. */
export function StreamsPage({ stream }: { stream: string | null }) {
  const streams = usePoll('streams', (signal) => api.streams(signal), 3000, []);
  const jobs = usePoll('jobs-for-streams', (signal) => api.jobs(signal), 5000, []);
  const list = streams.data ? [...streams.data].sort((a, b) => a.name.localeCompare(b.name)) : null;
  const selected = list?.find((s) => s.name === stream) ?? null;

  return (
    <div class="stack">
      <section class="card">
        <div class="card-head wrap">
          <h1>Streams</h1>
          {list && <span class="muted">{list.length} streams · the inputs and outputs of hosted jobs</span>}
        </div>
        <NewStream onCreated={streams.refresh} />
        {!list && <Loading what="streams" />}
        {list && list.length === 0 && (
          <Empty testid="streams-empty">No stream yet. Create one above, then name it in a job's stream source or sink.</Empty>
        )}
        {list && list.length > 0 && (
          <div class="table-wrap" tabIndex={0}>
            <table class="table" data-testid="streams-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th class="num">Partitions</th>
                  <th class="num">Records</th>
                  <th>Read by</th>
                  <th>Written by</th>
                </tr>
              </thead>
              <tbody>
                {list.map((s) => {
                  const users = streamUsers(jobs.data ?? [], s.name);
                  return (
                    <tr key={s.name} data-testid="stream-row" data-stream={s.name} class={s.name === stream ? 'selected' : undefined}>
                      <td>
                        <a href={links.streams(s.name)}>
                          <strong>{s.name}</strong>
                        </a>
                      </td>
                      <td class="num">{s.partitions}</td>
                      <td class="num" data-testid="stream-records">
                        {formatCount(s.end_offsets.reduce((a, b) => a + b, 0))}
                      </td>
                      <td data-testid="stream-readers">
                        <Users users={users.readers} />
                      </td>
                      <td data-testid="stream-writers">
                        <Users users={users.writers} />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {stream && list && !selected && <Empty testid="stream-missing">No stream named {stream}.</Empty>}
      {selected && <StreamDetail key={selected.name} stream={selected} jobs={jobs.data ?? []} onPushed={streams.refresh} />}
    </div>
  );
}

function Users({ users }: { users: StreamUser[] }) {
  if (users.length === 0) return <span class="muted">—</span>;
  return (
    <>
      {users.map((u, i) => (
        <span key={`${u.job}/${u.node}`}>
          {i > 0 && ', '}
          <a href={links.job(u.job)} title={`node ${u.node} · ${u.status}`}>
            {u.jobName}
          </a>
        </span>
      ))}
    </>
  );
}

/** Creates a stream. */
function NewStream({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [partitions, setPartitions] = useState(1);
  const [busy, setBusy] = useState(false);
  const { report } = useErrors();
  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      await api.createStream(name.trim(), partitions);
      setName('');
      onCreated();
    } catch (err) {
      report(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="toolbar wrap" onSubmit={create}>
      <label>
        Name{' '}
        <input type="text" data-testid="stream-name" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="clicks" required />
      </label>
      <label>
        Partitions{' '}
        <input
          data-testid="stream-partitions"
          type="number"
          min={1}
          max={1024}
          value={partitions}
          onInput={(e) => setPartitions(Number(e.currentTarget.value) || 1)}
        />
      </label>
      <button type="submit" class="btn small" data-testid="stream-create" disabled={busy || !name.trim()}>
        {busy ? 'Creating…' : 'Create stream'}
      </button>
    </form>
  );
}

/** One stream: a live tail of a partition, and a box to push records. */
function StreamDetail({ stream, jobs, onPushed }: { stream: StreamInfo; jobs: JobSummary[]; onPushed: () => void }) {
  const [partition, setPartition] = useState(0);
  const [follow, setFollow] = useState(true);
  const [records, setRecords] = useState<StoredRecord[]>([]);
  const [error, setError] = useState<string | null>(null);
  const next = useRef<number | null>(null);
  const end = stream.end_offsets[partition] ?? 0;
  const users = useMemo(() => streamUsers(jobs, stream.name), [jobs, stream.name]);

  // A new partition: start at its last records.
  useEffect(() => {
    setRecords([]);
    next.current = null;
  }, [partition]);

  useEffect(() => {
    let stopped = false;
    const controller = new AbortController();
    const read = async () => {
      try {
        const from = next.current ?? tailStart(end);
        const page = await api.streamRecords(stream.name, partition, from, 200, controller.signal);
        if (stopped) return;
        next.current = page.next_offset;
        setRecords((kept) => appendTail(kept, page.data));
        setError(null);
      } catch (e) {
        if (!stopped && !(e instanceof DOMException)) setError(errorToMessage(e).text);
      }
    };
    void read();
    const timer = follow ? setInterval(read, 1000) : null;
    return () => {
      stopped = true;
      controller.abort();
      if (timer) clearInterval(timer);
    };
  }, [stream.name, partition, follow]);

  return (
    <section class="card" data-testid="stream-detail">
      <div class="card-head wrap">
        <h2>{stream.name}</h2>
        <span class="muted">
          {stream.partitions} partitions · end offsets {stream.end_offsets.join(', ')} · read by {users.readers.length} jobs, written by{' '}
          {users.writers.length}
        </span>
      </div>
      <div class="toolbar wrap">
        <label>
          Partition{' '}
          <select data-testid="tail-partition" value={partition} onChange={(e) => setPartition(Number(e.currentTarget.value))}>
            {stream.end_offsets.map((o, p) => (
              <option key={p} value={p}>
                {p} ({formatCount(o)} records)
              </option>
            ))}
          </select>
        </label>
        <label>
          <input type="checkbox" data-testid="tail-follow" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} /> Follow
        </label>
        <span class="muted">the last {records.length} records, newest last</span>
      </div>
      {error && <p class="error-text">{error}</p>}
      {records.length === 0 ? (
        <Empty testid="tail-empty">No records in partition {partition} yet.</Empty>
      ) : (
        <div class="table-wrap tail" tabIndex={0} role="region" aria-label={`Records of partition ${partition}`}>
          <table class="table" data-testid="tail-table">
            <thead>
              <tr>
                <th class="num">Offset</th>
                <th>Time</th>
                <th>Key</th>
                <th>Value</th>
              </tr>
            </thead>
            <tbody>
              {records.map((r) => (
                <tr key={r.offset} data-testid="tail-record" data-offset={r.offset}>
                  <td class="num">{r.offset}</td>
                  <td>{formatTimeMs(r.timestamp)}</td>
                  <td>
                    <code>{r.key === null ? '' : JSON.stringify(r.key)}</code>
                  </td>
                  <td>
                    <code>{JSON.stringify(r.value)}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Push stream={stream.name} onPushed={onPushed} />
    </section>
  );
}

/** Pushes records typed as JSON lines. */
function Push({ stream, onPushed }: { stream: string; onPushed: () => void }) {
  const [text, setText] = useState('');
  const [status, setStatus] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const push = async (e: Event) => {
    e.preventDefault();
    let records;
    try {
      records = recordsFromLines(text);
    } catch (err) {
      setStatus(err instanceof Error ? err.message : String(err));
      return;
    }
    setBusy(true);
    try {
      const appended = await api.pushRecords(stream, records);
      setStatus(`Pushed ${appended.length} records.`);
      setText('');
      onPushed();
    } catch (err) {
      setStatus(errorToMessage(err).text);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="push" onSubmit={push}>
      <label for="push-records">
        Push records: one JSON value per line, or <code>{'{"key": …, "value": …}'}</code>
      </label>
      <textarea
        id="push-records"
        data-testid="push-records"
        rows={4}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        placeholder={'"hello world"\n{"key": "user-1", "value": {"clicks": 3}}'}
      />
      <div class="toolbar">
        <button type="submit" class="btn small" data-testid="push-submit" disabled={busy || !text.trim()}>
          {busy ? 'Pushing…' : 'Push'}
        </button>
        {status && (
          <span class="muted" data-testid="push-status" role="status">
            {status}
          </span>
        )}
      </div>
    </form>
  );
}
