/*
 * test_migrate_corrupt.c - words of the tables that no process writes,
 * scribbled in, and what commands answer: quickly, and -EBADMSG where the
 * words prove the store corrupt. A MOVED state or a FROZEN value word
 * exists only in a table that a growth has started to give up; one in
 * the table commands write in is corruption, not a race to look again
 * after.
 *
 * Each command on a corrupted store runs in a child process, which the
 * parent kills if it has not ended within a second (the bound every
 * command on any content must keep); the child reports its answer through
 * its exit status.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "helpers/testutil.h"
#include "internal.h"
#include "lookup.h"
#include "migrate.h"
#include "tables.h"

TestSuite(migrate_corrupt, .fini = tu_teardown);

#define SLOTS		256u
#define KEYS		160u
#define STEPS		2u /* of 4 chunks: half the old table moved */
#define BOUND_MS	1000
#define SCRIBBLED_BOUND 4u
#define NO_ANSWER	255 /* exit status: killed at the bound */

static struct shmkv_config corrupt_config(void)
{
	struct shmkv_config cfg;

	shmkv_config_init(&cfg);
	cfg.slots = SLOTS;
	cfg.key_max = 16;
	return cfg;
}

static void key_of(char key[32], unsigned i)
{
	snprintf(key, 32, "k%u", i);
}

enum command { CMD_SET, CMD_GET, CMD_MAINTAIN };

/* The answer of @cmd (on @key), run in a child that opens store @name:
 * its errno (0: success), or NO_ANSWER if it had not ended within
 * BOUND_MS (it is killed). */
static int answer_within_bound(const char *name, const char *key,
			       enum command cmd)
{
	struct timespec nap = { 0, 1000000 };
	pid_t pid;
	int st = 0;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		shmkv_t *kv = NULL;
		char buf[64];
		struct shmkv_value out = { buf, sizeof(buf), 0 };
		int rc = shmkv_open(name, 0, &kv);

		if (rc == 0 && cmd == CMD_GET)
			rc = shmkv_get(kv, key, strlen(key), &out);
		else if (rc == 0 && cmd == CMD_SET)
			rc = shmkv_set(kv, key, strlen(key), "v", 1, 0, 0,
				       NULL);
		else if (rc == 0)
			rc = shmkv_maintain(kv);
		/* The answer's sign and errno in a byte: 0 is success. */
		_exit(rc >= 0 ? 0 : -rc & 0x7f);
	}
	for (int ms = 0; ms < BOUND_MS; ms++) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : NO_ANSWER - 1;
		nanosleep(&nap, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return NO_ANSWER;
}

/* A store of KEYS keys in SLOTS slots, growing, half moved. */
static void half_grown(struct shmkv_tables *tabs)
{
	struct shmkv_config cfg = corrupt_config();
	const struct shmkv_header_shm *h;
	char key[32];

	tu_kv = tu_create_growing(&cfg, tu_name);
	for (unsigned i = 0; i < KEYS; i++) {
		key_of(key, i);
		tu_assert_rc(
			shmkv_set(tu_kv, key, strlen(key), "v", 1, 0, 0, NULL),
			1);
	}
	h = (const struct shmkv_header_shm *)tu_kv->base;
	/* Relaxed: a test's own store, no other process runs. */
	tu_assert_ok(shmkv__grow_start(tu_kv, shmkv__load_relaxed(&h->life)));
	for (unsigned s = 0; s < STEPS; s++) {
		cr_assert_eq(shmkv__tables(tu_kv, tabs), SHMKV__GROWING);
		tu_assert_ok(shmkv__migrate_step(tu_kv, tabs));
	}
	cr_assert_eq(shmkv__tables(tu_kv, tabs), SHMKV__GROWING);
}

/* Every EMPTY slot of table @t sealed MOVED, as no process ever seals a
 * slot of the table a growth writes into, and every probe bound raised
 * to cover a few, so that lookups meet them. Return: how many. */
static unsigned scribble_moved(const struct shmkv_table *t)
{
	unsigned n = 0;

	for (uint32_t i = 0; i <= t->mask; i++) {
		uint64_t *state = &shmkv__slot(t, i)->state;
		/* Relaxed: the test's scribble; no other process runs. */
		uint64_t w = shmkv__load_relaxed(state);

		if (shmkv__load16_relaxed(&shmkv__slot(t, i)->probe_bound) <
		    SCRIBBLED_BOUND)
			shmkv__store16_relaxed(&shmkv__slot(t, i)->probe_bound,
					       SCRIBBLED_BOUND);
		if (SLOT_STATE(w) != SLOT_EMPTY)
			continue;
		shmkv__store_relaxed(state,
				     SLOT_WORD(SLOT_MOVED, 0, SLOT_VERSION(w)));
		n++;
	}
	return n;
}

