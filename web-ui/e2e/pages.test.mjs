// End to end: every page of the console, as a tenant and as the admin, in Chromium against a
// real `weir serve` at 1400×1000 — each one loads, passes an accessibility check (axe-core:
// no serious or critical violation) and is saved as a screenshot (<target>/ui-e2e/page-*.png).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { ADMIN, api, launchBrowser, screenshot, startServer, waitFor, wordcountSpec } from './harness.mjs';

const LONG = 60_000;
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
let server, token, client, browser, page, job, checkpoint, savepoint, tenantId;

before(async () => {
  server = await startServer();
  const admin = api(server.url, ADMIN);
  const created = await admin.post('/api/v1/tenants', { name: 'acme' });
  token = created.token;
  tenantId = created.tenant.id;
  client = api(server.url, token);
  await client.post('/api/v1/streams', { name: 'lines', partitions: 2 });
  const lines = Array.from({ length: 200 }, (_, i) => ({ value: `w${i % 7} w${(i % 11) + 7}` }));
  await client.post('/api/v1/streams/lines/records', { records: lines });
  job = (await client.post('/api/v1/jobs', wordcountSpec('wordcount', 300))).id;
  checkpoint = await waitFor('a checkpoint', async () => (await client.get(`/api/v1/jobs/${job}`)).latest_checkpoint?.id, LONG);
  savepoint = (await client.post(`/api/v1/jobs/${job}/savepoints`, { mode: 'keep_running' })).id;
  await waitFor('the savepoint', async () => (await client.get(`/api/v1/savepoints/${savepoint}`)).status === 'completed', LONG);
  browser = await launchBrowser();
  // The server's CSP allows only its own scripts: axe-core is injected past it.
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, bypassCSP: true });
  page.setDefaultTimeout(LONG);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

async function signIn(with_) {
  await page.goto(server.url + '/');
  await page.evaluate(() => localStorage.clear());
  await page.goto(server.url + '/');
  await page.getByTestId('token-input').fill(with_);
  await page.getByTestId('sign-in').click();
  await page.locator('nav').first().waitFor();
}

/** Opens `hash`, waits until it shows `ready` and nothing is loading, checks it, saves it. */
async function visit(name, hash, ready) {
  await page.goto(`${server.url}/${hash}`);
  await page.locator(ready).first().waitFor();
  await waitFor(`${name} loaded`, async () => (await page.locator('.loading').count()) === 0, LONG);
  await page.addScriptTag({ path: axePath });
  const result = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  const bad = result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad, [], `${name}: accessibility violations:\n${JSON.stringify(bad, null, 2)}`);
  await screenshot(page, `page-${name}`);
}

test("every tenant page loads, is accessible, and is saved at 1400×1000", async () => {
  await signIn(token);
  await visit('jobs', '#/jobs', '[data-testid="jobs-table"]');
  await visit('job', `#/jobs/${job}`, '[data-testid="job-status"]');
  await visit('checkpoint', `#/jobs/${job}/checkpoints/${checkpoint}`, '[data-testid="checkpoint-detail"]');
  await visit('new-job', '#/jobs/new', 'h1');
  await visit('savepoints', '#/savepoints', `text=${savepoint.slice(0, 8)}`);
  await visit('modules', '#/modules', '[data-testid="module-upload-submit"]');
  await visit('streams', '#/streams', '[data-testid="stream-row"]');
  await visit('stream', '#/streams/lines', '[data-testid="stream-detail"]');
  await visit('state', `#/state/savepoint/${savepoint}/count`, 'table');
  await visit('account', '#/account', '[data-testid="account-quotas"]');
});

test("every admin page loads, is accessible, and is saved at 1400×1000", async () => {
  await signIn(ADMIN);
  await visit('tenants', '#/tenants', '[data-testid="tenants-table"]');
  await visit('tenant', `#/tenants/${tenantId}`, '[data-testid="tenant-row"].selected');
  await visit('health', '#/health', 'h1');
  await visit('workers', '#/workers', 'h1');
});
