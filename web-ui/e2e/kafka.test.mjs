// End to end with a Kafka broker (Tansu, as in the engine's Kafka tests): a job (`feed`:
// stream → Kafka sink) writes what the test pushes to a topic; a job reading the topic shows
// its consumer lag and watermark live in the operators table and the charts; the lag grows while records wait, falls to zero once the source caught up and the
// producer paused, and grows and falls again when the producer resumes, the watermark
// moving on. The tenant's page shows its grant; the admin creates a tenant with quotas and a
// grant in the UI, which that tenant's page shows and the other's does not. Screenshots go
// to <target>/ui-e2e.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, api, launchBrowser, screenshot, startServer, startTansu, waitFor } from './harness.mjs';

const LONG = 60_000;
const TOPIC = 'acme.ticks';
let broker, server, token, client, browser, page;

/** Event time of record 0: two minutes ago. */
const BASE = Date.now() - 120_000;

/** Records `from..to`, their event time `BASE + i` ms. */
const ticks = (from, to) => Array.from({ length: to - from }, (_, k) => ({ value: { i: from + k, t: BASE + from + k } }));

/** Pushes records into the topic, through the `feed` job. */
const produce = (records) => client.post('/api/v1/streams/feed/records', { records });

before(async () => {
  broker = await startTansu();
  await broker.createTopic(TOPIC, 1);
  server = await startServer({ env: { WEIR_KAFKA_CONNECTIONS__MAIN__BOOTSTRAP_SERVERS: `["${broker.bootstrap}"]` } });
  const admin = api(server.url, ADMIN);
  const created = await admin.post('/api/v1/tenants', { name: 'acme' });
  await admin.put(`/api/v1/tenants/${created.tenant.id}/kafka`, {
    grants: [{ connection: 'main', topic_prefixes: ['acme.'], group_prefixes: ['acme.'] }],
  });
  token = created.token;
  client = api(server.url, token);
  await client.post('/api/v1/streams', { name: 'feed', partitions: 1 });
  await client.post('/api/v1/jobs', {
    name: 'feed',
    nodes: [
      { id: 'feed', kind: 'source', connector: 'stream', config: { stream: 'feed', follow: true } },
      { id: 'topic', kind: 'sink', connector: 'kafka', config: { connection: 'main', topic: TOPIC, delivery: 'at_least_once', value_format: 'json' } },
    ],
    edges: [{ from: 'feed', to: 'topic' }],
    settings: { checkpoint: { interval_ms: 200 } },
  });
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(LONG);
});

after(async () => {
  await browser?.close();
  await server?.stop();
  await broker?.stop();
});

test("a Kafka source's lag and watermark are shown live and move when the producer pauses and resumes", async () => {
  await produce(ticks(0, 3000));
  const job = (
    await client.post('/api/v1/jobs', {
      name: 'ticks',
      nodes: [
        {
          id: 'ticks',
          kind: 'source',
          connector: 'kafka',
          config: {
            connection: 'main',
            topics: [TOPIC],
            start: 'earliest',
            value_format: 'json',
            event_time: { field: 't' },
            batch_size: 50,
            records_per_second: 500,
            out_of_orderness_ms: 0,
          },
        },
        { id: 'out', kind: 'sink', connector: 'blackhole' },
      ],
      edges: [{ from: 'ticks', to: 'out' }],
      settings: { checkpoint: { interval_ms: 500 } },
    })
  ).id;
  await page.goto(server.url);
  await page.getByTestId('token-input').fill(token);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('jobs-table').waitFor();
  await page.goto(`${server.url}/#/jobs/${job}`);
  const chart = page.getByTestId('chart-kafka-lag');
  /** The source's latest Kafka lag in the chart. */
  const lag = async () => {
    if ((await chart.count()) === 0) return null;
    const v = (await chart.getAttribute('data-latest')).split(',')[0];
    return v === '' ? null : Number(v);
  };
  const watermark = async () => (await client.get(`/api/v1/jobs/${job}`)).vertices[0].subtasks[0].watermark_ms;
  const cell = page.getByTestId('operator-event-time').first();
  // Behind: 3,000 records read at 500/s.
  await waitFor('behind, plotted', async () => (await lag()) > 500);
  assert.match(await cell.innerText(), /Kafka lag [\d,]+/);
  await screenshot(page, '11-kafka-lag');
  // The producer pauses: the source catches up, its watermark at the last record's time.
  await waitFor('caught up', async () => (await lag()) === 0);
  await waitFor('the watermark at the last record', async () => (await watermark()) >= BASE + 2999 - 1);
  assert.match(await cell.innerText(), /Kafka lag 0/);
  const mark = await watermark();
  // It resumes: behind again, then caught up with the watermark further on.
  // (Enough that the lag lasts several polls: the source reads a second's worth at once
  // after it was idle.)
  await produce(ticks(3000, 9000));
  await waitFor('behind again', async () => (await lag()) > 0);
  await waitFor('caught up again', async () => (await lag()) === 0 && (await watermark()) >= BASE + 8999 - 1);
  assert.ok((await watermark()) > mark);
  // The chart saw all of it: some points behind, some caught up.
  assert.ok(Number(await chart.getAttribute('data-points')) >= 4);
  await screenshot(page, '12-kafka-caught-up');
  await client.post(`/api/v1/jobs/${job}/cancel`);
});

