import { useState } from 'preact/hooks';
import { api } from '../api/client';
import { QuotaTable } from '../components/QuotaTable';
import { Empty, Loading } from '../components/Status';
import { useErrors } from '../errors-context';
import { usePoll } from '../hooks';
import { formatTime } from '../lib/format';

/** The signed-in tenant's own page: its use of every quota, its Kafka grants and its tokens. */
export function AccountPage() {
  const me = usePoll('me', (signal) => api.me(signal), 5000, []);
  const t = me.data;
  if (!t) return <Loading what="your tenant" />;
  return (
    <div class="stack">
      <section class="card" data-testid="account-quotas">
        <div class="card-head wrap">
          <h1>{t.name}</h1>
          <span class="muted">
            tenant <code>{t.id}</code> · since {formatTime(t.created_ms)}
            {t.disabled_ms != null && ' · disabled by the admin'}
          </span>
        </div>
        <h2>Quotas</h2>
        <QuotaTable tenant={t} />
      </section>
      <section class="card" data-testid="account-kafka">
        <div class="card-head">
          <h2>Kafka</h2>
          <span class="muted">the connections your jobs may use, as the admin granted them</span>
        </div>
        {t.kafka.length === 0 ? (
          <Empty testid="kafka-none">No Kafka grant: your jobs cannot read or write Kafka. Ask the admin for one.</Empty>
        ) : (
          <div class="table-wrap">
            <table class="table" data-testid="kafka-grants">
              <thead>
                <tr>
                  <th>Connection</th>
                  <th>Topics starting with</th>
                  <th>Groups and transactional ids starting with</th>
                </tr>
              </thead>
              <tbody>
                {t.kafka.map((g) => (
                  <tr key={g.connection} data-testid="kafka-grant">
                    <td>
                      <strong>{g.connection}</strong>
                    </td>
                    <td>{prefixes(g.topic_prefixes)}</td>
                    <td>{prefixes(g.group_prefixes)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      <Tokens manage={t.manage_own_tokens ?? false} />
    </div>
  );
}

function prefixes(list: string[] | undefined) {
  if (!list || list.length === 0) return <span class="muted">none</span>;
  return list.map((p, i) => (
    <span key={p}>
      {i > 0 && ', '}
      <code>{p === '' ? '(any)' : p}</code>
    </span>
  ));
}

/** The tenant's tokens; issue and revoke them when the admin allows it. */
function Tokens({ manage }: { manage: boolean }) {
  const tokens = usePoll('own-tokens', (signal) => api.ownTokens(signal), 10_000, []);
  const [label, setLabel] = useState('');
  const [issued, setIssued] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const { report } = useErrors();

  const issue = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const t = await api.issueOwnToken(label);
      setIssued(t.token);
      setLabel('');
      tokens.refresh();
    } catch (err) {
      report(err);
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (id: string) => {
    if (!window.confirm(`Revoke token ${id}? Clients using it are refused from their next request on (this page too, if it is this one).`)) return;
    try {
      await api.revokeOwnToken(id);
      tokens.refresh();
    } catch (err) {
      report(err);
    }
  };

  return (
    <section class="card" data-testid="account-tokens">
      <div class="card-head wrap">
        <h2>Tokens</h2>
        <span class="muted">{manage ? 'you may issue and revoke your tokens' : 'the admin issues and revokes your tokens'}</span>
      </div>
      {manage && (
        <form class="toolbar wrap" onSubmit={issue}>
          <label>
            Label <input type="text" data-testid="token-label" value={label} onInput={(e) => setLabel(e.currentTarget.value)} placeholder="ci" />
          </label>
          <button type="submit" class="btn small" data-testid="token-issue" disabled={busy}>
            {busy ? 'Issuing…' : 'Issue a token'}
          </button>
        </form>
      )}
      {issued && (
        <p class="notice" data-testid="token-issued" role="status">
          The new token, shown only now: <code>{issued}</code>
        </p>
      )}
      {!tokens.data && <Loading what="tokens" />}
      {tokens.data && (
        <div class="table-wrap">
          <table class="table" data-testid="tokens-table">
            <thead>
              <tr>
                <th>Id</th>
                <th>Label</th>
                <th>Issued</th>
                {manage && <th />}
              </tr>
            </thead>
            <tbody>
              {tokens.data.map((t) => (
                <tr key={t.id} data-testid="token-row" data-token-id={t.id}>
                  <td>
                    <code>{t.id}</code>
                  </td>
                  <td>{t.label ?? ''}</td>
                  <td>{formatTime(t.created_ms)}</td>
                  {manage && (
                    <td>
                      <button type="button" class="btn small ghost" data-testid="token-revoke" onClick={() => revoke(t.id)}>
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
    </section>
  );
}
