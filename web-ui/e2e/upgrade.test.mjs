// End to end: upgrading a running job from the browser (Chromium against a real `weir
// serve`). The Upgrade card checks the new version against a savepoint and shows the answer
// before the Upgrade button does anything; an upgrade to a new module version carries the
// state over; one whose state does not fit is refused before anything stops; one that fails
// at once is rolled back to the old version; and a 2 → 3 rescale. Screenshots go to
// <target>/ui-e2e.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ADMIN, api, guestPath, launchBrowser, screenshot, startServer, waitFor, wordcountSpec } from './harness.mjs';

const LONG = 90_000;
let server, client, browser, page, job, v3, faulty;

const lines = (from, to) =>
  Array.from({ length: to - from }, (_, k) => {
    const i = from + k;
    return { value: `w${i % 7} w${(i % 11) + 7} w${(i % 13) + 18}` };
  });

/** Each word's latest count in stream `counts`. */
async function latestCounts() {
  const out = new Map();
  for (const p of [0, 1]) {
    const got = await client.get(`/api/v1/streams/counts/records?partition=${p}&limit=10000`);
    for (const r of got.data) out.set(r.key, r.value);
  }
  return out;
}

before(async () => {
  server = await startServer();
  const created = await api(server.url, ADMIN).post('/api/v1/tenants', { name: 'acme' });
  client = api(server.url, created.token);
  await client.post('/api/v1/streams', { name: 'lines', partitions: 2 });
  await client.post('/api/v1/streams/lines/records', { records: lines(0, 300) });
  v3 = (await client.upload('/api/v1/modules?name=wordcount-v3', readFileSync(guestPath('weir-test-wordcount-v3')), 'application/wasm')).id;
  faulty = (await client.upload('/api/v1/modules?name=faulty', readFileSync(guestPath('weir-test-faulty')), 'application/wasm')).id;
  job = (await client.post('/api/v1/jobs', wordcountSpec('wordcount', 300))).id;
  // w0 is in every 7th line: 43 of the first 300.
  await waitFor('the first counts', async () => (await latestCounts()).get('w0') === 43, LONG);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(LONG);
  await page.goto(server.url + '/');
  await page.getByTestId('token-input').fill(created.token);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('jobs-table').waitFor();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const byTestId = (id) => page.getByTestId(id);

/** Opens the job's Upgrade card with a fresh form. */
async function openUpgrade() {
  await page.goto(`${server.url}/#/jobs/${job}`);
  // A fresh page: the form of an earlier test may still be open on this one.
  await page.reload();
  await byTestId('upgrade-open').click();
}

/** Confirms the upgrade the card checked (the page asks first). */
async function confirmUpgrade() {
  page.once('dialog', (d) => d.accept());
  await byTestId('upgrade-confirm').click();
}

async function jobVersion() {
  return await client.get(`/api/v1/jobs/${job}`);
}

test('a version that fails at once is rolled back to the old one, and the page says why', async () => {
  await openUpgrade();
  await byTestId('upgrade-module-count').selectOption(faulty);
  await byTestId('upgrade-grace').fill('60');
  await byTestId('upgrade-check').click();
  await byTestId('upgrade-answer').waitFor();
  await confirmUpgrade();
  await client.post('/api/v1/streams/lines/records', { records: lines(300, 310) });
  await waitFor('rolled back', async () => {
    const versions = (await client.get(`/api/v1/jobs/${job}/versions`)).data;
    const j = await jobVersion();
    return versions.some((v) => v.version === 2 && v.outcome === 'rolled_back') && j.upgrade == null && j.status === 'running';
  }, LONG);
  assert.equal((await jobVersion()).version, 1);
  await page.reload();
  await waitFor('the history shows it', async () => /rolled back/.test(await byTestId('versions').innerText()));
  assert.match(await byTestId('job-error').innerText(), /rolled back/);
  await screenshot(page, '30-upgrade-rolled-back');
});

test('an upgrade to a new module version is checked, confirmed, and carries the state over', async () => {
  await openUpgrade();
  await byTestId('upgrade-module-count').selectOption(v3);
  await byTestId('upgrade-grace').fill('1');
  await byTestId('upgrade-check').click();
  const answer = byTestId('upgrade-answer');
  await answer.waitFor();
  // The check's answer is shown before anything stops.
  assert.match(await answer.innerText(), /count: state carried over, migrated v0 → v1/);
  assert.equal((await jobVersion()).version, 1);
  await screenshot(page, '31-upgrade-check');
  await confirmUpgrade();
  await waitFor('upgraded', async () => {
    const j = await jobVersion();
    return j.upgrade == null && j.version === 3;
  }, LONG);
  // The state came over: counts go on from where version 1 left them.
  await client.post('/api/v1/streams/lines/records', { records: lines(310, 400) });
  await waitFor('counts go on', async () => (await latestCounts()).get('w0') === 58, LONG);
  await page.reload();
  await waitFor('the history shows it', async () => /current/.test(await byTestId('versions').innerText()));
  assert.match(await byTestId('job-restored-from').innerText(), /migrated/);
  await screenshot(page, '32-upgraded');
});

test('a version whose state does not fit is refused before anything stops', async () => {
  const before = await jobVersion();
  await openUpgrade();
  // The example (builtin:wordcount) reads schema 0; version 3 wrote schema 1.
  const options = await byTestId('upgrade-module-count').locator('option').allInnerTexts();
  assert.ok(options.length >= 2, options.join());
  await byTestId('upgrade-module-count').selectOption({ index: options.findIndex((o) => o.startsWith('faulty')) });
  await byTestId('upgrade-check').click();
  // faulty has schema 0 too: refused, nothing stopped.
  const refusal = byTestId('upgrade-refusal');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /schema version 1/);
  const after = await jobVersion();
  assert.equal(after.version, before.version);
  assert.equal(after.start_ms, before.start_ms);
  await screenshot(page, '33-upgrade-refused');
});

test('a job rescales from 2 to 3 subtasks with its state', async () => {
  await openUpgrade();
  await byTestId('upgrade-parallelism-count').fill('3');
  await byTestId('upgrade-parallelism-out').fill('3');
  await byTestId('upgrade-grace').fill('1');
  await byTestId('upgrade-check').click();
  await waitFor('the check', async () => /rescaled 2 → 3/.test(await byTestId('upgrade-answer').innerText()));
  await confirmUpgrade();
  await waitFor('rescaled', async () => {
    const j = await jobVersion();
    return j.upgrade == null && j.version === 4;
  }, LONG);
  await client.post('/api/v1/streams/lines/records', { records: lines(400, 500) });
  await waitFor('counts go on', async () => (await latestCounts()).get('w0') === 72, LONG);
  const detail = await client.get(`/api/v1/jobs/${job}`);
  assert.equal(detail.vertices.find((v) => v.id === 'count').parallelism, 3);
  await page.reload();
  await byTestId('versions').waitFor();
  await screenshot(page, '34-rescaled');
});
