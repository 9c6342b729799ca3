/* Default definitions of the exports most operators write the same way (see weir.h): weak
 * symbols, so that an operator defining one of these functions replaces the default. Every
 * operator links this file once. */
#include <stdlib.h>
#include <string.h>

#include "weir.h"

#define WEIR_WEAK __attribute__((weak))

WEIR_WEAK const weir_state_ref *weir_keyed_states(size_t *n) {
    *n = 0;
    return NULL;
}

bool weir_default_snapshot(bool full, weir_delta *ret) {
    size_t n;
    const weir_state_ref *refs = weir_keyed_states(&n);
    weir_delta_out out = {0};
    const char **names = n ? malloc(n * sizeof *names) : NULL;
    if (n && !names) abort();
    for (size_t i = 0; i < n; i++) {
        names[i] = refs[i].name;
        out.state = (uint32_t)i;
        ks_snapshot(refs[i].state, full, weir_delta_emit, &out);
    }
    weir_delta_finish(&out, names, n, ret);
    free(names);
    return true;
}

bool weir_default_restore(uint32_t state_version, const weir_delta *chunk, weir_error *err) {
    exports_weir_operator_operator_operator_info_t info;
    exports_weir_operator_operator_describe(&info);
    uint32_t own = info.state_version;
    exports_weir_operator_operator_operator_info_free(&info);
    if (state_version != own)
        return weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE,
                         "state schema version %u cannot be restored by this operator (version %u, migrates from [])",
                         state_version, own);
    size_t n;
    const weir_state_ref *refs = weir_keyed_states(&n);
    const char **names = n ? malloc(n * sizeof *names) : NULL;
    keyed_state **states = n ? malloc(n * sizeof *states) : NULL;
    if (n && (!names || !states)) abort();
    for (size_t i = 0; i < n; i++) {
        names[i] = refs[i].name;
        states[i] = refs[i].state;
    }
    bool ok = weir_restore_keyed(chunk, names, (keyed_state *const *)states, n, err);
    free(names);
    free(states);
    return ok;
}

WEIR_WEAK bool exports_weir_operator_operator_open(exports_weir_operator_operator_context_t *context, weir_error *err) {
    (void)err;
    weir_operator_types_context_free(context);
    return true;
}

WEIR_WEAK bool exports_weir_operator_operator_on_watermark(int64_t timestamp, weir_batch *ret, weir_error *err) {
    (void)timestamp; (void)err;
    memset(ret, 0, sizeof *ret);
    return true;
}

WEIR_WEAK bool exports_weir_operator_operator_on_timer(operator_world_list_u8_t *key, int64_t timestamp, weir_batch *ret, weir_error *err) {
    (void)timestamp; (void)err;
    operator_world_list_u8_free(key);
    memset(ret, 0, sizeof *ret);
    return true;
}

WEIR_WEAK bool exports_weir_operator_operator_snapshot(uint64_t checkpoint_id, bool full, weir_delta *ret, weir_error *err) {
    (void)checkpoint_id; (void)err;
    return weir_default_snapshot(full, ret);
}

WEIR_WEAK bool exports_weir_operator_operator_restore(uint32_t state_version, weir_delta *chunk, weir_error *err) {
    bool ok = weir_default_restore(state_version, chunk, err);
    weir_operator_types_state_delta_free(chunk);
    return ok;
}
