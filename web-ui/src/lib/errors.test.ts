import { describe, expect, it } from 'vitest';
import { ApiError, apiErrorText, errorToMessage, signInErrorMessage } from './errors';

const err = (status: number, msg: string | null = null) => new ApiError(status, msg, 'GET', '/jobs/x');

describe('apiErrorText', () => {
  it("reads the API's error field", () => {
    expect(apiErrorText('{"error":"the token is not valid"}')).toBe('the token is not valid');
  });
  it('keeps short plain text and drops HTML pages', () => {
    expect(apiErrorText('Bad Gateway')).toBe('Bad Gateway');
    expect(apiErrorText('<html><body>502</body></html>')).toBeNull();
    expect(apiErrorText('')).toBeNull();
    expect(apiErrorText('{"message":"x"}')).toBe('{"message":"x"}');
    expect(apiErrorText('x'.repeat(400))).toHaveLength(301);
  });
});

describe('errorToMessage', () => {
  it('says the server cannot be reached when the network is down', () => {
    const m = errorToMessage(err(0));
    expect(m.text).toMatch(/^Cannot reach the Weir server/);
    expect(m.transient).toBe(true);
    expect(m.signOut).toBe(false);
  });
  it('says the server cannot be reached when a proxy answers 502/503/504 without an API error', () => {
    for (const status of [502, 503, 504]) {
      const m = errorToMessage(err(status));
      expect(m.text).toBe(
        `Cannot reach the Weir server: the proxy in front of it answered HTTP ${status}. Check that \`weir serve\` is running; this page retries on its own.`,
      );
      expect(m.transient).toBe(true);
    }
  });
  it('signs out on 401', () => {
    const m = errorToMessage(err(401, 'the token is not valid'));
    expect(m.signOut).toBe(true);
    expect(m.text).toBe('Your token is no longer accepted (the token is not valid). Sign in again with a tenant token.');
  });
  it('shows 409 messages verbatim', () => {
    const text = 'job 68db is not running: it is stopped';
    expect(errorToMessage(err(409, text)).text).toBe(text);
  });
  it('shows 400 and 422 messages verbatim', () => {
    expect(errorToMessage(err(400, 'node `count` has no module')).text).toBe('node `count` has no module');
    expect(errorToMessage(err(422, 'migration failed')).text).toBe('migration failed');
  });
  it('says what was not found on 404', () => {
    expect(errorToMessage(err(404, 'no job abc')).text).toBe('Not found: no job abc. It may have been deleted; go back to the list.');
    expect(errorToMessage(err(404)).text).toContain('/jobs/x');
  });
  it('explains quotas and server failures', () => {
    expect(errorToMessage(err(429, 'max_jobs is 16')).text).toMatch(/^Quota reached: max_jobs is 16\./);
    const m = errorToMessage(err(500, 'store is read-only'));
    expect(m.text).toBe("The server failed (HTTP 500): store is read-only. Retry; if it persists, look at the server's log.");
    expect(m.transient).toBe(true);
    expect(errorToMessage(err(503, 'shutting down')).text).toMatch(/^The server failed \(HTTP 503\): shutting down/);
  });
  it('handles errors that are not API errors', () => {
    expect(errorToMessage(new Error('boom')).text).toBe('Something went wrong in the page: boom. Reload the page.');
    expect(errorToMessage('odd').text).toContain('odd');
  });
});

describe('signInErrorMessage', () => {
  it('says the token was not accepted and what to do', () => {
    const m = signInErrorMessage(err(401, 'the token is not valid'));
    expect(m).toMatch(/^The server did not accept this token \(the token is not valid\)\./);
    expect(m).toContain('weir demo');
  });
  it('tells an admin token apart', () => {
    expect(signInErrorMessage(err(403, 'the admin token manages tenants'))).toMatch(/not the admin token/);
  });
  it('says when the tenant is disabled', () => {
    const m = signInErrorMessage(err(403, 'tenant `acme` is disabled: ask the admin'));
    expect(m).toBe('tenant `acme` is disabled: ask the admin.');
  });
  it('says when the server is unreachable', () => {
    expect(signInErrorMessage(err(0))).toMatch(/^Cannot reach the Weir server/);
  });
});
