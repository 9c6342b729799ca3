import { useEffect, useState } from 'preact/hooks';
import { api } from '../api/client';
import type { Answer } from '../api/types';
import { QuotaTable } from '../components/QuotaTable';
import { Empty, Loading } from '../components/Status';
import { TokensEditor } from '../components/Tokens';
import { useErrors } from '../errors-context';
import { usePoll } from '../hooks';
import { formatTime } from '../lib/format';
import { links } from '../lib/router';
import { QUOTA_FIELDS, grantRows, grantsOf, parseQuotas, quotaText, type GrantRow } from '../lib/tenants';

type Tenant = Answer<'get_tenant'>;

/** The admin's tenants: create one, and (`tenant`) one's quotas, settings, tokens and Kafka grants. */
export function TenantsPage({ tenant }: { tenant: string | null }) {
  const tenants = usePoll('tenants', (signal) => api.tenants(signal), 5000, []);
  const list = tenants.data ? [...tenants.data].sort((a, b) => a.name.localeCompare(b.name)) : null;
  return (
    <div class="stack">
      <section class="card">
        <div class="card-head wrap">
          <h1>Tenants</h1>
          {list && <span class="muted">{list.length} tenants</span>}
        </div>
        <NewTenant onCreated={tenants.refresh} />
        {!list && <Loading what="tenants" />}
        {list && list.length === 0 && <Empty testid="tenants-empty">No tenant yet. Create one above; its token is shown once.</Empty>}
        {list && list.length > 0 && (
          <div class="table-wrap" tabIndex={0}>
            <table class="table" data-testid="tenants-table">
              <thead>
                <tr>
                  <th>Name</th>
                  <th>Id</th>
                  <th>Created</th>
                  <th>Status</th>
                  <th>Kafka</th>
                </tr>
              </thead>
              <tbody>
                {list.map((t) => (
                  <tr key={t.id} data-testid="tenant-row" data-tenant={t.name} class={t.id === tenant ? 'selected' : undefined}>
                    <td>
                      <a href={links.tenants(t.id)}>
                        <strong>{t.name}</strong>
                      </a>
                    </td>
                    <td>
                      <code>{t.id}</code>
                    </td>
                    <td>{formatTime(t.created_ms)}</td>
                    <td>{t.disabled_ms != null ? <span class="badge tone-warn">disabled</span> : 'enabled'}</td>
                    <td>{t.kafka.map((g) => g.connection).join(', ') || '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
      {tenant && <TenantDetail key={tenant} id={tenant} onChanged={tenants.refresh} />}
      <KafkaConnections />
    </div>
  );
}

/** The server's Kafka connections (its configuration; no secret is shown) and who may use each. */
function KafkaConnections() {
  const connections = usePoll('server-kafka', (signal) => api.serverKafkaConnections(signal), 10_000, []);
  const list = connections.data;
  return (
    <section class="card" data-testid="server-kafka">
      <div class="card-head wrap">
        <h2>Kafka connections</h2>
        <span class="muted">the server's <code>kafka_connections</code>; grant them to tenants above</span>
      </div>
      {!list && <Loading what="Kafka connections" />}
      {list && list.length === 0 && <Empty testid="server-kafka-none">The server has no Kafka connection configured.</Empty>}
      {list && list.length > 0 && (
        <div class="table-wrap" tabIndex={0}>
          <table class="table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Brokers</th>
                <th>Security</th>
                <th>Granted to</th>
              </tr>
            </thead>
            <tbody>
              {list.map((c) => (
                <tr key={c.name} data-testid="server-kafka-row" data-connection={c.name}>
                  <td>
                    <strong>{c.name}</strong>
                  </td>
                  <td>
                    <code>{c.bootstrap_servers.join(', ')}</code>
                  </td>
                  <td>
                    {c.security_protocol}
                    {c.sasl_mechanism ? ` · ${c.sasl_mechanism} as ${c.sasl_username ?? '?'}` : ''}
                    {c.tls_files ? ' · TLS files set' : ''}
                  </td>
                  <td data-testid="server-kafka-granted">{c.granted_to.join(', ') || '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** Creates a tenant, with quotas when given; shows its token once. */
function NewTenant({ onCreated }: { onCreated: () => void }) {
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ id: string; name: string; token: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const { report } = useErrors();
  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const t = await api.createTenant(name.trim(), null);
      setCreated({ id: t.tenant.id, name: t.tenant.name, token: t.token });
      setName('');
      onCreated();
    } catch (err) {
      report(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <form class="toolbar wrap" onSubmit={create}>
        <label>
          Name <input type="text" data-testid="tenant-name" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="acme" required />
        </label>
        <button type="submit" class="btn small" data-testid="tenant-create" disabled={busy || !name.trim()}>
          {busy ? 'Creating…' : 'Create tenant'}
        </button>
      </form>
      {created && (
        <p class="notice" data-testid="tenant-created" role="status">
          Tenant <a href={links.tenants(created.id)}>{created.name}</a> created. Its token, shown only now:{' '}
          <code data-testid="tenant-token">{created.token}</code>
        </p>
      )}
    </>
  );
}

/** One tenant: quotas, whether it manages its own tokens, disable/enable, tokens, Kafka grants. */
function TenantDetail({ id, onChanged }: { id: string; onChanged: () => void }) {
  const [tenant, setTenant] = useState<Tenant | null>(null);
  const { report } = useErrors();
  useEffect(() => {
    api.adminTenant(id).then(setTenant, (e) => report(e));
  }, [id]);
  if (!tenant) return <Loading what="the tenant" />;
  /** Reads the tenant again (an action answers the tenant without its usage). */
  const changed = async () => {
    setTenant(await api.adminTenant(id));
    onChanged();
  };
  const act = async (what: () => Promise<unknown>) => {
    try {
      await what();
      await changed();
    } catch (e) {
      report(e);
    }
  };
  return (
    <section class="card" data-testid="tenant-detail">
      <div class="card-head wrap">
        <h2>{tenant.name}</h2>
        <span class="muted">
          <code>{tenant.id}</code> · {tenant.disabled_ms != null ? `disabled ${formatTime(tenant.disabled_ms)}` : 'enabled'}
        </span>
        <div class="toolbar">
          {tenant.disabled_ms == null ? (
            <button
              type="button"
              class="btn small danger"
              data-testid="tenant-disable"
              onClick={() => window.confirm(`Disable ${tenant.name}? Its jobs stop (their state is kept) and its tokens are refused.`) && act(() => api.disableTenant(id))}
            >
              Disable
            </button>
          ) : (
            <button type="button" class="btn small" data-testid="tenant-enable" onClick={() => act(() => api.enableTenant(id))}>
              Enable
            </button>
          )}
        </div>
      </div>
      <QuotaTable tenant={tenant} />
      <QuotaForm key={`quotas-${tenant.id}`} tenant={tenant} onSaved={changed} />
      <label class="field inline">
        <input
          type="checkbox"
          data-testid="tenant-manage-tokens"
          checked={tenant.manage_own_tokens ?? false}
          onChange={(e) => act(() => api.setTenantSettings(id, e.currentTarget.checked))}
        />
        The tenant may issue and revoke its own tokens
      </label>
      <GrantsForm tenant={tenant} onSaved={changed} />
      <TenantTokens id={id} />
    </section>
  );
}

function QuotaForm({ tenant, onSaved }: { tenant: Tenant; onSaved: () => Promise<void> }) {
  const [text, setText] = useState(() => quotaText(tenant.quotas));
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  const { report } = useErrors();
  const save = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    let quotas;
    try {
      quotas = parseQuotas(text);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
      return;
    }
    setError(null);
    try {
      await api.setQuotas(tenant.id, quotas);
      await onSaved();
      setSaved(true);
    } catch (err) {
      report(err);
    }
  };
  return (
    <form onSubmit={save} data-testid="quota-form">
      <h3>Quotas</h3>
      <div class="form-grid">
        {QUOTA_FIELDS.map((f) => (
          <label key={f.key} class="field">
            {f.label}
            <input
              type="text"
              data-testid={`quota-${f.key}`}
              value={text[f.key] ?? ''}
              onInput={(e) => setText({ ...text, [f.key]: e.currentTarget.value })}
            />
          </label>
        ))}
      </div>
      <div class="toolbar">
        <button type="submit" class="btn small" data-testid="quota-save">
          Save quotas
        </button>
        {error && <span class="error-text">{error}</span>}
        {saved && (
          <span class="muted" role="status" data-testid="quota-saved">
            Saved.
          </span>
        )}
      </div>
    </form>
  );
}

function GrantsForm({ tenant, onSaved }: { tenant: Tenant; onSaved: () => Promise<void> }) {
  const [rows, setRows] = useState<GrantRow[]>(() => grantRows(tenant.kafka));
  const [saved, setSaved] = useState(false);
  const { report } = useErrors();
  const edit = (i: number, field: keyof GrantRow, value: string) => setRows(rows.map((r, k) => (k === i ? { ...r, [field]: value } : r)));
  const save = async (e: Event) => {
    e.preventDefault();
    setSaved(false);
    try {
      await api.setKafkaGrants(tenant.id, grantsOf(rows));
      await onSaved();
      setSaved(true);
    } catch (err) {
      report(err);
    }
  };
  return (
    <form onSubmit={save} data-testid="grants-form">
      <h3>Kafka grants</h3>
      <p class="muted">Per connection of the server: the topic and group prefixes the tenant's jobs may use (comma-separated).</p>
      {rows.map((r, i) => (
        <div class="toolbar wrap" key={i} data-testid="grant-row">
          <input type="text" data-testid="grant-connection" placeholder="connection" value={r.connection} onInput={(e) => edit(i, 'connection', e.currentTarget.value)} />
          <input type="text" data-testid="grant-topics" placeholder="topic prefixes" value={r.topics} onInput={(e) => edit(i, 'topics', e.currentTarget.value)} />
          <input type="text" data-testid="grant-groups" placeholder="group prefixes" value={r.groups} onInput={(e) => edit(i, 'groups', e.currentTarget.value)} />
          <button type="button" class="btn small ghost" onClick={() => setRows(rows.filter((_, k) => k !== i))}>
            Remove
          </button>
        </div>
      ))}
      <div class="toolbar">
        <button type="button" class="btn small ghost" data-testid="grant-add" onClick={() => setRows([...rows, { connection: '', topics: '', groups: '' }])}>
          Add a grant
        </button>
        <button type="submit" class="btn small" data-testid="grants-save">
          Save grants
        </button>
        {saved && (
          <span class="muted" role="status" data-testid="grants-saved">
            Saved.
          </span>
        )}
      </div>
    </form>
  );
}

function TenantTokens({ id }: { id: string }) {
  return (
    <div data-testid="tenant-tokens">
      <h3>Tokens</h3>
      <TokensEditor
        pollKey={`tenant-tokens:${id}`}
        load={(signal) => api.tenantTokens(id, signal)}
        issue={(label) => api.issueTenantToken(id, label)}
        revoke={(token) => api.revokeTenantToken(id, token)}
        testid="tenant-token"
      />
    </div>
  );
}
