/* Native unit tests of the C Nexmark q17 operator (nexmark-q17/q17.c), through its exports,
 * with the default exports of common/defaults.c: running statistics, ranks, saturation, the
 * keyed state helper's incremental and full snapshots, restore, invalid input.
 * Built by run-tests.sh with the generated header and the generated free functions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../nexmark-q17/q17.c" /* the operator itself, to reach its static state */

static int passed, failed;
#define CHECK(c) do { if (c) passed++; else { failed++; fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

/* ---- building inputs (malloc'd: the operator frees its arguments) ---- */

typedef struct { mp_buf data; weir_operator_types_entry_t entries[64]; size_t n; } batch_in;

static void add_raw(batch_in *b, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len, int64_t ts) {
    mp_put_bytes(&b->data, key, key_len);
    mp_put_bytes(&b->data, value, value_len);
    b->entries[b->n++] = (weir_operator_types_entry_t){ (uint32_t)key_len, (uint32_t)value_len, ts };
}

static void add_bid(batch_in *b, uint64_t auction, uint64_t price, int64_t ts) {
    mp_buf k = {0}, v = {0};
    mp_put_uint(&k, auction);
    mp_put_map_header(&v, 7);
    mp_put_str(&v, "auction", 7);   mp_put_uint(&v, auction);
    mp_put_str(&v, "bidder", 6);    mp_put_uint(&v, 9);
    mp_put_str(&v, "price", 5);     mp_put_uint(&v, price);
    mp_put_str(&v, "channel", 7);   mp_put_str(&v, "web", 3);
    mp_put_str(&v, "url", 3);       mp_put_str(&v, "u", 1);
    mp_put_str(&v, "date_time", 9); mp_put_uint(&v, (uint64_t)ts);
    mp_put_str(&v, "extra", 5);     mp_put_str(&v, "", 0);
    add_raw(b, k.data, k.len, v.data, v.len, ts);
    free(k.data); free(v.data);
}

static weir_batch to_batch(batch_in *b) {
    weir_batch out;
    out.data.ptr = b->data.data;
    out.data.len = b->data.len;
    out.entries.ptr = malloc((b->n ? b->n : 1) * sizeof *out.entries.ptr);
    memcpy(out.entries.ptr, b->entries, b->n * sizeof *out.entries.ptr);
    out.entries.len = b->n;
    memset(b, 0, sizeof *b);
    return out;
}

/* ---- reading outputs ---- */

typedef struct {
    uint64_t auction, total, rank1, rank2, rank3, min, max, avg, sum;
    int64_t ts;
    uint64_t key; /* the output key, decoded */
} row;

static const char *const ROW_FIELDS[9] = { "auction", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
                                            "min_price", "max_price", "avg_price", "sum_price" };

/* Decodes the output rows; checks the field names and order. Returns the number of rows. */
static size_t rows_of(const weir_batch *out, row *rows, size_t max) {
    size_t offset = 0, n = 0;
    for (size_t i = 0; i < out->entries.len && n < max; i++) {
        weir_record rec;
        if (!weir_batch_next(out, i, &offset, &rec)) { CHECK(!"output runs past its data"); return n; }
        row *r = &rows[n++];
        mp_reader rd;
        uint32_t fields;
        mp_reader_init(&rd, rec.key, rec.key_len);
        CHECK(mp_read_uint(&rd, &r->key) && mp_at_end(&rd));
        mp_reader_init(&rd, rec.value, rec.value_len);
        CHECK(rec.value_len > 0 && rec.value[0] == 0x89); /* fixmap of 9 */
        CHECK(mp_read_map_header(&rd, &fields) && fields == 9);
        uint64_t *dst[9] = { &r->auction, &r->total, &r->rank1, &r->rank2, &r->rank3, &r->min, &r->max, &r->avg, &r->sum };
        for (int f = 0; f < 9; f++) {
            const char *name;
            uint32_t len;
            CHECK(mp_read_str(&rd, &name, &len) && len == strlen(ROW_FIELDS[f]) && memcmp(name, ROW_FIELDS[f], len) == 0);
            CHECK(mp_read_uint(&rd, dst[f]));
        }
        CHECK(mp_at_end(&rd));
        r->ts = rec.timestamp;
    }
    return n;
}

static bool process(batch_in *in, weir_batch *out, weir_error *err) {
    weir_batch b = to_batch(in);
    memset(out, 0, sizeof *out);
    return exports_weir_operator_operator_process(0, &b, out, err);
}

