// The HTTP client: same-origin, relative paths, the tenant token as a bearer token.

import { ApiError, apiErrorText } from '../lib/errors';
import { filenameFromDisposition } from '../lib/savepoints';
import type { Answer, JobSpec, SavepointMode, Schemas, UpgradeRequest } from './types';
import { stateUrl, type StateQuery, type StateSource } from '../lib/state';

const BASE = '/api/v1';

let token: string | null = null;
let unauthorized: ((err: ApiError) => void) | null = null;

export function setToken(t: string | null): void {
  token = t;
}

/** Called when a call made with the current token answers 401 (the token was revoked). */
export function onUnauthorized(handler: ((err: ApiError) => void) | null): void {
  unauthorized = handler;
}

interface RequestOptions {
  body?: BodyInit | null;
  json?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  /** Use this token instead of the signed-in one (sign-in checks a candidate). */
  token?: string;
}

async function send(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  const bearer = opts.token ?? token;
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  let body: BodyInit | null | undefined = opts.body;
  if (opts.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.contentType) {
    headers['Content-Type'] = opts.contentType;
  }
  let res: Response;
  try {
    res = await fetch(BASE + path, { method, headers, body: body ?? null, signal: opts.signal ?? null });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(0, null, method, path, e instanceof Error ? e.message : String(e));
  }
  if (!res.ok) {
    const text = await res.text().catch(() => '');
    const err = new ApiError(res.status, apiErrorText(text), method, path);
    if (res.status === 401 && opts.token === undefined && unauthorized) unauthorized(err);
    throw err;
  }
  return res;
}

async function call<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const res = await send(method, path, opts);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Uploads with progress (fetch cannot report upload progress; XMLHttpRequest can). */
function upload<T>(
  path: string,
  body: XMLHttpRequestBodyInit,
  contentType: string | null,
  onProgress?: (loaded: number, total: number) => void,
): Promise<{ status: number; value: T }> {
  return new Promise<{ status: number; value: T }>((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', BASE + path);
    xhr.setRequestHeader('Accept', 'application/json');
    if (token) xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    if (contentType) xhr.setRequestHeader('Content-Type', contentType);
    xhr.upload.onprogress = (e) => {
      if (onProgress && e.lengthComputable) onProgress(e.loaded, e.total);
    };
    xhr.onerror = () => reject(new ApiError(0, null, 'POST', path, 'network error'));
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          const value = (xhr.responseText ? JSON.parse(xhr.responseText) : undefined) as T;
          resolve({ status: xhr.status, value });
        } catch (e) {
          reject(e);
        }
        return;
      }
      const err = new ApiError(xhr.status, apiErrorText(xhr.responseText), 'POST', path);
      if (xhr.status === 401 && unauthorized) unauthorized(err);
      reject(err);
    };
    xhr.send(body);
  });
}

const enc = encodeURIComponent;

/** A GET outside `/api/v1` (`/healthz`, `/metrics`): its status and text, whatever the status. */
async function rootText(path: string, signal?: AbortSignal): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(path, { headers, signal: signal ?? null });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(0, null, 'GET', path, e instanceof Error ? e.message : String(e));
  }
  return { status: res.status, text: await res.text() };
}

