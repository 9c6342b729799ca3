/* Keyed state for Weir operators in C: a map from record keys (MessagePack bytes, exactly
 * as they appear in records) to fixed-size values, with change tracking.
 *
 * The checkpoint contract (wit/operator.wit `snapshot` / `restore`):
 *  - an incremental snapshot hands over only the changes since the previous snapshot: a put
 *    for every key whose value changed and a delete for every key the host holds (seen by a
 *    snapshot or restored) that was removed since; a key inserted and removed between two
 *    snapshots produces nothing;
 *  - a full snapshot hands over every live entry;
 *  - restore (before open) applies saved live entries; they count as held by the host.
 *
 * Values are `value_size` bytes each, kept decoded; `encode` and `decode` convert one value
 * to and from MessagePack when a snapshot or a restore needs it.
 *
 * Entries are addressed by a handle (ks_handle), stable until the next snapshot. A value
 * pointer is valid only until the next insertion (the storage may move). */
#ifndef WEIR_KEYED_STATE_H
#define WEIR_KEYED_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "msgpack.h"

typedef uint32_t ks_handle;
#define KS_NONE UINT32_MAX

/* Appends the MessagePack encoding of `value` to `out`. */
typedef void (*ks_encode_fn)(const void *value, mp_buf *out);
/* Decodes `len` bytes of MessagePack into `value`; returns NULL on success or a message. */
typedef const char *(*ks_decode_fn)(const uint8_t *bytes, size_t len, void *value);

typedef struct ks_entry ks_entry;

typedef struct {
    size_t value_size;
    ks_encode_fn encode;
    ks_decode_fn decode;
    ks_entry *entries;  /* dense array of entries, `n_entries` used, `cap_entries` allocated */
    uint8_t *values;    /* value of entry i at values + i * value_size */
    uint32_t n_entries, cap_entries;
    uint32_t *free_list; /* entries to reuse */
    uint32_t n_free, cap_free;
    uint32_t *index;    /* open addressing: 0 empty, 1 + entry, INDEX_GONE removed */
    uint32_t index_cap, index_used; /* used counts removed slots too */
    uint32_t *changed;  /* entries changed since the last snapshot (each once) */
    uint32_t n_changed, cap_changed;
    uint32_t live;      /* number of live entries */
} keyed_state;

void ks_init(keyed_state *s, size_t value_size, ks_encode_fn encode, ks_decode_fn decode);
/* The same as ks_init, as a static initializer:
 *   static keyed_state counts = KS_INITIALIZER(sizeof(uint64_t), encode_count, decode_count); */
#define KS_INITIALIZER(size, enc, dec) { .value_size = (size), .encode = (enc), .decode = (dec) }
void ks_free(keyed_state *s);

/* Number of live entries. */
static inline uint32_t ks_len(const keyed_state *s) { return s->live; }

/* The entry of `key`, or KS_NONE. Reading changes nothing. */
ks_handle ks_find(const keyed_state *s, const uint8_t *key, size_t key_len);
/* The entry of `key`, created with `init` (value_size bytes; zeroes when NULL) if absent.
 * Marks the entry as changed. `*created` (if not NULL) tells whether it was created. */
ks_handle ks_upsert(keyed_state *s, const uint8_t *key, size_t key_len, const void *init, bool *created);
/* The value of an entry (read only: use ks_value_mut to change it). */
const void *ks_value(const keyed_state *s, ks_handle h);
/* The value of an entry, to change in place: marks the entry as changed. */
void *ks_value_mut(keyed_state *s, ks_handle h);
/* The key bytes of an entry. */
const uint8_t *ks_key(const keyed_state *s, ks_handle h, size_t *key_len);
/* Sets the value of `key`. */
void ks_put(keyed_state *s, const uint8_t *key, size_t key_len, const void *value);
/* Removes `key`; returns whether it was present. */
bool ks_remove(keyed_state *s, const uint8_t *key, size_t key_len);

/* Calls `f` for every live entry, in no particular order. */
void ks_for_each(const keyed_state *s, void (*f)(void *ctx, const uint8_t *key, size_t key_len, const void *value), void *ctx);

/* A sink for snapshot entries: `value` is NULL for a delete. */
typedef void (*ks_emit_fn)(void *ctx, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len);

/* Emits the changes since the last snapshot (or every live entry when `full`) and forgets
 * them: afterwards every live entry counts as held by the host. */
void ks_snapshot(keyed_state *s, bool full, ks_emit_fn emit, void *ctx);

/* Applies one saved entry (value NULL: a delete, which restore normally never carries).
 * Returns NULL or the decode error message. */
const char *ks_restore(keyed_state *s, const uint8_t *key, size_t key_len, const uint8_t *value, size_t value_len);

#endif
