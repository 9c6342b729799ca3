/* A tiny MessagePack reader and writer: the subset Weir operators in C need
 * (unsigned and signed integers, strings, binary, maps, arrays, nil, booleans; skipping any
 * value).
 * Plain C11, no allocation in the reader. */
#ifndef WEIR_MSGPACK_H
#define WEIR_MSGPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Writer: a growable byte buffer ---- */

typedef struct {
    uint8_t *data;
    size_t len;
    size_t cap;
} mp_buf;

/* Makes room for `extra` more bytes; aborts when memory runs out. */
void mp_reserve(mp_buf *b, size_t extra);
void mp_put_bytes(mp_buf *b, const void *bytes, size_t len);
/* The smallest encoding of `v` (positive fixint, uint 8/16/32/64), as rmp-serde writes it. */
void mp_put_uint(mp_buf *b, uint64_t v);
/* The smallest encoding of `v` (a non-negative value is written as mp_put_uint does). */
void mp_put_int(mp_buf *b, int64_t v);
/* A string header (fixstr, str 8/16/32) followed by the bytes. */
void mp_put_str(mp_buf *b, const char *s, size_t len);
/* A binary header (bin 8/16/32, the smallest that fits) followed by the bytes. */
void mp_put_bin(mp_buf *b, const void *bytes, size_t len);
void mp_put_map_header(mp_buf *b, uint32_t n);
void mp_put_array_header(mp_buf *b, uint32_t n);
void mp_put_nil(mp_buf *b);
void mp_put_bool(mp_buf *b, bool v);

/* ---- Reader: a cursor over a byte slice ---- */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
    /* Set on the first failure: a static description of what went wrong. */
    const char *error;
} mp_reader;

void mp_reader_init(mp_reader *r, const uint8_t *data, size_t len);
/* Each reader returns false (and sets r->error) when the next value is not of that type
 * or the data ends early. */
bool mp_read_uint(mp_reader *r, uint64_t *out);   /* any integer >= 0 */
bool mp_read_int(mp_reader *r, int64_t *out);     /* any integer that fits in int64 */
bool mp_read_str(mp_reader *r, const char **s, uint32_t *len);
bool mp_read_bin(mp_reader *r, const uint8_t **bytes, uint32_t *len);  /* bin 8/16/32 */
bool mp_read_map_header(mp_reader *r, uint32_t *n);
bool mp_read_array_header(mp_reader *r, uint32_t *n);
/* Skips one value of any type (nested maps and arrays included). */
bool mp_skip(mp_reader *r);
/* True when every byte was consumed. */
static inline bool mp_at_end(const mp_reader *r) { return r->p == r->end; }

#endif