static size_t run(batch_in *in, row *rows, size_t max) {
    weir_batch out;
    weir_error err;
    if (!process(in, &out, &err)) {
        fprintf(stderr, "process failed: %.*s\n", (int)err.val.other.len, (const char *)err.val.other.ptr);
        weir_operator_types_error_free(&err);
        CHECK(!"process failed");
        return 0;
    }
    size_t n = rows_of(&out, rows, max);
    weir_operator_types_batch_free(&out);
    return n;
}

/* The message of a failed call; frees the error. */
static char message[512];
static const char *take_error(weir_error *err, uint8_t *tag) {
    *tag = err->tag;
    snprintf(message, sizeof message, "%.*s", (int)err->val.other.len, (const char *)err->val.other.ptr);
    weir_operator_types_error_free(err);
    return message;
}

/* A snapshot, as the list of "auction:[7 values]" puts or "-auction" deletes. */
static char snap[4096];
static size_t snap_entries;
static const char *snapshot(bool full, weir_delta *keep) {
    weir_delta d;
    weir_error err;
    snap[0] = 0;
    CHECK(exports_weir_operator_operator_snapshot(1, full, &d, &err));
    CHECK(d.names.len == 1 && d.names.ptr[0].len == 5 && memcmp(d.names.ptr[0].ptr, "stats", 5) == 0);
    size_t offset = 0;
    snap_entries = d.entries.len;
    for (size_t i = 0; i < d.entries.len; i++) {
        const weir_operator_types_state_entry_t *e = &d.entries.ptr[i];
        mp_reader rd;
        uint64_t key, v[7];
        uint32_t n;
        char line[256];
        CHECK(e->state == 0);
        mp_reader_init(&rd, d.data.ptr + offset, e->key_len);
        CHECK(mp_read_uint(&rd, &key));
        if (e->kind == WEIR_OPERATOR_TYPES_CHANGE_KIND_DELETE) {
            snprintf(line, sizeof line, "-%llu ", (unsigned long long)key);
        } else {
            mp_reader_init(&rd, d.data.ptr + offset + e->key_len, e->value_len);
            CHECK(d.data.ptr[offset + e->key_len] == 0x97); /* fixarray of 7 */
            CHECK(mp_read_array_header(&rd, &n) && n == 7);
            for (int j = 0; j < 7; j++) CHECK(mp_read_uint(&rd, &v[j]));
            CHECK(mp_at_end(&rd));
            snprintf(line, sizeof line, "%llu:[%llu,%llu,%llu,%llu,%llu,%llu,%llu] ", (unsigned long long)key,
                     (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2], (unsigned long long)v[3],
                     (unsigned long long)v[4], (unsigned long long)v[5], (unsigned long long)v[6]);
        }
        if (strlen(snap) + strlen(line) < sizeof snap) strcat(snap, line);
        offset += (size_t)e->key_len + e->value_len;
    }
    if (keep) *keep = d;
    else weir_operator_types_state_delta_free(&d);
    return snap;
}

/* A fresh operator instance: drops the state. */
static keyed_state pristine;
static void reset(void) {
    ks_free(&stats);
    stats = pristine;
}

/* A restore chunk with one entry of state `name`. */
static weir_delta chunk_of(const char *name, uint64_t key, const uint8_t *value, size_t value_len) {
    weir_delta d;
    mp_buf data = {0};
    mp_put_uint(&data, key);
    size_t key_len = data.len;
    mp_put_bytes(&data, value, value_len);
    d.names.len = 1;
    d.names.ptr = malloc(sizeof *d.names.ptr);
    d.names.ptr[0] = weir_string(name);
    d.data.ptr = data.data;
    d.data.len = data.len;
    d.entries.len = 1;
    d.entries.ptr = malloc(sizeof *d.entries.ptr);
    d.entries.ptr[0] = (weir_operator_types_state_entry_t){ 0, WEIR_OPERATOR_TYPES_CHANGE_KIND_PUT, (uint32_t)key_len, (uint32_t)value_len };
    return d;
}

