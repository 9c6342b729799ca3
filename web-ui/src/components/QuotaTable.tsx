import type { TenantView } from '../api/types';
import { quotaRows } from '../lib/account';
import { formatPercent } from '../lib/format';

/** A tenant's use of every quota: used, limit and share. */
export function QuotaTable({ tenant }: { tenant: Pick<TenantView, 'quotas' | 'usage'> }) {
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table" data-testid="quota-table">
        <thead>
          <tr>
            <th>Quota</th>
            <th class="num">Used</th>
            <th class="num">Limit</th>
            <th>Share</th>
          </tr>
        </thead>
        <tbody>
          {quotaRows(tenant).map((r) => (
            <tr key={r.key} data-testid="quota-row" data-quota={r.key}>
              <td>{r.what}</td>
              <td class="num" data-testid="quota-used">
                {r.used ?? '—'}
              </td>
              <td class="num" data-testid="quota-limit">
                {r.limit}
              </td>
              <td>
                {r.share != null && (
                  <span class={`pressure pressure-${r.share > 0.9 ? 'high' : r.share > 0.7 ? 'low' : 'none'}`}>
                    <span class="pressure-bar">
                      <span class="pressure-fill" style={{ width: `${Math.round(r.share * 100)}%` }} />
                    </span>
                    <span class="pressure-text">{formatPercent(r.share)}</span>
                  </span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
