/*
 * ttl.h - helpers of the expiry tests (test_expire_set.c, test_expire.c,
 * test_ttl.c), on the suite's store tu_kv; each asserts it succeeded.
 *
 * TTLs are asserted as ranges, never as timing bounds: a key meant to
 * expire gets SHORT_MS and the test sleeps PAST_SHORT_MS; a key meant to
 * live gets an hour, or at least 100 s.
 */
#ifndef SHMKV_TTL_H
#define SHMKV_TTL_H

#include <stdint.h>

#define SHORT_MS      40
#define PAST_SHORT_MS 150
#define HOUR_MS	      (3600 * 1000)

/* SET @key @val PX @ms: asserts it set the key. */
void ttl_set_ms(const char *key, const char *val, int64_t ms);
/* SET @key @val without options: asserts it set the key. */
void ttl_set_plain(const char *key, const char *val);
/* The PTTL of @key (-2 missing, -1 no TTL). */
int64_t ttl_pttl_of(const char *key);
/* Redis's TTL: the PTTL rounded to the nearest second. */
int64_t ttl_round(int64_t ms);

/*
 * The library's clocks stopped (a seam in src/proc.c), so a test can put
 * "now" exactly on a deadline. Both clocks stop together, their offset
 * unchanged, with the Unix clock on a whole second (so EXAT can hit it
 * too); the test store's shared clock offset is set to theirs exactly.
 * Return: the Unix time they stopped at, in ms.
 */
int64_t ttl_freeze(void);
/* Moves both stopped clocks @ms forward. */
void ttl_advance(int64_t ms);
/* Lets the clocks run again. */
void ttl_thaw(void);

#endif /* SHMKV_TTL_H */
