import { useState } from 'preact/hooks';
import type { Module, Vertex } from '../api/types';
import { formatCount, formatPercent, formatRate } from '../lib/format';
import { eventTime, eventTimeText, vertexWhat } from '../lib/jobs';
import { Pressure } from './Status';

/** Live records in/out, rates and backpressure per operator; subtasks on demand. */
export function OperatorsTable({ vertices, modules }: { vertices: Vertex[]; modules: Module[] | null }) {
  const [open, setOpen] = useState<Set<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table" data-testid="operators-table">
        <thead>
          <tr>
            <th>Operator</th>
            <th>Kind</th>
            <th class="num">Parallelism</th>
            <th class="num">Records in</th>
            <th class="num">In/s</th>
            <th class="num">Records out</th>
            <th class="num">Out/s</th>
            <th class="num" title="Share of the last second spent on records (the busiest subtask)">
              Busy
            </th>
            <th>Backpressure</th>
            <th>Event time</th>
          </tr>
        </thead>
        <tbody>
          {vertices.map((v) => {
            const isOpen = open.has(v.id);
            return [
              <tr key={v.id} data-testid="operator-row" data-node-id={v.id} class="operator-row">
                <td>
                  <button
                    type="button"
                    class="expander"
                    aria-expanded={isOpen}
                    data-testid="operator-expand"
                    title={isOpen ? 'Hide subtasks' : 'Show subtasks'}
                    onClick={() => toggle(v.id)}
                  >
                    {isOpen ? '▾' : '▸'}
                  </button>
                  <strong>{v.id}</strong>
                  <div class="sub">{vertexWhat(v, modules)}</div>
                </td>
                <td>{v.kind}</td>
                <td class="num">{v.parallelism}</td>
                <td class="num">{formatCount(v.records_in)}</td>
                <td class="num">{formatRate(v.records_in_per_second)}</td>
                <td class="num">{formatCount(v.records_out)}</td>
                <td class="num">{formatRate(v.records_out_per_second)}</td>
                <td class="num" data-testid="operator-busy">
                  {formatPercent(Math.max(0, ...v.subtasks.map((s) => s.busy ?? 0)))}
                </td>
                <td>
                  <Pressure share={v.backpressure} />
                </td>
                <td data-testid="operator-event-time">{eventTimeText(eventTime(v.subtasks))}</td>
              </tr>,
              ...(isOpen
                ? v.subtasks.map((s) => (
                    <tr key={`${v.id}#${s.subtask}`} class="subtask-live-row" data-testid="operator-subtask-row">
                      <td class="indent">
                        {v.id} #{s.subtask}
                      </td>
                      <td class="sub" data-testid="subtask-worker" title="The worker that runs this subtask">
                        {s.worker != null ? `worker ${s.worker}` : ''}
                      </td>
                      <td />
                      <td class="num">{formatCount(s.records_in)}</td>
                      <td class="num">{formatRate(s.records_in_per_second)}</td>
                      <td class="num">{formatCount(s.records_out)}</td>
                      <td class="num">{formatRate(s.records_out_per_second)}</td>
                      <td class="num">{formatPercent(s.busy ?? 0)}</td>
                      <td>
                        <Pressure share={s.backpressure} />
                      </td>
                      <td data-testid="subtask-event-time">{eventTimeText(eventTime([s]))}</td>
                    </tr>
                  ))
                : []),
            ];
          })}
        </tbody>
      </table>
    </div>
  );
}
