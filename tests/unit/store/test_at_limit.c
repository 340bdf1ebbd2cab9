/*
 * test_at_limit.c - a store at its max_memory whose table grows: the
 * growth's copies need no memory (a value block is handed to the new
 * slot, inline bytes are staged in it), so a growth never holds the store
 * hostage. Deletes, lock releases, shmkv_maintain and every write that
 * needs no new memory succeed; a new counter is refused only for a true
 * reason; and once keys are deleted, new values fit again.
 *
 * The store: 16 slots (it grows from the start), keys of up to 32 bytes,
 * max_memory 1,000,000 bytes, filled with 1000-byte values until a SET is
 * refused for memory; then new counters are INCRed until the table is
 * full, which starts a growth, and 20 safe locks are taken as it begins
 * and held while the store is at its limit.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "shmkv_lock.h"

TestSuite(at_limit, .fini = tu_teardown);

#define SLOTS	   16u
#define KEY_MAX	   32u
#define MAX_MEMORY 1000000u
#define VALUE_LEN  1000u
#define LOCKS	   20
#define FILL_MAX   100000u /* SETs before the store must be full */
#define COUNTERS   5000u

struct full_store {
	struct shmkv_lock lk[LOCKS];
	int lock_rc[LOCKS];  /* each lock's acquire: >= 0 held */
	unsigned keys;	     /* b<i> for i < keys hold a 1000-byte value */
	unsigned counters;   /* c<i> for i < counters were INCRed */
	bool made[COUNTERS]; /* c<i> holds 1 */
	unsigned nomem;	     /* INCRs of a new counter that got -ENOMEM */
	int other;	     /* an INCR's error other than those, or 0 */
	bool grew;	     /* a growth began at the limit, before the locks */
};

static int set_big(shmkv_t *kv, unsigned i)
{
	char key[16], val[VALUE_LEN];
	size_t kl = tu_fmt(key, sizeof(key), "b", i);

	memset(val, 'a' + (int)(i % 26), sizeof(val));
	return shmkv_set(kv, key, kl, val, sizeof(val), 0, 0, NULL);
}

/* Has a growth begun since the table had grown @growths times (under way
 * now, or run whole within the last command)? */
static bool grown_since(uint64_t growths)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st.growing_from != 0 || st.growths > growths;
}

/* The 20 safe locks, taken. A lock cell is a block: at the limit, its
 * acquire may be refused for memory (the test then fails: they fit). */
static void take_locks(struct full_store *f)
{
	char name[16];

	for (int l = 0; l < LOCKS; l++) {
		snprintf(name, sizeof(name), "l%d", l);
		tu_assert_ok(shmkv_lock_init(tu_kv, &f->lk[l], name));
		f->lock_rc[l] = shmkv_lock_try_acquire(&f->lk[l], 600000);
	}
}

/* INCRs new counters c<i> until the table is full, taking the locks as
 * soon as a growth (which the counters start) has begun: while it runs,
 * unless it ended within the command that began it. */
static void add_counters(struct full_store *f)
{
	struct shmkv_stats st;
	bool locked = false;

	tu_assert_ok(shmkv_stats(tu_kv, &st));

	for (unsigned i = 0; i < COUNTERS; i++) {
		char key[16];
		size_t kl = tu_fmt(key, sizeof(key), "c", i);
		int64_t got = 0;
		int rc = shmkv_incr(tu_kv, key, kl, &got);

		f->made[i] = rc == 0;
		f->nomem += rc == -ENOMEM;
		/* An integer needs no value memory: only a full table that
		 * may not grow refuses one. */
		if (rc != 0 && rc != -ENOMEM && rc != -ENOSPC && f->other == 0)
			f->other = rc;
		if (!locked && grown_since(st.growths)) {
			f->grew = true;
			take_locks(f);
			locked = true;
		}
	}
	if (!locked)
		take_locks(f);
	f->counters = COUNTERS;
}

/* Creates the store, fills it with values until a SET is refused for
 * memory, then INCRs new counters (a growth starts), the locks taken
 * once it has begun. */
