/* Native unit tests of the C helpers (keyed state and MessagePack), mirroring the Rust
 * guest SDK's KeyedState tests. Run: ./run-tests.sh */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyed_state.h"
#include "msgpack.h"

static int passed, failed;
#define CHECK(c) do { if (c) passed++; else { failed++; fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static void enc(const void *v, mp_buf *out) { mp_put_uint(out, *(const uint64_t *)v); }
static const char *dec(const uint8_t *b, size_t n, void *v) {
    mp_reader r; mp_reader_init(&r, b, n);
    return mp_read_uint(&r, v) ? NULL : r.error;
}

/* Snapshot rendered as text: "+key=value" / "-key", sorted by emission order. */
static char snap[4096];
static void emit(void *ctx, const uint8_t *key, size_t kl, const uint8_t *value, size_t vl) {
    (void)ctx;
    mp_reader r; const char *s; uint32_t sl; uint64_t v = 0;
    mp_reader_init(&r, key, kl); mp_read_str(&r, &s, &sl);
    char line[128];
    if (value) { mp_reader_init(&r, value, vl); mp_read_uint(&r, &v); snprintf(line, sizeof line, "+%.*s=%llu ", (int)sl, s, (unsigned long long)v); }
    else snprintf(line, sizeof line, "-%.*s ", (int)sl, s);
    if (strlen(snap) + strlen(line) < sizeof snap) strcat(snap, line);
}
static const char *snapshot(keyed_state *s, bool full) { snap[0] = 0; ks_snapshot(s, full, emit, NULL); return snap; }

static uint8_t kbuf[64];
static size_t key(const char *w) { mp_buf b = {0}; mp_put_str(&b, w, strlen(w)); memcpy(kbuf, b.data, b.len); free(b.data); return b.len; }
#define K(w) kbuf, key(w)

static void put(keyed_state *s, const char *w, uint64_t v) { size_t n = key(w); ks_put(s, kbuf, n, &v); }
static void add(keyed_state *s, const char *w, uint64_t d) { size_t n = key(w); ks_handle h = ks_upsert(s, kbuf, n, NULL, NULL); *(uint64_t *)ks_value_mut(s, h) += d; }

int main(void) {
    keyed_state s;
    ks_init(&s, sizeof(uint64_t), enc, dec);
    put(&s, "a", 1); put(&s, "b", 2);
    CHECK(strcmp(snapshot(&s, false), "+a=1 +b=2 ") == 0);
    CHECK(strcmp(snapshot(&s, false), "") == 0);
    add(&s, "a", 10);
    CHECK(*(const uint64_t *)ks_value(&s, ks_find(&s, K("b"))) == 2);
    add(&s, "c", 3); add(&s, "c", 3);
    CHECK(strcmp(snapshot(&s, false), "+a=11 +c=6 ") == 0);

    /* removal writes a delete only for keys a snapshot saw */
    put(&s, "fleeting", 2);
    CHECK(ks_remove(&s, K("fleeting")));
    CHECK(ks_remove(&s, K("a")));
    CHECK(!ks_remove(&s, K("never")));
    CHECK(strcmp(snapshot(&s, false), "-a ") == 0);
    CHECK(strcmp(snapshot(&s, false), "") == 0);
    put(&s, "back", 1); snapshot(&s, false);
    ks_remove(&s, K("back")); put(&s, "back", 5);
    CHECK(strcmp(snapshot(&s, false), "+back=5 ") == 0);
    ks_remove(&s, K("back"));
    CHECK(strcmp(snapshot(&s, false), "-back ") == 0);
    CHECK(ks_len(&s) == 2); /* b, c */

    /* full snapshot holds every live entry and resets changes */
    put(&s, "d", 4); ks_remove(&s, K("b"));
    snapshot(&s, true);
    CHECK(strstr(snap, "+c=6 ") && strstr(snap, "+d=4 ") && !strstr(snap, "b"));
    CHECK(strcmp(snapshot(&s, false), "") == 0);

    /* restore: restored keys count as held by the host */
    keyed_state r;
    ks_init(&r, sizeof(uint64_t), enc, dec);
    uint8_t v7[] = { 7 };
    CHECK(ks_restore(&r, K("x"), v7, 1) == NULL);
    CHECK(ks_restore(&r, K("y"), v7, 1) == NULL);
    uint8_t bad[] = { 0xa1, 'z' };
    CHECK(ks_restore(&r, K("z"), bad, 2) != NULL);
    CHECK(ks_len(&r) == 2);
    CHECK(strcmp(snapshot(&r, false), "") == 0);
    ks_remove(&r, K("y"));
    CHECK(strcmp(snapshot(&r, false), "-y ") == 0);

    /* many keys: growth, removal and reuse keep every value */
    keyed_state m;
    ks_init(&m, sizeof(uint64_t), enc, dec);
    char w[32];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 5000; i++) { snprintf(w, sizeof w, "w%d", i); add(&m, w, (uint64_t)i); }
        for (int i = 0; i < 5000; i += 3) { snprintf(w, sizeof w, "w%d", i); ks_remove(&m, K(w)); }
        snapshot(&m, round == 1);
    }
    int ok = 1;
    for (int i = 0; i < 5000; i++) {
        snprintf(w, sizeof w, "w%d", i);
        ks_handle h = ks_find(&m, K(w));
        if (i % 3 == 0) ok &= h == KS_NONE;
        else ok &= h != KS_NONE && *(const uint64_t *)ks_value(&m, h) == (uint64_t)i * 3;
    }
    CHECK(ok);

    /* MessagePack integers in their smallest form, and back */
    uint64_t vals[] = { 0, 127, 128, 255, 256, 65535, 65536, 4294967295u, 4294967296u, UINT64_MAX };
    size_t lens[] = { 1, 1, 2, 2, 3, 3, 5, 5, 9, 9 };
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        mp_buf b = {0}; mp_put_uint(&b, vals[i]);
        mp_reader rd; uint64_t back = 1; mp_reader_init(&rd, b.data, b.len);
        CHECK(b.len == lens[i] && mp_read_uint(&rd, &back) && back == vals[i] && mp_at_end(&rd));
        free(b.data);
    }
    uint8_t neg[] = { 0xff };
    mp_reader rd; uint64_t u; mp_reader_init(&rd, neg, 1);
    CHECK(!mp_read_uint(&rd, &u));

    ks_free(&s); ks_free(&r); ks_free(&m);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
