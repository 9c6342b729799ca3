// Test data shaped like the API's answers (not a test file itself).
import type { CheckpointView } from '../api/types';

export const T0 = Date.UTC(2026, 10, 29, 15, 56, 9, 335);

export function checkpoint(id: number, over: Partial<CheckpointView> = {}): CheckpointView {
  const trigger = T0 + (id - 1) * 2000;
  return {
    id,
    status: 'completed',
    is_final: false,
    stopped: false,
    trigger_time_ms: trigger,
    end_time_ms: trigger + 150,
    duration_ms: 150.5,
    state_size: 7162,
    full_size: 22044,
    acknowledged_subtasks: 7,
    latest_ack_time_ms: trigger + 149,
    total_subtasks: 7,
    max_alignment_ms: 2.5,
    alignment_bytes: 0,
    processed_in_flight_bytes: 0,
    persisted_in_flight_bytes: 0,
    unaligned: false,
    checkpoint_type: 'aligned',
    switched_to_unaligned_ms: null,
    pinned: false,
    savepoint: null,
    failure: null,
    retained: true,
    ...over,
  };
}

export function inProgress(id: number, acked = 3): CheckpointView {
  return checkpoint(id, {
    status: 'in_progress',
    end_time_ms: null,
    duration_ms: null,
    latest_ack_time_ms: acked ? T0 + (id - 1) * 2000 + 40 : null,
    acknowledged_subtasks: acked,
    state_size: 0,
    full_size: 0,
  });
}

export function failed(id: number, failure = 'checkpoint 4 expired after 60000 ms'): CheckpointView {
  return checkpoint(id, {
    status: 'failed',
    duration_ms: null,
    end_time_ms: T0 + (id - 1) * 2000 + 60_000,
    acknowledged_subtasks: 5,
    latest_ack_time_ms: null,
    failure,
    retained: false,
    state_size: 0,
    full_size: 0,
  });
}
