import { describe, expect, it } from 'vitest';
import { assignLayers, layoutGraph, type GraphLayout } from './graph';

const n = (...ids: string[]) => ids.map((id) => ({ id }));
const e = (from: string, to: string, partitioning: string | null = null) => ({ from, to, partitioning });

function node(l: GraphLayout, id: string) {
  const found = l.nodes.find((x) => x.id === id);
  if (!found) throw new Error(`no node ${id}`);
  return found;
}

describe('layoutGraph', () => {
  it('lays out nothing for an empty graph', () => {
    const l = layoutGraph([], []);
    expect(l).toEqual({ nodes: [], edges: [], width: 0, height: 0, layers: 0 });
  });

  it('puts a chain left to right, one node per layer, on one line', () => {
    const l = layoutGraph(n('lines', 'split', 'count', 'out'), [
      e('lines', 'split', 'rebalance'),
      e('split', 'count', 'hash'),
      e('count', 'out', 'forward'),
    ]);
    expect(l.layers).toBe(4);
    expect(l.nodes.map((x) => x.layer)).toEqual([0, 1, 2, 3]);
    const xs = l.nodes.map((x) => x.x);
    expect(xs).toEqual([...xs].sort((a, b) => a - b));
    expect(new Set(l.nodes.map((x) => x.y)).size).toBe(1);
    expect(l.edges.map((x) => x.partitioning)).toEqual(['rebalance', 'hash', 'forward']);
    expect(l.edges.every((x) => !x.back)).toBe(true);
  });

  it('lays out a diamond: two branches in the middle layer, the join after both', () => {
    const l = layoutGraph(n('src', 'left', 'right', 'join'), [
      e('src', 'left'),
      e('src', 'right'),
      e('left', 'join'),
      e('right', 'join'),
    ]);
    expect(l.layers).toBe(3);
    expect(node(l, 'src').layer).toBe(0);
    expect(node(l, 'left').layer).toBe(1);
    expect(node(l, 'right').layer).toBe(1);
    expect(node(l, 'join').layer).toBe(2);
    // The branches do not overlap.
    const a = node(l, 'left');
    const b = node(l, 'right');
    expect(a.x).toBe(b.x);
    expect(Math.abs(a.y - b.y)).toBeGreaterThanOrEqual(a.height);
    // The source and the join sit between the branches, vertically centred.
    const mid = (a.y + b.y) / 2;
    expect(node(l, 'src').y).toBeCloseTo(mid);
    expect(node(l, 'join').y).toBeCloseTo(mid);
    // The canvas holds every node.
    for (const x of l.nodes) {
      expect(x.x + x.width).toBeLessThanOrEqual(l.width);
      expect(x.y + x.height).toBeLessThanOrEqual(l.height);
    }
  });

  it('places a node after its furthest predecessor (longest path)', () => {
    // src → a → b → sink, and a shortcut src → sink.
    const l = layoutGraph(n('src', 'a', 'b', 'sink'), [e('src', 'a'), e('a', 'b'), e('b', 'sink'), e('src', 'sink')]);
    expect(node(l, 'sink').layer).toBe(3);
  });

  it('orders a layer to avoid crossings', () => {
    // a → d and b → c; c is listed before d, but d belongs next to a (top).
    const l = layoutGraph(n('a', 'b', 'c', 'd'), [e('a', 'd'), e('b', 'c')]);
    expect(node(l, 'a').order).toBe(0);
    expect(node(l, 'd').order).toBe(0);
    expect(node(l, 'c').order).toBe(1);
    expect(node(l, 'd').y).toBeLessThan(node(l, 'c').y);
  });

  it('draws edges from the right side of one node to the left side of the next', () => {
    const l = layoutGraph(n('a', 'b'), [e('a', 'b', 'hash')]);
    const a = node(l, 'a');
    const b = node(l, 'b');
    const [edge] = l.edges;
    expect(edge!.path.startsWith(`M ${a.x + a.width} ${a.y + a.height / 2}`)).toBe(true);
    expect(edge!.path.endsWith(`${b.x} ${b.y + b.height / 2}`)).toBe(true);
    expect(edge!.labelX).toBeGreaterThan(a.x + a.width);
    expect(edge!.labelX).toBeLessThan(b.x);
  });

  it('survives a cycle and marks the edge that closes it', () => {
    const l = layoutGraph(n('a', 'b', 'c'), [e('a', 'b'), e('b', 'c'), e('c', 'b')]);
    expect(node(l, 'a').layer).toBe(0);
    expect(node(l, 'b').layer).toBe(1);
    expect(node(l, 'c').layer).toBe(2);
    expect(l.edges.filter((x) => x.back).map((x) => `${x.from}->${x.to}`)).toEqual(['c->b']);
  });

  it('ignores edges to unknown nodes and duplicate node ids', () => {
    const l = layoutGraph(n('a', 'b', 'a'), [e('a', 'b'), e('a', 'ghost'), e('ghost', 'b')]);
    expect(l.nodes).toHaveLength(2);
    expect(l.edges).toHaveLength(1);
  });

  it('keeps unconnected nodes in the first layer', () => {
    const l = layoutGraph(n('x', 'y'), []);
    expect(l.layers).toBe(1);
    expect(node(l, 'x').y).toBeLessThan(node(l, 'y').y);
  });
});

describe('assignLayers', () => {
  it('treats a self-loop as a back edge', () => {
    const { layer, back } = assignLayers(n('a'), [e('a', 'a')]);
    expect(layer.get('a')).toBe(0);
    expect([...back]).toEqual([0]);
  });
});
