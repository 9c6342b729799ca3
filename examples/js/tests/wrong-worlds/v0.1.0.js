// Test fixture (Weir must refuse it): the word count as it was written for the previous
// contract, weir:operator@0.1.0 (engine/test-guests/worlds/v0.1.0): `describe` has no
// `migrates-from` and `restore` takes only the chunk. Built against that WIT, the
// component exports `weir:operator/operator@0.1.0`.
import { operator as wordcount } from '../../wordcount/wordcount.js';

export const operator = {
  describe() {
    return { name: 'wordcount-js-0.1.0', stateVersion: 0 };
  },
  restore(chunk) {
    return wordcount.restore(0, chunk);
  },
  open: wordcount.open,
  process: wordcount.process,
  onWatermark: wordcount.onWatermark,
  onTimer: wordcount.onTimer,
  snapshot: wordcount.snapshot,
};
