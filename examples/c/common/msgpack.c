#include "msgpack.h"

#include <stdlib.h>
#include <string.h>

void mp_reserve(mp_buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *data = realloc(b->data, cap);
    if (!data) abort();
    b->data = data;
    b->cap = cap;
}

void mp_put_bytes(mp_buf *b, const void *bytes, size_t len) {
    if (len == 0) return;
    mp_reserve(b, len);
    memcpy(b->data + b->len, bytes, len);
    b->len += len;
}

static void put_be(mp_buf *b, uint8_t tag, uint64_t v, int size) {
    mp_reserve(b, 1 + (size_t)size);
    uint8_t *p = b->data + b->len;
    *p++ = tag;
    for (int i = size - 1; i >= 0; i--) *p++ = (uint8_t)(v >> (8 * i));
    b->len += 1 + (size_t)size;
}

void mp_put_uint(mp_buf *b, uint64_t v) {
    if (v < 0x80) {
        mp_reserve(b, 1);
        b->data[b->len++] = (uint8_t)v;
    } else if (v <= 0xff) put_be(b, 0xcc, v, 1);
    else if (v <= 0xffff) put_be(b, 0xcd, v, 2);
    else if (v <= 0xffffffffu) put_be(b, 0xce, v, 4);
    else put_be(b, 0xcf, v, 8);
}

void mp_put_int(mp_buf *b, int64_t v) {
    if (v >= 0) mp_put_uint(b, (uint64_t)v);
    else if (v >= -32) {
        mp_reserve(b, 1);
        b->data[b->len++] = (uint8_t)(int8_t)v;
    } else if (v >= INT8_MIN) put_be(b, 0xd0, (uint64_t)v, 1);
    else if (v >= INT16_MIN) put_be(b, 0xd1, (uint64_t)v, 2);
    else if (v >= INT32_MIN) put_be(b, 0xd2, (uint64_t)v, 4);
    else put_be(b, 0xd3, (uint64_t)v, 8);
}

void mp_put_str(mp_buf *b, const char *s, size_t len) {
    if (len < 32) {
        mp_reserve(b, 1);
        b->data[b->len++] = (uint8_t)(0xa0 | len);
    } else if (len <= 0xff) put_be(b, 0xd9, len, 1);
    else if (len <= 0xffff) put_be(b, 0xda, len, 2);
    else put_be(b, 0xdb, len, 4);
    mp_put_bytes(b, s, len);
}

void mp_put_bin(mp_buf *b, const void *bytes, size_t len) {
    if (len <= 0xff) put_be(b, 0xc4, len, 1);
    else if (len <= 0xffff) put_be(b, 0xc5, len, 2);
    else put_be(b, 0xc6, len, 4);
    mp_put_bytes(b, bytes, len);
}

void mp_put_map_header(mp_buf *b, uint32_t n) {
    if (n < 16) {
        mp_reserve(b, 1);
        b->data[b->len++] = (uint8_t)(0x80 | n);
    } else if (n <= 0xffff) put_be(b, 0xde, n, 2);
    else put_be(b, 0xdf, n, 4);
}

void mp_put_array_header(mp_buf *b, uint32_t n) {
    if (n < 16) {
        mp_reserve(b, 1);
        b->data[b->len++] = (uint8_t)(0x90 | n);
    } else if (n <= 0xffff) put_be(b, 0xdc, n, 2);
    else put_be(b, 0xdd, n, 4);
}

void mp_put_nil(mp_buf *b) {
    mp_reserve(b, 1);
    b->data[b->len++] = 0xc0;
}

void mp_put_bool(mp_buf *b, bool v) {
    mp_reserve(b, 1);
    b->data[b->len++] = v ? 0xc3 : 0xc2;
}

/* ---- Reader ---- */

void mp_reader_init(mp_reader *r, const uint8_t *data, size_t len) {
    r->p = data;
    r->end = data + len;
    r->error = NULL;
}

