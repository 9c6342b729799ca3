// End to end: Debian's Chromium (playwright-core) against a real `weir serve` running a real
// job. Sign in (and a wrong token), the jobs list, a job's graph, checkpoints appearing live
// in the table and the chart, a checkpoint's detail and timeline, a savepoint triggered and
// listed, state browsed, a module uploaded, a failed job's error and exception history, its
// operators' logs, its watermark and event-time lag live and plotted, streams tailed and
// pushed to, the tenant's own page (quotas, tokens), an empty history, and a narrow window. Screenshots go to <target>/ui-e2e.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ADMIN, api, artifacts, guestPath, launchBrowser, screenshot, startServer, waitFor, wordcountSpec } from './harness.mjs';

const LONG = 60_000;
let server, token, client, browser, page, wordcount, quiet;

before(async () => {
  server = await startServer();
  const created = await api(server.url, ADMIN).post('/api/v1/tenants', { name: 'acme' });
  token = created.token;
  client = api(server.url, token);
  await client.post('/api/v1/streams', { name: 'lines', partitions: 2 });
  const lines = Array.from({ length: 500 }, (_, i) => ({ value: `w${i % 7} w${(i % 11) + 7} w${(i % 13) + 18}` }));
  await client.post('/api/v1/streams/lines/records', { records: lines });
  wordcount = (await client.post('/api/v1/jobs', wordcountSpec('wordcount', 500))).id;
  // Checkpoints only on demand: its history stays empty.
  const spec = wordcountSpec('on-demand', null);
  spec.nodes[3].config.stream = 'quiet-counts';
  quiet = (await client.post('/api/v1/jobs', spec)).id;
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(LONG);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const byTestId = (id) => page.getByTestId(id);

test('a wrong token is refused with a message that says what to do', async () => {
  await page.goto(server.url + '/');
  await byTestId('token-input').fill('weir_' + '0'.repeat(64));
  await byTestId('sign-in').click();
  const error = byTestId('sign-in-error');
  await error.waitFor();
  assert.match(await error.innerText(), /token/i);
  await screenshot(page, '01-wrong-token');
});

test('signing in shows the jobs with their status', async () => {
  await byTestId('token-input').fill(token);
  await byTestId('sign-in').click();
  await byTestId('jobs-table').waitFor();
  const row = page.locator(`[data-testid="job-row"][data-job-id="${wordcount}"]`);
  await row.waitFor();
  assert.match(await row.innerText(), /wordcount/);
  assert.match(await row.innerText(), /running/);
  await screenshot(page, '02-jobs');
});

test('a job shows its graph and checkpoints appear live in the table and the chart', async () => {
  await page.locator(`[data-testid="job-row"][data-job-id="${wordcount}"] [data-testid="job-link"]`).click();
  await byTestId('job-graph').waitFor();
  assert.equal(await byTestId('graph-node').count(), 4);
  for (const id of ['lines', 'split', 'count', 'out']) {
    await page.locator(`[data-testid="graph-node"][data-node-id="${id}"]`).waitFor();
  }
  await byTestId('checkpoints-table').waitFor();
  const completed = page.locator('[data-testid="checkpoint-row"][data-status="completed"]');
  await waitFor('a completed checkpoint in the table', async () => (await completed.count()) >= 1, LONG);
  await byTestId('checkpoint-summary').waitFor();
  await byTestId('chart-duration').locator('canvas').first().waitFor();
  await byTestId('chart-size').locator('canvas').first().waitFor();
  // The wordcount job checkpoints aligned (the default mode): its type is shown per row.
  assert.equal(await completed.first().getByTestId('checkpoint-type').getAttribute('data-type'), 'aligned');
  const seen = await completed.count();
  const plotted = Number(await byTestId('chart-duration').getAttribute('data-last'));
  // No reload: the table and the charts grow by themselves.
  await waitFor('more checkpoints without a reload', async () => (await completed.count()) > seen, LONG);
  await waitFor(
    'a newer checkpoint in the charts',
    async () =>
      Number(await byTestId('chart-duration').getAttribute('data-last')) > plotted &&
      Number(await byTestId('chart-size').getAttribute('data-last')) > plotted,
    LONG,
  );
  await screenshot(page, '03-job-and-checkpoints');
});

test("a checkpoint's detail shows every subtask on a timeline", async () => {
  const row = page.locator('[data-testid="checkpoint-row"][data-status="completed"]').first();
  const id = await row.getAttribute('data-checkpoint-id');
  await row.getByTestId('checkpoint-link').click();
  await page.waitForURL(`**/#/jobs/${wordcount}/checkpoints/${id}`);
  await byTestId('checkpoint-detail').waitFor();
  await byTestId('checkpoint-timeline').waitFor();
  // 1 source + 2 + 2 + 2 subtasks.
  await waitFor('7 subtask rows', async () => (await byTestId('subtask-row').count()) === 7);
  assert.equal(await byTestId('checkpoint-type').innerText(), 'aligned');
  assert.equal(await byTestId('subtask-type').count(), 7, 'each acknowledged subtask shows its type');
  await screenshot(page, '04-checkpoint-detail');
  await page.goBack();
});

test('a savepoint is triggered, shows its progress and is listed', async () => {
  await page.goto(`${server.url}/#/jobs/${wordcount}`);
  await byTestId('savepoint-mode').selectOption('keep_running');
  await byTestId('trigger-savepoint').click();
  await byTestId('savepoint-progress').waitFor();
  const done = page.locator('[data-testid="savepoint-row"][data-status="completed"]');
  await done.first().waitFor();
  const listed = await client.get('/api/v1/savepoints');
  assert.equal(listed.data.length, 1);
  assert.equal(await done.first().getAttribute('data-savepoint-id'), listed.data[0].id);
  await screenshot(page, '05-savepoint');
});

test('a savepoint is exported as a file and imported back', async () => {
  await byTestId('nav-savepoints').click();
  const row = page.locator('[data-testid="savepoint-row"][data-status="completed"]').first();
  await row.waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'), row.getByTestId('savepoint-export').click()]);
  const file = join(artifacts, download.suggestedFilename());
  await download.saveAs(file);
  assert.equal(readFileSync(file).subarray(0, 8).toString(), 'WEIRSAVE');
  await byTestId('savepoint-import-input').setInputFiles(file);
  await byTestId('savepoint-import-submit').click();
  await waitFor('the import is reported', async () => /Imported/.test(await byTestId('savepoint-import-status').innerText()));
  await waitFor('two savepoints listed', async () => (await byTestId('savepoint-row').count()) === 2);
  const imported = (await client.get('/api/v1/savepoints')).data.find((s) => s.origin);
  assert.ok(imported, 'the API lists the imported savepoint');
  await screenshot(page, '05b-savepoint-import');
});

test("an operator's keyed state can be browsed", async () => {
  const savepoint = (await client.get('/api/v1/savepoints')).data.find((s) => !s.origin).id;
  await page.goto(`${server.url}/#/state/savepoint/${savepoint}/count`);
  await byTestId('state-table').waitFor();
  await waitFor('state rows', async () => (await byTestId('state-row').count()) > 0);
  assert.match(await byTestId('state-table').innerText(), /w\d+/);
  await screenshot(page, '06-state');
});

test('a module is uploaded and listed', async () => {
  await byTestId('nav-modules').click();
  await byTestId('module-upload-input').setInputFiles({
    name: 'faulty.wasm',
    mimeType: 'application/wasm',
    buffer: readFileSync(guestPath('weir-test-faulty')),
  });
  await byTestId('module-upload-name').fill('faulty');
  await byTestId('module-upload-submit').click();
  const row = page.locator('[data-testid="module-row"]', { hasText: 'faulty' });
  await row.waitFor();
  await screenshot(page, '07-modules');
});

test("a failed job shows why it failed", async () => {
  const failing = (
    await client.post('/api/v1/jobs', {
      name: 'doomed',
      nodes: [
        { id: 'in', kind: 'source', connector: 'generator', config: { mode: 'sequence', count: 100 } },
        { id: 'poison', kind: 'operator', module: 'faulty', config: { panic_at: 3 } },
        { id: 'out', kind: 'sink', connector: 'blackhole' },
      ],
      edges: [{ from: 'in', to: 'poison' }, { from: 'poison', to: 'out' }],
      settings: { restart: { attempts: 0 } },
    })
  ).id;
  await waitFor('the job fails', async () => (await client.get(`/api/v1/jobs/${failing}`)).status === 'failed');
  await page.goto(`${server.url}/#/jobs/${failing}`);
  await waitFor('status failed', async () => /failed/.test(await byTestId('job-status').innerText()));
  assert.match(await byTestId('job-error').innerText(), /poison record 3/);
  // Its exception history: the one failure (no restarts allowed), whose it was and where.
  const row = byTestId('exception-row');
  await row.first().waitFor();
  assert.equal(await row.count(), 1);
  const text = await row.first().innerText();
  assert.match(text, /operator code/);
  assert.match(text, /poison #0/);
  assert.match(text, /failed/);
  assert.match(text, /poison record 3/);
  await screenshot(page, '08-failed-job');
});

test("a job's operator logs are shown, filtered and searched", async () => {
  await client.upload('/api/v1/modules?name=counter', readFileSync(guestPath('weir-test-counter')), 'application/wasm');
  const talkative = (
    await client.post('/api/v1/jobs', {
      name: 'talkative',
      nodes: [
        { id: 'in', kind: 'source', connector: 'generator', config: { mode: 'sequence', count: 10, batch_size: 1 } },
        { id: 'count', kind: 'operator', module: 'counter', config: { log_levels: true } },
        { id: 'out', kind: 'sink', connector: 'blackhole' },
      ],
      edges: [{ from: 'in', to: 'count', partitioning: 'hash' }, { from: 'count', to: 'out' }],
    })
  ).id;
  await waitFor('the job finishes', async () => (await client.get(`/api/v1/jobs/${talkative}`)).status === 'finished');
  await page.goto(`${server.url}/#/jobs/${talkative}`);
  const lines = byTestId('log-line');
  await waitFor('every line is shown', async () => (await lines.count()) === 60);
  assert.match(await lines.first().innerText(), /record 0 at trace/);
  // At least `error`: one line per record.
  await byTestId('log-level').selectOption('error');
  await waitFor('only errors', async () => (await lines.count()) === 10);
  assert.match(await lines.nth(3).innerText(), /record 3 at error/);
  // Searched here.
  await byTestId('log-search').fill('record 7 ');
  await waitFor('one match', async () => (await lines.count()) === 1);
  assert.match(await lines.first().innerText(), /count #0/);
  await screenshot(page, '08b-logs');
});

test("a job's watermark and event-time lag are shown live, plotted, and move when its input pauses and resumes", async () => {
  await client.post('/api/v1/streams', { name: 'ticks', partitions: 1 });
  const push = (ts) =>
    client.post('/api/v1/streams/ticks/records', { records: Array.from({ length: 5 }, (_, i) => ({ value: `t${i}`, timestamp: ts + i })) });
  const ticking = (
    await client.post('/api/v1/jobs', {
      name: 'ticking',
      nodes: [
        { id: 'ticks', kind: 'source', connector: 'stream', config: { stream: 'ticks', follow: true, out_of_orderness_ms: 0 } },
        { id: 'out', kind: 'sink', connector: 'blackhole' },
      ],
      edges: [{ from: 'ticks', to: 'out' }],
    })
  ).id;
  // The records are a minute old.
  await push(Date.now() - 60_000);
  await page.goto(`${server.url}/#/jobs/${ticking}`);
  const chart = byTestId('chart-event-lag');
  /** The source's latest event-time lag in the chart (ms). */
  const lag = async () => {
    if ((await chart.count()) === 0) return null;
    const labels = (await chart.getAttribute('data-labels')).split(',');
    const v = (await chart.getAttribute('data-latest')).split(',')[labels.indexOf('ticks')];
    return v ? Number(v) : null;
  };
  const watermark = async () => (await client.get(`/api/v1/jobs/${ticking}`)).vertices[0].subtasks[0].watermark_ms;
  await waitFor('a minute behind, plotted', async () => (await lag()) >= 55_000 && (await lag()) < 120_000);
  const sourceRow = byTestId('operator-event-time').first();
  assert.match(await sourceRow.innerText(), /behind/);
  // Paused: no records, the watermark stays and the lag grows with the clock.
  const paused = await lag();
  const mark = await watermark();
  await waitFor('the lag grows while paused', async () => (await lag()) >= paused + 2_000);
  assert.equal(await watermark(), mark, 'the watermark stays while no records arrive');
  // Resumed with fresh records: the watermark moves on and the lag falls.
  await push(Date.now() - 1_000);
  await waitFor('the lag falls once records arrive', async () => (await lag()) < 30_000);
  assert.ok((await watermark()) > mark + 50_000, 'the watermark moved');
  assert.ok(Number(await chart.getAttribute('data-points')) >= 3);
  assert.ok(Number(await byTestId('chart-rates').getAttribute('data-points')) >= 3);
  await screenshot(page, '08c-event-time');
  await client.post(`/api/v1/jobs/${ticking}/cancel`);
});

test("streams are listed with their jobs, tailed live, and records pushed to one are counted by its job", async () => {
  await byTestId('nav-streams').click();
  const row = page.locator('[data-testid="stream-row"][data-stream="lines"]');
  await row.waitFor();
  assert.match(await row.getByTestId('stream-readers').innerText(), /wordcount/);
  const counts = page.locator('[data-testid="stream-row"][data-stream="counts"]');
  assert.match(await counts.getByTestId('stream-writers').innerText(), /wordcount/);
  const before = Number((await row.getByTestId('stream-records').innerText()).replaceAll(',', ''));
  await row.getByRole('link', { name: 'lines' }).click();
  await byTestId('stream-detail').waitFor();
  await waitFor('the tail shows partition 0', async () => (await byTestId('tail-record').count()) > 0);
  // Pushed to partition 0: the tail follows it, the stream's count grows, the job counts the words.
  await byTestId('push-records').fill('{"value": "zebra zebra", "partition": 0}\n"zebra okapi"');
  await byTestId('push-submit').click();
  await waitFor('pushed', async () => /Pushed 2 records/.test(await byTestId('push-status').innerText()));
  await waitFor('the tail shows the new record', async () => /zebra zebra/.test(await byTestId('tail-table').innerText()));
  await waitFor(
    'the stream counts them',
    async () => Number((await row.getByTestId('stream-records').innerText()).replaceAll(',', '')) === before + 2,
  );
  // The word count's output holds zebra's count of 3, in the partition of its key.
  const zebra = await waitFor('the job counted them', async () => {
    for (const p of [0, 1]) {
      const got = await client.get(`/api/v1/streams/counts/records?partition=${p}&limit=10000`);
      const last = got.data.filter((r) => r.key === 'zebra').at(-1);
      if (last && JSON.stringify(last.value).includes('3')) return { partition: p, offset: last.offset };
    }
    return null;
  });
  await page.goto(`${server.url}/#/streams/counts`);
  await byTestId('tail-partition').selectOption(String(zebra.partition));
  await waitFor('the output tail shows it', async () =>
    (await page.locator(`[data-testid="tail-record"][data-offset="${zebra.offset}"]`).count()) === 1,
  );
  await screenshot(page, '07b-streams');
});

test("a tenant's own page shows its quotas in use, and it issues and revokes tokens once the admin lets it", async () => {
  await byTestId('nav-account').click();
  const me = await client.get('/api/v1/tenant');
  const jobs = page.locator('[data-testid="quota-row"][data-quota="max_jobs"]');
  await waitFor('the jobs in use', async () => (await jobs.getByTestId('quota-used').innerText()) === String(me.usage.jobs));
  assert.equal(await jobs.getByTestId('quota-limit').innerText(), String(me.quotas.max_jobs));
  await byTestId('kafka-none').waitFor();
  // The admin issues and revokes this tenant's tokens: no buttons.
  await waitFor('the token is listed', async () => (await byTestId('token-row').count()) === 1);
  assert.equal(await byTestId('token-issue').count(), 0);
  await api(server.url, ADMIN).put(`/api/v1/tenants/${me.id}/settings`, { manage_own_tokens: true });
  await page.reload();
  await byTestId('token-label').fill('ci');
  await byTestId('token-issue').click();
  const issued = (await byTestId('token-issued').locator('code').innerText()).trim();
  assert.equal((await api(server.url, issued).get('/api/v1/tenant')).id, me.id, 'the issued token signs in as this tenant');
  const ci = page.locator('[data-testid="token-row"]', { hasText: 'ci' });
  await waitFor('the new token is listed', async () => (await ci.count()) === 1);
  await screenshot(page, '15-account');
  page.once('dialog', (d) => d.accept());
  await ci.getByTestId('token-revoke').click();
  await waitFor('the token is gone', async () => (await byTestId('token-row').count()) === 1);
  await assert.rejects(api(server.url, issued).get('/api/v1/tenant'), /401/);
});

test('an empty checkpoint history says so', async () => {
  await page.goto(`${server.url}/#/jobs/${quiet}`);
  const empty = byTestId('checkpoints-empty');
  await empty.waitFor();
  assert.match(await empty.innerText(), /checkpoint/i);
  await screenshot(page, '09-empty-history');
});

test('the pages work in a narrow window', async () => {
  await page.setViewportSize({ width: 420, height: 800 });
  await page.goto(`${server.url}/#/jobs/${wordcount}`);
  await byTestId('job-graph').waitFor();
  await byTestId('checkpoints-table').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow} px`);
  await screenshot(page, '10-narrow');
});
