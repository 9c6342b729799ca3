/* Nexmark query 1 in C (currency conversion), the same as examples/nexmark-q1 (Rust): every
 * bid with its price converted from dollars to euros (price * 908 / 1000, integer).
 *
 * Records have no key; values are bids as MessagePack maps with named fields (auction,
 * bidder, price, channel, url, date_time, extra), written back in that order. Arrays of the
 * seven fields in that order are read too, and unknown map fields are ignored, as serde
 * does. Stateless: open, on-watermark, on-timer, snapshot (empty) and restore (refuses any
 * entry) are the defaults of common/defaults.c. */
#include <stdlib.h>
#include <string.h>

#include "weir.h"

typedef struct {
    uint64_t auction, bidder, price, date_time;
    const char *channel, *url, *extra;
    uint32_t channel_len, url_len, extra_len;
} bid;

enum { F_AUCTION, F_BIDDER, F_PRICE, F_CHANNEL, F_URL, F_DATE_TIME, F_EXTRA, N_FIELDS };
static const char *const FIELD_NAMES[N_FIELDS] = { "auction", "bidder", "price", "channel", "url", "date_time", "extra" };

static bool read_field(mp_reader *r, bid *b, int field) {
    switch (field) {
    case F_AUCTION: return mp_read_uint(r, &b->auction);
    case F_BIDDER: return mp_read_uint(r, &b->bidder);
    case F_PRICE: return mp_read_uint(r, &b->price);
    case F_CHANNEL: return mp_read_str(r, &b->channel, &b->channel_len);
    case F_URL: return mp_read_str(r, &b->url, &b->url_len);
    case F_DATE_TIME: return mp_read_uint(r, &b->date_time);
    case F_EXTRA: return mp_read_str(r, &b->extra, &b->extra_len);
    default: return mp_skip(r);
    }
}

/* Decodes a bid; returns NULL or a message naming the problem. */
static const char *decode_bid(const uint8_t *data, size_t len, bid *b) {
    mp_reader r;
    mp_reader_init(&r, data, len);
    uint32_t n, seen = 0;
    if (r.p < r.end && ((*r.p & 0xf0) == 0x90 || *r.p == 0xdc || *r.p == 0xdd)) {
        if (!mp_read_array_header(&r, &n)) return r.error;
        if (n != N_FIELDS) return "expected an array of 7 bid fields";
        for (int f = 0; f < N_FIELDS; f++)
            if (!read_field(&r, b, f)) return r.error;
        return NULL;
    }
    if (!mp_read_map_header(&r, &n)) return "expected a bid (a MessagePack map or array)";
    for (uint32_t i = 0; i < n; i++) {
        const char *name;
        uint32_t name_len;
        if (!mp_read_str(&r, &name, &name_len)) return r.error;
        int field = N_FIELDS;
        for (int f = 0; f < N_FIELDS; f++)
            if (strlen(FIELD_NAMES[f]) == name_len && memcmp(FIELD_NAMES[f], name, name_len) == 0) field = f;
        if (field < N_FIELDS && (seen & (1u << field))) return "duplicate bid field";
        if (!read_field(&r, b, field)) return r.error;
        if (field < N_FIELDS) seen |= 1u << field;
    }
    if (seen != (1u << N_FIELDS) - 1) {
        for (int f = 0; f < N_FIELDS; f++)
            if (!(seen & (1u << f))) return FIELD_NAMES[f]; /* caller says "missing field" */
    }
    return NULL;
}

static void encode_bid(mp_buf *out, const bid *b) {
    mp_put_map_header(out, N_FIELDS);
    mp_put_str(out, "auction", 7);   mp_put_uint(out, b->auction);
    mp_put_str(out, "bidder", 6);    mp_put_uint(out, b->bidder);
    mp_put_str(out, "price", 5);     mp_put_uint(out, b->price);
    mp_put_str(out, "channel", 7);   mp_put_str(out, b->channel, b->channel_len);
    mp_put_str(out, "url", 3);       mp_put_str(out, b->url, b->url_len);
    mp_put_str(out, "date_time", 9); mp_put_uint(out, b->date_time);
    mp_put_str(out, "extra", 5);     mp_put_str(out, b->extra, b->extra_len);
}

static uint64_t dollars_to_euros(uint64_t dollars) {
    if (dollars <= UINT64_MAX / 908) return dollars * 908 / 1000;
    /* A huge price: dollars * 908 / 1000 without overflow (the result is smaller). */
    uint64_t q = dollars / 1000, rem = dollars % 1000;
    return q * 908 + rem * 908 / 1000;
}

void exports_weir_operator_operator_describe(exports_weir_operator_operator_operator_info_t *ret) {
    ret->name = weir_string("nexmark-q1-c");
    ret->state_version = 0;
    ret->migrates_from.ptr = NULL;
    ret->migrates_from.len = 0;
}

bool exports_weir_operator_operator_process(uint32_t input, weir_batch *batch, weir_batch *ret, weir_error *err) {
    (void)input;
    bool ok = true;
    weir_out out = {0};
    mp_reserve(&out.data, batch->data.len + 16);
    size_t offset = 0;
    for (size_t i = 0; i < batch->entries.len; i++) {
        weir_record rec;
        if (!weir_batch_next(batch, i, &offset, &rec)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu runs past the end of the batch data", i);
            break;
        }
        bid b;
        const char *msg = decode_bid(rec.value, rec.value_len, &b);
        if (msg) {
            bool missing = false;
            for (int f = 0; f < N_FIELDS; f++) missing |= msg == FIELD_NAMES[f];
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "cannot decode MessagePack: %s%s",
                           missing ? "missing field " : "", msg);
            break;
        }
        b.price = dollars_to_euros(b.price);
        weir_out_begin(&out);
        mp_put_bytes(&out.data, rec.key, rec.key_len);
        weir_out_key_done(&out);
        encode_bid(&out.data, &b);
        weir_out_end(&out, rec.timestamp);
    }
    if (ok) weir_out_finish(&out, ret);
    else { free(out.data.data); free(out.entries); }
    weir_operator_types_batch_free(batch);
    return ok;
}
