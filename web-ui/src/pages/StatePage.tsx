import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { CheckpointView, JobSummary, SavepointRecord, StatePage as Page } from '../api/types';
import { Empty, Loading } from '../components/Status';
import { useErrors } from '../errors-context';
import { navigate, usePoll } from '../hooks';
import { ApiError, errorToMessage } from '../lib/errors';
import { formatBytes, formatTime, shortId } from '../lib/format';
import { links } from '../lib/router';
import { newestFirst } from '../lib/savepoints';
import {
  DEFAULT_STATE_LIMIT,
  browsableCheckpoints,
  browsableSavepoints,
  canGoNext,
  canGoPrev,
  currentCursor,
  entryPlace,
  firstPage,
  nextPage,
  operatorChoices,
  pageRange,
  parseSourceKey,
  prevPage,
  showStateValue,
  sourceKey,
  stateNames,
  type OperatorChoice,
  type Pager,
  type StateSource,
} from '../lib/state';

interface Sources {
  jobs: JobSummary[];
  checkpoints: Map<string, CheckpointView[]>;
  savepoints: SavepointRecord[];
}

const JOBS_SCANNED = 20;

async function loadSources(signal: AbortSignal): Promise<Sources> {
  const [jobs, savepoints] = await Promise.all([api.jobs(signal), api.savepoints(signal)]);
  const checkpoints = new Map<string, CheckpointView[]>();
  const recent = [...jobs].sort((a, b) => b.created_ms - a.created_ms).slice(0, JOBS_SCANNED);
  await Promise.all(
    recent.map(async (j) => {
      try {
        const h = await api.checkpoints(j.id, 30, signal);
        checkpoints.set(j.id, browsableCheckpoints(h.data));
      } catch {
        checkpoints.set(j.id, []);
      }
    }),
  );
  return { jobs, checkpoints, savepoints: browsableSavepoints(savepoints) };
}

