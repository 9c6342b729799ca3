import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { StoredLine } from '../api/types';
import { formatTime } from '../lib/format';
import { Empty, Loading } from './Status';

/** Most lines the card keeps: the newest. */
const KEPT = 2000;

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;

/**
 * The job's operator log: its lines, newest last, followed every second while `follow` is
 * on; filtered by level (on the server) and by a search (here).
 */
export function JobLogs({ jobId }: { jobId: string }) {
  const [lines, setLines] = useState<StoredLine[] | null>(null);
  const [level, setLevel] = useState<string>('trace');
  const [search, setSearch] = useState('');
  const [follow, setFollow] = useState(true);
  const after = useRef(0);

  // A new job or level: read again from the start.
  useEffect(() => {
    after.current = 0;
    setLines(null);
  }, [jobId, level]);

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const controller = new AbortController();
    const read = async () => {
      try {
        const page = await api.jobLogs(jobId, { after: after.current, level }, controller.signal);
        if (stopped) return;
        if (page.length > 0) after.current = page[page.length - 1]!.seq;
        setLines((old) => [...(old ?? []), ...page].slice(-KEPT));
      } catch {
        // Shown by the job page's own polls; try again at the next tick.
      }
      if (!stopped && follow) timer = setTimeout(read, 1000);
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
      controller.abort();
    };
  }, [jobId, level, follow]);

  const needle = search.trim().toLowerCase();
  const shown = (lines ?? []).filter((l) => !needle || l.message.toLowerCase().includes(needle));
  return (
    <section class="card" id="logs" data-testid="logs">
      <div class="card-head">
        <h2>Logs</h2>
        <span class="muted">operator log lines, oldest first</span>
      </div>
      <div class="toolbar">
        <label>
          Level{' '}
          <select
            data-testid="log-level"
            value={level}
            onChange={(e) => setLevel((e.target as HTMLSelectElement).value)}
          >
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l} and above
              </option>
            ))}
          </select>
        </label>{' '}
        <input
          type="search"
          placeholder="Search"
          data-testid="log-search"
          value={search}
          onInput={(e) => setSearch((e.target as HTMLInputElement).value)}
        />{' '}
        <label>
          <input
            type="checkbox"
            data-testid="log-follow"
            checked={follow}
            onChange={(e) => setFollow((e.target as HTMLInputElement).checked)}
          />{' '}
          Follow
        </label>
      </div>
      {lines === null ? (
        <Loading what="the log" />
      ) : shown.length === 0 ? (
        <Empty>No log lines{needle ? ' match' : ''}.</Empty>
      ) : (
        <div class="table-wrap log-lines" tabIndex={0}>
          <table class="table compact">
            <thead>
              <tr>
                <th>Time</th>
                <th>Level</th>
                <th>Where</th>
                <th>Message</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((l) => (
                <tr key={l.seq} data-testid="log-line" class={`log-${l.level}`}>
                  <td>{formatTime(l.time_ms)}</td>
                  <td>{l.level}</td>
                  <td>
                    {l.node} #{l.subtask}
                  </td>
                  <td class="log-message">{l.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
