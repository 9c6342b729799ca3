#include "keyed_state.h"

#include <stdlib.h>
#include <string.h>

#define INDEX_GONE UINT32_MAX

struct ks_entry {
    uint8_t *key;
    uint32_t key_len;
    uint32_t hash;
    uint8_t used;      /* the entry is allocated (live, or removed with a change pending) */
    uint8_t live;      /* the key has a value */
    uint8_t dirty;     /* the value changed since the last snapshot */
    uint8_t persisted; /* the host holds a value for this key */
    uint8_t listed;    /* the entry is in `changed` */
};

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

static uint32_t hash_bytes(const uint8_t *p, size_t n) {
    /* FNV-1a, then a final mix. */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15;
    return h;
}

void ks_init(keyed_state *s, size_t value_size, ks_encode_fn encode, ks_decode_fn decode) {
    memset(s, 0, sizeof *s);
    s->value_size = value_size;
    s->encode = encode;
    s->decode = decode;
}

void ks_free(keyed_state *s) {
    for (uint32_t i = 0; i < s->n_entries; i++) free(s->entries[i].key);
    free(s->entries); free(s->values); free(s->free_list); free(s->index); free(s->changed);
    memset(s, 0, sizeof *s);
}

static void index_insert(uint32_t *index, uint32_t cap, uint32_t hash, uint32_t entry) {
    uint32_t mask = cap - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask)
        if (index[i] == 0 || index[i] == INDEX_GONE) { index[i] = entry + 1; return; }
}

static void index_grow(keyed_state *s) {
    uint32_t cap = s->index_cap ? s->index_cap : 64;
    /* Grow when live entries fill half of the table; otherwise rebuild at the same size to
     * drop removed slots. */
    uint32_t in_use = s->n_entries - s->n_free;
    while (in_use * 2 >= cap) cap *= 2;
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index) abort();
    for (uint32_t e = 0; e < s->n_entries; e++)
        if (s->entries[e].used) index_insert(index, cap, s->entries[e].hash, e);
    free(s->index);
    s->index = index;
    s->index_cap = cap;
    s->index_used = in_use;
}

/* The slot of the index that points to `key`'s entry, or the index capacity when absent. */
static uint32_t index_find(const keyed_state *s, const uint8_t *key, size_t key_len, uint32_t hash) {
    if (!s->index_cap) return 0;
    uint32_t mask = s->index_cap - 1;
    for (uint32_t i = hash & mask;; i = (i + 1) & mask) {
        uint32_t v = s->index[i];
        if (v == 0) return s->index_cap;
        if (v == INDEX_GONE) continue;
        const ks_entry *e = &s->entries[v - 1];
        if (e->hash == hash && e->key_len == key_len && memcmp(e->key, key, key_len) == 0) return i;
    }
}

static uint32_t lookup(const keyed_state *s, const uint8_t *key, size_t key_len, uint32_t hash) {
    uint32_t slot = index_find(s, key, key_len, hash);
    return slot >= s->index_cap ? KS_NONE : s->index[slot] - 1;
}

static void mark_changed(keyed_state *s, uint32_t e) {
    if (s->entries[e].listed) return;
    if (s->n_changed == s->cap_changed) {
        s->cap_changed = s->cap_changed ? s->cap_changed * 2 : 64;
        s->changed = xrealloc(s->changed, s->cap_changed * sizeof *s->changed);
    }
    s->changed[s->n_changed++] = e;
    s->entries[e].listed = 1;
}

static uint32_t new_entry(keyed_state *s, const uint8_t *key, size_t key_len, uint32_t hash) {
    if ((s->index_used + 1) * 4 > s->index_cap * 3) index_grow(s);
    uint32_t e;
    if (s->n_free) e = s->free_list[--s->n_free];
    else {
        if (s->n_entries == s->cap_entries) {
            s->cap_entries = s->cap_entries ? s->cap_entries * 2 : 64;
            s->entries = xrealloc(s->entries, s->cap_entries * sizeof *s->entries);
            s->values = xrealloc(s->values, s->cap_entries * s->value_size);
        }
        e = s->n_entries++;
    }
    ks_entry *en = &s->entries[e];
    memset(en, 0, sizeof *en);
    en->key = xrealloc(NULL, key_len);
    memcpy(en->key, key, key_len);
    en->key_len = (uint32_t)key_len;
    en->hash = hash;
    en->used = 1;
    index_insert(s->index, s->index_cap, hash, e);
    s->index_used++;
    return e;
}

/* Frees an entry that is no longer live and whose pending change was handed over. */
static void release_entry(keyed_state *s, uint32_t e) {
    ks_entry *en = &s->entries[e];
    uint32_t slot = index_find(s, en->key, en->key_len, en->hash);
    if (slot < s->index_cap) s->index[slot] = INDEX_GONE;
    free(en->key);
    memset(en, 0, sizeof *en);
    if (s->n_free == s->cap_free) {
        s->cap_free = s->cap_free ? s->cap_free * 2 : 64;
        s->free_list = xrealloc(s->free_list, s->cap_free * sizeof *s->free_list);
    }
    s->free_list[s->n_free++] = e;
}