/* Is key @i's slot in the old table of @tabs still unmoved? */
static bool unmoved(const struct shmkv_tables *tabs, unsigned i)
{
	struct shmkv_slot_ref ref;
	struct shmkv_key k;
	char key[32];

	key_of(key, i);
	shmkv__key_init(tu_kv, tabs->old, &k, key, strlen(key));
	return shmkv__migrate_lookup_old(tu_kv, &k, &ref) == 1;
}

Test(migrate_corrupt, moved_words_in_the_new_table_end_a_set_within_a_second)
{
	struct shmkv_tables tabs;
	unsigned tried = 0, unmoved_tried = 0;
	char key[32];

	half_grown(&tabs);
	cr_assert_gt(scribble_moved(tabs.t), 0);
	/* Keys not yet moved: their copy meets the MOVED words, and their
	 * SET names the corruption. Moved keys and new ones: their SET
	 * succeeds where their window misses the words, and else names the
	 * corruption too, or a window full of them. Never a race lost. */
	for (unsigned i = 0; i < KEYS + 8 && tried < 24; i += 7, tried++) {
		bool old = i < KEYS && unmoved(&tabs, i);
		int rc;

		key_of(key, i);
		unmoved_tried += old;
		rc = answer_within_bound(tu_name, key, CMD_SET);
		cr_assert_neq(rc, NO_ANSWER, "SET %s ran past %d ms", key,
			      BOUND_MS);
		if (old)
			cr_assert_eq(rc, EBADMSG, "SET %s: errno %d", key, rc);
		else
			cr_assert(rc == 0 || rc == EBADMSG || rc == ENOSPC,
				  "SET %s: errno %d", key, rc);
	}
	cr_assert_gt(unmoved_tried, 0);
}

/* The slot of key @key in the table commands write in (not growing). */
static struct shmkv_slot_shm *slot_of(const char *key)
{
	struct shmkv_tables tabs;
	struct shmkv_slot_ref ref;
	struct shmkv_key k;

	cr_assert_eq(shmkv__tables(tu_kv, &tabs), 0);
	shmkv__key_init(tu_kv, tabs.t, &k, key, strlen(key));
	cr_assert_eq(shmkv__lookup(tu_kv, &k, &ref), 1);
	return shmkv__slot(ref.t, ref.index);
}

Test(migrate_corrupt, a_moved_slot_in_a_table_not_growing_is_corruption)
{
	struct shmkv_config cfg = corrupt_config();
	struct shmkv_slot_shm *s;
	uint64_t w;

	tu_kv = tu_create_growing(&cfg, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, "a", 1, "v", 1, 0, 0, NULL), 1);
	s = slot_of("a");
	/* Relaxed: the test's scribble; no other process runs. */
	w = shmkv__load_relaxed(&s->state);
	shmkv__store_relaxed(&s->state,
			     SLOT_WORD(SLOT_MOVED, 0, SLOT_VERSION(w)));
	cr_assert_eq(answer_within_bound(tu_name, "a", CMD_SET), EBADMSG);
	cr_assert_eq(answer_within_bound(tu_name, "a", CMD_GET), EBADMSG);
}

Test(migrate_corrupt, a_frozen_value_in_a_table_not_growing_is_corruption)
{
	struct shmkv_config cfg = corrupt_config();
	struct shmkv_slot_shm *s;

	tu_kv = tu_create_growing(&cfg, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, "a", 1, "v", 1, 0, 0, NULL), 1);
	s = slot_of("a");
	/* Relaxed: the test's scribble; no other process runs. */
	shmkv__store_relaxed(&s->value,
			     shmkv__load_relaxed(&s->value) | VAL_FROZEN_BIT);
	cr_assert_eq(answer_within_bound(tu_name, "a", CMD_SET), EBADMSG);
}

Test(migrate_corrupt, a_sweep_cursor_of_an_older_growth_is_corruption)
{
	struct shmkv_tables tabs;
	struct shmkv_header_shm *h;

	half_grown(&tabs);
	h = (struct shmkv_header_shm *)tu_kv->base;
	/* Relaxed: the test's scribble; no other process runs. The
	 * frontier's generation one back: no grower leaves it so after its
	 * flip, and a sweep behind it would never reach the end. */
	shmkv__store_relaxed(&h->grow_front,
			     shmkv__load_relaxed(&h->grow_front) -
				     ((uint64_t)1 << 32));
	cr_assert_eq(answer_within_bound(tu_name, "", CMD_MAINTAIN), EBADMSG);
}
