import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { JobSpec, SavepointRecord } from '../api/types';
import { ModuleUpload } from '../components/ModuleUpload';
import { SpecEditor } from '../components/SpecEditor';
import { SpecFormPanel } from '../components/SpecFormPanel';
import { useErrors } from '../errors-context';
import { navigate, usePoll } from '../hooks';
import { ApiError } from '../lib/errors';
import { formatTime, shortId } from '../lib/format';
import { checkSpec, missingStreams, serverProblem, streamUses, type SpecProblem, type StreamUse } from '../lib/newjob';
import { links } from '../lib/router';
import { newestFirst } from '../lib/savepoints';
import { applyEdit, specForm, specText, type FormEdit, type SpecForm } from '../lib/specform';
import { TEMPLATES, templateModules, type Template, type TemplateContext } from '../lib/templates';

interface JobSchema {
  document: unknown;
  /** `server`: `/api/v1/openapi.json`; `bundled`: the copy built into the UI (the server's could not be had). */
  from: 'server' | 'bundled';
}

let schemaLoad: Promise<JobSchema> | null = null;

function hasJobSpec(doc: unknown): boolean {
  const schemas = (doc as { components?: { schemas?: Record<string, unknown> } } | null)?.components?.schemas;
  return Boolean(schemas && typeof schemas.JobSpec === 'object');
}

/** The copy of the OpenAPI document built into the UI, loaded only when needed. */
async function bundledSchema(): Promise<JobSchema> {
  const raw = (await import('../api/openapi.json?raw')).default;
  return { document: JSON.parse(raw) as unknown, from: 'bundled' };
}

/** The schemas to check a spec with: the server's (once per visit of the app), else the bundled ones. */
function loadJobSchema(): Promise<JobSchema> {
  schemaLoad ??= api.openApiDocument().then(
    (doc): JobSchema | Promise<JobSchema> => (hasJobSpec(doc) ? { document: doc, from: 'server' } : bundledSchema()),
    () => bundledSchema(),
  );
  const loading = schemaLoad;
  // A fallback is tried again next time.
  void loading.then((s) => {
    if (s.from === 'bundled' && schemaLoad === loading) schemaLoad = null;
  });
  return loading;
}

const BUILTINS = templateModules();

