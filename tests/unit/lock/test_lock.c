/*
 * test_lock.c - the lock API in one process (plus forked children where a
 * second process is the point): grants, tokens, release and extend
 * outcomes, dead and reused owners, held(), listing and bad input. The
 * pattern lock is in test_pattern.c; races between processes are in
 * test_lock_mp.c.
 *
 * Forked children never assert: they _exit() with a code the parent
 * checks.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "lock_record.h"
#include "shmkv_lock.h"

#define LONG_LEASE 60000

TestSuite(lock, .init = tu_setup, .fini = tu_teardown);

static struct shmkv_lock handle(const char *name)
{
	struct shmkv_lock lk;

	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, name));
	return lk;
}

/* The value of lock.<name> as a record, whatever its encoding. */
static struct shmkv_lock_rec record(const char *name)
{
	char key[300];
	struct shmkv_lock_rec rec = { 0 };

	snprintf(key, sizeof(key), "lock.%s", name);
	tu_assert_ok(shmkv__lock_read(tu_kv, key, strlen(key), &rec));
	return rec;
}

static void put_record(const char *name, const struct shmkv_lock_rec *rec)
{
	char key[300];

	snprintf(key, sizeof(key), "lock.%s", name);
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), rec, sizeof(*rec), 0, 0,
			       NULL),
		     1);
}

/* A HELD record for (@pid, @start) with a long lease and token 7. */
static struct shmkv_lock_rec held_by(uint32_t pid, uint64_t start)
{
	struct shmkv_lock_rec r = {
		.magic = SHMKV_LOCK_MAGIC,
		.version = SHMKV_LOCK_REC_VERSION,
		.state = SHMKV_LOCK_HELD,
		.pid = pid,
		.start = start,
		.token = 7,
		.acquired_ms = shmkv__mono_ms(),
		.deadline_ms = shmkv__mono_ms() + LONG_LEASE,
	};
	return r;
}

/* A pid that named a process a moment ago and names none now. */
static pid_t gone_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* A NUL-terminated name of @len bytes (freed when the test ends). */
static char *name_of(size_t len)
{
	char *s = tu_fill(len + 1, 'n');

	s[len] = '\0';
	return s;
}

Test(lock, first_grant_of_a_new_lock_has_token_one)
{
	struct shmkv_lock lk = handle("a");

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&lk), 1);
	cr_assert_eq(record("a").state, SHMKV_LOCK_HELD);
	cr_assert_eq(record("a").pid, (uint32_t)getpid());
}

Test(lock, every_grant_gets_the_next_token_and_release_keeps_it)
{
	struct shmkv_lock lk = handle("a");

	for (uint64_t t = 1; t <= 5; t++) {
		tu_assert_rc(shmkv_lock_acquire(&lk, LONG_LEASE), 0);
		cr_assert_eq(shmkv_lock_token(&lk), t);
		tu_assert_ok(shmkv_lock_release(&lk));
		cr_assert_eq(record("a").state, SHMKV_LOCK_FREE);
		cr_assert_eq(record("a").token, t);
	}
}

Test(lock, another_handle_is_busy_and_the_same_handle_would_deadlock)
{
	struct shmkv_lock a = handle("a"), b = handle("a");
	struct tu_snap *snap;

	tu_assert_rc(shmkv_lock_try_acquire(&a, LONG_LEASE), 0);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_lock_try_acquire(&b, LONG_LEASE), -EBUSY);
	tu_assert_rc(shmkv_lock_try_acquire(&a, LONG_LEASE), -EDEADLK);
	tu_assert_unchanged(tu_kv, snap);
	cr_assert_eq(shmkv_lock_token(&b), 0);
}

Test(lock, release_twice_reports_not_held_and_changes_nothing)
{
	struct shmkv_lock lk = handle("a");
	struct tu_snap *snap;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE), 0);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_lock_release(&lk), SHMKV_LOCK_NOT_HELD);
	tu_assert_unchanged(tu_kv, snap);
}