int main(void) {
    pristine = stats;
    row rows[64];
    batch_in in = {0};
    weir_batch out;
    weir_error err;
    uint8_t tag;

    /* describe */
    exports_weir_operator_operator_operator_info_t info;
    exports_weir_operator_operator_describe(&info);
    CHECK(info.state_version == 0 && info.migrates_from.len == 0);
    CHECK(info.name.len == 13 && memcmp(info.name.ptr, "nexmark-q17-c", 13) == 0);
    exports_weir_operator_operator_operator_info_free(&info);

    /* running statistics per auction (the Rust q17's test) */
    add_bid(&in, 1, 500, 10); add_bid(&in, 2, 20000, 11); add_bid(&in, 1, 2000000, 12);
    CHECK(run(&in, rows, 64) == 3);
    CHECK(rows[0].key == 1 && rows[1].key == 2 && rows[2].key == 1);
    CHECK(rows[0].ts == 10 && rows[1].ts == 11 && rows[2].ts == 12);
    CHECK(rows[0].auction == 1 && rows[0].total == 1 && rows[0].rank1 == 1 && rows[0].rank2 == 0 && rows[0].rank3 == 0
          && rows[0].min == 500 && rows[0].max == 500 && rows[0].avg == 500 && rows[0].sum == 500);
    CHECK(rows[1].auction == 2 && rows[1].rank2 == 1 && rows[1].total == 1);
    CHECK(rows[2].auction == 1 && rows[2].total == 2 && rows[2].rank1 == 1 && rows[2].rank2 == 0 && rows[2].rank3 == 1
          && rows[2].min == 500 && rows[2].max == 2000000 && rows[2].avg == 1000250 && rows[2].sum == 2000500);

    /* the output key is the input key, byte for byte (here a uint 16) */
    add_bid(&in, 300, 1, 13);
    {
        weir_batch b = to_batch(&in);
        CHECK(exports_weir_operator_operator_process(0, &b, &out, &err));
        CHECK(out.entries.len == 1 && out.entries.ptr[0].key_len == 3 && memcmp(out.data.ptr, "\xcd\x01\x2c", 3) == 0);
        weir_operator_types_batch_free(&out);
    }

    /* ranks at their boundaries */
    reset();
    add_bid(&in, 5, 9999, 1); add_bid(&in, 5, 10000, 2); add_bid(&in, 5, 999999, 3); add_bid(&in, 5, 1000000, 4);
    add_bid(&in, 5, 0, 5);
    CHECK(run(&in, rows, 64) == 5);
    CHECK(rows[4].total == 5 && rows[4].rank1 == 2 && rows[4].rank2 == 2 && rows[4].rank3 == 1);
    CHECK(rows[4].min == 0 && rows[4].max == 1000000 && rows[4].sum == 2019998 && rows[4].avg == 2019998 / 5);

    /* the sum saturates at 2^64 - 1 */
    reset();
    add_bid(&in, 7, UINT64_MAX, 1); add_bid(&in, 7, 1, 2);
    CHECK(run(&in, rows, 64) == 2);
    CHECK(rows[0].sum == UINT64_MAX && rows[0].min == UINT64_MAX && rows[0].rank3 == 1);
    CHECK(rows[1].total == 2 && rows[1].sum == UINT64_MAX && rows[1].min == 1 && rows[1].avg == UINT64_MAX / 2);

    /* snapshots: incremental = changed keys since the last one; full = every key */
    reset();
    add_bid(&in, 1, 100, 1); add_bid(&in, 2, 200, 2); add_bid(&in, 1, 20000, 3);
    run(&in, rows, 64);
    CHECK(strcmp(snapshot(false, NULL), "1:[2,1,1,0,100,20000,20100] 2:[1,1,0,0,200,200,200] ") == 0);
    CHECK(strcmp(snapshot(false, NULL), "") == 0 && snap_entries == 0);
    add_bid(&in, 2, 2000000, 4);
    run(&in, rows, 64);
    CHECK(strcmp(snapshot(false, NULL), "2:[2,1,0,1,200,2000000,2000200] ") == 0);
    weir_delta saved;
    snapshot(true, &saved);
    CHECK(strstr(snap, "1:[2,1,1,0,100,20000,20100] ") && strstr(snap, "2:[2,1,0,1,200,2000000,2000200] ") && snap_entries == 2);
    CHECK(strcmp(snapshot(false, NULL), "") == 0);

    /* restore into a fresh instance: the statistics go on; restored keys are held by the host */
    reset();
    CHECK(exports_weir_operator_operator_restore(0, &saved, &err));
    exports_weir_operator_operator_context_t ctx = { weir_string("q17"), weir_string("{}"), 0, 1, 128, 0, 128, 1, true };
    CHECK(exports_weir_operator_operator_open(&ctx, &err));
    CHECK(strcmp(snapshot(false, NULL), "") == 0);
    add_bid(&in, 1, 50, 5);
    CHECK(run(&in, rows, 64) == 1);
    CHECK(rows[0].total == 3 && rows[0].rank1 == 2 && rows[0].min == 50 && rows[0].max == 20000 && rows[0].sum == 20150
          && rows[0].avg == 20150 / 3);
    CHECK(strcmp(snapshot(false, NULL), "1:[3,2,1,0,50,20000,20150] ") == 0);

    /* restore refuses another state version, another state, a malformed value */
    reset();
    uint8_t good[] = { 0x97, 1, 1, 0, 0, 5, 5, 5 };
    weir_delta c = chunk_of("stats", 9, good, sizeof good);
    CHECK(!exports_weir_operator_operator_restore(1, &c, &err));
    CHECK(strstr(take_error(&err, &tag), "state schema version 1 cannot be restored by this operator (version 0") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE);
    c = chunk_of("counts", 9, good, sizeof good);
    CHECK(!exports_weir_operator_operator_restore(0, &c, &err));
    CHECK(strstr(take_error(&err, &tag), "\"counts\"") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE);
    uint8_t six[] = { 0x96, 1, 1, 0, 0, 5, 5 };
    c = chunk_of("stats", 9, six, sizeof six);
    CHECK(!exports_weir_operator_operator_restore(0, &c, &err));
    CHECK(strstr(take_error(&err, &tag), "array of 7") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_STATE);
    reset();
    c = chunk_of("stats", 9, good, sizeof good);
    CHECK(exports_weir_operator_operator_restore(0, &c, &err));
    add_bid(&in, 9, 7, 1);
    CHECK(run(&in, rows, 64) == 1 && rows[0].total == 2 && rows[0].min == 5 && rows[0].max == 7 && rows[0].sum == 12);

    /* invalid input fails the batch */
    mp_buf k = {0}, v = {0};
    mp_put_uint(&k, 1);
    mp_put_uint(&v, 42); /* not a map */
    add_raw(&in, k.data, k.len, v.data, v.len, 0);
    CHECK(!process(&in, &out, &err));
    CHECK(strstr(take_error(&err, &tag), "expected a bid") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT);
    v.len = 0;
    mp_put_map_header(&v, 1); mp_put_str(&v, "auction", 7); mp_put_uint(&v, 1);
    add_raw(&in, k.data, k.len, v.data, v.len, 0);
    CHECK(!process(&in, &out, &err));
    CHECK(strstr(take_error(&err, &tag), "missing field `price`") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT);
    v.len = 0;
    mp_put_map_header(&v, 2); mp_put_str(&v, "auction", 7); mp_put_uint(&v, 1); mp_put_str(&v, "price", 5); mp_put_int(&v, -3);
    add_raw(&in, k.data, k.len, v.data, v.len, 0);
    CHECK(!process(&in, &out, &err));
    CHECK(strstr(take_error(&err, &tag), "`price`") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT);
    v.len = 0;
    mp_put_map_header(&v, 2); mp_put_str(&v, "price", 5); mp_put_uint(&v, 1); mp_put_str(&v, "auction", 7); mp_put_uint(&v, 1);
    add_raw(&in, NULL, 0, v.data, v.len, 0); /* unkeyed */
    CHECK(!process(&in, &out, &err));
    CHECK(strstr(take_error(&err, &tag), "keyed by auction") && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT);
    add_bid(&in, 1, 1, 1);
    add_raw(&in, k.data, 1, (const uint8_t *)"\xc1", 1, 2); /* a good record, then a bad one */
    CHECK(!process(&in, &out, &err));
    CHECK(take_error(&err, &tag) && tag == WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT);
    free(k.data); free(v.data);

    /* the default on-watermark and on-timer emit nothing */
    CHECK(exports_weir_operator_operator_on_watermark(100, &out, &err) && out.entries.len == 0 && out.data.len == 0);
    operator_world_list_u8_t tk = { malloc(1), 1 };
    tk.ptr[0] = 1;
    CHECK(exports_weir_operator_operator_on_timer(&tk, 100, &out, &err) && out.entries.len == 0);

    ks_free(&stats);
    printf("q17: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
