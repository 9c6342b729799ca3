import { useEffect, useState } from 'preact/hooks';
import { api, saveBlob } from '../api/client';
import type { JobStatus, SavepointMode, SavepointRecord } from '../api/types';
import { useErrors } from '../errors-context';
import { navigate, useNow } from '../hooks';
import { errorToMessage } from '../lib/errors';
import { formatBytes, formatCount, formatTime, shortId } from '../lib/format';
import { links } from '../lib/router';
import {
  SAVEPOINT_MODES,
  isSavepointMode,
  newestFirst,
  parseSpec,
  savepointOrigin,
  savepointProgress,
  specFromDescription,
  specText,
} from '../lib/savepoints';
import { Empty, Status } from './Status';

/** Take a savepoint of a job with a mode, and follow it until it completed or failed. */
export function SavepointTrigger({ jobId, status, onChange }: { jobId: string; status: JobStatus; onChange: () => void }) {
  const [mode, setMode] = useState<SavepointMode>('keep_running');
  const [busy, setBusy] = useState(false);
  const [current, setCurrent] = useState<SavepointRecord | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { report } = useErrors();
  const pending = current?.status === 'pending';
  const now = useNow(250, pending);

  // Poll the triggered savepoint until it is done.
  useEffect(() => {
    if (!current || current.status !== 'pending') return;
    let stop = false;
    const t = setTimeout(async () => {
      try {
        const next = await api.savepoint(current.id);
        if (!stop) {
          setCurrent(next);
          if (next.status !== 'pending') onChange();
        }
      } catch (e) {
        if (!stop) {
          report(e, 'savepoint-progress');
          // Try again: a pending savepoint does not go away.
          setCurrent({ ...current });
        }
      }
    }, 700);
    return () => {
      stop = true;
      clearTimeout(t);
    };
  }, [current]);

  const running = status === 'running';
  // Only keep_running applies to a job that is not running.
  useEffect(() => {
    if (!running && mode !== 'keep_running') setMode('keep_running');
  }, [running]);
  const modeHelp = SAVEPOINT_MODES.find((m) => m.mode === mode)?.help ?? '';
  const trigger = async () => {
    setBusy(true);
    setError(null);
    try {
      const sp = await api.triggerSavepoint(jobId, mode);
      setCurrent(sp);
      onChange();
    } catch (e) {
      setError(errorToMessage(e).text);
      report(e);
    } finally {
      setBusy(false);
    }
  };

  const progress = current ? savepointProgress(current, now) : null;
  return (
    <div class="sp-trigger">
      <label class="field inline">
        <span>Mode</span>
        <select
          data-testid="savepoint-mode"
          value={mode}
          onChange={(e) => {
            const v = (e.target as HTMLSelectElement).value;
            if (isSavepointMode(v)) setMode(v);
          }}
        >
          {SAVEPOINT_MODES.map((m) => (
            <option value={m.mode} key={m.mode} disabled={!running && m.mode !== 'keep_running'}>
              {m.label}
            </option>
          ))}
        </select>
      </label>
      <button type="button" class="btn primary" data-testid="trigger-savepoint" disabled={busy || pending} onClick={trigger}>
        {busy ? 'Triggering…' : 'Take savepoint'}
      </button>
      <span class="muted help">
        {running ? modeHelp : `The job is ${status}: a savepoint copies its latest checkpoint (keep running only).`}
      </span>
      {progress && current && (
        <div class={`progress tone-${progress.tone}`} data-testid="savepoint-progress" data-status={progress.status} role="status">
          <div class="progress-track">
            <div class={`progress-fill${progress.share === null ? ' indeterminate' : ''}`} style={progress.share === null ? undefined : { width: `${progress.share * 100}%` }} />
          </div>
          <div class="progress-text">{progress.text}</div>
        </div>
      )}
      {error && !current && (
        <div class="progress tone-error" data-testid="savepoint-progress" data-status="refused" role="status">
          <div class="progress-text">{error}</div>
        </div>
      )}
    </div>
  );
}

/**
 * Savepoints with their actions: export (download), dispose, start a job from one, browse
 * its state. `showJob` adds the job column (the tenant-wide list).
 */