Test(lock, releasing_someone_elses_lock_is_not_owner_and_changes_nothing)
{
	struct shmkv_lock a = handle("a"), b = handle("a");
	struct tu_snap *snap;

	tu_assert_rc(shmkv_lock_try_acquire(&a, LONG_LEASE), 0);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_lock_release(&b), SHMKV_LOCK_NOT_OWNER);
	tu_assert_rc(shmkv_lock_extend(&b, SHMKV_LOCK_EXTEND_ADD, 10),
		     SHMKV_LOCK_NOT_OWNER);
	tu_assert_unchanged(tu_kv, snap);
	cr_assert_eq(shmkv_lock_held(&a), 1);
	tu_assert_rc(shmkv_lock_release(&a), 0);
}

Test(lock, releasing_a_lock_never_taken_is_not_held)
{
	struct shmkv_lock lk = handle("a");

	tu_assert_rc(shmkv_lock_release(&lk), SHMKV_LOCK_NOT_HELD);
	tu_assert_missing(tu_kv, LIT("lock.a"));
}

Test(lock, run_out_lease_is_taken_as_lease_expired_and_the_loser_learns_it)
{
	struct shmkv_lock a = handle("a"), b = handle("a");

	tu_assert_rc(shmkv_lock_try_acquire(&a, 1), 0);
	while (shmkv__mono_ms() <= record("a").deadline_ms)
		tu_sleep_ms(1);
	cr_assert_eq(shmkv_lock_held(&a), 0);
	tu_assert_rc(shmkv_lock_try_acquire(&b, LONG_LEASE),
		     SHMKV_LOCK_LEASE_EXPIRED);
	cr_assert_eq(shmkv_lock_token(&b), 2);
	tu_assert_rc(shmkv_lock_extend(&a, SHMKV_LOCK_EXTEND_REPLACE, 10),
		     SHMKV_LOCK_NOT_OWNER);
	tu_assert_rc(shmkv_lock_release(&a), SHMKV_LOCK_NOT_OWNER);
	cr_assert_eq(shmkv_lock_held(&b), 1);
	tu_assert_rc(shmkv_lock_release(&b), 0);
	/* Taken and given back since: still not a's to release. */
	tu_assert_rc(shmkv_lock_release(&a), SHMKV_LOCK_NOT_HELD);
}

Test(lock, own_lease_ran_out_untaken_cannot_be_extended_but_is_released)
{
	struct shmkv_lock lk = handle("a");
	struct tu_snap *snap;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, 1), 0);
	while (shmkv__mono_ms() <= record("a").deadline_ms)
		tu_sleep_ms(1);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 10),
		     SHMKV_LOCK_NOT_HELD);
	tu_assert_unchanged(tu_kv, snap);
	/* Nobody took it, so nobody overlapped us: the late release is a
	 * release (compare-and-delete on the grant), and the lock is free. */
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	cr_assert_eq(record("a").state, SHMKV_LOCK_FREE);
	cr_assert_eq(record("a").token, 1);
	tu_assert_rc(shmkv_lock_release(&lk), SHMKV_LOCK_NOT_HELD);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_ACQUIRED);
	cr_assert_eq(shmkv_lock_token(&lk), 2);
}

Test(lock, extend_add_moves_the_lease_end_by_exactly_ms)
{
	struct shmkv_lock lk = handle("a");
	int64_t end;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE), 0);
	end = record("a").deadline_ms;
	tu_assert_ok(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 1234));
	cr_assert_eq(record("a").deadline_ms, end + 1234);
	cr_assert_eq(record("a").token, 1);
	cr_assert_eq(shmkv_lock_held(&lk), 1);
}

Test(lock, extend_replace_ends_the_lease_ms_from_now_even_if_sooner)
{
	struct shmkv_lock lk = handle("a");
	int64_t before, after;

	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE), 0);
	before = shmkv__mono_ms();
	tu_assert_ok(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_REPLACE, 500));
	after = shmkv__mono_ms();
	cr_assert_geq(record("a").deadline_ms, before + 500);
	cr_assert_leq(record("a").deadline_ms, after + 500);
}

