/*
 * mp_census.h - looking at a whole store once the processes that hammered
 * it are done (test_mp_*.c): every key a full scan visits is read back,
 * and what was read is compared with what shmkv_stats() counted: no key
 * twice, no pending or corrupt slot, and exactly as many value blocks in
 * use as the live keys need.
 */
#ifndef SHMKV_MP_CENSUS_H
#define SHMKV_MP_CENSUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "helpers/testutil.h"
#include "helpers/value_blocks.h"

/* Keys longer than this are counted as not the tests' own. */
#define KEY_CAP 64

struct kl_key {
	uint32_t len;
	char b[KEY_CAP];
};

struct keylist {
	struct kl_key *k; /* sorted; malloc'd: free(k) */
	size_t n, cap;
	size_t too_long; /* keys longer than KEY_CAP: not ours */
};

/* A census of a quiescent store. */
struct census {
	struct keylist keys;
	size_t dups, first_dup;
	size_t live;	   /* scanned keys GET finds */
	size_t strings;	   /* of those: a non-int48 value or a TTL */
	/* Value blocks the keys name (shmkv_stats: a string lives in its
	 * slot or in a block, depending on the room its slot had) */
	size_t need_block;
	size_t bad_values; /* values the validator refused */
	struct shmkv_stats st;
};

/* Whether a value read back is one the test could have written. */
typedef bool (*value_ok_fn)(const char *v, size_t len);

/* Takes a census of a store of @slots slots, checking each value with
 * @ok (NULL: any). The caller frees c->keys.k, also on failure. Never
 * asserts. Return: 0 or a negative errno from the scan, GET, PTTL or
 * shmkv_stats. */
int mp_census_take(shmkv_t *kv, uint64_t slots, struct census *c,
		   value_ok_fn ok);
/* Checks a census; @expect_live < 0 means "any". Return: 0, or -1 and a
 * reason in @why. */
int mp_census_check(const struct census *c, long expect_live, char *why,
		    size_t cap);
/* Takes and checks a census, asserting both steps; @when names the moment
 * in the failure message. */
void mp_assert_census(shmkv_t *kv, uint64_t slots, long expect_live,
		      value_ok_fn ok, const char *when);

#endif /* SHMKV_MP_CENSUS_H */
