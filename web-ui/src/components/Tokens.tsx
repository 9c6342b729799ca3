import { useState } from 'preact/hooks';
import type { TokenInfo } from '../api/types';
import { useErrors } from '../errors-context';
import { usePoll } from '../hooks';
import { formatTime } from '../lib/format';
import { Loading } from './Status';

/**
 * A tenant's tokens: the list (ids, labels, times — never the tokens), and when `issue` and
 * `revoke` are given, a form that issues one (shown once) and a Revoke button per token.
 * `testid` prefixes the test ids (`<testid>-row`, `-label`, `-issue`, `-issued`, `-revoke`).
 */
export function TokensEditor({
  pollKey,
  load,
  issue,
  revoke,
  testid,
}: {
  pollKey: string;
  load: (signal: AbortSignal) => Promise<TokenInfo[]>;
  issue: ((label: string) => Promise<{ token: string }>) | null;
  revoke: ((id: string) => Promise<unknown>) | null;
  testid: string;
}) {
  const tokens = usePoll(pollKey, load, 10_000, [pollKey]);
  const [label, setLabel] = useState('');
  const [issued, setIssued] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const { report } = useErrors();

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!issue) return;
    setBusy(true);
    try {
      setIssued((await issue(label)).token);
      setLabel('');
      tokens.refresh();
    } catch (err) {
      report(err);
    } finally {
      setBusy(false);
    }
  };
  const remove = async (id: string) => {
    if (!revoke) return;
    if (!window.confirm(`Revoke token ${id}? Its clients are refused from their next request on (this page too, if it is this one).`)) return;
    try {
      await revoke(id);
      tokens.refresh();
    } catch (err) {
      report(err);
    }
  };

  return (
    <>
      {issue && (
        <form class="toolbar wrap" onSubmit={submit}>
          <label>
            Label <input type="text" data-testid={`${testid}-label`} value={label} onInput={(e) => setLabel(e.currentTarget.value)} placeholder="ci" />
          </label>
          <button type="submit" class="btn small" data-testid={`${testid}-issue`} disabled={busy}>
            {busy ? 'Issuing…' : 'Issue a token'}
          </button>
        </form>
      )}
      {issued && (
        <p class="notice" data-testid={`${testid}-issued`} role="status">
          The new token, shown only now: <code>{issued}</code>
        </p>
      )}
      {!tokens.data && <Loading what="tokens" />}
      {tokens.data && (
        <div class="table-wrap" tabIndex={0}>
          <table class="table" data-testid={`${testid}s-table`}>
            <thead>
              <tr>
                <th>Id</th>
                <th>Label</th>
                <th>Issued</th>
                {revoke && <th />}
              </tr>
            </thead>
            <tbody>
              {tokens.data.map((t) => (
                <tr key={t.id} data-testid={`${testid}-row`} data-token-id={t.id}>
                  <td>
                    <code>{t.id}</code>
                  </td>
                  <td>{t.label ?? ''}</td>
                  <td>{formatTime(t.created_ms)}</td>
                  {revoke && (
                    <td>
                      <button type="button" class="btn small ghost" data-testid={`${testid}-revoke`} onClick={() => remove(t.id)}>
                        Revoke
                      </button>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