Test(lock, bad_leases_timeouts_and_modes_are_einval_and_change_nothing)
{
	struct shmkv_lock lk = handle("a"), zero;
	struct tu_snap *snap = tu_snap_take(tu_kv);

	tu_assert_rc(shmkv_lock_try_acquire(&lk, 0), -EINVAL);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, -5), -EINVAL);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, SHMKV_LOCK_LEASE_MAX + 1),
		     -EINVAL);
	tu_assert_rc(shmkv_lock_timed_acquire(&lk, 10, -2), -EINVAL);
	tu_assert_rc(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 0), -EINVAL);
	tu_assert_rc(shmkv_lock_extend(&lk, 7, 10), -EINVAL);
	memset(&zero, 0, sizeof(zero));
	tu_assert_rc(shmkv_lock_try_acquire(&zero, 10), -EINVAL);
	tu_assert_rc(shmkv_lock_release(&zero), -EINVAL);
	tu_assert_rc(shmkv_lock_try_acquire(NULL, 10), -EINVAL);
	cr_assert_eq(shmkv_lock_held(NULL), 0);
	tu_assert_unchanged(tu_kv, snap);
}

Test(lock, empty_null_and_too_long_names_are_refused)
{
	struct shmkv_lock lk;
	char *longest = name_of(TU_KEY_MAX - SHMKV_LOCK_PREFIX_LEN);
	char *past_key = name_of(TU_KEY_MAX - SHMKV_LOCK_PREFIX_LEN + 1);
	char *past_name = name_of(SHMKV_LOCK_NAME_MAX + 1);

	tu_assert_rc(shmkv_lock_init(tu_kv, &lk, ""), -EINVAL);
	tu_assert_rc(shmkv_lock_init(tu_kv, &lk, NULL), -EINVAL);
	tu_assert_rc(shmkv_lock_init(NULL, &lk, "a"), -EINVAL);
	tu_assert_rc(shmkv_lock_init(tu_kv, NULL, "a"), -EINVAL);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, longest));
	tu_assert_rc(shmkv_lock_init(tu_kv, &lk, past_key), -ENAMETOOLONG);
	tu_assert_rc(shmkv_lock_init(tu_kv, &lk, past_name), -ENAMETOOLONG);
	/* A failed init leaves a handle every call refuses. */
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 10), -EINVAL);
}

Test(lock, a_key_that_is_not_a_lock_is_eexist_and_left_alone)
{
	struct shmkv_lock lk = handle("x");
	struct tu_snap *snap;

	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.x"), LIT("hello"), 0, 0, NULL),
		     1);
	snap = tu_snap_take(tu_kv);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 10), -EEXIST);
	tu_assert_rc(shmkv_lock_release(&lk), -EEXIST);
	tu_assert_unchanged(tu_kv, snap);
	/* A pattern lock's Unix time is not a safe lock either. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.x"), LIT("1700000000000"), 0, 0,
			       NULL),
		     1);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 10), -EEXIST);
	tu_assert_get_str(tu_kv, "lock.x", "1700000000000");
}

Test(lock, init_needs_room_for_an_owner_record)
{
	struct shmkv_config cfg = tu_config(64, 32, 32, 0);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name);
	struct shmkv_lock lk;

	tu_assert_rc(shmkv_lock_init(kv, &lk, "a"), -E2BIG);
	shmkv_close(kv);
}

/* shmkv_lock_list callback: copies the info of the lock named in @arg. */
struct found {
	const char *name;
	int visits;
	struct shmkv_lock_info info;
};

static int find_lock(const struct shmkv_lock_info *info, void *arg)
{
	struct found *f = arg;

	if (info->name_len == strlen(f->name) &&
	    memcmp(info->name, f->name, info->name_len) == 0) {
		f->info = *info;
		f->info.name = NULL; /* valid only during the call */
		f->visits++;
	}
	return 0;
}

