// Hash routes (`#/jobs/<id>`…), so the server serves one index.html and knows no routes. Pure.

import type { StateSource } from './state';

export type Route =
  | { name: 'jobs' }
  | { name: 'newJob' }
  | { name: 'job'; id: string; section: string | null }
  | { name: 'checkpoint'; job: string; checkpoint: number }
  | { name: 'savepoints' }
  | { name: 'modules' }
  | { name: 'streams'; stream: string | null }
  | { name: 'account' }
  | { name: 'tenants'; tenant: string | null }
  | { name: 'health' }
  | { name: 'workers' }
  | { name: 'state'; source: StateSource | null; operator: string | null; stateName: string | null }
  | { name: 'notFound'; hash: string };

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const [pathPart, queryPart] = raw.split('?', 2) as [string, string | undefined];
  const query = new URLSearchParams(queryPart ?? '');
  const parts = pathPart.split('/').filter((p) => p.length > 0).map(decode);
  if (parts.length === 0) return { name: 'jobs' };
  const [head, a, b, c, d] = parts;
  switch (head) {
    case 'jobs':
      if (parts.length === 1) return { name: 'jobs' };
      if (parts.length === 2 && a === 'new') return { name: 'newJob' };
      if (parts.length === 2) return { name: 'job', id: a!, section: null };
      if (parts.length === 3 && (b === 'checkpoints' || b === 'savepoints' || b === 'graph')) {
        return { name: 'job', id: a!, section: b };
      }
      if (parts.length === 4 && b === 'checkpoints' && /^\d+$/.test(c!)) {
        return { name: 'checkpoint', job: a!, checkpoint: Number(c) };
      }
      break;
    case 'savepoints':
      if (parts.length === 1) return { name: 'savepoints' };
      break;
    case 'modules':
      if (parts.length === 1) return { name: 'modules' };
      break;
    case 'streams':
      if (parts.length <= 2) return { name: 'streams', stream: a ?? null };
      break;
    case 'account':
      if (parts.length === 1) return { name: 'account' };
      break;
    case 'tenants':
      if (parts.length <= 2) return { name: 'tenants', tenant: a ?? null };
      break;
    case 'health':
      if (parts.length === 1) return { name: 'health' };
      break;
    case 'workers':
      if (parts.length === 1) return { name: 'workers' };
      break;
    case 'state': {
      const stateName = query.get('state') || null;
      if (parts.length === 1) return { name: 'state', source: null, operator: null, stateName };
      if (a === 'checkpoint' && b && c && /^\d+$/.test(c) && parts.length <= 5) {
        return {
          name: 'state',
          source: { kind: 'checkpoint', job: b, checkpoint: Number(c) },
          operator: d ?? null,
          stateName,
        };
      }
      if (a === 'savepoint' && b && parts.length <= 4) {
        return { name: 'state', source: { kind: 'savepoint', savepoint: b }, operator: c ?? null, stateName };
      }
      break;
    }
  }
  return { name: 'notFound', hash: `#${raw}` };
}

const enc = encodeURIComponent;

export function href(route: Route): string {
  switch (route.name) {
    case 'jobs':
      return '#/jobs';
    case 'newJob':
      return '#/jobs/new';
    case 'job':
      return `#/jobs/${enc(route.id)}${route.section ? `/${route.section}` : ''}`;
    case 'checkpoint':
      return `#/jobs/${enc(route.job)}/checkpoints/${route.checkpoint}`;
    case 'savepoints':
      return '#/savepoints';
    case 'modules':
      return '#/modules';
    case 'streams':
      return route.stream ? `#/streams/${enc(route.stream)}` : '#/streams';
    case 'account':
      return '#/account';
    case 'tenants':
      return route.tenant ? `#/tenants/${enc(route.tenant)}` : '#/tenants';
    case 'health':
      return '#/health';
    case 'workers':
      return '#/workers';
    case 'state': {
      let path = '#/state';
      if (route.source?.kind === 'checkpoint') {
        path += `/checkpoint/${enc(route.source.job)}/${route.source.checkpoint}`;
      } else if (route.source?.kind === 'savepoint') {
        path += `/savepoint/${enc(route.source.savepoint)}`;
      }
      if (route.source && route.operator) path += `/${enc(route.operator)}`;
      if (route.stateName) path += `?state=${enc(route.stateName)}`;
      return path;
    }
    case 'notFound':
      return route.hash;
  }
}

export const links = {
  jobs: () => href({ name: 'jobs' }),
  newJob: () => href({ name: 'newJob' }),
  job: (id: string) => href({ name: 'job', id, section: null }),
  checkpoint: (job: string, checkpoint: number) => href({ name: 'checkpoint', job, checkpoint }),
  savepoints: () => href({ name: 'savepoints' }),
  modules: () => href({ name: 'modules' }),
  streams: (stream: string | null = null) => href({ name: 'streams', stream }),
  account: () => href({ name: 'account' }),
  tenants: (tenant: string | null = null) => href({ name: 'tenants', tenant }),
  health: () => href({ name: 'health' }),
  workers: () => href({ name: 'workers' }),
  state: (source: StateSource | null, operator: string | null = null, stateName: string | null = null) =>
    href({ name: 'state', source, operator, stateName }),
};

/** Which top navigation entry a route belongs to. */
export function navSection(route: Route): 'jobs' | 'savepoints' | 'modules' | 'streams' | 'state' | 'workers' | 'account' | 'tenants' | 'health' | null {
  switch (route.name) {
    case 'jobs':
    case 'newJob':
    case 'job':
    case 'checkpoint':
      return 'jobs';
    case 'savepoints':
      return 'savepoints';
    case 'modules':
      return 'modules';
    case 'streams':
      return 'streams';
    case 'account':
      return 'account';
    case 'tenants':
      return 'tenants';
    case 'health':
      return 'health';
    case 'workers':
      return 'workers';
    case 'state':
      return 'state';
    default:
      return null;
  }
}
