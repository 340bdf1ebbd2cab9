/*
 * test_at_limit_pause.c - a growth's copy of a short string at max_memory
 * when another copier holds the new slot's area claim: the copy does
 * without a block (there is none), takes the claim over once its holder
 * is found dead, and lands. A DEL of the key, at the limit, succeeds.
 *
 * The other copier is a real process stopped at the pause point
 * "copy_staged" (its bytes staged under the claim), then killed. Pause
 * points exist only in a FAULT=1 build; elsewhere the test is skipped.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/paused_child.h"
#include "helpers/testutil.h"
#include "internal.h"
#include "migrate.h"

TestSuite(pausepoint_at_limit, .fini = tu_teardown);

#define MAX_MEMORY 1000000u
#define VALUE_LEN  1000u
#define FILL_MAX   100000u

static int set_big(shmkv_t *kv, unsigned i)
{
	char key[16], val[VALUE_LEN];
	size_t kl = tu_fmt(key, sizeof(key), "b", i);

	memset(val, 'a' + (int)(i % 26), sizeof(val));
	return shmkv_set(kv, key, kl, val, sizeof(val), 0, 0, NULL);
}

/* A store holding the short string "s" = "short", then 1000-byte values
 * until a SET is refused for memory. Return: whether its table may still
 * double. */
static bool fill(void)
{
	struct shmkv_config cfg = tu_config(16, 32, 1024, 0);
	struct shmkv_stats st;
	unsigned i;
	int rc = 1;

	cfg.max_memory = MAX_MEMORY;
	tu_kv = tu_create_growing(&cfg, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("s"), LIT("short"), 0, 0, NULL), 1);
	for (i = 0; i < FILL_MAX && (rc = set_big(tu_kv, i)) == 1; i++)
		;
	cr_assert(rc == -ENOMEM || rc == -ENOSPC, "SET b%u: %d (%s)", i, rc,
		  shmkv_strerror(rc));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st.slots_max > st.slots;
}

/* The child: a DEL of "s", on a handle of its own (it stops in its
 * window's copy of "s", holding the new slot's claim). */
static int del_s(void *arg)
{
	shmkv_t *kv;
	int rc;

	(void)arg;
	if (shmkv_open(tu_name, 0, &kv) != 0)
		return -1000;
	rc = shmkv_del(kv, LIT("s"));
	shmkv_close(kv);
	return rc;
}

Test(pausepoint_at_limit,
     a_copy_at_max_memory_takes_over_the_claim_of_a_dead_copier)
{
	struct shmkv_stats st;
	struct tu_child c;
	int status, tries = 0;
	uint64_t life;

	NEED_PAUSE_POINTS();
	while (!fill()) {
		cr_assert_lt(++tries, 16,
			     "the table never stopped short of "
			     "its last doubling");
		shmkv_close(tu_kv);
		tu_assert_ok(shmkv_unlink(tu_name));
	}
	/* Relaxed: this process alone uses the store now. */
	life = shmkv__load_relaxed(
		&((struct shmkv_header_shm *)tu_kv->base)->life);
	tu_assert_ok(shmkv__grow_start(tu_kv, life));
	/* Value memory may not grow past what the store has now, new table
	 * included: no page for a block of a short string's size (its class
	 * has none), and no block free in the others. */
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	tu_assert_ok(shmkv_set_max_memory(tu_kv, st.memory_bytes));
	c = tu_child_start(del_s, NULL, "copy_staged", 1);
	tu_child_await(&c);
	cr_assert_eq(kill(c.pid, SIGKILL), 0);
	cr_assert_eq(waitpid(c.pid, &status, 0), c.pid);
	cr_assert(WIFSIGNALED(status), "the copier was not killed: %#x",
		  status);
	/* Its claim of the new slot's area names a dead thread, and no block
	 * of a short string's size is to be had. */
	tu_assert_rc(shmkv_del(tu_kv, LIT("s")), 1);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("s")), 0);
	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
