import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { Empty, Loading } from '../components/Status';
import { UploadFeedback, useUpload } from '../components/Upload';
import { useErrors } from '../errors-context';
import { usePoll } from '../hooks';
import { ApiError, errorToMessage } from '../lib/errors';
import { formatBytes, formatTime } from '../lib/format';

/** The tenant's modules (Wasm components); upload one. */
export function ModulesPage() {
  const modules = usePoll('modules-page', (signal) => api.modules(signal), 5000, []);
  const { report } = useErrors();
  const [deleting, setDeleting] = useState<string | null>(null);
  const list = modules.data ? [...modules.data].sort((a, b) => b.created_ms - a.created_ms) : null;

  const remove = async (id: string, name: string) => {
    if (!window.confirm(`Delete module ${name}? Jobs that still use it keep it from being deleted.`)) return;
    setDeleting(id);
    try {
      await api.deleteModule(id);
      modules.refresh();
    } catch (e) {
      report(e);
    } finally {
      setDeleting(null);
    }
  };

  return (
    <div class="stack">
      <Upload onUploaded={modules.refresh} />
      <section class="card">
        <div class="card-head">
          <h1>Modules</h1>
          {list && <span class="muted">{list.length} uploaded</span>}
        </div>
        {!list && <Loading what="modules" />}
        {list && list.length === 0 && (
          <Empty testid="modules-empty">
            No module yet. Upload a Wasm component of the <code>weir:operator</code> world above; jobs then name it by its name or id.
          </Empty>
        )}
        {list && list.length > 0 && (
          <div class="table-wrap" tabIndex={0}>
            <table class="table" data-testid="modules-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Id (SHA-256)</th>
                  <th class="num">Size</th>
                  <th>Uploaded</th>
                  <th>Exports</th>
                  <th />
                </tr>
              </thead>
              <tbody>
                {list.map((m) => (
                  <tr key={m.id} data-testid="module-row" data-module-id={m.id} data-module-name={m.name}>
                    <td>
                      <strong>{m.name}</strong>
                    </td>
                    <td>
                      <code title={m.id}>{m.id.slice(0, 16)}…</code>
                    </td>
                    <td class="num">{formatBytes(m.size)}</td>
                    <td>{formatTime(m.created_ms)}</td>
                    <td>{m.exports.join(', ')}</td>
                    <td>
                      <button type="button" class="btn small ghost" disabled={deleting !== null} onClick={() => remove(m.id, m.name)}>
                        {deleting === m.id ? 'Deleting…' : 'Delete'}
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </div>
  );
}

function Upload({ onUploaded }: { onUploaded: () => void }) {
  const [name, setName] = useState('');
  const upload = useUpload({
    missing: 'Choose a .wasm file first.',
    busy: (file) => `Uploading ${file.name}… the server validates and compiles it, which takes a moment.`,
    send: (file, onProgress) => api.uploadModule(file, name, onProgress),
    done: ({ module: m, created }) =>
      !created
        ? `Already uploaded: these bytes are module ${m.name} (${m.id.slice(0, 12)}).`
        : `Uploaded ${m.name} (${formatBytes(m.size)}, id ${m.id.slice(0, 12)}).`,
    failed: (err) =>
      `Refused: ${err instanceof ApiError && err.apiMessage && err.status < 500 ? err.apiMessage : errorToMessage(err).text}`,
    onDone: onUploaded,
  });
  const { input, file, busy, progress, status } = upload;
  const submit = (e: Event) => upload.submit(e, () => setName(''));

  return (
    <form class="card" onSubmit={submit}>
      <div class="card-head">
        <h2>Upload a module</h2>
      </div>
      <div class="form-grid">
        <label class="field">
          <span>Component (.wasm)</span>
          <input
            ref={input}
            type="file"
            accept=".wasm,application/wasm"
            data-testid="module-upload-input"
            onChange={upload.choose}
          />
        </label>
        <label class="field">
          <span>Name (optional: the file name without .wasm)</span>
          <input
            type="text"
            data-testid="module-upload-name"
            placeholder={file ? file.name.replace(/\.wasm$/, '') : 'e.g. tokenizer'}
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
          />
        </label>
      </div>
      <div class="row">
        <button type="submit" class="btn primary" data-testid="module-upload-submit" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload'}
        </button>
      </div>
      <UploadFeedback progress={progress} status={status} testid="module-upload-status" />
    </form>
  );
}