/* A new store filled with values until a SET is refused for memory.
 * Return: whether its table may still double (a key's window full early,
 * which the store's random hash seed may bring, can have doubled it to
 * what max_memory allows already). */
static bool fill_values(struct full_store *f)
{
	struct shmkv_config cfg = tu_config(SLOTS, KEY_MAX, 1024, 0);
	struct shmkv_stats st;
	unsigned i;
	int rc = 1;

	cfg.max_memory = MAX_MEMORY;
	tu_kv = tu_create_growing(&cfg, tu_name);
	for (i = 0; i < FILL_MAX && (rc = set_big(tu_kv, i)) == 1; i++)
		;
	/* Full: no block to be had, or (rarely) the key's window full in a
	 * table that may not grow past max_memory. */
	cr_assert(rc == -ENOMEM || rc == -ENOSPC, "SET b%u: %d (%s)", i, rc,
		  shmkv_strerror(rc));
	f->keys = i;
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st.slots_max > st.slots;
}

/* Creates the store, fills it with values until a SET is refused for
 * memory, then INCRs new counters (a growth starts), the locks taken
 * once it has begun. */
static void fill(struct full_store *f)
{
	int tries = 0;

	memset(f, 0, sizeof(*f));
	while (!fill_values(f)) {
		cr_assert_lt(++tries, 16,
			     "the table never stopped short of "
			     "its last doubling");
		shmkv_close(tu_kv);
		tu_assert_ok(shmkv_unlink(tu_name));
	}
	add_counters(f);
	cr_log_info("%u values; counters: %u refused for memory; a growth "
		    "%s before the locks were taken",
		    f->keys, f->nomem, f->grew ? "began" : "did not begin");
}

/* What fill() saw that it must not: checked after the deletes, so that a
 * store that fails them shows that first. */
static void assert_filled_right(const struct full_store *f)
{
	cr_assert(f->grew, "no growth began at the limit");
	cr_assert_eq(f->nomem, 0, "%u new counters refused for memory",
		     f->nomem);
	cr_assert_eq(f->other, 0, "an INCR of a new counter: %d (%s)", f->other,
		     shmkv_strerror(f->other));
	for (int l = 0; l < LOCKS; l++)
		cr_assert_geq(f->lock_rc[l], 0, "lock l%d: %d (%s)", l,
			      f->lock_rc[l], shmkv_strerror(f->lock_rc[l]));
}

/* Every held lock releases, and is free afterwards. */
static void release_all(struct full_store *f)
{
	for (int l = 0; l < LOCKS; l++) {
		if (f->lock_rc[l] < 0)
			continue;
		cr_assert_eq(shmkv_lock_release(&f->lk[l]), 0,
			     "release of lock l%d", l);
		cr_assert_eq(shmkv_lock_held(&f->lk[l]), 0);
	}
}

/* DEL of every value and counter made. */
static void delete_all(shmkv_t *kv, const struct full_store *f)
{
	char key[16];
	int rc;

	for (unsigned i = 0; i < f->keys; i++) {
		rc = shmkv_del(kv, key, tu_fmt(key, sizeof(key), "b", i));
		cr_assert_eq(rc, 1, "DEL b%u: %d (%s)", i, rc,
			     shmkv_strerror(rc));
	}
	for (unsigned i = 0; i < f->counters; i++) {
		rc = shmkv_del(kv, key, tu_fmt(key, sizeof(key), "c", i));
		cr_assert_eq(rc, f->made[i] ? 1 : 0, "DEL c%u: %d (%s)", i, rc,
			     shmkv_strerror(rc));
	}
}

/* A new counter: made, or refused only because the table is full and may
 * not grow. */
static void assert_new_counter(const char *key)
{
	int64_t got = 0;
	int rc = shmkv_incr(tu_kv, key, strlen(key), &got);

	cr_assert(rc == 0 || rc == -ENOSPC, "INCR %s: %d (%s)", key, rc,
		  shmkv_strerror(rc));
	cr_assert(rc != 0 || got == 1);
}

