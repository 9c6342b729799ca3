// The exports most operators write the same way, to spread into an operator object and
// override where the operator needs something else:
//
//   export const operator = {
//     ...operatorDefaults(states, { stateVersion: STATE_VERSION }),
//     describe() { return { name: 'my-op', stateVersion: STATE_VERSION, migratesFrom: [] }; },
//     process(_input, batch) { ... },
//   };
//
// componentize-js reads the methods off the exported object at run time, so spread ones are
// found like methods written out. None of them uses `this`: they can be taken off the
// object (`open: other.open`) too.

import { toWitError } from './batch.js';

/**
 * The default `open`, `onWatermark`, `onTimer`, `snapshot` and `restore`.
 *
 * - `open(context)`: does nothing.
 * - `onWatermark(timestamp)`, `onTimer(key, timestamp)`: emit nothing (a new empty batch).
 * - `snapshot(checkpointId, full)`: `states.snapshot(full)` (every live entry when `full`,
 *   else the changes since the previous snapshot), any exception rethrown as a WIT error;
 *   without `states`, an empty state-delta.
 * - `restore(stateVersion, chunk)`: refuses a chunk of another state schema version than
 *   `stateVersion` with `invalid-state`, naming both (no migrations: override `restore` to
 *   migrate); then `states.restore(chunk)`, any exception rethrown as a WIT error; without
 *   `states`, refuses a chunk with entries with `invalid-state` "<name> has no state".
 *
 * @param {import('./keyed-state.js').States | null} [states] the operator's states, or
 *   none for a stateless operator
 * @param {{ stateVersion?: number, name?: string }} [options] `stateVersion`: the operator's
 *   state schema version, as `describe` gives it (default 0); `name`: how a stateless
 *   operator's restore refusal names it (default 'this operator')
 */
export function operatorDefaults(states = null, { stateVersion = 0, name = 'this operator' } = {}) {
  return {
    open(_context) {},

    onWatermark(_timestamp) {
      return { data: new Uint8Array(0), entries: [] };
    },

    onTimer(_key, _timestamp) {
      return { data: new Uint8Array(0), entries: [] };
    },

    snapshot(_checkpointId, full) {
      if (!states) return { names: [], data: new Uint8Array(0), entries: [] };
      try {
        return states.snapshot(full);
      } catch (e) {
        throw toWitError(e);
      }
    },

    restore(version, chunk) {
      if (version !== stateVersion) {
        throw {
          tag: 'invalid-state',
          val: `state schema version ${version} cannot be restored by this operator (version ${stateVersion}, migrates from [])`,
        };
      }
      if (!states) {
        if (chunk.entries.length > 0) throw { tag: 'invalid-state', val: `${name} has no state` };
        return;
      }
      try {
        states.restore(chunk);
      } catch (e) {
        throw toWitError(e);
      }
    },
  };
}
