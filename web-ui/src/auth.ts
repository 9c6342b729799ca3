// Where the token is kept between visits, and whose it is.

import { api } from './api/client';
import type { TenantView } from './api/types';
import { ApiError } from './lib/errors';

/** Who a token signs in: a tenant (its jobs, modules, savepoints), or the admin (workers). */
export type Identity = { kind: 'tenant'; tenant: TenantView } | { kind: 'admin' };

/**
 * Whose token this is (`candidate`, else the signed-in one): `GET /tenant` answers for a
 * tenant's; the admin's is refused there (403) and accepted by the admin-only workers list.
 */
export async function whoIs(candidate?: string): Promise<Identity> {
  try {
    return { kind: 'tenant', tenant: await api.tenant(candidate) };
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 403 && err.apiMessage?.includes('admin token'))) throw err;
    await api.workers(undefined, candidate);
    return { kind: 'admin' };
  }
}

const KEY = 'weir.token';

export function loadToken(): string | null {
  try {
    return localStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  try {
    localStorage.setItem(KEY, token);
  } catch {
    // Private mode: the token lasts as long as the page.
  }
}

export function forgetToken(): void {
  try {
    localStorage.removeItem(KEY);
  } catch {
    // Nothing kept.
  }
}