test("the tenant's page shows its Kafka grant", async () => {
  await page.getByTestId('nav-account').click();
  const grant = page.getByTestId('kafka-grant');
  await grant.waitFor();
  assert.match(await grant.innerText(), /main\s+acme\.\s+acme\./);
});

test('the admin creates a tenant with quotas and a Kafka grant, which its page shows and no other tenant sees', async () => {
  await page.getByTestId('sign-out').click();
  await page.getByTestId('token-input').fill(ADMIN);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('nav-tenants').click();
  await page.getByTestId('tenant-name').fill('beta');
  await page.getByTestId('tenant-create').click();
  const betaToken = (await page.getByTestId('tenant-token').innerText()).trim();
  await page.getByTestId('tenant-created').getByRole('link', { name: 'beta' }).click();
  const detail = page.getByTestId('tenant-detail');
  await detail.waitFor();
  await page.getByTestId('quota-max_jobs').fill('3');
  await page.getByTestId('quota-max_storage_bytes').fill('64M');
  await page.getByTestId('quota-save').click();
  await page.getByTestId('quota-saved').waitFor();
  await page.getByTestId('grant-add').click();
  await page.getByTestId('grant-connection').fill('main');
  await page.getByTestId('grant-topics').fill('beta.');
  await page.getByTestId('grant-groups').fill('beta.');
  await page.getByTestId('grants-save').click();
  await page.getByTestId('grants-saved').waitFor();
  // The server's connection, without its secrets, lists who is granted it.
  const main = page.locator('[data-testid="server-kafka-row"][data-connection="main"]');
  await waitFor('both tenants are granted main', async () =>
    /acme, beta/.test(await main.getByTestId('server-kafka-granted').innerText()),
  );
  assert.match(await main.innerText(), new RegExp(broker.bootstrap.replaceAll('.', '\\.')));
  await screenshot(page, '16-admin-tenant');
  // Beta signs in and sees them on its own page.
  await page.getByTestId('sign-out').click();
  await page.getByTestId('token-input').fill(betaToken);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('jobs-table').or(page.getByTestId('jobs-empty')).first().waitFor();
  await page.getByTestId('nav-account').click();
  const jobs = page.locator('[data-testid="quota-row"][data-quota="max_jobs"]');
  await waitFor('the quota the admin set', async () => (await jobs.getByTestId('quota-limit').innerText()) === '3');
  assert.match(await page.locator('[data-testid="quota-row"][data-quota="max_storage_bytes"]').getByTestId('quota-limit').innerText(), /64\.0 MiB/);
  assert.match(await page.getByTestId('kafka-grant').innerText(), /main\s+beta\.\s+beta\./);
  // Acme sees only its own grant, none of beta's.
  await page.getByTestId('sign-out').click();
  await page.getByTestId('token-input').fill(token);
  await page.getByTestId('sign-in').click();
  await page.getByTestId('nav-account').click();
  await page.getByTestId('kafka-grant').waitFor();
  const text = await page.getByTestId('account-kafka').innerText();
  assert.ok(!text.includes('beta'), text);
});
