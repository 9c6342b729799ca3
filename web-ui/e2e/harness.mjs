// The world of the end-to-end tests: a real `weir serve` (the binary cargo built) on a fresh
// data directory, a tenant, a word-count job fed through a stream, and Debian's Chromium
// driven by playwright-core.

import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const targetDir = process.env.CARGO_TARGET_DIR ? resolve(process.env.CARGO_TARGET_DIR) : join(root, 'target');

/** The `weir` binary: `WEIR_BIN`, else `<target>/debug/weir`. */
export const weirBin = process.env.WEIR_BIN ?? join(targetDir, 'debug', 'weir');
/** A built guest component (`faulty`, `wordcount`, ...). */
export const guestPath = (crate) => join(targetDir, 'guests', 'wasm32-wasip2', 'guest', `${crate.replaceAll('-', '_')}.wasm`);
/** Where screenshots go (kept as test artefacts). */
export const artifacts = process.env.WEIR_UI_ARTIFACTS ?? join(targetDir, 'ui-e2e');
export const ADMIN = 'e2e-admin-token';

/** Waits until `check()` returns something truthy (every 100 ms, up to `ms`). */
export async function waitFor(what, check, ms = 60_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The cluster token of the tests that run workers. */
export const CLUSTER_TOKEN = 'e2e-cluster-token-0123456789';

/**
 * Starts `weir serve` on a fresh data directory; resolves once it listens. With
 * `{ cluster: true }` it also listens for workers (`cluster` is then their address); `env`
 * adds to its environment (its configuration, `WEIR_*`).
 */
export async function startServer({ cluster = false, env: extra = {} } = {}) {
  if (!existsSync(weirBin)) throw new Error(`no weir binary at ${weirBin}: build it first (cargo build -p weir) or set WEIR_BIN`);
  const dataDir = mkdtempSync(join(tmpdir(), 'weir-e2e-'));
  const env = { ...process.env, WEIR_ADMIN_TOKEN: ADMIN, RUST_LOG: 'weir=warn', ...extra };
  if (cluster) Object.assign(env, { WEIR_CLUSTER__LISTEN: '127.0.0.1:0', WEIR_CLUSTER__TOKEN: CLUSTER_TOKEN });
  const child = spawn(weirBin, ['--data-dir', dataDir, 'serve', '--listen', '127.0.0.1:0'], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  let clusterAddr = null;
  const url = await new Promise((resolvePromise, reject) => {
    child.once('exit', (code) => reject(new Error(`weir serve exited with ${code}`)));
    lines.on('line', (line) => {
      const c = line.match(/^weir cluster listening on (\S+)/);
      if (c) clusterAddr = c[1];
      const m = line.match(/^weir server listening on (\S+)/);
      if (m) resolvePromise(m[1]);
    });
  });
  return {
    url,
    cluster: clusterAddr,
    dataDir,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Starts `weir worker` registered with the controller at `cluster`; stopped with `stop()`. */
export function startWorker(cluster, name) {
  const dir = mkdtempSync(join(tmpdir(), 'weir-e2e-worker-'));
  const child = spawn(
    weirBin,
    ['worker', '--controller', cluster, '--name', name, '--listen', '127.0.0.1:0', '--slots', '4', '--dir', dir],
    { env: { ...process.env, WEIR_CLUSTER_TOKEN: CLUSTER_TOKEN, RUST_LOG: 'weir=warn' }, stdio: ['ignore', 'ignore', 'inherit'] },
  );
  return {
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A JSON client of the API. */
export function api(url, token) {
  const call = async (method, path, body, contentType = 'application/json') => {
    const headers = { Authorization: `Bearer ${token}` };
    let data;
    if (body !== undefined) {
      headers['Content-Type'] = contentType;
      data = contentType === 'application/json' ? JSON.stringify(body) : body;
    }
    const response = await fetch(url + path, { method, headers, body: data });
    const text = await response.text();
    const json = text ? JSON.parse(text) : null;
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
    return json;
  };
  return {
    get: (path) => call('GET', path),
    post: (path, body) => call('POST', path, body),
    put: (path, body) => call('PUT', path, body),
    upload: (path, bytes, type) => call('POST', path, bytes, type),
  };
}

/** The Tansu broker `.ci/run` installs (`WEIR_TANSU`, else its place in ~/.cache/weir). */
const tansuBin = process.env.WEIR_TANSU ?? join(homedir(), '.cache', 'weir', 'tansu', '0.6.0-libsql', 'bin', 'tansu');

/** A free port on loopback (taken again should another process get it first). */
async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/**
 * Starts a Tansu Kafka broker on loopback, its log in a temporary directory; resolves once
 * it is ready.
 * `createTopic` uses Tansu's own CLI (its `cat produce` writes batches the SQLite engine
 * miscounts: records are produced through Weir's Kafka sink instead).
 */
export async function startTansu() {
  if (!existsSync(tansuBin)) throw new Error(`no Tansu at ${tansuBin}: run \`bash .ci/run tansu\` or set WEIR_TANSU`);
  const port = await freePort();
  const url = `tcp://127.0.0.1:${port}`;
  // SQLite storage, as the engine's Kafka tests use (the memory engine reports no
  // partition ends, so no lag).
  const dir = mkdtempSync(join(tmpdir(), 'weir-e2e-tansu-'));
  const child = spawn(tansuBin, ['broker', '--listener-url', url, '--advertised-listener-url', url, '--storage-engine', 'sqlite://tansu.db'], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  await new Promise((resolvePromise, reject) => {
    child.once('exit', (code) => reject(new Error(`tansu exited with ${code}: ${log}`)));
    for (const out of [child.stdout, child.stderr]) {
      out.on('data', (chunk) => {
        log += chunk;
        if (log.includes('ready in')) resolvePromise();
      });
    }
  });
  const run = (args) =>
    new Promise((resolvePromise, reject) => {
      const c = spawn(tansuBin, [...args, '--broker', url], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      c.stderr.on('data', (d) => (err += d));
      c.once('exit', (code) => (code === 0 ? resolvePromise() : reject(new Error(`tansu ${args.join(' ')}: ${code} ${err}`))));
    });
  return {
    bootstrap: `127.0.0.1:${port}`,
    createTopic: (name, partitions) => run(['topic', 'create', name, '--partitions', String(partitions)]),
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The word-count job of the tests: stream `lines` → tokenizer → wordcount → stream `counts`. */
export function wordcountSpec(name, intervalMs) {
  return {
    name,
    nodes: [
      { id: 'lines', kind: 'source', connector: 'stream', config: { stream: 'lines', follow: true } },
      { id: 'split', kind: 'operator', module: 'builtin:tokenizer', parallelism: 2 },
      { id: 'count', kind: 'operator', module: 'builtin:wordcount', parallelism: 2 },
      { id: 'out', kind: 'sink', connector: 'stream', parallelism: 2, config: { stream: 'counts', partitions: 2 } },
    ],
    edges: [
      { from: 'lines', to: 'split', partitioning: 'rebalance' },
      { from: 'split', to: 'count', partitioning: 'hash' },
      { from: 'count', to: 'out', partitioning: 'forward' },
    ],
    settings: { checkpoint: { interval_ms: intervalMs } },
  };
}

/** Debian's Chromium, headless, with the flags this machine needs. */
export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.WEIR_CHROMIUM ?? '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** Saves a screenshot of `page` as `<artifacts>/<name>.png`. */
export async function screenshot(page, name) {
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, `${name}.png`), fullPage: true });
}
