import type { Module } from '../api/types';
import { CHECKPOINT_MODES, moduleOptions, type FormEdit, type SpecForm } from '../lib/specform';

/** The number in a number input: `null` when emptied, `undefined` when it is no number yet (`-`, `1e`). */
function numberIn(e: Event): number | null | undefined {
  const el = e.currentTarget as HTMLInputElement;
  if (el.value === '') return el.validity.badInput ? undefined : null;
  const n = Number(el.value);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * The spec as a form: its name, each node's parallelism and each operator's module, the
 * checkpoint interval and mode. Each change is a `FormEdit` the page applies to the spec's
 * text. Disabled while the text is not JSON (`form` is then the last one that was).
 */
export function SpecFormPanel({
  form,
  disabled,
  modules,
  builtins,
  onEdit,
}: {
  form: SpecForm | null;
  disabled: boolean;
  modules: Module[] | null;
  builtins: string[];
  onEdit: (edit: FormEdit) => void;
}) {
  if (!form) {
    return (
      <p class="muted" data-testid="form-empty">
        The form edits a spec with a <code>nodes</code> array: pick a template, or write one.
      </p>
    );
  }
  const interval = form.intervalMs;
  return (
    <fieldset class="spec-form" disabled={disabled} data-testid="spec-form">
      {disabled && <p class="muted small">The text is not valid JSON: fix it to edit here again.</p>}
      <label class="field">
        <span>Job name</span>
        <input
          type="text"
          data-testid="form-name"
          value={form.name}
          onInput={(e) => onEdit({ field: 'name', name: e.currentTarget.value })}
        />
      </label>
      <div class="table-wrap" tabIndex={0}>
        <table class="table compact" data-testid="form-nodes">
          <thead>
            <tr>
              <th>Node</th>
              <th>Runs</th>
              <th class="num">Parallelism</th>
            </tr>
          </thead>
          <tbody>
            {form.nodes.map((n) => (
              <tr key={n.index} data-testid="form-node" data-node-id={n.id}>
                <td>
                  <strong>{n.id || <span class="muted">(no id)</span>}</strong>
                  <div class="sub">{n.kind || 'no kind'}</div>
                </td>
                <td>
                  {n.kind === 'operator' ? (
                    <select
                      aria-label={`module of ${n.id}`}
                      data-testid={`form-module-${n.index}`}
                      value={n.module ?? ''}
                      onChange={(e) => onEdit({ field: 'module', node: n.index, module: e.currentTarget.value })}
                    >
                      {n.module === null && <option value="">choose a module…</option>}
                      {moduleOptions(modules ?? [], builtins, n.module).map((o) => (
                        <option key={o.value} value={o.value}>
                          {o.label}
                        </option>
                      ))}
                    </select>
                  ) : (
                    <span class="muted">{n.connector ? `${n.connector} connector` : 'no connector'}</span>
                  )}
                </td>
                <td class="num">
                  <input
                    type="number"
                    min={1}
                    step={1}
                    class="narrow"
                    aria-label={`parallelism of ${n.id}`}
                    data-testid={`form-parallelism-${n.index}`}
                    placeholder="1"
                    value={typeof n.parallelism === 'number' ? String(n.parallelism) : ''}
                    onInput={(e) => {
                      const p = numberIn(e);
                      if (p !== undefined) onEdit({ field: 'parallelism', node: n.index, parallelism: p });
                    }}
                  />
                  {n.parallelism === 'invalid' && <div class="sub error-text">not a number in the text</div>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <div class="form-grid">
        <div class="field">
          <span>Checkpoint every (ms)</span>
          <input
            type="number"
            aria-label="checkpoint interval in milliseconds"
            min={1}
            step={100}
            data-testid="form-interval"
            placeholder={interval === null ? 'on demand only' : '1000 (the default)'}
            disabled={interval === null}
            value={typeof interval === 'number' ? String(interval) : ''}
            onInput={(e) => {
              const ms = numberIn(e);
              if (ms !== undefined) onEdit({ field: 'interval', intervalMs: ms === null ? undefined : ms });
            }}
          />
          <div class="check">
            <input
              type="checkbox"
              id="form-on-demand"
              data-testid="form-on-demand"
              checked={interval === null}
              onChange={(e) => onEdit({ field: 'interval', intervalMs: e.currentTarget.checked ? null : undefined })}
            />
            <label for="form-on-demand">Only on demand (no periodic checkpoints)</label>
          </div>
        </div>
        <label class="field">
          <span>Checkpoint mode</span>
          <select
            data-testid="form-mode"
            value={form.mode === undefined || form.mode === 'invalid' ? '' : form.mode}
            onChange={(e) => {
              const v = e.currentTarget.value;
              onEdit({ field: 'mode', mode: CHECKPOINT_MODES.find((m) => m === v) });
            }}
          >
            <option value="">{form.mode === 'invalid' ? '(not a mode: see the text)' : 'aligned (the default)'}</option>
            {CHECKPOINT_MODES.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        </label>
      </div>
    </fieldset>
  );
}
