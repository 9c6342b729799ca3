import { describe, expect, it } from 'vitest';
import { metricValue, parseMetrics } from './prometheus';

describe('prometheus text', () => {
  const text = [
    '# HELP process_open_fds Number of open file descriptors.',
    '# TYPE process_open_fds gauge',
    'process_open_fds 42',
    'weir_build_info{version="0.1.0"} 1',
    'weir_worker_up{worker="1",name="w-1"} 1',
    'weir_worker_up{worker="2",name="a \\"quoted\\" name"} 0',
    'garbage line',
    'weir_tenant_usage{tenant="t",quota="jobs"} 3e0',
  ].join('\n');
  it('reads names, labels and values', () => {
    const m = parseMetrics(text);
    expect(metricValue(m, 'process_open_fds')).toBe(42);
    expect(m.get('weir_build_info')![0]!.labels).toEqual({ version: '0.1.0' });
    expect(metricValue(m, 'weir_worker_up', true)).toBe(1);
    expect(m.get('weir_worker_up')![1]!.labels.name).toBe('a "quoted" name');
    expect(metricValue(m, 'weir_tenant_usage')).toBe(3);
    expect(metricValue(m, 'missing')).toBeNull();
    expect(m.has('garbage')).toBe(false);
  });
});
