/*
 * test_outputs_on_error.c - a command that fails leaves its outputs as the
 * caller set them (shmkv.h), even when an earlier round of it, before a
 * lost race or a failed store, had computed them: INCRBY's result after a
 * race lost to a write that makes the sum overflow (forced with the
 * engine's pause point between decide and CAS, src/fault.h), and SET..GET's
 * old length when the new value finds no memory.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helpers/paused_child.h"
#include "helpers/testutil.h"
#include "helpers/value_blocks.h"

TestSuite(pausepoint_outputs, .init = tu_setup, .fini = tu_teardown);
TestSuite(outputs_on_error, .fini = tu_teardown);

/* What *result holds before the call: no sum in these tests makes it. */
#define UNTOUCHED 4242

/* A sum that leaves the inline range (the engine's path, not the
 * straight-line one), and the value whose sum overflows. */
#define BIG_START      "4611686018427387904" /* 2^62 */
#define INT64_MAX_TEXT "9223372036854775807"

/* The child's INCRBY: 0 if it said -EOVERFLOW and left *result alone,
 * 1 if it said -EOVERFLOW with *result changed, else 100 + its result. */
static int incr_big(void *arg)
{
	int64_t n = UNTOUCHED;
	shmkv_t *kv;
	int rc;

	(void)arg;
	if (shmkv_open(tu_name, 0, &kv) != 0)
		return -1000;
	rc = shmkv_incrby(kv, LIT("n"), 1, &n);
	shmkv_close(kv);
	if (rc == -EOVERFLOW)
		return n == UNTOUCHED ? 0 : 1;
	return 100 + rc;
}

Test(pausepoint_outputs,
     incrby_that_overflows_after_a_lost_race_leaves_result_untouched)
{
	struct tu_child c;
	int64_t n = 0;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("n"), LIT(BIG_START), 0, 0, NULL), 1);
	/* The child decides 2^62 + 1 and stops before its CAS... */
	c = tu_child_start(incr_big, NULL, "engine_built", 1);
	cr_assert(tu_child_paused(&c), "never paused: %d", tu_child_finish(&c));
	/* ...which fails: the value is INT64_MAX now, whose sum overflows. */
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("n"), LIT(INT64_MAX_TEXT), 0, 0, NULL), 1);
	tu_child_let_go(&c);
	cr_assert_eq(tu_child_finish(&c), 0,
		     "INCRBY: %d (1: -EOVERFLOW with a stale *result)",
		     c.result);
	tu_assert_rc(shmkv_get_int(tu_kv, LIT("n"), &n), 1);
	cr_assert_eq(n, INT64_MAX);
}

Test(outputs_on_error, set_get_that_finds_no_memory_leaves_old_len_untouched)
{
	struct shmkv_config cfg = tu_config(4096, 32, 512, 0);
	struct shmkv_value old = tu_value(512);
	char key[32];
	int rc = 1;

	tu_kv = tu_create(&cfg, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	/* Fill value memory (the store may not grow) until a block-sized
	 * value finds none. */
	for (unsigned i = 0; rc == 1 && i < 4000; i++) {
		snprintf(key, sizeof(key), "fill%u", i);
		rc = shmkv_set(tu_kv, key, strlen(key), LIT(TU_BLOCK_TEXT), 0,
			       0, NULL);
	}
	tu_assert_rc(rc, -ENOMEM);
	old.len = UNTOUCHED;
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT(TU_BLOCK_TEXT),
			       SHMKV_SET_GET, 0, &old),
		     -ENOMEM);
	cr_assert_eq(old.len, UNTOUCHED, "len %zu after -ENOMEM", old.len);
	old.len = UNTOUCHED;
	tu_assert_rc(shmkv_getset(tu_kv, LIT("k"), LIT(TU_BLOCK_TEXT), &old),
		     -ENOMEM);
	cr_assert_eq(old.len, UNTOUCHED, "GETSET: len %zu after -ENOMEM",
		     old.len);
}
