// A layered left-to-right layout of a job's dataflow graph (sources on the left, sinks on
// the right), in the manner of Sugiyama: layers by longest path, order within layers by
// barycentres to reduce crossings, then coordinates. Pure.

export interface GraphNodeIn {
  id: string;
}

export interface GraphEdgeIn {
  from: string;
  to: string;
  partitioning?: string | null;
}

export interface LayoutOptions {
  nodeWidth: number;
  nodeHeight: number;
  /** Horizontal room between layers (edges and their labels go there). */
  gapX: number;
  gapY: number;
  padding: number;
}

export const DEFAULT_LAYOUT: LayoutOptions = {
  nodeWidth: 200,
  nodeHeight: 96,
  gapX: 90,
  gapY: 28,
  padding: 16,
};

export interface PlacedNode {
  id: string;
  layer: number;
  /** Position within its layer, from the top. */
  order: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  partitioning: string | null;
  /** An SVG path `d` from the upstream node's right side to the downstream node's left. */
  path: string;
  /** Where the partitioning label goes. */
  labelX: number;
  labelY: number;
  /** The edge closes a cycle (it points back to an earlier or the same layer). */
  back: boolean;
}

export interface GraphLayout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
  layers: number;
}

/**
 * Layers by longest path from the sources: a node sits one layer right of its furthest
 * predecessor. Edges that close a cycle (found by a depth-first search in input order) are
 * left out of the layering, so any graph gets a layout.
 */
export function assignLayers(nodes: GraphNodeIn[], edges: GraphEdgeIn[]): { layer: Map<string, number>; back: Set<number> } {
  const ids = new Set(nodes.map((n) => n.id));
  const out = new Map<string, number[]>();
  for (const n of nodes) out.set(n.id, []);
  edges.forEach((e, i) => {
    if (ids.has(e.from) && ids.has(e.to)) out.get(e.from)!.push(i);
  });

  // Depth-first search: an edge to a node still on the stack is a back edge.
  const back = new Set<number>();
  const state = new Map<string, 0 | 1 | 2>(); // 0 new, 1 on stack, 2 done
  const topo: string[] = [];
  const visit = (start: string) => {
    const stack: { id: string; next: number }[] = [{ id: start, next: 0 }];
    state.set(start, 1);
    while (stack.length) {
      const top = stack[stack.length - 1]!;
      const outs = out.get(top.id)!;
      if (top.next < outs.length) {
        const ei = outs[top.next++]!;
        const to = edges[ei]!.to;
        const s = state.get(to) ?? 0;
        if (s === 1) back.add(ei);
        else if (s === 0) {
          state.set(to, 1);
          stack.push({ id: to, next: 0 });
        }
      } else {
        state.set(top.id, 2);
        topo.push(top.id);
        stack.pop();
      }
    }
  };
  // Start from nodes without incoming edges first, so sources are roots.
  const hasIn = new Set<string>();
  edges.forEach((e) => {
    if (ids.has(e.from) && ids.has(e.to) && e.from !== e.to) hasIn.add(e.to);
  });
  for (const n of nodes) if (!hasIn.has(n.id) && (state.get(n.id) ?? 0) === 0) visit(n.id);
  for (const n of nodes) if ((state.get(n.id) ?? 0) === 0) visit(n.id);

  // Reverse post-order is a topological order of the graph without its back edges.
  topo.reverse();
  const layer = new Map<string, number>();
  for (const id of topo) layer.set(id, 0);
  for (const id of topo) {
    for (const ei of out.get(id)!) {
      if (back.has(ei)) continue;
      const to = edges[ei]!.to;
      layer.set(to, Math.max(layer.get(to)!, layer.get(id)! + 1));
    }
  }
  return { layer, back };
}

