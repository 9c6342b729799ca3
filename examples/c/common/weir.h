/* Small helpers for Weir operators written in C against the bindings that
 * `wit-bindgen c wit --world operator-world` generates (operator_world.h).
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

#endif