Test(lock, read_only_handle_cannot_lock_but_can_list)
{
	shmkv_t *ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	struct shmkv_lock lk, mine = handle("a");
	struct found f = { .name = "a" };

	tu_assert_rc(shmkv_lock_try_acquire(&mine, LONG_LEASE), 0);
	tu_assert_ok(shmkv_lock_init(ro, &lk, "a"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 10), -EROFS);
	tu_assert_rc(shmkv_lock_release(&lk), -EROFS);
	tu_assert_rc(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 10), -EROFS);
	tu_assert_rc(shmkv_lock_list(ro, find_lock, &f), 1);
	cr_assert_eq(f.visits, 1);
	cr_assert_eq(f.info.held, 1);
	tu_assert_rc(shmkv_lock_list(ro, NULL, NULL), -EINVAL);
	shmkv_close(ro);
}

Test(lock, held_is_true_only_while_the_grant_is_current)
{
	struct shmkv_lock lk = handle("a");

	cr_assert_eq(shmkv_lock_held(&lk), 0);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE), 0);
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	cr_assert_eq(shmkv_lock_held(&lk), 1); /* cached word path */
	tu_assert_ok(shmkv_lock_extend(&lk, SHMKV_LOCK_EXTEND_ADD, 10));
	cr_assert_eq(shmkv_lock_held(&lk), 1);
	/* Someone overwrites the key behind the lock's back. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.a"), LIT("-9"), 0, 0, NULL), 1);
	cr_assert_eq(shmkv_lock_held(&lk), 0);
}

Test(lock, owner_whose_pid_no_longer_exists_is_dead)
{
	struct shmkv_lock lk = handle("a");
	struct shmkv_lock_rec r = held_by((uint32_t)gone_pid(), 12345);

	put_record("a", &r);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_OWNER_DEAD);
	cr_assert_eq(shmkv_lock_token(&lk), 8);
}

Test(lock, reused_pid_with_another_start_time_is_a_dead_owner)
{
	struct shmkv_lock lk = handle("a");
	struct shmkv_proc_id me;
	struct shmkv_lock_rec r;

	shmkv__proc_self(&me);
	cr_assert_neq(me.start, 0, "cannot read our own start time");
	/* Our pid, but a process that started earlier: not us. */
	r = held_by(me.pid, me.start - 1);
	put_record("a", &r);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_OWNER_DEAD);
}

/* A child that has marked itself in tu_kv's store (it took lock "mark"
 * there) and sleeps until killed. */
static pid_t marked_child(void)
{
	int p[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct shmkv_lock lk;

		if (shmkv_lock_init(tu_kv, &lk, "mark") != 0 ||
		    shmkv_lock_try_acquire(&lk, LONG_LEASE) < 0)
			_exit(1);
		(void)!write(p[1], "m", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &c, 1), 1, "the child could not mark");
	close(p[0]);
	return pid;
}

Test(lock, live_owner_of_another_process_is_busy)
{
	struct shmkv_lock lk = handle("a");
	pid_t owner = marked_child();
	struct shmkv_lock_rec r;
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)owner);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')') + 2;
	for (int field = 3; field < 22; field++)
		p = strchr(p, ' ') + 1;
	r = held_by((uint32_t)owner, strtoull(p, NULL, 10));
	put_record("a", &r);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE), -EBUSY);
	tu_assert_rc(shmkv_lock_timed_acquire(&lk, LONG_LEASE, 20), -ETIMEDOUT);
	cr_assert_eq(record("a").token, 7);
	kill(owner, SIGKILL);
	waitpid(owner, NULL, 0);
}

