/* TEST FIXTURE (Weir must refuse it): an operator of the world
 * engine/test-guests/worlds/foreign-import, which also imports `weir:operator/cache`, an
 * interface the host does not provide. It replaces each record's value by the cached value of
 * its key when the cache has one (calling the import, so that the component keeps it).
 * Everything but describe and process comes from common/defaults.c. Built by
 * `build.sh --with-test-fixtures` into wrong-worlds/foreign-import.wasm. */
#include <stdlib.h>

#include "weir.h"

void exports_weir_operator_operator_describe(exports_weir_operator_operator_operator_info_t *ret) {
    ret->name = weir_string("cached-c-foreign-import");
    ret->state_version = 0;
    ret->migrates_from.ptr = NULL;
    ret->migrates_from.len = 0;
}

bool exports_weir_operator_operator_process(uint32_t input, weir_batch *batch, weir_batch *ret, weir_error *err) {
    weir_out out = {0};
    size_t offset = 0;
    for (size_t i = 0; i < batch->entries.len; i++) {
        weir_record rec;
        if (!weir_batch_next(batch, i, &offset, &rec)) {
            free(out.data.data); free(out.entries);
            weir_operator_types_batch_free(batch);
            return weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu runs past the end of the batch data", i);
        }
        operator_world_list_u8_t key = { (uint8_t *)rec.key, rec.key_len }, cached;
        if (weir_operator_cache_get(&key, &cached)) {
            weir_out_push(&out, rec.key, rec.key_len, cached.ptr, cached.len, rec.timestamp);
            operator_world_list_u8_free(&cached);
        } else {
            weir_out_push(&out, rec.key, rec.key_len, rec.value, rec.value_len, rec.timestamp);
        }
    }
    weir_out_finish(&out, ret);
    weir_operator_types_batch_free(batch);
    return true;
}
