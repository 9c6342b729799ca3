import { describe, expect, it } from 'vitest';
import { grantRows, grantsOf, parsePrefixes, parseQuotas, quotaText } from './tenants';

describe('quota form', () => {
  it('reads whole numbers with byte units and leaves blanks out', () => {
    expect(parseQuotas({ max_jobs: ' 3 ', max_storage_bytes: '1G', max_module_bytes: '64KiB', max_cpu_ms: '' })).toEqual({
      max_jobs: 3,
      max_storage_bytes: 1 << 30,
      max_module_bytes: 64 << 10,
    });
    expect(quotaText({ max_jobs: 3 })).toMatchObject({ max_jobs: '3', max_subtasks: '' });
  });
  it('names the first bad field', () => {
    expect(() => parseQuotas({ max_subtasks: '-1' })).toThrow('Subtasks of those jobs: "-1" is not a whole number');
    expect(() => parseQuotas({ max_jobs: '1.5' })).toThrow(/Jobs not ended/);
  });
});

describe('grant form', () => {
  it('turns rows into grants and back', () => {
    expect(parsePrefixes(' acme., , acme-') ).toEqual(['acme.', 'acme-']);
    const grants = grantsOf([
      { connection: 'main', topics: 'acme.', groups: 'acme.' },
      { connection: ' ', topics: 'x', groups: '' },
    ]);
    expect(grants).toEqual([{ connection: 'main', topic_prefixes: ['acme.'], group_prefixes: ['acme.'] }]);
    expect(grantRows(grants)).toEqual([{ connection: 'main', topics: 'acme.', groups: 'acme.' }]);
  });
});