Test(lock, live_process_with_no_mark_in_the_store_is_a_dead_owner)
{
	struct shmkv_lock lk = handle("a");
	pid_t parent = getppid();
	struct shmkv_lock_rec r;
	char path[64], buf[1024], *p;
	FILE *f;

	/* Our parent lives, with the recorded start time, but never took a
	 * lock in this store: the pid was handed out again within the
	 * holder's start tick, to another process. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)parent);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	p = strrchr(buf, ')') + 2;
	for (int field = 3; field < 22; field++)
		p = strchr(p, ' ') + 1;
	r = held_by((uint32_t)parent, strtoull(p, NULL, 10));
	put_record("a", &r);
	tu_assert_rc(shmkv_lock_try_acquire(&lk, LONG_LEASE),
		     SHMKV_LOCK_OWNER_DEAD);
}

Test(lock, timed_out_waiter_leaves_no_waiter_count_behind)
{
	struct shmkv_lock a = handle("a"), b = handle("a");
	struct found f = { .name = "a" };

	tu_assert_rc(shmkv_lock_try_acquire(&a, LONG_LEASE), 0);
	tu_assert_rc(shmkv_lock_timed_acquire(&b, LONG_LEASE, 15), -ETIMEDOUT);
	tu_assert_rc(shmkv_lock_list(tu_kv, find_lock, &f), 1);
	cr_assert_eq(f.info.waiters, 0);
}

Test(lock, list_describes_held_free_and_dead_locks_and_skips_other_keys)
{
	struct shmkv_lock a = handle("held"), b = handle("free");
	struct found fa = { .name = "held" }, fb = { .name = "free" },
		     fd = { .name = "dead" };
	struct shmkv_lock_rec r = held_by((uint32_t)gone_pid(), 1);

	tu_populate(tu_kv, 20);
	tu_assert_rc(shmkv_set(tu_kv, LIT("lock.junk"), LIT("x"), 0, 0, NULL),
		     1);
	put_record("dead", &r);
	tu_assert_rc(shmkv_lock_try_acquire(&a, LONG_LEASE), 0);
	tu_assert_rc(shmkv_lock_try_acquire(&b, LONG_LEASE), 0);
	tu_assert_ok(shmkv_lock_release(&b));
	tu_assert_rc(shmkv_lock_list(tu_kv, find_lock, &fa), 3);
	tu_assert_rc(shmkv_lock_list(tu_kv, find_lock, &fb), 3);
	tu_assert_rc(shmkv_lock_list(tu_kv, find_lock, &fd), 3);
	cr_assert(fa.info.held == 1 && fa.info.alive == 1);
	cr_assert_eq(fa.info.pid, (uint32_t)getpid());
	cr_assert_eq(fa.info.token, 1);
	cr_assert(fa.info.lease_left_ms > 0 &&
		  fa.info.lease_left_ms <= LONG_LEASE);
	cr_assert_geq(fa.info.held_for_ms, 0);
	cr_assert(fb.info.held == 0 && fb.info.alive == -1);
	cr_assert_eq(fb.info.token, 1);
	cr_assert(fd.info.held == 1 && fd.info.alive == 0);
	cr_assert_eq(fd.info.token, 7);
}

/* A free lock keeps only its token: its pid reads 0 in both encodings,
 * the inline -token and the binary record used past 2^46 grants (whose
 * release copies the holder's fields). */
Test(lock, list_gives_pid_zero_for_a_free_lock_in_either_encoding)
{
	struct shmkv_lock b = handle("inline");
	struct found fi = { .name = "inline" }, fr = { .name = "record" };
	struct shmkv_lock_rec r = held_by((uint32_t)getppid(), 1);

	tu_assert_rc(shmkv_lock_try_acquire(&b, LONG_LEASE), 0);
	tu_assert_ok(shmkv_lock_release(&b));
	r.state = SHMKV_LOCK_FREE;
	r.token = (uint64_t)LOCK_INLINE_TOKEN_MAX + 5;
	put_record("record", &r);
	tu_assert_rc(shmkv_lock_list(tu_kv, find_lock, &fi), 2);
	tu_assert_rc(shmkv_lock_list(tu_kv, find_lock, &fr), 2);
	cr_assert(fi.info.held == 0 && fi.info.alive == -1);
	cr_assert(fr.info.held == 0 && fr.info.alive == -1);
	cr_assert_eq(fi.info.pid, 0);
	cr_assert_eq(fr.info.pid, 0, "a free record's pid is %u", fr.info.pid);
	cr_assert_eq(fr.info.token, (uint64_t)LOCK_INLINE_TOKEN_MAX + 5);
}
