/* Small helpers for Weir operators written in C against the bindings that
 * `weir-cbuild bindings wit operator-world <out-dir>` generates (operator_world.h).
 *
 * Ownership, as the generated code expects it: arguments (batches, contexts, restore chunks)
 * belong to the callee, which frees them; everything returned (batches, state deltas,
 * strings, lists) is freed by the generated post-return functions with free(), so it must
 * be allocated with malloc. */
#ifndef WEIR_C_H
#define WEIR_C_H

#include "operator_world.h"
#include "msgpack.h"
#include "keyed_state.h"

typedef exports_weir_operator_operator_batch_t weir_batch;
typedef exports_weir_operator_operator_error_t weir_error;
typedef exports_weir_operator_operator_state_delta_t weir_delta;

/* A batch being built: append records, then hand it over with weir_out_finish. */
typedef struct {
    mp_buf data;
    weir_operator_types_entry_t *entries;
    size_t n, cap;
    size_t record_start; /* where the record being written starts in `data` */
    size_t key_end;
} weir_out;

/* Appends one record whose key and value are already encoded (key may be empty). */
void weir_out_push(weir_out *o, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, int64_t timestamp);
/* Writing a record in place: weir_out_begin, write the key into o->data, weir_out_key_done,
 * write the value into o->data, weir_out_end. */
void weir_out_begin(weir_out *o);
void weir_out_key_done(weir_out *o);
void weir_out_end(weir_out *o, int64_t timestamp);
/* Drops a record begun with weir_out_begin. */
void weir_out_abort(weir_out *o);
/* Moves the records into `batch` (the post-return frees them) and empties `o`. */
void weir_out_finish(weir_out *o, weir_batch *batch);

/* Iterating over a batch. */
typedef struct {
    const uint8_t *key, *value;
    uint32_t key_len, value_len;
    int64_t timestamp;
} weir_record;

/* Record i of `batch`, with `*offset` the position of its key in the data (start at 0 and
 * call for i = 0, 1, ...). Returns false when the entries run past the data. */
bool weir_batch_next(const weir_batch *batch, size_t i, size_t *offset, weir_record *r);

/* A malloc'd copy of a C string, for returned strings. */
operator_world_string_t weir_string(const char *s);
/* Fills `err` with a malloc'd message; returns false so callers can `return weir_fail(...)`. */
bool weir_fail(weir_error *err, uint8_t tag, const char *fmt, ...);
/* Logs one line through the host. */
void weir_log(weir_operator_logging_level_t level, const char *fmt, ...);

/* ---- Dead letters ----
 *
 * A record the operator will not process, sent with a reason to the job's dead-letter
 * destination (the job spec's `dead_letter`), which keeps it with the job, node and subtask,
 * the time and the reason, and counts it against the job's `max_dead_letters_per_minute`. A
 * job without a destination drops it as a side-output record no edge carries (metric
 * `side_output_dropped`), outside that limit.
 *
 * On the wire (what the host unwraps; the Rust SDK's `weir_guest::dead_letter::send_raw`
 * writes the same bytes): side output WEIR_DEAD_LETTER_OUTPUT, empty key, value the
 * MessagePack array [reason, key, value], the reason a str (the host keeps its first 256
 * characters) and the record's key and value bytes as bin. */

/* The side output the host reads dead letters from. */
#define WEIR_DEAD_LETTER_OUTPUT "dead-letter"

/* Appends to `out` the value of a dead letter: [reason, key, value]. */
void weir_dead_letter_value(mp_buf *out, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len,
                            const char *reason);
#ifndef WEIR_NO_SIDE_OUTPUT
/* Sends a record of encoded key (key_len 0: none) and value bytes, with its event time, to
 * the dead letters with `reason` (a NUL-terminated UTF-8 string). Copies what it needs. */
void weir_dead_letter(const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, int64_t timestamp,
                      const char *reason);
/* Sends record `r` (as it came) to the dead letters with `reason`. */
void weir_dead_letter_record(const weir_record *r, const char *reason);
#endif
/* (The world's `side-output` import is needed for weir_dead_letter; compile weir.c with
 * -DWEIR_NO_SIDE_OUTPUT against a world without it: build.sh does for the wrong-world
 * fixtures, whose older worlds lack it.) */

/* A state delta being built for snapshot, from any number of named states. */
typedef struct {
    mp_buf data;
    weir_operator_types_state_entry_t *entries;
    size_t n, cap;
    uint32_t state; /* index of the state whose entries are being written */
} weir_delta_out;

/* A ks_emit_fn writing into a weir_delta_out (ctx) under its current state index. */
void weir_delta_emit(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len);
/* Moves the entries into `delta` with the given state names. */
void weir_delta_finish(weir_delta_out *o, const char *const *names, size_t n_names, weir_delta *delta);

/* Applies a restore chunk to named keyed states: names[i] is restored into states[i].
 * Entries of an unknown state fail with invalid-state. Frees nothing. */
bool weir_restore_keyed(const weir_delta *chunk, const char *const *names, keyed_state *const *states, size_t n, weir_error *err);

/* ---- Default exports (common/defaults.c) ----
 *
 * defaults.c defines, as weak symbols, every export except `describe` and `process`:
 *  - on-watermark and on-timer: emit nothing;
 *  - open: accepts any context;
 *  - snapshot: the keyed states the operator registers with WEIR_KEYED_STATES (incremental
 *    or full, each under its name; none registered: an empty delta);
 *  - restore: refuses a state version other than describe's `state-version` (invalid-state,
 *    naming both), then restores each entry into the registered state of its name (an entry
 *    of any other state is invalid-state). It does not migrate: an operator listing versions
 *    in `migrates-from` defines its own restore.
 * An operator overrides any of them by defining the function itself (a strong definition
 * wins over the weak one at link time). Operators define `describe` and `process`. */

/* One keyed state of the operator, by name (the name is part of the state layout). */
typedef struct {
    const char *name;
    keyed_state *state;
} weir_state_ref;

/* The operator's keyed states, for the default snapshot and restore. The default (weak)
 * definition returns none; WEIR_KEYED_STATES defines it. */
const weir_state_ref *weir_keyed_states(size_t *n);

/* Registers the operator's keyed states, at file scope:
 *   static keyed_state counts = KS_INITIALIZER(sizeof(uint64_t), encode, decode);
 *   WEIR_KEYED_STATES({ "counts", &counts })                                        */
#define WEIR_KEYED_STATES(...)                                                  \
    const weir_state_ref *weir_keyed_states(size_t *n) {                       \
        static const weir_state_ref states_[] = { __VA_ARGS__ };                \
        *n = sizeof states_ / sizeof *states_;                                  \
        return states_;                                                         \
    }

/* The default snapshot and restore, for an operator that overrides them but still wants
 * them for its registered keyed states (for example, a restore that migrates an old version
 * and delegates the current one). weir_default_restore does not free `chunk`. */
bool weir_default_snapshot(bool full, weir_delta *ret);
bool weir_default_restore(uint32_t state_version, const weir_delta *chunk, weir_error *err);

#endif
