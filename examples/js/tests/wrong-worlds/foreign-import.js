// Test fixture (Weir must refuse it): a pass-through operator built against
// engine/test-guests/worlds/foreign-import, whose world also imports
// `weir:operator/cache@0.2.0` (a cache the host does not provide). It calls the import, so
// the component really imports it.
import { get } from 'weir:operator/cache@0.2.0';
import { toWitError } from '../../lib/batch.js';
import { operatorDefaults } from '../../lib/operator.js';

export const operator = {
  ...operatorDefaults(),
  describe() {
    return { name: 'cached-passthrough-js', stateVersion: 0, migratesFrom: [] };
  },
  process(_input, batch) {
    try {
      // Looks the first record's key up in the cache; a hit replaces the batch.
      const first = batch.entries[0];
      const cached = first ? get(batch.data.subarray(0, first.keyLen)) : undefined;
      return cached ? { data: cached, entries: [{ keyLen: 0, valueLen: cached.length, timestamp: first.timestamp }] }
        : { data: batch.data, entries: batch.entries };
    } catch (e) {
      throw toWitError(e);
    }
  },
  // Accepts a chunk of any state version as long as it is empty (unlike the default).
  restore(_stateVersion, chunk) {
    if (chunk.entries.length > 0) throw { tag: 'invalid-state', val: 'this operator has no state' };
  },
};