ks_handle ks_find(const keyed_state *s, const uint8_t *key, size_t key_len) {
    uint32_t e = lookup(s, key, key_len, hash_bytes(key, key_len));
    return (e != KS_NONE && s->entries[e].live) ? e : KS_NONE;
}

ks_handle ks_upsert(keyed_state *s, const uint8_t *key, size_t key_len, const void *init, bool *created) {
    uint32_t hash = hash_bytes(key, key_len);
    uint32_t e = lookup(s, key, key_len, hash);
    bool fresh = false;
    if (e == KS_NONE) { e = new_entry(s, key, key_len, hash); fresh = true; }
    else if (!s->entries[e].live) fresh = true; /* removed since the last snapshot: back again */
    ks_entry *en = &s->entries[e];
    if (fresh) {
        en->live = 1;
        s->live++;
        void *v = s->values + (size_t)e * s->value_size;
        if (init) memcpy(v, init, s->value_size); else memset(v, 0, s->value_size);
    }
    en->dirty = 1;
    mark_changed(s, e);
    if (created) *created = fresh;
    return e;
}

const void *ks_value(const keyed_state *s, ks_handle h) { return s->values + (size_t)h * s->value_size; }

void *ks_value_mut(keyed_state *s, ks_handle h) {
    s->entries[h].dirty = 1;
    mark_changed(s, h);
    return s->values + (size_t)h * s->value_size;
}

const uint8_t *ks_key(const keyed_state *s, ks_handle h, size_t *key_len) {
    *key_len = s->entries[h].key_len;
    return s->entries[h].key;
}

void ks_put(keyed_state *s, const uint8_t *key, size_t key_len, const void *value) {
    ks_handle h = ks_upsert(s, key, key_len, value, NULL);
    memcpy(s->values + (size_t)h * s->value_size, value, s->value_size);
}

bool ks_remove(keyed_state *s, const uint8_t *key, size_t key_len) {
    uint32_t e = lookup(s, key, key_len, hash_bytes(key, key_len));
    if (e == KS_NONE || !s->entries[e].live) return false;
    s->entries[e].live = 0;
    s->entries[e].dirty = 0;
    s->live--;
    mark_changed(s, e); /* the next snapshot deletes it (if persisted) and frees it */
    return true;
}

void ks_for_each(const keyed_state *s, void (*f)(void *, const uint8_t *, size_t, const void *), void *ctx) {
    for (uint32_t e = 0; e < s->n_entries; e++)
        if (s->entries[e].live) f(ctx, s->entries[e].key, s->entries[e].key_len, ks_value(s, e));
}

void ks_snapshot(keyed_state *s, bool full, ks_emit_fn emit, void *ctx) {
    mp_buf buf = {0};
    if (full) {
        for (uint32_t e = 0; e < s->n_entries; e++) {
            ks_entry *en = &s->entries[e];
            if (!en->used) continue;
            if (en->live) {
                buf.len = 0;
                s->encode(ks_value(s, e), &buf);
                emit(ctx, en->key, en->key_len, buf.data, buf.len);
                en->dirty = 0;
                en->persisted = 1;
                en->listed = 0;
            } else {
                release_entry(s, e);
            }
        }
        s->n_changed = 0;
    } else {
        for (uint32_t i = 0; i < s->n_changed; i++) {
            uint32_t e = s->changed[i];
            ks_entry *en = &s->entries[e];
            en->listed = 0;
            if (en->live) {
                if (!en->dirty) continue;
                buf.len = 0;
                s->encode(ks_value(s, e), &buf);
                emit(ctx, en->key, en->key_len, buf.data, buf.len);
                en->dirty = 0;
                en->persisted = 1;
            } else {
                if (en->persisted) emit(ctx, en->key, en->key_len, NULL, 0);
                release_entry(s, e);
            }
        }
        s->n_changed = 0;
    }
    free(buf.data);
}

const char *ks_restore(keyed_state *s, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len) {
    uint32_t hash = hash_bytes(key, key_len);
    uint32_t e = lookup(s, key, key_len, hash);
    if (!value) {
        if (e != KS_NONE && s->entries[e].live) {
            s->entries[e].live = 0;
            s->entries[e].persisted = 0; /* the host no longer holds it: nothing to delete */
            s->live--;
            mark_changed(s, e);
        }
        return NULL;
    }
    uint8_t tmp[256];
    void *decoded = s->value_size <= sizeof tmp ? tmp : xrealloc(NULL, s->value_size);
    const char *err = s->decode(value, value_len, decoded);
    if (!err) {
        if (e == KS_NONE) e = new_entry(s, key, key_len, hash);
        ks_entry *en = &s->entries[e];
        if (!en->live) { en->live = 1; s->live++; }
        en->dirty = 0;
        en->persisted = 1;
        memcpy(s->values + (size_t)e * s->value_size, decoded, s->value_size);
    }
    if (decoded != tmp) free(decoded);
    return err;
}
