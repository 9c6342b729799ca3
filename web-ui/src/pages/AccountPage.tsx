import { api } from '../api/client';
import { QuotaTable } from '../components/QuotaTable';
import { Empty, Loading } from '../components/Status';
import { TokensEditor } from '../components/Tokens';
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
          <div class="table-wrap" tabIndex={0}>
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
  return (
    <section class="card" data-testid="account-tokens">
      <div class="card-head wrap">
        <h2>Tokens</h2>
        <span class="muted">{manage ? 'you may issue and revoke your tokens' : 'the admin issues and revokes your tokens'}</span>
      </div>
      <TokensEditor
        pollKey="own-tokens"
        load={(signal) => api.ownTokens(signal)}
        issue={manage ? (label) => api.issueOwnToken(label) : null}
        revoke={manage ? (id) => api.revokeOwnToken(id) : null}
        testid="token"
      />
    </section>
  );
}
