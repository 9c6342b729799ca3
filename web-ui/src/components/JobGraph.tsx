import { useMemo } from 'preact/hooks';
import type { Edge, Module, Vertex } from '../api/types';
import { formatPercent, formatRate } from '../lib/format';
import { layoutGraph } from '../lib/graph';
import { pressureLevel, vertexKindLine, vertexWhat } from '../lib/jobs';

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** The job's dataflow graph, left to right, with live figures per node. */
export function JobGraph({ vertices, edges, modules }: { vertices: Vertex[]; edges: Edge[]; modules: Module[] | null }) {
  // The layout depends on the graph's shape only, not on the live figures.
  const shape = JSON.stringify([vertices.map((v) => v.id), edges.map((e) => [e.from, e.to, e.partitioning])]);
  const layout = useMemo(() => layoutGraph(vertices, edges), [shape]);
  const byId = new Map(vertices.map((v) => [v.id, v]));

  return (
    <div class="graph-scroll">
      <svg
        data-testid="job-graph"
        class="job-graph"
        width={layout.width}
        height={layout.height}
        viewBox={`0 0 ${layout.width} ${layout.height}`}
        role="img"
        aria-label={`Dataflow graph: ${vertices.map((v) => v.id).join(', ')}`}
      >
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" />
          </marker>
        </defs>
        {layout.edges.map((e) => (
          <g class={`graph-edge${e.back ? ' back' : ''}`} key={`${e.from}->${e.to}`} data-from={e.from} data-to={e.to}>
            <path d={e.path} marker-end="url(#arrow)" />
            {e.partitioning && (
              <text x={e.labelX} y={e.labelY - 6} text-anchor="middle" class="edge-label">
                {e.partitioning}
              </text>
            )}
          </g>
        ))}
        {layout.nodes.map((n) => {
          const v = byId.get(n.id)!;
          const level = pressureLevel(v.backpressure);
          const what = vertexWhat(v, modules);
          const showIn = v.kind !== 'source';
          const showOut = v.kind !== 'sink';
          return (
            <g
              key={n.id}
              data-testid="graph-node"
              data-node-id={n.id}
              class={`graph-node kind-${v.kind} pressure-${level}`}
              transform={`translate(${n.x} ${n.y})`}
            >
              <title>
                {`${v.id} (${v.kind}, parallelism ${v.parallelism})${what ? `\n${what}` : ''}\n` +
                  `in ${formatRate(v.records_in_per_second)}, out ${formatRate(v.records_out_per_second)}, ` +
                  `backpressure ${formatPercent(v.backpressure)}`}
              </title>
              <rect width={n.width} height={n.height} rx="8" class="node-box" />
              <rect width="6" height={n.height} rx="3" class="node-kind-stripe" />
              <text x="16" y="22" class="node-id">
                {clip(v.id, 22)}
              </text>
              <text x="16" y="40" class="node-meta">
                {vertexKindLine(v)}
              </text>
              <text x="16" y="56" class="node-meta">
                {clip(what, 28)}
              </text>
              <text x="16" y="76" class="node-rates">
                {showIn ? `in ${formatRate(v.records_in_per_second)}` : ''}
                {showIn && showOut ? '  ·  ' : ''}
                {showOut ? `out ${formatRate(v.records_out_per_second)}` : ''}
              </text>
              <rect x="16" y="84" width={n.width - 32} height="5" rx="2.5" class="bp-track" />
              <rect
                x="16"
                y="84"
                width={Math.max(0, Math.min(1, v.backpressure || 0)) * (n.width - 32)}
                height="5"
                rx="2.5"
                class="bp-fill"
              />
            </g>
          );
        })}
      </svg>
    </div>
  );
}
