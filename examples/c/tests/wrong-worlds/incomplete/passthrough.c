/* TEST FIXTURE (Weir must refuse it): the smallest operator of the world
 * engine/test-guests/worlds/incomplete, whose operator interface lacks `snapshot` and
 * `restore` (a stateless operator's author who left them out). It forwards every batch
 * unchanged. Built by `build.sh --with-test-fixtures` into wrong-worlds/incomplete.wasm. */
#include <string.h>

#include "weir.h"

void exports_weir_operator_operator_describe(exports_weir_operator_operator_operator_info_t *ret) {
    ret->name = weir_string("passthrough-c-incomplete");
    ret->state_version = 0;
    ret->migrates_from.ptr = NULL;
    ret->migrates_from.len = 0;
}

bool exports_weir_operator_operator_open(exports_weir_operator_operator_context_t *context, weir_error *err) {
    weir_operator_types_context_free(context);
    return true;
}

bool exports_weir_operator_operator_process(uint32_t input, weir_batch *batch, weir_batch *ret, weir_error *err) {
    *ret = *batch; /* the argument's buffers become the result, freed by the post-return */
    return true;
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
