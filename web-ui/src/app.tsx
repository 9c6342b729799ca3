import { lazy, Suspense } from 'preact/compat';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { onUnauthorized, setToken } from './api/client';
import { forgetToken, type Identity, loadToken, saveToken, whoIs } from './auth';
import { ErrorBanner } from './components/ErrorBanner';
import { Loading } from './components/Status';
import { useErrors } from './errors-context';
import { useRoute } from './hooks';
import { errorToMessage } from './lib/errors';
import { links, navSection } from './lib/router';
import { JobsPage } from './pages/JobsPage';
import { SignIn } from './pages/SignIn';

// Every page but the first a tenant sees is its own chunk, loaded when it is opened.
const AccountPage = lazy(() => import('./pages/AccountPage').then((m) => ({ default: m.AccountPage })));
const CheckpointPage = lazy(() => import('./pages/CheckpointPage').then((m) => ({ default: m.CheckpointPage })));
const HealthPage = lazy(() => import('./pages/HealthPage').then((m) => ({ default: m.HealthPage })));
const JobPage = lazy(() => import('./pages/JobPage').then((m) => ({ default: m.JobPage })));
const ModulesPage = lazy(() => import('./pages/ModulesPage').then((m) => ({ default: m.ModulesPage })));
const NewJobPage = lazy(() => import('./pages/NewJobPage').then((m) => ({ default: m.NewJobPage })));
const SavepointsPage = lazy(() => import('./pages/SavepointsPage').then((m) => ({ default: m.SavepointsPage })));
const StatePage = lazy(() => import('./pages/StatePage').then((m) => ({ default: m.StatePage })));
const StreamsPage = lazy(() => import('./pages/StreamsPage').then((m) => ({ default: m.StreamsPage })));
const TenantsPage = lazy(() => import('./pages/TenantsPage').then((m) => ({ default: m.TenantsPage })));
const WorkersPage = lazy(() => import('./pages/WorkersPage').then((m) => ({ default: m.WorkersPage })));

export function App() {
  const [token, setTokenState] = useState<string | null>(() => {
    const t = loadToken();
    setToken(t);
    return t;
  });
  const [who, setWho] = useState<Identity | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const { clearAll, report } = useErrors();

  const signOut = useCallback(
    (message: string | null) => {
      forgetToken();
      setToken(null);
      setTokenState(null);
      setWho(null);
      setNotice(message);
      clearAll();
      // The next token starts at its home: the page open now may be one it cannot see (an
      // admin page for a tenant, a tenant's job for the admin).
      if (window.location.hash) window.history.replaceState(null, '', window.location.pathname + window.location.search);
    },
    [clearAll],
  );

  useEffect(() => {
    onUnauthorized((err) => signOut(errorToMessage(err).text));
    return () => onUnauthorized(null);
  }, [signOut]);

  // A token kept from an earlier visit: who is it? (A 401 signs out through the handler.)
  useEffect(() => {
    if (!token || who) return;
    whoIs().then(setWho, (e) => report(e, 'tenant'));
  }, [token]);

  const signedIn = (t: string, identity: Identity) => {
    saveToken(t);
    setToken(t);
    setTokenState(t);
    setWho(identity);
    setNotice(null);
  };

  if (!token) return <SignIn notice={notice} onSignedIn={signedIn} />;
  return <Shell who={who} onSignOut={() => signOut(null)} />;
}

