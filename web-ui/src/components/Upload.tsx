import { useRef, useState } from 'preact/hooks';

/** What an upload form shows under its button. */
export interface UploadStatus {
  tone: 'ok' | 'error' | 'busy';
  text: string;
}

/** How one upload form sends its file and words the outcome. */
export interface UploadOptions<T> {
  /** The message when no file was chosen. */
  missing: string;
  /** The message while the file is sent. */
  busy: (file: File) => string;
  /** Sends the file, reporting progress. */
  send: (file: File, onProgress: (loaded: number, total: number) => void) => Promise<T>;
  /** The message once it is done. */
  done: (result: T, file: File) => string;
  /** The message when it failed. */
  failed: (err: unknown) => string;
  /** Called after a success (the form is reset first). */
  onDone: () => void;
}

/** The state and submit handler of a form that uploads one file with progress. */
export function useUpload<T>(options: UploadOptions<T>) {
  const input = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [busy, setBusy] = useState(false);
  const [progress, setProgress] = useState<number | null>(null);
  const [status, setStatus] = useState<UploadStatus | null>(null);

  const submit = async (e: Event, reset?: () => void) => {
    e.preventDefault();
    if (!file) {
      setStatus({ tone: 'error', text: options.missing });
      return;
    }
    setBusy(true);
    setProgress(0);
    setStatus({ tone: 'busy', text: options.busy(file) });
    try {
      const result = await options.send(file, (loaded, total) => setProgress(total ? loaded / total : null));
      setStatus({ tone: 'ok', text: options.done(result, file) });
      setFile(null);
      if (input.current) input.current.value = '';
      reset?.();
      options.onDone();
    } catch (err) {
      setStatus({ tone: 'error', text: options.failed(err) });
    } finally {
      setBusy(false);
      setProgress(null);
    }
  };

  const choose = (e: Event) => setFile((e.target as HTMLInputElement).files?.[0] ?? null);
  return { input, file, busy, progress, status, submit, choose };
}

/** The progress bar and the status line of an upload form. */
export function UploadFeedback({ progress, status, testid }: { progress: number | null; status: UploadStatus | null; testid: string }) {
  return (
    <>
      {progress !== null && (
        <div class="progress tone-busy">
          <div class="progress-track">
            <div
              class={`progress-fill${progress >= 1 ? ' indeterminate' : ''}`}
              style={progress >= 1 ? undefined : { width: `${Math.round(progress * 100)}%` }}
            />
          </div>
        </div>
      )}
      {status && (
        <div class={`status-line tone-${status.tone}`} data-testid={testid} data-state={status.tone} role="status">
          {status.text}
        </div>
      )}
    </>
  );
}