static bool fail(mp_reader *r, const char *msg) {
    if (!r->error) r->error = msg;
    return false;
}

static bool take_be(mp_reader *r, int size, uint64_t *out) {
    if (r->end - r->p < size) return fail(r, "unexpected end of MessagePack data");
    uint64_t v = 0;
    for (int i = 0; i < size; i++) v = (v << 8) | r->p[i];
    r->p += size;
    *out = v;
    return true;
}

/* Reads any integer: `neg` tells whether it is negative (then `*mag` holds its int64 bits). */
static bool read_integer(mp_reader *r, uint64_t *bits, bool *neg) {
    if (r->p >= r->end) return fail(r, "unexpected end of MessagePack data");
    uint8_t t = *r->p;
    if (t < 0x80) { r->p++; *bits = t; *neg = false; return true; }
    if (t >= 0xe0) { r->p++; *bits = (uint64_t)(int64_t)(int8_t)t; *neg = true; return true; }
    uint64_t v;
    switch (t) {
    case 0xcc: case 0xcd: case 0xce: case 0xcf:
        r->p++;
        if (!take_be(r, 1 << (t - 0xcc), &v)) return false;
        *bits = v; *neg = false; return true;
    case 0xd0: r->p++; if (!take_be(r, 1, &v)) return false; *bits = (uint64_t)(int64_t)(int8_t)v; break;
    case 0xd1: r->p++; if (!take_be(r, 2, &v)) return false; *bits = (uint64_t)(int64_t)(int16_t)v; break;
    case 0xd2: r->p++; if (!take_be(r, 4, &v)) return false; *bits = (uint64_t)(int64_t)(int32_t)v; break;
    case 0xd3: r->p++; if (!take_be(r, 8, &v)) return false; *bits = v; break;
    default: return fail(r, "expected a MessagePack integer");
    }
    *neg = (int64_t)*bits < 0;
    return true;
}

bool mp_read_uint(mp_reader *r, uint64_t *out) {
    const uint8_t *start = r->p;
    uint64_t bits; bool neg;
    if (!read_integer(r, &bits, &neg)) return false;
    if (neg) { r->p = start; return fail(r, "expected a non-negative integer, found a negative one"); }
    *out = bits;
    return true;
}

bool mp_read_int(mp_reader *r, int64_t *out) {
    const uint8_t *start = r->p;
    uint64_t bits; bool neg;
    if (!read_integer(r, &bits, &neg)) return false;
    if (!neg && bits > (uint64_t)INT64_MAX) { r->p = start; return fail(r, "integer out of range of int64"); }
    *out = (int64_t)bits;
    return true;
}

bool mp_read_str(mp_reader *r, const char **s, uint32_t *len) {
    if (r->p >= r->end) return fail(r, "unexpected end of MessagePack data");
    uint8_t t = *r->p;
    uint64_t n;
    if ((t & 0xe0) == 0xa0) { r->p++; n = t & 0x1f; }
    else if (t == 0xd9 || t == 0xda || t == 0xdb) {
        r->p++;
        if (!take_be(r, 1 << (t - 0xd9), &n)) return false;
    } else return fail(r, "expected a MessagePack string");
    if ((uint64_t)(r->end - r->p) < n) return fail(r, "unexpected end of MessagePack data");
    *s = (const char *)r->p;
    *len = (uint32_t)n;
    r->p += n;
    return true;
}

bool mp_read_bin(mp_reader *r, const uint8_t **bytes, uint32_t *len) {
    if (r->p >= r->end) return fail(r, "unexpected end of MessagePack data");
    uint8_t t = *r->p;
    uint64_t n;
    if (t == 0xc4 || t == 0xc5 || t == 0xc6) {
        r->p++;
        if (!take_be(r, 1 << (t - 0xc4), &n)) return false;
    } else return fail(r, "expected MessagePack binary");
    if ((uint64_t)(r->end - r->p) < n) return fail(r, "unexpected end of MessagePack data");
    *bytes = r->p;
    *len = (uint32_t)n;
    r->p += n;
    return true;
}

