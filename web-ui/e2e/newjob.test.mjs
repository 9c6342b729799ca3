// End to end: the "New job" page against a real `weir serve`. From the jobs page to the page,
// the word-count template in the editor and the form, a schema error shown at its line as it
// is typed and gone once fixed, the form and the text editing the same spec, a module the
// server refuses, a missing stream named at its line and created from the page, a plan the
// server refuses shown at the line it names, the job submitted, running and counting what is
// pushed to its input; the other templates planned by the server; a job started from a
// savepoint. Screenshots go to <target>/ui-e2e.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ADMIN, api, guestPath, launchBrowser, screenshot, startServer, waitFor } from './harness.mjs';

const LONG = 60_000;
let server, token, client, browser, page;

before(async () => {
  // A Kafka connection nothing listens on: the Kafka template plans against it (planning
  // connects to nothing); its job is cancelled right away.
  server = await startServer({ env: { WEIR_KAFKA_CONNECTIONS__MAIN__BOOTSTRAP_SERVERS: '["127.0.0.1:9"]' } });
  const admin = api(server.url, ADMIN);
  const created = await admin.post('/api/v1/tenants', { name: 'builder' });
  await admin.put(`/api/v1/tenants/${created.tenant.id}/kafka`, {
    grants: [{ connection: 'main', topic_prefixes: ['builder.'], group_prefixes: ['builder.'] }],
  });
  token = created.token;
  client = api(server.url, token);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.setDefaultTimeout(LONG);
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

const byTestId = (id) => page.getByTestId(id);
const editor = () => byTestId('newjob-editor');
/** The line (from 1) of the first `needle` in `text`. */
const lineOf = (text, needle) => {
  const at = text.indexOf(needle);
  assert.ok(at >= 0, `${needle} is in the spec`);
  return text.slice(0, at).split('\n').length;
};
/** Selects `[from, to)` of the editor's text, as a person would before typing over it. */
const select = (from, to) =>
  editor().evaluate((el, [a, b]) => {
    el.focus();
    el.setSelectionRange(a, b);
  }, [from, to]);
/** The line the editor's caret is on. */
const caretLine = () => editor().evaluate((el) => el.value.slice(0, el.selectionStart).split('\n').length);
const problem = (pointer) => page.locator(`[data-testid="spec-error"][data-pointer="${pointer}"]`);

test('the jobs page leads to a new job; the word-count template fills the editor and the form', async () => {
  await page.goto(server.url + '/');
  await byTestId('token-input').fill(token);
  await byTestId('sign-in').click();
  const empty = byTestId('jobs-empty');
  await empty.waitFor();
  await empty.getByRole('link', { name: 'Create one' }).waitFor();
  await byTestId('new-job').click();
  await page.waitForURL('**/#/jobs/new');
  await byTestId('template-wordcount').click();
  await waitFor('the template in the editor', async () => (await editor().inputValue()).includes('builtin:tokenizer'));
  // Checked against the server's own schema.
  await waitFor('the spec is valid', async () => /server’s/.test(await byTestId('spec-ok').innerText()));
  assert.equal(await byTestId('form-node').count(), 4);
  assert.equal(await byTestId('form-name').inputValue(), 'wordcount');
  assert.equal(await byTestId('form-parallelism-1').inputValue(), '2');
  assert.match(await byTestId('form-module-2').inputValue(), /^builtin:wordcount$/);
  assert.match(await byTestId('template-needs').innerText(), /Stream lines must exist/);
  await screenshot(page, '20-newjob-template');
});

test('a bad value shows a schema error at its line as it is typed, and the error goes once it is fixed', async () => {
  const text = await editor().inputValue();
  // `split`'s parallelism, 2, typed over with "x".
  const at = text.indexOf('"parallelism": 2') + '"parallelism": '.length;
  const line = lineOf(text, '"parallelism": 2');
  await select(at, at + 1);
  await page.keyboard.type('"x"');
  const error = problem('/nodes/1/parallelism');
  await error.waitFor();
  assert.equal(await error.getAttribute('data-line'), String(line));
  assert.equal(await error.getAttribute('data-source'), 'schema');
  assert.equal(await error.innerText(), `line ${line}: nodes/1/parallelism must be an integer, not "x"`);
  assert.equal(await page.locator('.gutter .bad').innerText(), String(line));
  assert.ok(await byTestId('newjob-submit').isDisabled(), 'a spec with problems is not submitted');
  assert.equal(await byTestId('form-parallelism-1').inputValue(), '');
  // A click on the error puts the caret on its line.
  await select(0, 0);
  await error.click();
  assert.equal(await caretLine(), line);
  await screenshot(page, '21-newjob-schema-error');
  // Fixed: 3 typed over "x"; the form follows the text.
  await select(at, at + 3);
  await page.keyboard.type('3');
  await byTestId('spec-ok').waitFor();
  assert.equal(await byTestId('spec-error').count(), 0);
  assert.equal(await byTestId('form-parallelism-1').inputValue(), '3');
  // And the text follows the form.
  await byTestId('form-name').fill('wordcount-ui');
  await waitFor('the name in the text', async () => (await editor().inputValue()).includes('"name": "wordcount-ui"'));
  await byTestId('form-interval').fill('400');
  await waitFor('the interval in the text', async () => (await editor().inputValue()).includes('"interval_ms": 400'));
  assert.ok(await byTestId('newjob-submit').isEnabled());
});

test("a module the server refuses says why, in place", async () => {
  await byTestId('newjob-module-input').setInputFiles({
    name: 'other.wasm',
    mimeType: 'application/wasm',
    buffer: readFileSync(guestPath('weir-test-other-world')),
  });
  await byTestId('newjob-module-submit').click();
  const status = page.locator('[data-testid="newjob-module-status"][data-state="error"]');
  await status.waitFor();
  assert.match(await status.innerText(), /^Refused: module `other` does not implement the weir:operator/);
  assert.equal((await client.get('/api/v1/modules')).data.length, 0);
});

test('a stream the job reads that does not exist is refused at its line, and created from the page', async () => {
  const missing = page.locator('[data-testid="stream-missing"][data-stream="lines"]');
  await missing.waitFor();
  const created = await byTestId('stream-created-on-submit').innerText();
  assert.match(created, /counts does not exist yet: sink out creates it with 2 partition/);
  const text = await editor().inputValue();
  await byTestId('newjob-submit').click();
  const refused = page.locator('[data-testid="spec-error"][data-source="server"]');
  await refused.waitFor();
  assert.equal(await refused.getAttribute('data-pointer'), '/nodes/0/config/stream');
  assert.equal(await refused.getAttribute('data-line'), String(lineOf(text, '"stream": "lines"')));
  assert.match(await refused.innerText(), /stream `lines` does not exist/);
  await screenshot(page, '22-newjob-missing-stream');
  await missing.locator('input[type="number"]').fill('2');
  await missing.getByTestId('create-stream').click();
  await byTestId('streams-ready').waitFor();
  const lines = (await client.get('/api/v1/streams')).data.find((s) => s.name === 'lines');
  assert.equal(lines?.partitions, 2);
});

test('a plan the server refuses is shown at the line it names', async () => {
  const good = await editor().inputValue();
  const bad = good.replace('"to": "count"', '"to": "nowhere"');
  await editor().fill(bad);
  await byTestId('spec-ok').waitFor();
  await byTestId('newjob-submit').click();
  const refused = page.locator('[data-testid="spec-error"][data-source="server"]');
  await refused.waitFor();
  const line = lineOf(bad, '"to": "nowhere"');
  assert.equal(await refused.getAttribute('data-pointer'), '/edges/1/to');
  assert.equal(await refused.getAttribute('data-line'), String(line));
  assert.match(await refused.innerText(), new RegExp(`^line ${line}: the server refused it: edge split -> nowhere: unknown node \`nowhere\``));
  assert.equal(await page.locator('.gutter .bad').innerText(), String(line));
  await select(0, 0);
  await refused.click();
  assert.equal(await caretLine(), line);
  await screenshot(page, '23-newjob-plan-refused');
  // Edited: the refusal is of a spec that is no more.
  await editor().fill(good);
  await byTestId('spec-ok').waitFor();
});

test('the job is submitted, runs, and counts what is pushed to its input', async () => {
  await byTestId('newjob-submit').click();
  await page.waitForURL(/#\/jobs\/(?!new)[^/]+$/);
  const id = decodeURIComponent(page.url().split('#/jobs/')[1]);
  await waitFor('running', async () => /running/.test(await byTestId('job-status').innerText()));
  const job = await client.get(`/api/v1/jobs/${id}`);
  assert.equal(job.name, 'wordcount-ui');
  assert.equal(job.spec.nodes[1].parallelism, 3);
  assert.equal(job.spec.settings.checkpoint.interval_ms, 400);
  await screenshot(page, '24-newjob-running');
  await client.post('/api/v1/streams/lines/records', { records: [{ value: 'river weir river' }, { value: 'weir' }] });
  await waitFor('the counts', async () => {
    const counts = {};
    for (const p of [0, 1]) {
      for (const r of (await client.get(`/api/v1/streams/counts/records?partition=${p}&limit=1000`)).data) counts[r.key] = r.value;
    }
    return counts.river === 2 && counts.weir === 2;
  });
  await page.goto(`${server.url}/#/streams`);
  const row = page.locator('[data-testid="stream-row"][data-stream="counts"]');
  await waitFor('the output stream fills', async () => Number(await row.getByTestId('stream-records').innerText()) >= 2);
  assert.match(await row.getByTestId('stream-writers').innerText(), /wordcount-ui/);
  await screenshot(page, '25-newjob-output');
});

test('the other templates are planned by the server as they are', async () => {
  for (const [template, shows] of [
    ['nexmark', /builtin:nexmark-q1/],
    ['window', /builtin:tumbling-window/],
    // The tenant's grant: its connection and topic prefix.
    ['kafka', /"topics": \[\s*"builder\.bids"\s*\]/],
  ]) {
    await page.goto(`${server.url}/#/jobs/new`);
    await byTestId(`template-${template}`).click();
    await waitFor(`the ${template} template`, async () => shows.test(await editor().inputValue()));
    await byTestId('spec-ok').waitFor();
    await byTestId('newjob-submit').click();
    await page.waitForURL(/#\/jobs\/(?!new)[^/]+$/);
    const id = decodeURIComponent(page.url().split('#/jobs/')[1]);
    await byTestId('job-graph').waitFor();
    if (template === 'kafka') await client.post(`/api/v1/jobs/${id}/cancel`);
  }
  await screenshot(page, '26-newjob-window-job');
});

test('a job starts from a savepoint chosen on the page', async () => {
  const jobs = (await client.get('/api/v1/jobs')).data;
  const source = jobs.find((j) => j.name === 'wordcount-ui');
  let sp = await client.post(`/api/v1/jobs/${source.id}/savepoints`, { mode: 'keep_running' });
  sp = await waitFor('the savepoint', async () => {
    const s = await client.get(`/api/v1/savepoints/${sp.id}`);
    return s.status === 'completed' && s;
  });
  await page.goto(`${server.url}/#/jobs/new`);
  await byTestId('template-wordcount').click();
  await byTestId('spec-ok').waitFor();
  await byTestId('form-name').fill('wordcount-restored');
  await byTestId('newjob-savepoint').selectOption(sp.id);
  await byTestId('newjob-allow-non-restored').check();
  await screenshot(page, '27-newjob-from-savepoint');
  await byTestId('newjob-submit').click();
  await page.waitForURL(/#\/jobs\/(?!new)[^/]+$/);
  const id = decodeURIComponent(page.url().split('#/jobs/')[1]);
  const job = await client.get(`/api/v1/jobs/${id}`);
  assert.equal(job.name, 'wordcount-restored');
  assert.equal(job.restored_from?.savepoint, sp.id);
});

test('the page works in a narrow window', async () => {
  await page.setViewportSize({ width: 420, height: 900 });
  await page.goto(`${server.url}/#/jobs/new`);
  await byTestId('template-nexmark').click();
  await byTestId('spec-ok').waitFor();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the page scrolls sideways by ${overflow} px`);
  await screenshot(page, '28-newjob-narrow');
  await page.setViewportSize({ width: 1400, height: 1000 });
});
