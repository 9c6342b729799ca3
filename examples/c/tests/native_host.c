/* What the host and the generated bindings provide to an operator, for native tests:
 * the generated free functions (run-tests.sh copies them from the generated operator_world.c
 * into generated_helpers.c, included here) and stand-ins for the host's imports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "operator_world.h"
#include "native_host.h"

void *cabi_realloc(void *ptr, size_t old_size, size_t align, size_t new_size) {
    (void)old_size; (void)align;
    if (new_size == 0) return (void *)align;
    void *p = realloc(ptr, new_size);
    if (!p) abort();
    return p;
}

#include "generated_helpers.c"

void weir_operator_logging_log(weir_operator_logging_level_t level, operator_world_string_t *message) {
    fprintf(stderr, "log %d: %.*s\n", (int)level, (int)message->len, (const char *)message->ptr);
}
void weir_operator_timers_register(operator_world_list_u8_t *key, int64_t timestamp) { (void)key; (void)timestamp; }
void weir_operator_timers_delete(operator_world_list_u8_t *key, int64_t timestamp) { (void)key; (void)timestamp; }
void weir_operator_metrics_counter_add(operator_world_string_t *name, uint64_t delta) { (void)name; (void)delta; }

/* Side outputs: the last emitted record, copied (the import borrows its arguments). */
native_side_output native_last_side_output;
size_t native_side_outputs;
void weir_operator_side_output_emit(operator_world_string_t *name, operator_world_list_u8_t *key,
                                    operator_world_list_u8_t *value, int64_t timestamp) {
    native_side_output *o = &native_last_side_output;
    free(o->name); free(o->key); free(o->value);
    o->name = malloc(name->len + 1);
    memcpy(o->name, name->ptr, name->len);
    o->name[name->len] = '\0';
    o->key = malloc(key->len + 1);
    if (key->len) memcpy(o->key, key->ptr, key->len);
    o->key_len = key->len;
    o->value = malloc(value->len + 1);
    if (value->len) memcpy(o->value, value->ptr, value->len);
    o->value_len = value->len;
    o->timestamp = timestamp;
    native_side_outputs++;
}
