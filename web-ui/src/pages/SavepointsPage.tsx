import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { SavepointsTable } from '../components/Savepoints';
import { Loading } from '../components/Status';
import { UploadFeedback, useUpload } from '../components/Upload';
import { usePoll } from '../hooks';
import { errorToMessage } from '../lib/errors';
import { formatBytes, shortId } from '../lib/format';
import { anyPending } from '../lib/savepoints';

/** Every savepoint of the tenant: export, dispose, start a job from one; import a file. */
export function SavepointsPage() {
  const [fast, setFast] = useState(false);
  const savepoints = usePoll(
    'savepoints',
    async (signal) => {
      const list = await api.savepoints(signal);
      setFast(anyPending(list));
      return list;
    },
    fast ? 1000 : 3000,
    [],
  );
  return (
    <div class="stack">
      <section class="card">
        <div class="card-head">
          <h1>Savepoints</h1>
          {savepoints.data && <span class="muted">{savepoints.data.length} in all</span>}
        </div>
        <p class="muted">
          Savepoints are taken from a job’s page (choose a mode there). Start a new job from one here, export it as a portable file, or
          dispose of it.
        </p>
        {savepoints.data ? (
          <SavepointsTable savepoints={savepoints.data} showJob onChange={savepoints.refresh} />
        ) : (
          <Loading what="savepoints" />
        )}
      </section>
      <ImportSavepoint onImported={savepoints.refresh} />
    </div>
  );
}

function ImportSavepoint({ onImported }: { onImported: () => void }) {
  const { input, file, busy, progress, status, submit, choose } = useUpload({
    missing: 'Choose a savepoint file (.weirsp) first.',
    busy: (file) => `Uploading ${file.name}…`,
    send: (file, onProgress) => api.importSavepoint(file, onProgress),
    done: (sp, file) =>
      `Imported ${file.name} as savepoint ${shortId(sp.id)} of ${sp.job_name}: ${formatBytes(sp.bytes)}, ${sp.entries} entries.`,
    failed: (err) => errorToMessage(err).text,
    onDone: onImported,
  });

  return (
    <form class="card" onSubmit={submit}>
      <div class="card-head">
        <h2>Import a savepoint</h2>
      </div>
      <p class="muted">A file exported by any Weir server. The whole file is checked before anything is stored.</p>
      <div class="row wrap">
        <input
          ref={input}
          type="file"
          accept=".weirsp,application/octet-stream"
          aria-label="Savepoint file to import"
          data-testid="savepoint-import-input"
          onChange={choose}
        />
        <button type="submit" class="btn primary" data-testid="savepoint-import-submit" disabled={busy || !file}>
          {busy ? 'Importing…' : 'Import'}
        </button>
      </div>
      <UploadFeedback progress={progress} status={status} testid="savepoint-import-status" />
    </form>
  );
}
