import type { ComponentChildren, HTMLAttributes } from 'preact';
import { statusTone } from '../lib/jobs';

/** A status as a coloured badge. */
export function Status({ status, label, ...rest }: { status: string; label?: string } & HTMLAttributes<HTMLSpanElement>) {
  return (
    <span class={`badge tone-${statusTone(status)}`} data-status={status} {...rest}>
      {label ?? status.replace(/_/g, ' ')}
    </span>
  );
}

/** Backpressure (0 to 1) as a small bar with its percentage. */
export function Pressure({ share }: { share: number }) {
  const pct = Math.round(Math.min(1, Math.max(0, share || 0)) * 100);
  const level = share > 0.5 ? 'high' : share > 0.1 ? 'low' : 'none';
  return (
    <span class={`pressure pressure-${level}`} title={`backpressure ${pct}%`}>
      <span class="pressure-bar">
        <span class="pressure-fill" style={{ width: `${pct}%` }} />
      </span>
      <span class="pressure-text">{pct}%</span>
    </span>
  );
}

export function Empty({ testid, children }: { testid?: string; children: ComponentChildren }) {
  return (
    <div class="empty" data-testid={testid}>
      {children}
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return <div class="loading">Loading {what}…</div>;
}
