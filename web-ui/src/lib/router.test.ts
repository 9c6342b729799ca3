import { describe, expect, it } from 'vitest';
import { href, links, navSection, parseHash, type Route } from './router';

describe('parseHash', () => {
  it('defaults to the jobs list', () => {
    expect(parseHash('')).toEqual({ name: 'jobs' });
    expect(parseHash('#')).toEqual({ name: 'jobs' });
    expect(parseHash('#/')).toEqual({ name: 'jobs' });
    expect(parseHash('#/jobs')).toEqual({ name: 'jobs' });
  });
  it('reads job, checkpoint, savepoints and modules routes', () => {
    expect(parseHash('#/jobs/abc')).toEqual({ name: 'job', id: 'abc', section: null });
    expect(parseHash('#/jobs/new')).toEqual({ name: 'newJob' });
    expect(parseHash('#/jobs/abc/checkpoints')).toEqual({ name: 'job', id: 'abc', section: 'checkpoints' });
    expect(parseHash('#/jobs/abc/checkpoints/12')).toEqual({ name: 'checkpoint', job: 'abc', checkpoint: 12 });
    expect(parseHash('#/savepoints')).toEqual({ name: 'savepoints' });
    expect(parseHash('#/modules')).toEqual({ name: 'modules' });
  });
  it('reads state routes with or without source, operator and filter', () => {
    expect(parseHash('#/state')).toEqual({ name: 'state', source: null, operator: null, stateName: null });
    expect(parseHash('#/state/checkpoint/j1/4/count?state=counts')).toEqual({
      name: 'state',
      source: { kind: 'checkpoint', job: 'j1', checkpoint: 4 },
      operator: 'count',
      stateName: 'counts',
    });
    expect(parseHash('#/state/savepoint/sp1')).toEqual({
      name: 'state',
      source: { kind: 'savepoint', savepoint: 'sp1' },
      operator: null,
      stateName: null,
    });
  });
  it('does not match malformed routes', () => {
    expect(parseHash('#/jobs/abc/checkpoints/x').name).toBe('notFound');
    expect(parseHash('#/nope').name).toBe('notFound');
    expect(parseHash('#/state/checkpoint/j1/four/count').name).toBe('notFound');
  });
  it('decodes encoded parts', () => {
    expect(parseHash('#/state/savepoint/sp1/my%20op')).toMatchObject({ operator: 'my op' });
  });
});

describe('href', () => {
  const routes: Route[] = [
    { name: 'jobs' },
    { name: 'newJob' },
    { name: 'job', id: 'abc', section: null },
    { name: 'checkpoint', job: 'abc', checkpoint: 7 },
    { name: 'savepoints' },
    { name: 'modules' },
    { name: 'streams', stream: null },
    { name: 'streams', stream: 'my lines' },
    { name: 'account' },
    { name: 'tenants', tenant: null },
    { name: 'tenants', tenant: '0123456789abcdef' },
    { name: 'health' },
    { name: 'workers' },
    { name: 'state', source: null, operator: null, stateName: null },
    { name: 'state', source: { kind: 'checkpoint', job: 'j', checkpoint: 3 }, operator: 'my op', stateName: 'a b' },
    { name: 'state', source: { kind: 'savepoint', savepoint: 's' }, operator: null, stateName: null },
  ];
  it('round-trips through parseHash', () => {
    for (const r of routes) expect(parseHash(href(r))).toEqual(r);
  });
  it('builds the documented paths', () => {
    expect(links.job('abc')).toBe('#/jobs/abc');
    expect(links.newJob()).toBe('#/jobs/new');
    expect(links.checkpoint('abc', 7)).toBe('#/jobs/abc/checkpoints/7');
    expect(links.state({ kind: 'checkpoint', job: 'j', checkpoint: 3 }, 'count')).toBe('#/state/checkpoint/j/3/count');
    expect(links.streams('lines')).toBe('#/streams/lines');
  });
  it('maps routes to the navigation', () => {
    expect(navSection({ name: 'checkpoint', job: 'a', checkpoint: 1 })).toBe('jobs');
    expect(navSection(parseHash('#/jobs/new'))).toBe('jobs');
    expect(navSection({ name: 'notFound', hash: '#/x' })).toBeNull();
    expect(navSection(parseHash('#/workers'))).toBe('workers');
    expect(navSection(parseHash('#/streams/lines'))).toBe('streams');
  });
});
