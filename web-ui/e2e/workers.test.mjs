// End to end with a worker: `weir serve` listening for workers and one real `weir worker`
// process. The admin token signs in to the Workers page (address, slots, subtasks, heartbeat
// age) and a Server page (store, disk, process, workers, tenants); a tenant's job page names
// the worker of each subtask; the workers list is not a tenant's. Screenshots go to
// <target>/ui-e2e.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, api, launchBrowser, screenshot, startServer, startWorker, waitFor } from './harness.mjs';

const LONG = 60_000;
let server, worker, workerId, token, job, browser, page;

before(async () => {
  server = await startServer({ cluster: true });
  assert.ok(server.cluster, 'weir serve printed no cluster address');
  worker = startWorker(server.cluster, 'e2e-worker');
  const admin = api(server.url, ADMIN);
  const live = await waitFor('the worker registers', async () => {
    const list = (await admin.get('/api/v1/workers')).data;
    return list.find((w) => w.name === 'e2e-worker' && w.status === 'live');
  });
  workerId = live.id;
  token = (await admin.post('/api/v1/tenants', { name: 'acme' })).token;
  const client = api(server.url, token);
  job = (
    await client.post('/api/v1/jobs', {
      name: 'on-a-worker',
      nodes: [
        { id: 'gen', kind: 'source', connector: 'generator', config: { mode: 'sequence', count: 1_000_000_000, batch_size: 64 } },
        { id: 'out', kind: 'sink', connector: 'blackhole', parallelism: 2, config: { pause_ms_per_batch: 20 } },
      ],
      edges: [{ from: 'gen', to: 'out', partitioning: 'rebalance' }],
      settings: { checkpoint: { interval_ms: 1000 } },
    })
  ).id;
  await waitFor('the job runs on the worker', async () => {
    const j = await client.get(`/api/v1/jobs/${job}`);
    return j.vertices.every((v) => v.subtasks.every((s) => s.worker === workerId));
  });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(LONG);
});

after(async () => {
  await browser?.close();
  await worker?.stop();
  await server?.stop();
});

const byTestId = (id) => page.getByTestId(id);

test('the admin token shows the workers with their slots, subtasks and heartbeat', async () => {
  await page.goto(server.url + '/');
  await byTestId('token-input').fill(ADMIN);
  await byTestId('sign-in').click();
  await byTestId('signed-in-admin').waitFor();
  const row = page.locator(`[data-testid="worker-row"][data-worker-id="${workerId}"]`);
  await row.waitFor();
  assert.equal(await row.getAttribute('data-worker-status'), 'live');
  assert.match(await row.innerText(), /e2e-worker/);
  assert.match(await row.innerText(), /127\.0\.0\.1:\d+/);
  // One generator and two sinks, all on the worker: three slots' worth of subtasks.
  await waitFor('the subtasks show', async () => (await row.getByTestId('worker-subtasks').innerText()).trim() === '3');
  assert.match(await row.getByTestId('worker-slots').innerText(), /^\s*2 \/ 4\s*$/);
  assert.match(await row.getByTestId('worker-heartbeat').innerText(), /ago/);
  assert.match(await byTestId('workers-summary').innerText(), /1 live · 2 of 4 slots in use/);
  // The admin sees no tenant's pages.
  assert.equal(await byTestId('nav-jobs').count(), 0);
  await screenshot(page, '20-workers');
  // The server page: the store, the disk, the process, the workers and tenants.
  await byTestId('nav-health').click();
  const value = (key) => page.locator(`[data-testid="health-row"][data-key="${key}"]`).getByTestId('health-value');
  await waitFor('the process figures', async () => (await value('rss').count()) === 1);
  assert.equal(await value('store').innerText(), 'ok');
  assert.match(await value('disk-free').innerText(), /[KMGT]iB|unknown/);
  assert.match(await value('rss').innerText(), /MiB/);
  await waitFor('the worker is counted', async () => (await value('workers').innerText()) === '1 of 1');
  assert.equal(await value('tenants').innerText(), '1');
  await screenshot(page, '22-server');
  await byTestId('sign-out').click();
});

test("a tenant's job page names the worker of each subtask, and the workers page is not a tenant's", async () => {
  await byTestId('token-input').fill(token);
  await byTestId('sign-in').click();
  await byTestId('jobs-table').waitFor();
  await page.goto(`${server.url}/#/jobs/${job}`);
  const out = page.locator('[data-testid="operator-row"][data-node-id="out"]');
  await out.getByTestId('operator-expand').click();
  const cells = page.getByTestId('subtask-worker');
  await waitFor('both sink subtasks show their worker', async () => {
    const texts = await cells.allInnerTexts();
    return texts.length === 2 && texts.every((t) => t.trim() === `worker ${workerId}`);
  });
  await screenshot(page, '21-subtasks-on-a-worker');
  await page.goto(`${server.url}/#/workers`);
  await page.getByText('Only the admin token lists the workers').waitFor();
  assert.equal(await byTestId('nav-workers').count(), 0);
});
