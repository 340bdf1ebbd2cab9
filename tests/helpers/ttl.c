/*
 * ttl.c - helpers of the expiry tests (see ttl.h).
 */
#include "helpers/ttl.h"

#include "helpers/testutil.h"

void ttl_set_ms(const char *key, const char *val, int64_t ms)
{
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, strlen(val),
			       SHMKV_SET_PX, ms, NULL),
		     1);
}

void ttl_set_plain(const char *key, const char *val)
{
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, strlen(val), 0, 0,
			       NULL),
		     1);
}

int64_t ttl_pttl_of(const char *key)
{
	int64_t ms = 0;

	tu_assert_ok(shmkv_pttl(tu_kv, key, strlen(key), &ms));
	return ms;
}

int64_t ttl_round(int64_t ms)
{
	return (ms + 500) / 1000;
}
