/*
 * slot_of.c - see slot_of.h.
 */
#include "helpers/slot_of.h"

#include <criterion/criterion.h>
#include <string.h>

#include "helpers/testutil.h"

struct shmkv_slot_ref tu_slot_ref(shmkv_t *kv, const char *key)
{
	struct shmkv_slot_ref ref;
	struct shmkv_key k;

	shmkv__key_init(kv, shmkv__table_cmd(kv), &k, key, strlen(key));
	cr_assert_eq(shmkv__lookup(kv, &k, &ref), 1, "%s has no slot", key);
	return ref;
}

struct shmkv_slot_shm *tu_slot_of(shmkv_t *kv, const char *key)
{
	return shmkv__slot(shmkv__table_cmd(kv), tu_slot_ref(kv, key).index);
}

void tu_key_homed_at(shmkv_t *kv, uint32_t home, int nth, char out[32])
{
	struct shmkv_key k;

	for (unsigned long i = 0;; i++) {
		tu_fmt(out, 32, "other", i);
		shmkv__key_init(kv, shmkv__table_cmd(kv), &k, out, strlen(out));
		if (k.home == home && nth-- == 0)
			return;
	}
}
