// Test fixture (Weir must refuse it): a stateless pass-through operator built against
// engine/test-guests/worlds/incomplete, whose `operator` interface has no `snapshot` and
// no `restore`, so the component does not export them.
import { toWitError } from '../../lib/batch.js';
import { operatorDefaults } from '../../lib/operator.js';

// Only the defaults of this world's functions: the object has no `snapshot` or `restore`.
const { open, onWatermark, onTimer } = operatorDefaults();

export const operator = {
  describe() {
    return { name: 'passthrough-js-incomplete', stateVersion: 0, migratesFrom: [] };
  },
  open,
  process(_input, batch) {
    try {
      return { data: batch.data, entries: batch.entries };
    } catch (e) {
      throw toWitError(e);
    }
  },
  onWatermark,
  onTimer,
};