export function SavepointsTable({
  savepoints,
  showJob,
  onChange,
}: {
  savepoints: SavepointRecord[];
  showJob: boolean;
  onChange: () => void;
}) {
  const { report } = useErrors();
  const [busy, setBusy] = useState<string | null>(null);
  const [starting, setStarting] = useState<SavepointRecord | null>(null);
  const list = newestFirst(savepoints);

  const exportFile = async (sp: SavepointRecord) => {
    setBusy(`export:${sp.id}`);
    try {
      const { blob, filename } = await api.downloadSavepoint(sp.id);
      saveBlob(blob, filename);
    } catch (e) {
      report(e);
    } finally {
      setBusy(null);
    }
  };
  const dispose = async (sp: SavepointRecord) => {
    if (!window.confirm(`Dispose of savepoint ${sp.id} of ${sp.job_name}? Its state is deleted; jobs started from it keep theirs.`)) {
      return;
    }
    setBusy(`delete:${sp.id}`);
    try {
      await api.deleteSavepoint(sp.id);
      if (starting?.id === sp.id) setStarting(null);
      onChange();
    } catch (e) {
      report(e);
    } finally {
      setBusy(null);
    }
  };

  if (list.length === 0) {
    return (
      <Empty testid="savepoints-empty">
        No savepoint yet.{' '}
        {showJob
          ? 'Take one from a job’s page (Jobs → a job → Savepoints), or import a savepoint file below.'
          : 'Take one above: choose a mode and press “Take savepoint”.'}
      </Empty>
    );
  }

  return (
    <>
      <div class="table-wrap" tabIndex={0}>
        <table class="table" data-testid="savepoints-table">
          <thead>
            <tr>
              <th>Savepoint</th>
              {showJob && <th>Job</th>}
              <th>Status</th>
              <th>Mode</th>
              <th class="num">Checkpoint</th>
              <th>Created</th>
              <th>Completed</th>
              <th class="num">Size</th>
              <th class="num">Entries</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {list.map((sp) => {
              const done = sp.status === 'completed';
              return (
                <tr key={sp.id} data-testid="savepoint-row" data-savepoint-id={sp.id} data-status={sp.status}>
                  <td>
                    <code title={sp.id}>{shortId(sp.id)}</code>
                  </td>
                  {showJob && (
                    <td>
                      <a href={links.job(sp.job)} title={sp.job}>
                        {sp.job_name}
                      </a>
                    </td>
                  )}
                  <td>
                    <Status status={sp.status} />
                    {sp.error && <div class="failure">{sp.error}</div>}
                  </td>
                  <td>{savepointOrigin(sp)}</td>
                  <td class="num">{sp.checkpoint ?? '—'}</td>
                  <td>{formatTime(sp.created_ms)}</td>
                  <td>{formatTime(sp.completed_ms ?? null)}</td>
                  <td class="num">{done ? formatBytes(sp.bytes) : '—'}</td>
                  <td class="num">{done ? formatCount(sp.entries) : '—'}</td>
                  <td class="row-actions">
                    <button
                      type="button"
                      class="btn small"
                      data-testid="savepoint-export"
                      disabled={!done || busy !== null}
                      onClick={() => exportFile(sp)}
                      title="Download the savepoint as one portable file"
                    >
                      {busy === `export:${sp.id}` ? 'Exporting…' : 'Export'}
                    </button>
                    <button
                      type="button"
                      class="btn small"
                      data-testid="savepoint-start-job"
                      disabled={!done}
                      onClick={() => setStarting(sp)}
                      title="Start a new job from this savepoint"
                    >
                      Start job…
                    </button>
                    {done && (
                      <a class="btn small ghost" href={links.state({ kind: 'savepoint', savepoint: sp.id })} data-testid="savepoint-state">
                        State
                      </a>
                    )}
                    <button
                      type="button"
                      class="btn small danger"
                      data-testid="savepoint-delete"
                      disabled={sp.status === 'pending' || busy !== null}
                      onClick={() => dispose(sp)}
                    >
                      {busy === `delete:${sp.id}` ? 'Disposing…' : 'Dispose'}
                    </button>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {starting && <StartJobPanel savepoint={starting} onClose={() => setStarting(null)} />}
    </>
  );
}

/** Start a new job from a savepoint: the source job's spec to edit, then POST /jobs. */
export function StartJobPanel({ savepoint, onClose }: { savepoint: SavepointRecord; onClose: () => void }) {
  const [text, setText] = useState('');
  const [note, setNote] = useState<string>('Loading the spec of the job it was taken from…');
  const [allow, setAllow] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let stop = false;
    setError(null);
    setText('');
    setNote('Loading the spec of the job it was taken from…');
    api.job(savepoint.job).then(
      (job) => {
        if (stop) return;
        setText(specText(job.spec));
        setNote(`The spec of job ${job.name} (${shortId(job.id)}). Edit it (a parallelism change is just a number here), then start.`);
      },
      () => {
        if (stop) return;
        if (savepoint.description) {
          setText(specText(specFromDescription(savepoint.description)));
          setNote(
            'The job it was taken from is not on this server: this skeleton comes from the savepoint’s description. ' +
              'Fill in the connectors’ config and the edges.',
          );
        } else {
          setText(specText({ name: savepoint.job_name, nodes: [] }));
          setNote('Nothing is known about the job it was taken from: write its spec.');
        }
      },
    );
    return () => {
      stop = true;
    };
  }, [savepoint.id]);

  const submit = async (e: Event) => {
    e.preventDefault();
    const parsed = parseSpec(text);
    if (!parsed.ok) {
      setError(parsed.error);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const job = await api.createJob(parsed.spec, savepoint.id, allow);
      navigate(links.job(job.id));
    } catch (err) {
      // The API's message, verbatim (what did not fit, and what to do).
      setError(errorToMessage(err).text);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card inset start-job" data-testid="start-job-panel" onSubmit={submit}>
      <div class="card-head">
        <h3>
          Start a job from savepoint <code>{shortId(savepoint.id)}</code> ({savepoint.job_name})
        </h3>
        <div class="spacer" />
        <button type="button" class="btn small ghost" onClick={onClose}>
          Close
        </button>
      </div>
      <p class="muted">{note}</p>
      <textarea
        data-testid="spec-editor"
        class="spec-editor"
        spellcheck={false}
        rows={18}
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        aria-label="Job spec (JSON)"
      />
      <label class="check">
        <input
          type="checkbox"
          data-testid="allow-non-restored-state"
          checked={allow}
          onChange={(e) => setAllow((e.target as HTMLInputElement).checked)}
        />
        Allow non-restored state (state of the savepoint that has no place in the job is dropped)
      </label>
      {error && (
        <div class="form-error" role="alert" data-testid="start-job-error">
          {error}
        </div>
      )}
      <div class="row">
        <button type="submit" class="btn primary" data-testid="start-job-submit" disabled={busy || !text}>
          {busy ? 'Starting…' : 'Start job'}
        </button>
      </div>
    </form>
  );
}
