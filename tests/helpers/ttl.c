/*
 * ttl.c - helpers of the expiry tests (see ttl.h).
 */
#include "helpers/ttl.h"
#include "helpers/clock.h"

#include <time.h>

#include "helpers/testutil.h"
#include "internal.h"

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

static int64_t clock_ms(clockid_t id)
{
	return clock_ns(id) / 1000000;
}

int64_t ttl_freeze(void)
{
	int64_t boot = clock_ms(CLOCK_BOOTTIME),
		unix_ms = clock_ms(CLOCK_REALTIME);
	/* Back to the whole second: both clocks, so the offset stays. */
	int64_t back = unix_ms % 1000;

	shmkv__fake_now_ms = boot - back;
	shmkv__fake_unix_ms = unix_ms - back;
	/* The store's shared offset may be up to its resync threshold away
	 * from the clocks' (it is only replaced beyond that): make it
	 * exact, so that a Unix time maps to the very ms the test expects. */
	if (tu_kv != NULL)
		((struct shmkv_header_shm *)tu_kv->base)->clock_offset_ms =
			shmkv__fake_unix_ms - shmkv__fake_now_ms;
	return shmkv__fake_unix_ms;
}

void ttl_advance(int64_t ms)
{
	shmkv__fake_now_ms += ms;
	shmkv__fake_unix_ms += ms;
}

void ttl_thaw(void)
{
	shmkv__fake_now_ms = 0;
	shmkv__fake_unix_ms = 0;
}