/** Browse an operator's keyed and operator state in a retained checkpoint or a savepoint. */
export function StatePage({
  source,
  operator,
  stateName,
}: {
  source: StateSource | null;
  operator: string | null;
  stateName: string | null;
}) {
  const sources = usePoll('state-sources', loadSources, 10_000, []);
  const s = sources.data;

  const operators: OperatorChoice[] = useMemo(() => {
    if (!source || !s) return [];
    if (source.kind === 'savepoint') {
      const sp = s.savepoints.find((x) => x.id === source.savepoint);
      return operatorChoices(sp?.description?.nodes ?? []);
    }
    const job = s.jobs.find((j) => j.id === source.job);
    return operatorChoices(job?.spec.nodes.map((n) => ({ id: n.id, kind: n.kind })) ?? []);
  }, [source ? sourceKey(source) : '', s]);

  // A source without an operator: take the first one that holds state (operators are
  // probed in order with a one-entry page), else the first operator.
  useEffect(() => {
    if (!source || operator || operators.length === 0) return;
    const controller = new AbortController();
    (async () => {
      for (const o of operators) {
        try {
          const p = await api.state(source, o.id, { limit: 1 }, controller.signal);
          if (p.data.length > 0) return o.id;
        } catch {
          if (controller.signal.aborted) return null;
        }
      }
      return (operators.find((o) => o.stateful) ?? operators[0]!).id;
    })().then((id) => {
      if (id && !controller.signal.aborted) navigate(links.state(source, id, stateName), true);
    });
    return () => controller.abort();
  }, [source ? sourceKey(source) : '', operator, operators]);

  const chooseSource = (key: string) => {
    const next = parseSourceKey(key);
    if (!next) {
      navigate(links.state(null));
      return;
    }
    navigate(links.state(next, null, null));
  };

  const currentKey = source ? sourceKey(source) : '';
  const knownKeys = new Set<string>();
  if (s) {
    for (const sp of s.savepoints) knownKeys.add(sourceKey({ kind: 'savepoint', savepoint: sp.id }));
    for (const [job, cps] of s.checkpoints) for (const c of cps) knownKeys.add(sourceKey({ kind: 'checkpoint', job, checkpoint: c.id }));
  }

  return (
    <div class="stack">
      <section class="card">
        <div class="card-head">
          <h1>State</h1>
        </div>
        <p class="muted">
          Pick a retained checkpoint or a savepoint, then an operator, to browse its state page by page. Keys and values are shown as
          JSON (decoded from MessagePack; raw bytes as hex).
        </p>
        {!s && sources.loading && <Loading what="checkpoints and savepoints" />}
        {s && (
          <div class="form-grid">
            <label class="field">
              <span>Checkpoint or savepoint</span>
              <select data-testid="state-source-select" value={currentKey} onChange={(e) => chooseSource((e.target as HTMLSelectElement).value)}>
                <option value="">— choose —</option>
                {currentKey && !knownKeys.has(currentKey) && source && (
                  <option value={currentKey}>
                    {source.kind === 'checkpoint'
                      ? `checkpoint ${source.checkpoint} of ${shortId(source.job)}`
                      : `savepoint ${shortId(source.savepoint)}`}
                  </option>
                )}
                {s.savepoints.length > 0 && (
                  <optgroup label="Savepoints">
                    {newestFirst(s.savepoints).map((sp) => (
                      <option key={sp.id} value={sourceKey({ kind: 'savepoint', savepoint: sp.id })}>
                        savepoint {shortId(sp.id)} · {sp.job_name} · {formatTime(sp.created_ms)} · {formatBytes(sp.bytes)}
                      </option>
                    ))}
                  </optgroup>
                )}
                {s.jobs
                  .filter((j) => (s.checkpoints.get(j.id) ?? []).length > 0)
                  .map((j) => (
                    <optgroup key={j.id} label={`Checkpoints of ${j.name} (${shortId(j.id)})`}>
                      {(s.checkpoints.get(j.id) ?? []).map((c) => (
                        <option key={c.id} value={sourceKey({ kind: 'checkpoint', job: j.id, checkpoint: c.id })}>
                          checkpoint {c.id} · {j.name} · {formatTime(c.trigger_time_ms)} · {formatBytes(c.full_size)}
                        </option>
                      ))}
                    </optgroup>
                  ))}
              </select>
            </label>
            <label class="field">
              <span>Operator</span>
              <select
                data-testid="state-operator-select"
                value={operator ?? ''}
                disabled={!source}
                onChange={(e) => source && navigate(links.state(source, (e.target as HTMLSelectElement).value || null, stateName))}
              >
                {!operator && <option value="">— choose —</option>}
                {operator && !operators.some((o) => o.id === operator) && <option value={operator}>{operator}</option>}
                {operators.map((o) => (
                  <option key={o.id} value={o.id}>
                    {o.label}
                  </option>
                ))}
              </select>
            </label>
          </div>
        )}
        {s && knownKeys.size === 0 && !source && (
          <Empty>
            Nothing to browse yet: no completed savepoint and no retained checkpoint. Jobs keep their latest checkpoints (as many as
            their <code>retained</code> setting); take a savepoint from a job’s page to keep state for good.
          </Empty>
        )}
      </section>
      {source && operator && <StateBrowser key={`${sourceKey(source)}/${operator}?${stateName ?? ''}`} source={source} operator={operator} stateName={stateName} />}
    </div>
  );
}