export function layoutGraph(
  nodes: GraphNodeIn[],
  edges: GraphEdgeIn[],
  options: Partial<LayoutOptions> = {},
): GraphLayout {
  const o = { ...DEFAULT_LAYOUT, ...options };
  // One node per id (the first wins).
  const seen = new Set<string>();
  const unique = nodes.filter((n) => (seen.has(n.id) ? false : (seen.add(n.id), true)));
  const valid = edges.filter((e) => seen.has(e.from) && seen.has(e.to));
  if (unique.length === 0) return { nodes: [], edges: [], width: 0, height: 0, layers: 0 };

  const { layer, back } = assignLayers(unique, valid);
  const layerCount = Math.max(...unique.map((n) => layer.get(n.id)!)) + 1;
  const layers: string[][] = Array.from({ length: layerCount }, () => []);
  for (const n of unique) layers[layer.get(n.id)!]!.push(n.id);

  const preds = new Map<string, string[]>();
  const succs = new Map<string, string[]>();
  for (const n of unique) {
    preds.set(n.id, []);
    succs.set(n.id, []);
  }
  valid.forEach((e, i) => {
    if (back.has(i) || e.from === e.to) return;
    preds.get(e.to)!.push(e.from);
    succs.get(e.from)!.push(e.to);
  });

  // Crossing reduction: sweeps down and up, ordering each layer by the mean position of
  // its neighbours in the layers already placed (ties keep their order).
  const position = new Map<string, number>();
  const place = () => layers.forEach((ids) => ids.forEach((id, i) => position.set(id, i)));
  place();
  const reorder = (ids: string[], neighbours: Map<string, string[]>) => {
    const keyed = ids.map((id, i) => {
      const ns = neighbours.get(id)!;
      const bary = ns.length ? ns.reduce((s, n) => s + position.get(n)!, 0) / ns.length : i;
      return { id, bary, i };
    });
    keyed.sort((a, b) => a.bary - b.bary || a.i - b.i);
    keyed.forEach((k, i) => {
      ids[i] = k.id;
      position.set(k.id, i);
    });
  };
  for (let sweep = 0; sweep < 4; sweep++) {
    for (let l = 1; l < layerCount; l++) reorder(layers[l]!, preds);
    for (let l = layerCount - 2; l >= 0; l--) reorder(layers[l]!, succs);
  }
  // A final downward sweep keeps the sources' order as given when nothing constrains it.
  for (let l = 1; l < layerCount; l++) reorder(layers[l]!, preds);

  const tallest = Math.max(...layers.map((l) => l.length));
  const stepY = o.nodeHeight + o.gapY;
  const placed = new Map<string, PlacedNode>();
  layers.forEach((ids, l) => {
    const offset = ((tallest - ids.length) * stepY) / 2;
    ids.forEach((id, i) => {
      placed.set(id, {
        id,
        layer: l,
        order: i,
        x: o.padding + l * (o.nodeWidth + o.gapX),
        y: o.padding + offset + i * stepY,
        width: o.nodeWidth,
        height: o.nodeHeight,
      });
    });
  });

  const height = o.padding * 2 + tallest * o.nodeHeight + (tallest - 1) * o.gapY;
  const placedEdges: PlacedEdge[] = valid.map((e, i) => {
    const a = placed.get(e.from)!;
    const b = placed.get(e.to)!;
    const isBack = back.has(i) || b.layer <= a.layer;
    if (isBack) {
      // Around underneath: from the bottom of the upstream node to the bottom of the downstream one.
      const sx = a.x + a.width / 2;
      const sy = a.y + a.height;
      const tx = b.x + b.width / 2;
      const ty = b.y + b.height;
      const dip = Math.max(sy, ty) + o.gapY * 1.5;
      const path = `M ${sx} ${sy} C ${sx} ${dip}, ${tx} ${dip}, ${tx} ${ty}`;
      return {
        from: e.from,
        to: e.to,
        partitioning: e.partitioning ?? null,
        path,
        labelX: (sx + tx) / 2,
        labelY: dip - o.gapY * 0.4,
        back: true,
      };
    }
    const sx = a.x + a.width;
    const sy = a.y + a.height / 2;
    const tx = b.x;
    const ty = b.y + b.height / 2;
    const mx = (sx + tx) / 2;
    return {
      from: e.from,
      to: e.to,
      partitioning: e.partitioning ?? null,
      path: `M ${sx} ${sy} C ${mx} ${sy}, ${mx} ${ty}, ${tx} ${ty}`,
      labelX: mx,
      labelY: (sy + ty) / 2,
      back: false,
    };
  });
  const anyBack = placedEdges.some((e) => e.back);

  return {
    nodes: unique.map((n) => placed.get(n.id)!),
    edges: placedEdges,
    width: o.padding * 2 + layerCount * o.nodeWidth + (layerCount - 1) * o.gapX,
    height: anyBack ? height + o.gapY * 2 : height,
    layers: layerCount,
  };
}
