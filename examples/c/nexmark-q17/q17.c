/* Nexmark query 17 in C (auction statistics, grouped by auction), the same as
 * examples/nexmark-q17 (Rust): for every bid, the running statistics of its auction.
 *
 * Input: bids keyed by their auction id (MessagePack uint; the Nexmark source does this with
 * "key": "auction"); value = the bid as a MessagePack map with named fields, of which
 * `auction` and `price` are read (unsigned) and the others skipped.
 * State: the keyed state "stats", key = the record key bytes, value = the MessagePack array
 * [total_bids, rank1_bids, rank2_bids, rank3_bids, min_price, max_price, sum_price], state
 * schema version 0 (the layout of every language's q17). Ranks: price < 10 000, < 1 000 000,
 * the rest. The sum saturates at 2^64 - 1.
 * Output: per bid, one record with the bid's key and timestamp whose value is the fixmap
 * {auction, total_bids, rank1_bids, rank2_bids, rank3_bids, min_price, max_price, avg_price,
 * sum_price} (avg_price = sum_price / total_bids, rounded down).
 * open, on-watermark, on-timer, snapshot and restore are the defaults of common/defaults.c. */
#include <stdlib.h>
#include <string.h>

#include "weir.h"

#define STATE_VERSION 0

enum { TOTAL, RANK1, RANK2, RANK3, MIN, MAX, SUM, N_STATS };
typedef struct { uint64_t v[N_STATS]; } stats_t;

static void encode_stats(const void *value, mp_buf *out) {
    const stats_t *s = value;
    mp_put_array_header(out, N_STATS);
    for (int i = 0; i < N_STATS; i++) mp_put_uint(out, s->v[i]);
}

static const char *decode_stats(const uint8_t *bytes, size_t len, void *value) {
    stats_t *s = value;
    mp_reader r;
    uint32_t n;
    mp_reader_init(&r, bytes, len);
    if (!mp_read_array_header(&r, &n)) return r.error;
    if (n != N_STATS) return "expected an array of 7 unsigned integers";
    for (int i = 0; i < N_STATS; i++)
        if (!mp_read_uint(&r, &s->v[i])) return r.error;
    if (!mp_at_end(&r)) return "trailing bytes after the statistics";
    return NULL;
}

static keyed_state stats = KS_INITIALIZER(sizeof(stats_t), encode_stats, decode_stats);
WEIR_KEYED_STATES({ "stats", &stats })

/* Reads `auction` and `price` from a bid map; returns NULL or what is wrong. */
static const char *decode_bid(const uint8_t *data, size_t len, uint64_t *auction, uint64_t *price) {
    mp_reader r;
    uint32_t n;
    bool have_auction = false, have_price = false;
    mp_reader_init(&r, data, len);
    if (!mp_read_map_header(&r, &n)) return "expected a bid (a MessagePack map)";
    for (uint32_t i = 0; i < n; i++) {
        const char *name;
        uint32_t name_len;
        if (!mp_read_str(&r, &name, &name_len)) return r.error;
        if (name_len == 7 && memcmp(name, "auction", 7) == 0) {
            if (have_auction) return "duplicate field `auction`";
            if (!mp_read_uint(&r, auction)) return "field `auction`: expected an unsigned integer";
            have_auction = true;
        } else if (name_len == 5 && memcmp(name, "price", 5) == 0) {
            if (have_price) return "duplicate field `price`";
            if (!mp_read_uint(&r, price)) return "field `price`: expected an unsigned integer";
            have_price = true;
        } else if (!mp_skip(&r)) {
            return r.error;
        }
    }
    if (!have_auction) return "missing field `auction`";
    if (!have_price) return "missing field `price`";
    return NULL;
}

static int rank(uint64_t price) { return price < 10000 ? RANK1 : price < 1000000 ? RANK2 : RANK3; }

void exports_weir_operator_operator_describe(exports_weir_operator_operator_operator_info_t *ret) {
    ret->name = weir_string("nexmark-q17-c");
    ret->state_version = STATE_VERSION;
    ret->migrates_from.ptr = NULL;
    ret->migrates_from.len = 0;
}

bool exports_weir_operator_operator_process(uint32_t input, weir_batch *batch, weir_batch *ret, weir_error *err) {
    (void)input;
    static const stats_t fresh = { { 0, 0, 0, 0, UINT64_MAX, 0, 0 } };
    bool ok = true;
    weir_out out = {0};
    size_t offset = 0;
    for (size_t i = 0; i < batch->entries.len; i++) {
        weir_record rec;
        if (!weir_batch_next(batch, i, &offset, &rec)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu runs past the end of the batch data", i);
            break;
        }
        uint64_t auction, price;
        const char *msg = decode_bid(rec.value, rec.value_len, &auction, &price);
        if (msg) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu: cannot decode MessagePack: %s", i, msg);
            break;
        }
        if (rec.key_len == 0) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT,
                           "q17 expects bids keyed by auction (source config \"key\": \"auction\")");
            break;
        }
        stats_t *s = ks_value_mut(&stats, ks_upsert(&stats, rec.key, rec.key_len, &fresh, NULL));
        s->v[TOTAL]++;
        s->v[rank(price)]++;
        if (price < s->v[MIN]) s->v[MIN] = price;
        if (price > s->v[MAX]) s->v[MAX] = price;
        s->v[SUM] = s->v[SUM] > UINT64_MAX - price ? UINT64_MAX : s->v[SUM] + price;

        weir_out_begin(&out);
        mp_put_bytes(&out.data, rec.key, rec.key_len);
        weir_out_key_done(&out);
        mp_put_map_header(&out.data, 9);
        mp_put_str(&out.data, "auction", 7);    mp_put_uint(&out.data, auction);
        mp_put_str(&out.data, "total_bids", 10); mp_put_uint(&out.data, s->v[TOTAL]);
        mp_put_str(&out.data, "rank1_bids", 10); mp_put_uint(&out.data, s->v[RANK1]);
        mp_put_str(&out.data, "rank2_bids", 10); mp_put_uint(&out.data, s->v[RANK2]);
        mp_put_str(&out.data, "rank3_bids", 10); mp_put_uint(&out.data, s->v[RANK3]);
        mp_put_str(&out.data, "min_price", 9);  mp_put_uint(&out.data, s->v[MIN]);
        mp_put_str(&out.data, "max_price", 9);  mp_put_uint(&out.data, s->v[MAX]);
        mp_put_str(&out.data, "avg_price", 9);  mp_put_uint(&out.data, s->v[SUM] / s->v[TOTAL]);
        mp_put_str(&out.data, "sum_price", 9);  mp_put_uint(&out.data, s->v[SUM]);
        weir_out_end(&out, rec.timestamp);
    }
    if (ok) weir_out_finish(&out, ret);
    else { free(out.data.data); free(out.entries); }
    weir_operator_types_batch_free(batch);
    return ok;
}
