#include "weir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

static void push_entry(weir_out *o, uint32_t key_len, uint32_t value_len, int64_t ts) {
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 256;
        o->entries = xrealloc(o->entries, o->cap * sizeof *o->entries);
    }
    o->entries[o->n++] = (weir_operator_types_entry_t){ .key_len = key_len, .value_len = value_len, .timestamp = ts };
}

void weir_out_push(weir_out *o, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, int64_t ts) {
    mp_put_bytes(&o->data, key, key_len);
    mp_put_bytes(&o->data, value, value_len);
    push_entry(o, (uint32_t)key_len, (uint32_t)value_len, ts);
}

void weir_out_begin(weir_out *o) { o->record_start = o->key_end = o->data.len; }
void weir_out_key_done(weir_out *o) { o->key_end = o->data.len; }
void weir_out_end(weir_out *o, int64_t ts) {
    push_entry(o, (uint32_t)(o->key_end - o->record_start), (uint32_t)(o->data.len - o->key_end), ts);
}
void weir_out_abort(weir_out *o) { o->data.len = o->record_start; }

void weir_out_finish(weir_out *o, weir_batch *batch) {
    batch->data.ptr = o->data.data;
    batch->data.len = o->data.len;
    batch->entries.ptr = o->entries;
    batch->entries.len = o->n;
    memset(o, 0, sizeof *o);
}

bool weir_batch_next(const weir_batch *batch, size_t i, size_t *offset, weir_record *r) {
    const weir_operator_types_entry_t *e = &batch->entries.ptr[i];
    size_t need = (size_t)e->key_len + e->value_len;
    if (*offset > batch->data.len || batch->data.len - *offset < need) return false;
    r->key = batch->data.ptr + *offset;
    r->key_len = e->key_len;
    r->value = r->key + e->key_len;
    r->value_len = e->value_len;
    r->timestamp = e->timestamp;
    *offset += need;
    return true;
}

operator_world_string_t weir_string(const char *s) {
    operator_world_string_t out;
    out.len = strlen(s);
    out.ptr = xrealloc(NULL, out.len);
    memcpy(out.ptr, s, out.len);
    return out;
}

bool weir_fail(weir_error *err, uint8_t tag, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    err->tag = tag;
    err->val.other = weir_string(msg); /* every case holds a string at the same place */
    return false;
}

void weir_log(weir_operator_logging_level_t level, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    operator_world_string_t s = { (uint8_t *)msg, n < 0 ? 0 : (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1 };
    weir_operator_logging_log(level, &s);
}

void weir_dead_letter_value(mp_buf *out, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len,
                            const char *reason) {
    mp_put_array_header(out, 3);
    mp_put_str(out, reason, strlen(reason));
    mp_put_bin(out, key, key_len);
    mp_put_bin(out, value, value_len);
}

#ifndef WEIR_NO_SIDE_OUTPUT
void weir_dead_letter(const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, int64_t timestamp,
                      const char *reason) {
    mp_buf letter = {0};
    weir_dead_letter_value(&letter, key, key_len, value, value_len, reason);
    /* The import borrows its arguments: nothing of ours is handed over. */
    operator_world_string_t name = { (uint8_t *)WEIR_DEAD_LETTER_OUTPUT, sizeof WEIR_DEAD_LETTER_OUTPUT - 1 };
    operator_world_list_u8_t no_key = { NULL, 0 };
    operator_world_list_u8_t bytes = { letter.data, letter.len };
    weir_operator_side_output_emit(&name, &no_key, &bytes, timestamp);
    free(letter.data);
}

void weir_dead_letter_record(const weir_record *r, const char *reason) {
    weir_dead_letter(r->key, r->key_len, r->value, r->value_len, r->timestamp, reason);
}
#endif

void weir_delta_emit(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len) {
    weir_delta_out *o = ctx;
    mp_put_bytes(&o->data, key, key_len);
    if (value) mp_put_bytes(&o->data, value, value_len);
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 256;
        o->entries = xrealloc(o->entries, o->cap * sizeof *o->entries);
    }
    o->entries[o->n++] = (weir_operator_types_state_entry_t){
        .state = o->state,
        .kind = value ? WEIR_OPERATOR_TYPES_CHANGE_KIND_PUT : WEIR_OPERATOR_TYPES_CHANGE_KIND_DELETE,
        .key_len = (uint32_t)key_len,
        .value_len = value ? (uint32_t)value_len : 0,
    };
}

void weir_delta_finish(weir_delta_out *o, const char *const *names, size_t n_names, weir_delta *delta) {
    delta->names.len = n_names;
    delta->names.ptr = n_names ? xrealloc(NULL, n_names * sizeof *delta->names.ptr) : NULL;
    for (size_t i = 0; i < n_names; i++) delta->names.ptr[i] = weir_string(names[i]);
    delta->data.ptr = o->data.data;
    delta->data.len = o->data.len;
    delta->entries.ptr = o->entries;
    delta->entries.len = o->n;
    memset(o, 0, sizeof *o);
}

bool weir_restore_keyed(const weir_delta *chunk, const char *const *names, keyed_state *const *states, size_t n, weir_error *err) {
    size_t offset = 0;
    for (size_t i = 0; i < chunk->entries.len; i++) {
        const weir_operator_types_state_entry_t *e = &chunk->entries.ptr[i];
        size_t need = (size_t)e->key_len + e->value_len;
        if (offset > chunk->data.len || chunk->data.len - offset < need)
            return weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE,
                             "restore entry %zu runs past the end of the chunk data (%zu bytes)", i, chunk->data.len);
        const uint8_t *key = chunk->data.ptr + offset;
        const uint8_t *value = key + e->key_len;
        offset += need;
        if (e->state >= chunk->names.len)
            return weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE, "restore entry %zu names state %u, which the chunk does not list", i, e->state);
        const operator_world_string_t *name = &chunk->names.ptr[e->state];
        keyed_state *target = NULL;
        for (size_t s = 0; s < n; s++)
            if (strlen(names[s]) == name->len && memcmp(names[s], name->ptr, name->len) == 0) target = states[s];
        if (!target)
            return weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE,
                             "restore entry %zu belongs to state \"%.*s\", which this operator does not have", i, (int)name->len, (const char *)name->ptr);
        const char *msg = ks_restore(target, key, e->key_len,
                                     e->kind == WEIR_OPERATOR_TYPES_CHANGE_KIND_PUT ? value : NULL, e->value_len);
        if (msg)
            return weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE, "restore of state \"%.*s\": %s", (int)name->len, (const char *)name->ptr, msg);
    }
    return true;
}
