import { useMemo, useRef } from 'preact/hooks';
import type { CheckpointDetail } from '../api/types';
import { useWidth } from '../hooks';
import { PHASES, timelineGeometry } from '../lib/timeline';

/** Per subtask a bar from the trigger: start delay, alignment, sync, async; then the ack. */
export function Timeline({ detail, parallelism, now }: { detail: CheckpointDetail; parallelism: Map<string, number>; now: number }) {
  const box = useRef<HTMLDivElement>(null);
  const width = useWidth(box, 800);
  const narrow = width < 560;
  const tl = useMemo(
    () =>
      timelineGeometry(detail, parallelism, now, {
        width: Math.max(320, width),
        labelWidth: narrow ? 84 : 130,
        rowHeight: 16,
      }),
    [detail, parallelism, now, width],
  );
  return (
    <div ref={box} class="timeline-box">
      <div class="legend">
        {PHASES.map((p) => (
          <span class="legend-item" key={p.phase}>
            <span class={`swatch phase-${p.phase}`} />
            {p.label}
          </span>
        ))}
        <span class="legend-item">
          <span class="swatch ack" />
          Acknowledged
        </span>
        <span class="legend-item">
          <span class="swatch pending" />
          No acknowledgement
        </span>
      </div>
      <svg data-testid="checkpoint-timeline" class="timeline" width={tl.width} height={tl.height} viewBox={`0 0 ${tl.width} ${tl.height}`} role="img" aria-label="Checkpoint timeline per subtask">
        <defs>
          <pattern id="tl-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
            <rect width="6" height="6" class="hatch-bg" />
            <rect width="3" height="6" class="hatch-fg" />
          </pattern>
        </defs>
        {tl.ticks.map((t) => (
          <g key={t.ms} class="tick">
            <line x1={t.x} x2={t.x} y1={tl.axisY} y2={tl.height} />
            <text x={t.x} y={tl.axisY - 4} text-anchor={t.x > tl.plotRight - 20 ? 'end' : 'middle'}>
              {t.label}
            </text>
          </g>
        ))}
        {tl.groups.map((g, i) => (
          <rect key={g.operator} class={`group-band${i % 2 ? ' odd' : ''}`} x={0} y={g.y - 1} width={tl.width} height={g.height + 2} />
        ))}
        {tl.rows.map((r) => (
          <g key={`${r.operator}#${r.subtask}`} class={`tl-row${r.acked ? '' : ' pending'}`} data-operator={r.operator} data-subtask={r.subtask}>
            <title>{r.title}</title>
            <text x={tl.plotLeft - 6} y={r.y + 12} text-anchor="end" class="tl-label">
              {`${r.operator.length > (narrow ? 8 : 14) ? `${r.operator.slice(0, narrow ? 7 : 13)}…` : r.operator} #${r.subtask}`}
            </text>
            {r.segments.map((s) => (
              <rect key={s.phase} class={`phase-${s.phase}`} x={s.x} y={r.y + 3} width={Math.max(s.width, s.endMs > s.startMs ? 0.75 : 0)} height={10} />
            ))}
            {r.ackX !== null && <line class="ack" x1={r.ackX} x2={r.ackX} y1={r.y + 1} y2={r.y + 15} />}
            {!r.acked && r.pendingX !== null && (
              <rect class="pending-bar" x={tl.plotLeft} y={r.y + 5} width={Math.max(0, r.pendingX - tl.plotLeft)} height={6} />
            )}
          </g>
        ))}
      </svg>
    </div>
  );
}
