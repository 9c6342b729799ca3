/* Word count in C: a keyed, stateful Weir operator, the same as examples/wordcount (Rust).
 *
 * Input: records keyed by a word (MessagePack str) whose value is an increment (MessagePack
 * uint), as the tokenizer emits them. State: the running count of every word, in the keyed
 * state "counts" (key = the record's key bytes, value = MessagePack uint), state schema
 * version 0. Output: per input batch, one record per distinct word of the batch in
 * first-seen order: key = the word, value = its new total, timestamp = the latest timestamp
 * of the word's records in the batch. open, on-watermark, on-timer, snapshot and restore are
 * the defaults of common/defaults.c. */
#include <stdlib.h>
#include <string.h>

#include "weir.h"

#define STATE_VERSION 0


/* The distinct words of the batch being processed: per state entry, the generation of the
 * batch that last touched it and its position in `batch_words`. */
typedef struct { ks_handle entry; int64_t timestamp; } batch_word;
static batch_word *batch_words;
static size_t n_batch_words, cap_batch_words;
static uint32_t *seen_gen, *seen_pos;
static size_t cap_seen;
static uint32_t generation;

static void encode_count(const void *value, mp_buf *out) { mp_put_uint(out, *(const uint64_t *)value); }

static const char *decode_count(const uint8_t *bytes, size_t len, void *value) {
    mp_reader r;
    mp_reader_init(&r, bytes, len);
    if (!mp_read_uint(&r, (uint64_t *)value)) return r.error;
    if (!mp_at_end(&r)) return "trailing bytes after the count";
    return NULL;
}

static keyed_state counts = KS_INITIALIZER(sizeof(uint64_t), encode_count, decode_count);
/* The default restore and snapshot (common/defaults.c) save and restore it. */
WEIR_KEYED_STATES({ "counts", &counts })

void exports_weir_operator_operator_describe(exports_weir_operator_operator_operator_info_t *ret) {
    ret->name = weir_string("wordcount-c");
    ret->state_version = STATE_VERSION;
    ret->migrates_from.ptr = NULL;
    ret->migrates_from.len = 0;
}

static void touch(ks_handle h, int64_t timestamp) {
    if (h >= cap_seen) {
        size_t cap = cap_seen ? cap_seen : 1024;
        while (cap <= h) cap *= 2;
        seen_gen = realloc(seen_gen, cap * sizeof *seen_gen);
        seen_pos = realloc(seen_pos, cap * sizeof *seen_pos);
        if (!seen_gen || !seen_pos) abort();
        memset(seen_gen + cap_seen, 0, (cap - cap_seen) * sizeof *seen_gen);
        cap_seen = cap;
    }
    if (seen_gen[h] == generation) {
        batch_word *w = &batch_words[seen_pos[h]];
        if (timestamp > w->timestamp) w->timestamp = timestamp;
        return;
    }
    if (n_batch_words == cap_batch_words) {
        cap_batch_words = cap_batch_words ? cap_batch_words * 2 : 1024;
        batch_words = realloc(batch_words, cap_batch_words * sizeof *batch_words);
        if (!batch_words) abort();
    }
    seen_gen[h] = generation;
    seen_pos[h] = (uint32_t)n_batch_words;
    batch_words[n_batch_words++] = (batch_word){ h, timestamp };
}

bool exports_weir_operator_operator_process(uint32_t input, weir_batch *batch, weir_batch *ret, weir_error *err) {
    (void)input;
    bool ok = true;
    if (++generation == 0) { /* wrapped: forget every mark */
        memset(seen_gen, 0, cap_seen * sizeof *seen_gen);
        generation = 1;
    }
    n_batch_words = 0;
    size_t offset = 0;
    for (size_t i = 0; i < batch->entries.len && ok; i++) {
        weir_record rec;
        if (!weir_batch_next(batch, i, &offset, &rec)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT, "record %zu runs past the end of the batch data", i);
            break;
        }
        mp_reader r;
        const char *word;
        uint32_t word_len;
        mp_reader_init(&r, rec.key, rec.key_len);
        if (!mp_read_str(&r, &word, &word_len) || !mp_at_end(&r)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT,
                           "record %zu: the key is not a MessagePack string: %s", i, r.error ? r.error : "trailing bytes");
            break;
        }
        uint64_t increment;
        mp_reader_init(&r, rec.value, rec.value_len);
        if (!mp_read_uint(&r, &increment)) {
            ok = weir_fail(err, WEIR_OPERATOR_TYPES_ERROR_INVALID_INPUT,
                           "record %zu: the value is not a MessagePack unsigned integer: %s", i, r.error);
            break;
        }
        ks_handle h = ks_upsert(&counts, rec.key, rec.key_len, NULL, NULL);
        uint64_t *count = ks_value_mut(&counts, h);
        *count = (*count > UINT64_MAX - increment) ? UINT64_MAX : *count + increment;
        touch(h, rec.timestamp);
    }
    if (ok) {
        weir_out out = {0};
        mp_buf value = {0};
        for (size_t i = 0; i < n_batch_words; i++) {
            size_t key_len;
            const uint8_t *key = ks_key(&counts, batch_words[i].entry, &key_len);
            value.len = 0;
            mp_put_uint(&value, *(const uint64_t *)ks_value(&counts, batch_words[i].entry));
            weir_out_push(&out, key, key_len, value.data, value.len, batch_words[i].timestamp);
        }
        free(value.data);
        weir_out_finish(&out, ret);
    }
    weir_operator_types_batch_free(batch);
    return ok;
}