Test(at_limit, deletes_releases_and_maintain_succeed_at_max_memory)
{
	struct full_store f;

	fill(&f);
	assert_new_counter("fresh");
	release_all(&f);
	delete_all(tu_kv, &f);
	tu_assert_ok(shmkv_maintain(tu_kv));
	assert_filled_right(&f);
	assert_new_counter("fresher");
	/* Room was made: values fit again. */
	for (unsigned i = 0; i < f.keys / 2; i++)
		cr_assert_eq(set_big(tu_kv, i), 1, "SET b%u after the deletes",
			     i);
	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* Writes that need no new memory, on keys whose old slot a growth that
 * waited for memory would have frozen: each one's key is moved to the new
 * table by a copy that needs no memory either. (A TTL set or taken away
 * writes the value anew, in a new block: that needs memory.) */
Test(at_limit, writes_that_need_no_memory_succeed_at_max_memory)
{
	struct full_store f;
	char buf[VALUE_LEN], key[16];
	struct shmkv_value old = { buf, sizeof(buf), 0 };
	int64_t got = 0;
	size_t kl;

	fill(&f);
	assert_filled_right(&f);
	for (unsigned i = 0; i < f.counters; i++) {
		if (!f.made[i])
			continue;
		kl = tu_fmt(key, sizeof(key), "c", i);
		tu_assert_ok(shmkv_incr(tu_kv, key, kl, &got));
		cr_assert_eq(got, 2);
		/* An inline-sized string over an existing key's integer. */
		tu_assert_rc(
			shmkv_set(tu_kv, key, kl, LIT("short"), 0, 0, NULL), 1);
	}
	/* An extension publishes its lease in a fresh cell: at the limit it
	 * may be refused for memory (the lease stays), never otherwise. */
	for (int l = 0; l < LOCKS; l++) {
		int rc;

		if (f.lock_rc[l] < 0)
			continue;
		rc = shmkv_lock_extend(&f.lk[l], SHMKV_LOCK_EXTEND_ADD, 1000);

		cr_assert(rc == 0 || rc == -ENOMEM, "extend %d: %d", l, rc);
		tu_assert_rc(shmkv_lock_held(&f.lk[l]), 1);
	}
	for (unsigned i = 0; i < f.keys; i++) {
		kl = tu_fmt(key, sizeof(key), "b", i);
		if (i % 3 == 0) /* no TTL to take away: nothing to write */
			tu_assert_rc(shmkv_persist(tu_kv, key, kl), 0);
		if (i % 3 == 1)
			tu_assert_rc(shmkv_getdel(tu_kv, key, kl, &old), 1);
		else
			tu_assert_rc(shmkv_del(tu_kv, key, kl), 1);
	}
	/* Room made: every extension succeeds now. */
	for (int l = 0; l < LOCKS; l++)
		if (f.lock_rc[l] >= 0)
			tu_assert_ok(shmkv_lock_extend(
				&f.lk[l], SHMKV_LOCK_EXTEND_ADD, 1000));
	release_all(&f);
	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* The same store, its deletes made by another process while this one
 * holds the locks: the process that found the store full is not the one
 * that makes room. */
Test(at_limit, another_process_deletes_at_max_memory_and_makes_room)
{
	struct full_store f;
	int status;
	pid_t pid;

	fill(&f);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv = NULL;
		char key[16];

		if (shmkv_open(tu_name, 0, &kv) != 0)
			_exit(100);
		for (unsigned i = 0; i < f.keys; i++)
			if (shmkv_del(kv, key,
				      tu_fmt(key, sizeof(key), "b", i)) != 1)
				_exit(1);
		if (shmkv_maintain(kv) != 0)
			_exit(2);
		for (unsigned i = 0; i < f.keys / 2; i++)
			if (set_big(kv, i) != 1)
				_exit(3);
		shmkv_close(kv);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "deleter: %#x (1: a DEL failed, 2: maintain, 3: a SET after "
		  "the deletes)",
		  status);
	release_all(&f);
	assert_filled_right(&f);
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