/** Text with `code` in backticks, as the templates write it. */
function withCode(text: string) {
  return text.split(/`([^`]+)`/).map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** A new job: from a template, edited as JSON or in a form, optionally from a savepoint. */
export function NewJobPage() {
  const { report } = useErrors();
  const [schema, setSchema] = useState<JobSchema | null>(null);
  const [text, setText] = useState('');
  const [template, setTemplate] = useState<Template | null>(null);
  const [templateNote, setTemplateNote] = useState<string | null>(null);
  const [pristine, setPristine] = useState('');
  const [refusal, setRefusal] = useState<SpecProblem | null>(null);
  const [savepoint, setSavepoint] = useState('');
  const [allow, setAllow] = useState(false);
  const [busy, setBusy] = useState(false);
  const lastForm = useRef<SpecForm | null>(null);
  const showLine = useRef<((p: SpecProblem, focus: boolean) => void) | null>(null);

  useEffect(() => {
    let stop = false;
    loadJobSchema().then((s) => !stop && setSchema(s));
    return () => {
      stop = true;
    };
  }, []);

  const modules = usePoll('newjob-modules', (signal) => api.modules(signal), 0, []);
  const savepoints = usePoll('newjob-savepoints', (signal) => api.savepoints(signal), 0, []);
  const checked = useMemo(() => checkSpec(text, schema?.document ?? null), [text, schema]);
  const form = checked.value !== null ? specForm(checked.value) : lastForm.current;
  if (checked.value !== null) lastForm.current = form;
  const uses = useMemo(() => streamUses(checked.value), [checked.value]);
  const streams = usePoll('newjob-streams', uses.length > 0 ? (signal) => api.streams(signal) : null, 0, [uses.length > 0]);

  const edit = (next: string) => {
    setText(next);
    setRefusal(null);
  };
  const onEdit = (e: FormEdit) => {
    if (checked.value !== null) edit(specText(applyEdit(checked.value, e)));
  };

  const pick = async (t: Template) => {
    if (text.trim() && text !== pristine && !window.confirm(`Replace the spec in the editor with the ${t.label} template?`)) return;
    let ctx: TemplateContext = {};
    let note: string | null = null;
    if (t.id === 'kafka') {
      try {
        const grant = (await api.me()).kafka[0];
        if (grant) ctx = { kafka: { connection: grant.connection, topicPrefix: grant.topic_prefixes?.[0] ?? '' } };
        else note = 'Your tenant has no Kafka grant: the server refuses this job until the admin grants a connection.';
      } catch (e) {
        report(e);
      }
    }
    const next = specText(t.build(ctx));
    setTemplate(t);
    setTemplateNote(note);
    setPristine(next);
    edit(next);
  };

  const problems = refusal ? [...checked.problems, refusal].sort((a, b) => (a.offset ?? -1) - (b.offset ?? -1)) : checked.problems;
  const blocking = checked.value === null || (schema?.from === 'server' && checked.problems.length > 0);

  const submit = async (e: Event) => {
    e.preventDefault();
    if (checked.value === null) return;
    const spec = checked.value as unknown as JobSpec;
    const sent = text;
    setBusy(true);
    setRefusal(null);
    try {
      const job = await api.createJob(spec, savepoint || undefined, allow);
      navigate(links.job(job.id));
    } catch (err) {
      // A 400 is about the spec; a 403 too when it names a place in it (a Kafka topic outside the grant).
      const p =
        err instanceof ApiError && err.apiMessage && (err.status === 400 || err.status === 403)
          ? serverProblem(err.apiMessage, sent, JSON.stringify(spec))
          : null;
      if (p && (p.line !== null || (err as ApiError).status === 400)) {
        setRefusal(p);
        if (uses.length > 0) streams.refresh();
        // The editor scrolls to the line (the caret stays where it was).
        showLine.current?.(p, false);
      } else {
        report(err);
      }
    } finally {
      setBusy(false);
    }
  };

  const status = !text.trim()
    ? 'Nothing to check yet.'
    : !schema
      ? 'Valid JSON (loading the schema to check it against…)'
      : `A valid JobSpec, as the ${schema.from === 'server' ? 'server’s' : 'UI’s bundled'} OpenAPI schema says.`;

  return (
    <div class="stack">
      <section class="card">
        <p class="crumbs">
          <a href={links.jobs()}>Jobs</a> / New job
        </p>
        <div class="card-head wrap">
          <h1>New job</h1>
          <span class="muted">start from a template, edit it as JSON or in the form, and submit</span>
        </div>
        <div class="templates" role="group" aria-label="Templates">
          {TEMPLATES.map((t) => (
            <button
              type="button"
              key={t.id}
              class={`template${template?.id === t.id ? ' selected' : ''}`}
              data-testid={`template-${t.id}`}
              aria-pressed={template?.id === t.id}
              onClick={() => void pick(t)}
            >
              <strong>{t.label}</strong>
              <span class="muted small">{withCode(t.summary)}</span>
            </button>
          ))}
        </div>
        {template && (
          <p class="muted" data-testid="template-needs">
            {withCode(template.needs)}
          </p>
        )}
        {templateNote && (
          <div class="warn-box" data-testid="template-note">
            {templateNote}
          </div>
        )}
      </section>
      <div class="newjob-grid">
        <section class="card">
          <div class="card-head wrap">
            <h2>Spec</h2>
            <span class="muted">JSON, checked as you type against the API’s JobSpec schema</span>
          </div>
          <SpecEditor text={text} onChange={edit} problems={text.trim() ? problems : []} status={status} control={showLine} />
        </section>
        <div class="stack">
          <section class="card">
            <div class="card-head">
              <h2>Form</h2>
              <span class="muted">edits the same spec</span>
            </div>
            <SpecFormPanel form={form} disabled={checked.value === null} modules={modules.data} builtins={BUILTINS} onEdit={onEdit} />
            <h3 class="subhead">Upload a module</h3>
            <ModuleUpload onUploaded={modules.refresh} />
          </section>
          {uses.length > 0 && (
            <StreamsNeeded uses={uses} existing={streams.data?.map((s) => s.name) ?? null} onCreated={streams.refresh} />
          )}
          <form class="card" onSubmit={submit}>
            <div class="card-head">
              <h2>Start</h2>
            </div>
            <StartFrom
              savepoints={savepoints.data}
              savepoint={savepoint}
              allow={allow}
              onSavepoint={setSavepoint}
              onAllow={setAllow}
            />
            <div class="row">
              <button type="submit" class="btn primary" data-testid="newjob-submit" disabled={busy || blocking}>
                {busy ? 'Submitting…' : savepoint ? 'Start from the savepoint' : 'Submit job'}
              </button>
              {blocking && text.trim() && (
                <span class="muted" data-testid="newjob-blocked">
                  {checked.value === null
                    ? 'The text is not JSON yet.'
                    : `Fix the ${plural(checked.problems.length, 'problem')} under the spec first.`}
                </span>
              )}
            </div>
            {refusal && (
              <div class="status-line tone-error" role="alert" data-testid="newjob-refused">
                The server refused the spec{refusal.line !== null ? ` (line ${refusal.line})` : ''}: {refusal.text}{' '}
                {refusal.line !== null && (
                  <button type="button" class="btn small ghost" onClick={() => showLine.current?.(refusal, true)}>
                    Show line {refusal.line}
                  </button>
                )}
              </div>
            )}
          </form>
        </div>
      </div>
    </div>
  );
}

/** The streams the spec reads or writes that do not exist yet, with a button to create each. */
function StreamsNeeded({ uses, existing, onCreated }: { uses: StreamUse[]; existing: string[] | null; onCreated: () => void }) {
  const { report } = useErrors();
  const [partitions, setPartitions] = useState<Record<string, number>>({});
  const [busy, setBusy] = useState<string | null>(null);
  if (!existing) return null;
  const { missing, created } = missingStreams(uses, existing);
  const create = async (u: StreamUse) => {
    setBusy(u.stream);
    try {
      await api.createStream(u.stream, partitions[u.stream] ?? u.partitions ?? 1);
      onCreated();
    } catch (e) {
      report(e);
    } finally {
      setBusy(null);
    }
  };
  return (
    <section class="card" data-testid="newjob-streams">
      <div class="card-head">
        <h2>Streams</h2>
        <a class="muted small" href={links.streams()}>
          all streams
        </a>
      </div>
      {missing.length === 0 && (uses.some((u) => u.role === 'source') || created.length === 0) && (
        <p class="muted" data-testid="streams-ready">
          {uses.some((u) => u.role === 'source') ? 'Every stream the job reads exists.' : 'Every stream it names exists.'}
        </p>
      )}
      {missing.map((u) => (
        <div class="toolbar wrap" key={u.stream} data-testid="stream-missing" data-stream={u.stream}>
          <span>
            Stream <code>{u.stream}</code> ({u.role === 'source' ? 'read' : 'written'} by node <code>{u.node}</code>) does not exist.
          </span>
          <label>
            Partitions{' '}
            <input
              type="number"
              min={1}
              max={1024}
              class="narrow"
              value={partitions[u.stream] ?? u.partitions ?? 1}
              onInput={(e) => setPartitions({ ...partitions, [u.stream]: Number(e.currentTarget.value) || 1 })}
            />
          </label>
          <button type="button" class="btn small" data-testid="create-stream" disabled={busy !== null} onClick={() => void create(u)}>
            {busy === u.stream ? 'Creating…' : 'Create it'}
          </button>
        </div>
      ))}
      {created.map((u) => (
        <p class="muted small" key={u.stream} data-testid="stream-created-on-submit">
          Stream <code>{u.stream}</code> does not exist yet: sink <code>{u.node}</code> creates it with {u.partitions} partition(s).
        </p>
      ))}
    </section>
  );
}

/** Start from a completed savepoint of the tenant (or from nothing). */
function StartFrom({
  savepoints,
  savepoint,
  allow,
  onSavepoint,
  onAllow,
}: {
  savepoints: SavepointRecord[] | null;
  savepoint: string;
  allow: boolean;
  onSavepoint: (id: string) => void;
  onAllow: (allow: boolean) => void;
}) {
  const completed = newestFirst((savepoints ?? []).filter((s) => s.status === 'completed'));
  return (
    <>
      <label class="field">
        <span>Start from a savepoint</span>
        <select data-testid="newjob-savepoint" value={savepoint} onChange={(e) => onSavepoint(e.currentTarget.value)}>
          <option value="">No savepoint: empty state</option>
          {completed.map((s) => (
            <option key={s.id} value={s.id}>
              {shortId(s.id)} · {s.job_name} · {formatTime(s.completed_ms ?? s.created_ms)}
            </option>
          ))}
        </select>
      </label>
      {savepoints && completed.length === 0 && <p class="muted small">The tenant has no completed savepoint.</p>}
      <label class="check">
        <input
          type="checkbox"
          data-testid="newjob-allow-non-restored"
          checked={allow}
          disabled={!savepoint}
          onChange={(e) => onAllow(e.currentTarget.checked)}
        />
        Allow non-restored state (state of the savepoint that has no place in the job is dropped)
      </label>
    </>
  );
}
