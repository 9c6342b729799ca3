import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { ApiError, errorToMessage } from '../lib/errors';
import { formatBytes } from '../lib/format';
import { UploadFeedback, useUpload } from './Upload';

/**
 * Uploads a module without leaving the page: a .wasm file and an optional name; the server's
 * refusal (a component of another world: 422) is shown as it said it.
 */
export function ModuleUpload({ onUploaded }: { onUploaded: () => void }) {
  const [name, setName] = useState('');
  const upload = useUpload({
    missing: 'Choose a .wasm file first.',
    busy: (file) => `Uploading ${file.name}… the server checks its world and compiles it.`,
    send: (file, onProgress) => api.uploadModule(file, name, onProgress),
    done: ({ module: m, created }) =>
      created
        ? `Uploaded ${m.name} (${formatBytes(m.size)}): choose it as an operator's module above.`
        : `Already uploaded: these bytes are module ${m.name} (${m.id.slice(0, 12)}).`,
    failed: (err) =>
      `Refused: ${err instanceof ApiError && err.apiMessage && err.status < 500 ? err.apiMessage : errorToMessage(err).text}`,
    onDone: onUploaded,
  });
  const { input, file, busy, progress, status } = upload;
  return (
    <form class="module-upload" onSubmit={(e) => upload.submit(e, () => setName(''))}>
      <div class="toolbar wrap">
        <input
          ref={input}
          type="file"
          accept=".wasm,application/wasm"
          data-testid="newjob-module-input"
          aria-label="Wasm component to upload"
          onChange={upload.choose}
        />
        <input
          type="text"
          data-testid="newjob-module-name"
          aria-label="Module name (optional)"
          placeholder={file ? file.name.replace(/\.wasm$/, '') : 'name (optional)'}
          value={name}
          onInput={(e) => setName(e.currentTarget.value)}
        />
        <button type="submit" class="btn small" data-testid="newjob-module-submit" disabled={busy}>
          {busy ? 'Uploading…' : 'Upload'}
        </button>
      </div>
      <UploadFeedback progress={progress} status={status} testid="newjob-module-status" />
    </form>
  );
}
