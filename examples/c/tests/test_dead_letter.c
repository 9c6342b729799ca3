/* Native unit tests of the dead letters of common/weir.c: weir_dead_letter emits on the side
 * output "dead-letter" an empty key and [reason, key bin, value bin], byte for byte what the
 * Rust SDK's `dead_letter::send_raw` writes. Built by run-tests.sh with native_host.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"
#include "native_host.h"

static int passed, failed;
#define CHECK(c) do { if (c) passed++; else { failed++; fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

int main(void) {
    const native_side_output *o = &native_last_side_output;

    /* a keyed record, through weir_dead_letter_record */
    const uint8_t key[] = { 0xa1, 'a' }, value[] = { 0x01 };
    weir_record r = { key, value, sizeof key, sizeof value, -7 };
    weir_dead_letter_record(&r, "odd value");
    const uint8_t want[] = { 0x93, 0xa9, 'o', 'd', 'd', ' ', 'v', 'a', 'l', 'u', 'e', 0xc4, 2, 0xa1, 'a', 0xc4, 1, 0x01 };
    CHECK(native_side_outputs == 1);
    CHECK(strcmp(o->name, "dead-letter") == 0 && strcmp(o->name, WEIR_DEAD_LETTER_OUTPUT) == 0);
    CHECK(o->key_len == 0 && o->timestamp == -7);
    CHECK(o->value_len == sizeof want && memcmp(o->value, want, sizeof want) == 0);

    /* no key, a value past bin 8 (bin 16), a reason past fixstr (str 8); read back */
    size_t n = 51200;
    uint8_t *big = malloc(0x10000); /* the first n bytes here, all of them for bin 32 below */
    for (size_t i = 0; i < 0x10000; i++) big[i] = (uint8_t)i;
    char reason[41];
    memset(reason, 'r', 40);
    reason[40] = '\0';
    weir_dead_letter(NULL, 0, big, n, 12, reason);
    CHECK(native_side_outputs == 2 && o->key_len == 0 && o->timestamp == 12);
    CHECK(o->value_len == 3 + 40 + 2 + 3 + n);
    CHECK(memcmp(o->value, "\x93\xd9\x28", 3) == 0 && memcmp(o->value + 43, "\xc4\x00\xc5\xc8\x00", 5) == 0);
    mp_reader rd;
    mp_reader_init(&rd, o->value, o->value_len);
    uint32_t items = 0, len = 0;
    const char *s = NULL;
    const uint8_t *b = NULL;
    CHECK(mp_read_array_header(&rd, &items) && items == 3);
    CHECK(mp_read_str(&rd, &s, &len) && len == 40 && memcmp(s, reason, 40) == 0);
    CHECK(mp_read_bin(&rd, &b, &len) && len == 0);
    CHECK(mp_read_bin(&rd, &b, &len) && len == n && memcmp(b, big, n) == 0);
    CHECK(mp_at_end(&rd));

    /* bin 32, and the reader's refusals */
    mp_buf v = {0};
    weir_dead_letter_value(&v, key, sizeof key, big, 0x10000, "x");
    CHECK(v.len == 1 + 2 + 4 + 5 + 0x10000 && memcmp(v.data + 7, "\xc6\x00\x01\x00\x00", 5) == 0);
    mp_reader_init(&rd, v.data, v.len - 1);
    CHECK(mp_read_array_header(&rd, &items) && mp_read_str(&rd, &s, &len) && mp_read_bin(&rd, &b, &len));
    CHECK(!mp_read_bin(&rd, &b, &len) && rd.error != NULL);
    mp_reader_init(&rd, (const uint8_t *)"\xa1x", 2);
    CHECK(!mp_read_bin(&rd, &b, &len));
    free(v.data);
    free(big);

    printf("dead letters: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