bool mp_read_map_header(mp_reader *r, uint32_t *n) {
    if (r->p >= r->end) return fail(r, "unexpected end of MessagePack data");
    uint8_t t = *r->p;
    uint64_t v;
    if ((t & 0xf0) == 0x80) { r->p++; *n = t & 0x0f; return true; }
    if (t == 0xde || t == 0xdf) {
        r->p++;
        if (!take_be(r, t == 0xde ? 2 : 4, &v)) return false;
        *n = (uint32_t)v;
        return true;
    }
    return fail(r, "expected a MessagePack map");
}

bool mp_read_array_header(mp_reader *r, uint32_t *n) {
    if (r->p >= r->end) return fail(r, "unexpected end of MessagePack data");
    uint8_t t = *r->p;
    uint64_t v;
    if ((t & 0xf0) == 0x90) { r->p++; *n = t & 0x0f; return true; }
    if (t == 0xdc || t == 0xdd) {
        r->p++;
        if (!take_be(r, t == 0xdc ? 2 : 4, &v)) return false;
        *n = (uint32_t)v;
        return true;
    }
    return fail(r, "expected a MessagePack array");
}

static bool skip_n(mp_reader *r, uint64_t n) {
    if ((uint64_t)(r->end - r->p) < n) return fail(r, "unexpected end of MessagePack data");
    r->p += n;
    return true;
}

static bool skip_depth(mp_reader *r, int depth) {
    if (depth > 64) return fail(r, "MessagePack nesting too deep");
    if (r->p >= r->end) return fail(r, "unexpected end of MessagePack data");
    uint8_t t = *r->p;
    uint64_t n = 0, count = 0;
    if (t < 0x80 || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) { r->p++; return true; }
    if ((t & 0xe0) == 0xa0) { r->p++; return skip_n(r, t & 0x1f); }
    if ((t & 0xf0) == 0x80) { r->p++; count = 2u * (t & 0x0f); goto items; }
    if ((t & 0xf0) == 0x90) { r->p++; count = t & 0x0f; goto items; }
    r->p++;
    switch (t) {
    case 0xcc: case 0xd0: return skip_n(r, 1);
    case 0xcd: case 0xd1: return skip_n(r, 2);
    case 0xce: case 0xd2: case 0xca: return skip_n(r, 4);
    case 0xcf: case 0xd3: case 0xcb: return skip_n(r, 8);
    case 0xd9: case 0xc4: if (!take_be(r, 1, &n)) return false; return skip_n(r, n);
    case 0xda: case 0xc5: if (!take_be(r, 2, &n)) return false; return skip_n(r, n);
    case 0xdb: case 0xc6: if (!take_be(r, 4, &n)) return false; return skip_n(r, n);
    case 0xd4: return skip_n(r, 2);
    case 0xd5: return skip_n(r, 3);
    case 0xd6: return skip_n(r, 5);
    case 0xd7: return skip_n(r, 9);
    case 0xd8: return skip_n(r, 17);
    case 0xc7: if (!take_be(r, 1, &n)) return false; return skip_n(r, n + 1);
    case 0xc8: if (!take_be(r, 2, &n)) return false; return skip_n(r, n + 1);
    case 0xc9: if (!take_be(r, 4, &n)) return false; return skip_n(r, n + 1);
    case 0xdc: if (!take_be(r, 2, &count)) return false; goto items;
    case 0xdd: if (!take_be(r, 4, &count)) return false; goto items;
    case 0xde: if (!take_be(r, 2, &count)) return false; count *= 2; goto items;
    case 0xdf: if (!take_be(r, 4, &count)) return false; count *= 2; goto items;
    default: return fail(r, "invalid MessagePack type byte");
    }
items:
    for (uint64_t i = 0; i < count; i++)
        if (!skip_depth(r, depth + 1)) return false;
    return true;
}

bool mp_skip(mp_reader *r) { return skip_depth(r, 0); }
