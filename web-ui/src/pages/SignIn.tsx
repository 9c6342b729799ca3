import { useState } from 'preact/hooks';
import { type Identity, whoIs } from '../auth';
import { signInErrorMessage } from '../lib/errors';

/** Sign in with a tenant token (checked against `GET /api/v1/tenant`) or the admin token. */
export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: (token: string, who: Identity) => void }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) {
      setError('Paste a tenant token first: `weir demo` prints one, and client.toml holds it.');
      return;
    }
    setBusy(true);
    setError(null);
    try {
      onSignedIn(t, await whoIs(t));
    } catch (err) {
      setError(signInErrorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const message = error ?? notice;
  return (
    <div class="signin-page">
      <form class="card signin" onSubmit={submit}>
        <h1>
          <svg viewBox="0 0 16 16" width="22" height="22" aria-hidden="true">
            <path d="M1 11c3-5 5 3 7-1s4-6 7-2" fill="none" stroke="currentColor" stroke-width="2" />
          </svg>
          Weir
        </h1>
        <p class="muted">
          Sign in with your tenant’s token to see its jobs, checkpoints, savepoints and modules (or with the admin token to see
          the workers).
        </p>
        <label class="field">
          <span>Tenant token</span>
          <input
            type="password"
            data-testid="token-input"
            autocomplete="current-password"
            placeholder="weir_…"
            value={token}
            onInput={(e) => setToken((e.target as HTMLInputElement).value)}
            autoFocus
          />
        </label>
        {message && (
          <div class="form-error" role="alert" data-testid="sign-in-error">
            {message}
          </div>
        )}
        <button type="submit" class="btn primary wide" data-testid="sign-in" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        <p class="muted small">The token stays in this browser (local storage) until you sign out.</p>
      </form>
    </div>
  );
}