export const api = {
  tenant: (candidate?: string) =>
    call<Answer<'whoami'>>('GET', '/tenant', candidate === undefined ? {} : { token: candidate }),
  /** The caller's tenant, polled (quotas and usage). */
  me: (signal?: AbortSignal) => call<Answer<'whoami'>>('GET', '/tenant', signal ? { signal } : {}),
  ownTokens: (signal?: AbortSignal) =>
    call<Answer<'list_own_tokens'>>('GET', '/tenant/tokens', signal ? { signal } : {}).then((c) => c.data),
  issueOwnToken: (label: string) =>
    call<Answer<'issue_own_token'>>('POST', '/tenant/tokens', { json: label.trim() ? { label: label.trim() } : {} }),
  revokeOwnToken: (id: string) => call<Answer<'revoke_own_token'>>('DELETE', `/tenant/tokens/${enc(id)}`),
  /** Admin: the server's Kafka connections (no secrets). */
  serverKafkaConnections: (signal?: AbortSignal) =>
    call<Answer<'list_server_kafka_connections'>>('GET', '/kafka/server-connections', signal ? { signal } : {}).then((c) => c.data),
  /** Admin: the tenants. */
  tenants: (signal?: AbortSignal) =>
    call<Answer<'list_tenants'>>('GET', '/tenants', signal ? { signal } : {}).then((c) => c.data),
  adminTenant: (id: string, signal?: AbortSignal) =>
    call<Answer<'get_tenant'>>('GET', `/tenants/${enc(id)}`, signal ? { signal } : {}),
  createTenant: (name: string, quotas: Record<string, number> | null) =>
    call<Answer<'create_tenant'>>('POST', '/tenants', { json: quotas ? { name, quotas } : { name } }),
  setQuotas: (id: string, quotas: Record<string, number>) =>
    call<Answer<'set_quotas'>>('PUT', `/tenants/${enc(id)}/quotas`, { json: quotas }),
  setTenantSettings: (id: string, manageOwnTokens: boolean) =>
    call<Answer<'set_settings'>>('PUT', `/tenants/${enc(id)}/settings`, { json: { manage_own_tokens: manageOwnTokens } }),
  setKafkaGrants: (id: string, grants: { connection: string; topic_prefixes: string[]; group_prefixes: string[] }[]) =>
    call<Answer<'set_kafka_grants'>>('PUT', `/tenants/${enc(id)}/kafka`, { json: { grants } }),
  disableTenant: (id: string) => call<Answer<'disable_tenant'>>('POST', `/tenants/${enc(id)}/disable`),
  enableTenant: (id: string) => call<Answer<'enable_tenant'>>('POST', `/tenants/${enc(id)}/enable`),
  tenantTokens: (id: string, signal?: AbortSignal) =>
    call<Answer<'list_tokens'>>('GET', `/tenants/${enc(id)}/tokens`, signal ? { signal } : {}).then((c) => c.data),
  issueTenantToken: (id: string, label: string) =>
    call<Answer<'issue_token'>>('POST', `/tenants/${enc(id)}/tokens`, { json: label.trim() ? { label: label.trim() } : {} }),
  revokeTenantToken: (id: string, token: string) =>
    call<Answer<'revoke_token'>>('DELETE', `/tenants/${enc(id)}/tokens/${enc(token)}`),
  /** The server's health (`/healthz`: 200 when it serves, 503 with the store's state otherwise). */
  health: (signal?: AbortSignal) =>
    rootText('/healthz', signal).then(({ text }) => JSON.parse(text) as Schemas['Health']),
  /** Admin: the Prometheus text of `/metrics`. */
  serverMetrics: (signal?: AbortSignal) =>
    rootText('/metrics', signal).then(({ status, text }) => {
      if (status !== 200) throw new ApiError(status, apiErrorText(text), 'GET', '/metrics');
      return text;
    }),
  /** The workers (admin token only). */
  workers: (signal?: AbortSignal, candidate?: string) =>
    call<Answer<'list_workers'>>('GET', '/workers', {
      ...(signal ? { signal } : {}),
      ...(candidate === undefined ? {} : { token: candidate }),
    }).then((c) => c.data),

  jobs: (signal?: AbortSignal) =>
    call<Answer<'list_jobs'>>('GET', '/jobs', signal ? { signal } : {}).then((c) => c.data),
  job: (id: string, signal?: AbortSignal) => call<Answer<'get_job'>>('GET', `/jobs/${enc(id)}`, signal ? { signal } : {}),
  stopJob: (id: string) => call<Answer<'stop_job'>>('POST', `/jobs/${enc(id)}/stop`),
  cancelJob: (id: string) => call<Answer<'cancel_job'>>('POST', `/jobs/${enc(id)}/cancel`),
  restartJob: (id: string) => call<Answer<'restart_job'>>('POST', `/jobs/${enc(id)}/restart`),
  /** Upgrades the job (or, with `dry_run`, only checks the new version against a savepoint). */
  upgradeJob: (id: string, request: UpgradeRequest) =>
    call<Answer<'upgrade_job'>>('POST', `/jobs/${enc(id)}/upgrade`, { json: request }),
  /** The job's versions, oldest first. */
  jobVersions: (id: string, signal?: AbortSignal) =>
    call<Answer<'list_job_versions'>>('GET', `/jobs/${enc(id)}/versions`, signal ? { signal } : {}).then((c) => c.data),
  /** The job's last 100 failures, newest first. */
  jobExceptions: (id: string, signal?: AbortSignal) =>
    call<Answer<'list_job_exceptions'>>('GET', `/jobs/${enc(id)}/exceptions`, signal ? { signal } : {}).then(
      (c) => c.data,
    ),
  /** The job's operator log lines after `after` (oldest first), at least `level`. */
  jobLogs: (id: string, q: { after?: number; level?: string; node?: string }, signal?: AbortSignal) => {
    const p = new URLSearchParams({ limit: '1000' });
    if (q.after) p.set('after', String(q.after));
    if (q.level) p.set('level', q.level);
    if (q.node) p.set('node', q.node);
    return call<Answer<'get_job_logs'>>('GET', `/jobs/${enc(id)}/logs?${p.toString()}`, signal ? { signal } : {}).then(
      (c) => c.data,
    );
  },
  createJob: (spec: JobSpec, fromSavepoint?: string, allowNonRestoredState = false) => {
    const q = new URLSearchParams();
    if (fromSavepoint) q.set('from_savepoint', fromSavepoint);
    if (fromSavepoint && allowNonRestoredState) q.set('allow_non_restored_state', 'true');
    const qs = q.toString();
    return call<Answer<'create_job'>>('POST', `/jobs${qs ? `?${qs}` : ''}`, { json: spec });
  },
  /** The server's OpenAPI document (its schemas check a job spec as it is typed). */
  openApiDocument: (signal?: AbortSignal) => call<unknown>('GET', '/openapi.json', signal ? { signal } : {}),

  checkpoints: (jobId: string, limit: number, signal?: AbortSignal) =>
    call<Answer<'list_checkpoints'>>('GET', `/jobs/${enc(jobId)}/checkpoints?limit=${limit}`, signal ? { signal } : {}),
  checkpoint: (jobId: string, cid: number | string, signal?: AbortSignal) =>
    call<Answer<'get_checkpoint'>>('GET', `/jobs/${enc(jobId)}/checkpoints/${enc(String(cid))}`, signal ? { signal } : {}),
  triggerCheckpoint: (jobId: string) => call<Answer<'trigger_checkpoint'>>('POST', `/jobs/${enc(jobId)}/checkpoints`),

  state: (source: StateSource, operator: string, query: StateQuery, signal?: AbortSignal) =>
    call<Answer<'checkpoint_state' | 'savepoint_state'>>('GET', stateUrl(source, operator, query), signal ? { signal } : {}),

  savepoints: (signal?: AbortSignal) =>
    call<Answer<'list_savepoints'>>('GET', '/savepoints', signal ? { signal } : {}).then((c) => c.data),
  jobSavepoints: (jobId: string, signal?: AbortSignal) =>
    call<Answer<'list_job_savepoints'>>('GET', `/jobs/${enc(jobId)}/savepoints`, signal ? { signal } : {}).then(
      (c) => c.data,
    ),
  savepoint: (id: string, signal?: AbortSignal) =>
    call<Answer<'get_savepoint'>>('GET', `/savepoints/${enc(id)}`, signal ? { signal } : {}),
  triggerSavepoint: (jobId: string, mode: SavepointMode) =>
    call<Answer<'trigger_savepoint'>>('POST', `/jobs/${enc(jobId)}/savepoints`, { json: { mode } }),
  deleteSavepoint: (id: string) => call<void>('DELETE', `/savepoints/${enc(id)}`),
  downloadSavepoint: async (id: string): Promise<{ blob: Blob; filename: string }> => {
    const res = await send('GET', `/savepoints/${enc(id)}/file`);
    const blob = await res.blob();
    return { blob, filename: filenameFromDisposition(res.headers.get('Content-Disposition'), id) };
  },
  importSavepoint: (file: Blob, onProgress?: (loaded: number, total: number) => void) =>
    upload<Answer<'import_savepoint'>>('/savepoints', file, 'application/octet-stream', onProgress).then((r) => r.value),

  streams: (signal?: AbortSignal) =>
    call<Answer<'list_streams'>>('GET', '/streams', signal ? { signal } : {}).then((c) => c.data),
  createStream: (name: string, partitions: number) =>
    call<Answer<'create_stream'>>('POST', '/streams', { json: { name, partitions } }),
  /** Records of one partition from `offset`, at most `limit` (and a page of bytes). */
  streamRecords: (name: string, partition: number, offset: number, limit: number, signal?: AbortSignal) => {
    const q = new URLSearchParams({ partition: String(partition), offset: String(offset), limit: String(limit) });
    return call<Answer<'read_records'>>('GET', `/streams/${enc(name)}/records?${q}`, signal ? { signal } : {});
  },
  pushRecords: (name: string, records: unknown[]) =>
    call<Answer<'append_records'>>('POST', `/streams/${enc(name)}/records`, { json: { records } }).then((c) => c.data),

  modules: (signal?: AbortSignal) =>
    call<Answer<'list_modules'>>('GET', '/modules', signal ? { signal } : {}).then((c) => c.data),
  /** `created` is false when the same bytes were uploaded before (the API answers 200). */
  uploadModule: (
    file: File,
    name: string,
    onProgress?: (loaded: number, total: number) => void,
  ): Promise<{ module: Answer<'upload_module'>; created: boolean }> => {
    const form = new FormData();
    if (name.trim()) form.append('name', name.trim());
    form.append('file', file, file.name);
    // The browser sets the multipart boundary itself.
    return upload<Answer<'upload_module'>>('/modules', form, null, onProgress).then((r) => ({ module: r.value, created: r.status === 201 }));
  },
  deleteModule: (id: string) => call<void>('DELETE', `/modules/${enc(id)}`),
};

/** Saves a blob under a file name, as a download. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
