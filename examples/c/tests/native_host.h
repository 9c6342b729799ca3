/* What the native stand-ins of the host's imports (native_host.c) recorded, for the tests. */
#ifndef WEIR_NATIVE_HOST_H
#define WEIR_NATIVE_HOST_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *name;
    uint8_t *key, *value;
    size_t key_len, value_len;
    int64_t timestamp;
} native_side_output;

/* The last record emitted on a side output (copies, owned by native_host.c). */
extern native_side_output native_last_side_output;
/* How many records were emitted on side outputs. */
extern size_t native_side_outputs;

#endif