function StateBrowser({ source, operator, stateName }: { source: StateSource; operator: string; stateName: string | null }) {
  const [pager, setPager] = useState<Pager>(firstPage());
  const [page, setPage] = useState<Page | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [filter, setFilter] = useState(stateName ?? '');
  const [names, setNames] = useState<string[]>([]);
  const { report } = useErrors();
  const limit = DEFAULT_STATE_LIMIT;

  useEffect(() => {
    const controller = new AbortController();
    setLoading(true);
    api
      .state(source, operator, { cursor: currentCursor(pager), state: stateName, limit }, controller.signal)
      .then(
        (p) => {
          setPage(p);
          setError(null);
          setNames((old) => [...new Set([...old, ...stateNames(p.data)])].sort());
        },
        (e) => {
          if (controller.signal.aborted) return;
          setPage(null);
          setError(errorToMessage(e).text);
          if (!(e instanceof ApiError && (e.status === 409 || e.status === 404))) report(e, 'state-page');
        },
      )
      .finally(() => {
        if (!controller.signal.aborted) setLoading(false);
      });
    return () => controller.abort();
  }, [pager]);

  const applyFilter = (e: Event) => {
    e.preventDefault();
    navigate(links.state(source, operator, filter.trim() || null));
  };

  return (
    <section class="card">
      <div class="card-head wrap">
        <h2>
          {operator}{' '}
          <span class="muted">
            in {source.kind === 'checkpoint' ? `checkpoint ${source.checkpoint} of job ${shortId(source.job)}` : `savepoint ${shortId(source.savepoint)}`}
          </span>
        </h2>
        {source.kind === 'checkpoint' && (
          <a class="btn small ghost" href={links.checkpoint(source.job, source.checkpoint)}>
            Checkpoint details
          </a>
        )}
      </div>
      <form class="row wrap" onSubmit={applyFilter}>
        <label class="field inline">
          <span>State name</span>
          <input
            type="text"
            list="state-names"
            data-testid="state-filter"
            placeholder="all states"
            value={filter}
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          />
          <datalist id="state-names">
            {names.map((n) => (
              <option value={n} key={n} />
            ))}
          </datalist>
        </label>
        <button type="submit" class="btn small" data-testid="state-filter-apply">
          Filter
        </button>
        {stateName && (
          <button type="button" class="btn small ghost" onClick={() => navigate(links.state(source, operator, null))}>
            Clear filter
          </button>
        )}
      </form>

      {error && (
        <div class="form-error" role="alert" data-testid="state-error">
          {error}
        </div>
      )}
      {!page && loading && <Loading what="state" />}
      {page && page.data.length === 0 && (
        <Empty testid="state-empty">
          {pager.index > 0
            ? 'No more entries.'
            : stateName
              ? `No entry of state “${stateName}” in ${operator}. Clear the filter to see every state.`
              : `${operator} holds no state here (stateless operators, sources and sinks often hold none).`}
        </Empty>
      )}
      {page && page.data.length > 0 && (
        <div class="table-wrap" tabIndex={0}>
          <table class={`table state-table${loading ? ' stale' : ''}`} data-testid="state-table">
            <thead>
              <tr>
                <th>Where</th>
                <th>State</th>
                <th>Key</th>
                <th>Value</th>
              </tr>
            </thead>
            <tbody>
              {page.data.map((item, i) => {
                const k = showStateValue(item.key);
                const v = showStateValue(item.value);
                return (
                  <tr key={i} data-testid="state-row">
                    <td class="nowrap">{entryPlace(item)}</td>
                    <td>{item.state}</td>
                    <td>
                      <code class={k.hex ? 'hex' : 'json'} title={k.hex ? 'raw bytes (not MessagePack), in hex' : undefined}>
                        {k.text}
                      </code>
                      {item.field !== undefined && item.field !== null && (
                        <>
                          {' · '}
                          <code class="json" data-testid="state-field" title="field (host keyed state)">
                            {showStateValue(item.field).text}
                          </code>
                        </>
                      )}
                    </td>
                    <td>
                      <code class={v.hex ? 'hex' : 'json'} title={v.hex ? 'raw bytes (not MessagePack), in hex' : undefined}>
                        {v.text}
                      </code>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <div class="pager">
        <button type="button" class="btn small" data-testid="state-prev" disabled={!canGoPrev(pager) || loading} onClick={() => setPager(prevPage(pager))}>
          ← Previous
        </button>
        <span class="muted">{page ? pageRange(pager, limit, page.data.length) : ''}</span>
        <button
          type="button"
          class="btn small"
          data-testid="state-next"
          disabled={!page || !canGoNext(page.next) || loading}
          onClick={() => page && setPager(nextPage(pager, page.next))}
        >
          Next →
        </button>
      </div>
    </section>
  );
}
