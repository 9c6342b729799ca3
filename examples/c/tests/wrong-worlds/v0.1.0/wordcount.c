/* TEST FIXTURE (Weir must refuse it): the word count written against the previous contract,
 * weir:operator@0.1.0 (engine/test-guests/worlds/v0.1.0): `restore` takes no state version
 * and `operator-info` has no `migrates-from`. Built by `build.sh --with-test-fixtures` into
 * wrong-worlds/v0.1.0.wasm; the component exports weir:operator/operator@0.1.0, which the
 * 0.2.0 host does not accept. Same state ("counts") as wordcount/wordcount.c, but one output
 * record per input record. */
#include <stdlib.h>
#include <string.h>

#include "weir.h"

static const char *const STATE_NAMES[] = { "counts" };

static void encode_count(const void *value, mp_buf *out) { mp_put_uint(out, *(const uint64_t *)value); }
static const char *decode_count(const uint8_t *bytes, size_t len, void *value) {
    mp_reader r;
    mp_reader_init(&r, bytes, len);
    if (!mp_read_uint(&r, (uint64_t *)value)) return r.error;
    return mp_at_end(&r) ? NULL : "trailing bytes after the count";
}
static keyed_state counts = KS_INITIALIZER(sizeof(uint64_t), encode_count, decode_count);

void exports_weir_operator_operator_describe(exports_weir_operator_operator_operator_info_t *ret) {
    ret->name = weir_string("wordcount-c-0.1.0");
    ret->state_version = 0;
}

bool exports_weir_operator_operator_restore(weir_delta *chunk, weir_error *err) {
    keyed_state *const states[] = { &counts };
    bool ok = weir_restore_keyed(chunk, STATE_NAMES, states, 1, err);
    weir_operator_types_state_delta_free(chunk);
    return ok;
}

bool exports_weir_operator_operator_open(exports_weir_operator_operator_context_t *context, weir_error *err) {
    weir_operator_types_context_free(context);
    return true;
}

bool exports_weir_operator_operator_process(uint32_t input, weir_batch *batch, weir_batch *ret, weir_error *err) {
    bool ok = true;
    weir_out out = {0};
    mp_buf value = {0};
    size_t offset = 0;
    for (size_t i = 0; i < batch->entries.len && ok; i++) {
        weir_record rec;
        mp_reader r;
        uint64_t increment;
        if (!weir_batch_next(batch, i, &offset, &rec)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu runs past the end of the batch data", i);
            break;
        }
        mp_reader_init(&r, rec.value, rec.value_len);
        if (!mp_read_uint(&r, &increment)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu: %s", i, r.error);
            break;
        }
        uint64_t *count = ks_value_mut(&counts, ks_upsert(&counts, rec.key, rec.key_len, NULL, NULL));
        *count = *count > UINT64_MAX - increment ? UINT64_MAX : *count + increment;
        value.len = 0;
        mp_put_uint(&value, *count);
        weir_out_push(&out, rec.key, rec.key_len, value.data, value.len, rec.timestamp);
    }
    free(value.data);
    if (ok) weir_out_finish(&out, ret);
    else { free(out.data.data); free(out.entries); }
    weir_operator_types_batch_free(batch);
    return ok;
}

bool exports_weir_operator_operator_on_watermark(int64_t timestamp, weir_batch *ret, weir_error *err) {
    memset(ret, 0, sizeof *ret);
    return true;
}

bool exports_weir_operator_operator_on_timer(operator_world_list_u8_t *key, int64_t timestamp, weir_batch *ret, weir_error *err) {
    operator_world_list_u8_free(key);
    memset(ret, 0, sizeof *ret);
    return true;
}

bool exports_weir_operator_operator_snapshot(uint64_t checkpoint_id, bool full, weir_delta *ret, weir_error *err) {
    weir_delta_out out = {0};
    ks_snapshot(&counts, full, weir_delta_emit, &out);
    weir_delta_finish(&out, STATE_NAMES, 1, ret);
    return true;
}
