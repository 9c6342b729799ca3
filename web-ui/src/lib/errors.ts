// Errors of API calls and what to tell people about them. Pure: no DOM, no fetch.

/** A failed API call. `status` 0 means the server could not be reached at all. */
export class ApiError extends Error {
  readonly status: number;
  /** The API's own `error` text, verbatim, when it sent one. */
  readonly apiMessage: string | null;
  readonly method: string;
  readonly path: string;

  constructor(status: number, apiMessage: string | null, method: string, path: string, detail?: string) {
    super(apiMessage ?? detail ?? `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.apiMessage = apiMessage;
    this.method = method;
    this.path = path;
  }
}

/** Reads the `error` text out of an error response body (JSON `{"error": ...}` or text). */
export function apiErrorText(body: string): string | null {
  const text = body.trim();
  if (!text) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && 'error' in parsed) {
      const e = (parsed as { error: unknown }).error;
      if (typeof e === 'string' && e) return e;
    }
  } catch {
    // Not JSON: a proxy's or the browser's page. Keep it short.
  }
  if (text.startsWith('<')) return null;
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

export interface UserMessage {
  /** What to show. */
  text: string;
  /** The token is no longer accepted: go back to sign-in. */
  signOut: boolean;
  /** Worth retrying as is (the page polls again on its own). */
  transient: boolean;
}

/**
 * What to tell a person about a failed call: what happened, with the API's own words, and
 * what to do. 409 messages are the API's text verbatim: they already say what to do.
 */
export function errorToMessage(err: unknown): UserMessage {
  if (!(err instanceof ApiError)) {
    const text = err instanceof Error ? err.message : String(err);
    return { text: `Something went wrong in the page: ${text}. Reload the page.`, signOut: false, transient: false };
  }
  const api = err.apiMessage;
  switch (true) {
    case err.status === 0:
      return {
        text:
          'Cannot reach the Weir server: the network is down or the server stopped. ' +
          'Check that `weir serve` is running; this page retries on its own.',
        signOut: false,
        transient: true,
      };
    case err.status === 401:
      return {
        text: `Your token is no longer accepted (${api ?? 'unauthorized'}). Sign in again with a tenant token.`,
        signOut: true,
        transient: false,
      };
    case err.status === 403:
      return {
        text: `Not allowed: ${api ?? 'forbidden'}.`,
        signOut: false,
        transient: false,
      };
    case err.status === 404:
      return {
        text: `Not found: ${api ?? err.path}. It may have been deleted; go back to the list.`,
        signOut: false,
        transient: false,
      };
    case err.status === 409:
      return { text: api ?? 'Conflict: the request does not fit the current state.', signOut: false, transient: false };
    case err.status === 413:
      return { text: `Too large: ${api ?? 'the upload exceeds the limit'}.`, signOut: false, transient: false };
    case err.status === 429:
      return {
        text: `Quota reached: ${api ?? 'too many requests'}. Free something up (stop jobs, dispose of savepoints) or ask for a larger quota.`,
        signOut: false,
        transient: false,
      };
    case (err.status === 502 || err.status === 503 || err.status === 504) && !err.apiMessage:
      // A proxy in front of Weir (Vite's dev server, a reverse proxy) could not reach it.
      return {
        text:
          `Cannot reach the Weir server: the proxy in front of it answered HTTP ${err.status}. ` +
          'Check that `weir serve` is running; this page retries on its own.',
        signOut: false,
        transient: true,
      };
    case err.status >= 500:
      return {
        text: `The server failed (HTTP ${err.status})${api ? `: ${api}` : ''}. Retry; if it persists, look at the server's log.`,
        signOut: false,
        transient: true,
      };
    default:
      // 400, 422 and the like: the API says what was wrong with the request.
      return { text: api ?? `The request was refused (HTTP ${err.status}).`, signOut: false, transient: false };
  }
}

/** The message under the sign-in form when a token was tried. */
export function signInErrorMessage(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401) {
      return (
        `The server did not accept this token (${err.apiMessage ?? 'not valid'}). ` +
        'Paste a tenant token exactly as it was issued: `weir demo` prints one and writes it to client.toml, ' +
        'and an administrator issues others with `weir tenant token create <tenant>`.'
      );
    }
    if (err.status === 403 && err.apiMessage?.includes(' is disabled')) {
      // The tenant's token is valid, but the admin disabled the tenant.
      return `${err.apiMessage}.`;
    }
    if (err.status === 403) {
      return (
        `This token cannot be used here (${err.apiMessage ?? 'forbidden'}). ` +
        'Sign in with a tenant token, not the admin token.'
      );
    }
  }
  return errorToMessage(err).text;
}
