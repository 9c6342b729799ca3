// Test fixture (Weir must refuse it): a stateless pass-through operator built against
// engine/test-guests/worlds/incomplete, whose `operator` interface has no `snapshot` and
// no `restore`, so the component does not export them.
import { toWitError } from '../../lib/batch.js';

export const operator = {
  describe() {
    return { name: 'passthrough-js-incomplete', stateVersion: 0, migratesFrom: [] };
  },
  open(_context) {},
  process(_input, batch) {
    try {
      return { data: batch.data, entries: batch.entries };
    } catch (e) {
      throw toWitError(e);
    }
  },
  onWatermark(_timestamp) {
    return { data: new Uint8Array(0), entries: [] };
  },
  onTimer(_key, _timestamp) {
    return { data: new Uint8Array(0), entries: [] };
  },
};