function Shell({ who, onSignOut }: { who: Identity | null; onSignOut: () => void }) {
  const tenant = who?.kind === 'tenant' ? who.tenant : null;
  const admin = who?.kind === 'admin';
  const route = useRoute();
  // The admin's home is the workers page (a tenant's is the jobs).
  const section = admin && route.name === 'jobs' ? 'workers' : navSection(route);
  const { clearAll } = useErrors();
  // Action errors belong to the page they were made on.
  useEffect(() => clearAll(), [route.name, 'id' in route ? route.id : null]);

  const nav = (id: 'jobs' | 'savepoints' | 'modules' | 'streams' | 'state' | 'workers' | 'tenants' | 'health', label: string, href: string) => (
    <a href={href} data-testid={`nav-${id}`} class={section === id ? 'active' : undefined} aria-current={section === id ? 'page' : undefined}>
      {label}
    </a>
  );

  return (
    <div class="shell">
      <header class="topbar">
        <a class="brand" href={links.jobs()} aria-label="Weir home">
          <svg viewBox="0 0 16 16" width="18" height="18" aria-hidden="true">
            <path d="M1 11c3-5 5 3 7-1s4-6 7-2" fill="none" stroke="currentColor" stroke-width="2" />
          </svg>
          Weir
        </a>
        <nav class="nav">
          {admin ? (
            <>
              {nav('workers', 'Workers', links.workers())}
              {nav('tenants', 'Tenants', links.tenants())}
              {nav('health', 'Server', links.health())}
            </>
          ) : (
            <>
              {nav('jobs', 'Jobs', links.jobs())}
              {nav('savepoints', 'Savepoints', links.savepoints())}
              {nav('modules', 'Modules', links.modules())}
              {nav('streams', 'Streams', links.streams())}
              {nav('state', 'State', links.state(null))}
            </>
          )}
        </nav>
        <div class="who">
          {tenant && (
            <a
              class={`tenant${section === 'account' ? ' active' : ''}`}
              href={links.account()}
              data-testid="nav-account"
              title={`tenant ${tenant.id}: quotas, Kafka grants, tokens`}
              aria-current={section === 'account' ? 'page' : undefined}
            >
              {tenant.name}
            </a>
          )}
          {admin && (
            <span class="tenant" data-testid="signed-in-admin" title="the server's admin token">
              admin
            </span>
          )}
          <button type="button" class="btn small ghost" data-testid="sign-out" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      <ErrorBanner />
      <main class="main">
        <Suspense fallback={<Loading what="the page" />}>{page()}</Suspense>
      </main>
    </div>
  );

  // Called, not rendered as a component: a component defined in here would be a new type
  // on every render, and the page would lose its state.
  function page() {
    // The admin token reaches the workers and the tenants' settings only (tenants' data
    // needs their own tokens).
    if (admin) {
      if (route.name === 'tenants') return <TenantsPage tenant={route.tenant} />;
      if (route.name === 'health') return <HealthPage />;
      return route.name === 'workers' || route.name === 'jobs' ? <WorkersPage /> : notFound();
    }
    if (!who) return <Loading what="who this token is" />;
    switch (route.name) {
      case 'jobs':
        return <JobsPage />;
      case 'newJob':
        return <NewJobPage />;
      case 'job':
        return <JobPage id={route.id} />;
      case 'checkpoint':
        return <CheckpointPage job={route.job} checkpoint={route.checkpoint} />;
      case 'savepoints':
        return <SavepointsPage />;
      case 'modules':
        return <ModulesPage />;
      case 'streams':
        return <StreamsPage stream={route.stream} />;
      case 'account':
        return <AccountPage />;
      case 'state':
        return <StatePage source={route.source} operator={route.operator} stateName={route.stateName} />;
      case 'workers':
        return (
          <section class="card">
            <h1>Workers</h1>
            <p>
              Only the admin token lists the workers. Go to the <a href={links.jobs()}>jobs</a>.
            </p>
          </section>
        );
      default:
        return notFound();
    }
  }

  function notFound() {
    return (
      <section class="card">
        <h1>Page not found</h1>
        <p>
          Nothing lives at <code>{'hash' in route ? route.hash : window.location.hash}</code>. Go to the{' '}
          <a href={admin ? links.workers() : links.jobs()}>{admin ? 'workers' : 'jobs'}</a>.
        </p>
      </section>
    );
  }
}
