/*
 * test_recover.c - shmkv_recover() on stores no process died in: there is
 * nothing to repair, so it reports zero repairs and changes nothing.
 * (Repairs after killed processes are exercised by the multi-process
 * tests.)
 */
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "helpers/ttl.h"
#include "internal.h"
#include "shmkv_lock.h"

TestSuite(recover, .init = tu_setup, .fini = tu_teardown);

static void assert_clean(shmkv_t *kv)
{
	struct shmkv_recover_report r;

	memset(&r, 0xff, sizeof(r));
	tu_assert_rc(shmkv_recover(kv, &r), 0);
	cr_assert_eq(r.stale_claims, 0);
	cr_assert_eq(r.stuck_inserts, 0);
	cr_assert_eq(r.collided, 0);
	cr_assert_eq(r.dead_slots, 0);
	cr_assert_eq(r.leaked_blocks, 0);
}

Test(recover, reports_nothing_on_a_fresh_store)
{
	assert_clean(tu_kv);
	tu_assert_rc(shmkv_recover(tu_kv, NULL), 0);
}

Test(recover, reports_nothing_after_ordinary_use_and_changes_nothing)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	char *big = tu_fill(200, 'b');
	struct tu_snap *snap;
	int64_t n = 0;
	char k[32];

	tu_populate(tu_kv, 200);
	for (unsigned i = 0; i < 200; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "base", i);

		switch (i % 5) {
		case 0:
			tu_assert_rc(shmkv_del(tu_kv, k, kl), 1);
			break;
		case 1:
			tu_assert_rc(
				shmkv_set(tu_kv, k, kl, big, 200, 0, 0, NULL),
				1);
			break;
		case 2:
			tu_assert_rc(shmkv_getdel(tu_kv, k, kl, &v), 1);
			break;
		case 3:
			tu_assert_ok(shmkv_incr(tu_kv, LIT("counter"), &n));
			break;
		default:
			tu_assert_rc(shmkv_set(tu_kv, k, kl, LIT("x"),
					       SHMKV_SET_PX, 40, NULL),
				     1);
		}
	}
	snap = tu_snap_take(tu_kv);
	assert_clean(tu_kv);
	tu_assert_unchanged(tu_kv, snap);
}

Test(recover, reports_nothing_after_keys_expired)
{
	struct shmkv_stats st;

	ttl_set_ms("a", "v", SHORT_MS);
	ttl_set_ms("b", "12", SHORT_MS);
	tu_sleep_ms(PAST_SHORT_MS);
	assert_clean(tu_kv);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.live_keys, 0);
}

Test(recover, a_second_handle_sees_a_clean_store_too)
{
	shmkv_t *other = tu_open(tu_name, 0);

	tu_populate(tu_kv, 50);
	assert_clean(other);
	assert_clean(tu_kv);
	shmkv_close(other);
}

/* A pid that is certainly dead: a child we made and reaped. */
static uint32_t dead_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return (uint32_t)pid;
}

Test(recover, is_not_needed_a_lock_users_first_cell_reclaims_a_step)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)tu_kv->base;
	struct shmkv_recover_report r;
	struct shmkv_lock lk;
	shmkv_t *kv = tu_open(tu_name, 0);
	uint32_t idx = 7;

	/* A dead process's claim and block, where the next step starts. */
	shmkv__slot(shmkv__table_cmd(tu_kv), idx)->state = SLOT_WORD(SLOT_BUSY, dead_pid(), 0);
	h->reap_slot = idx;
	tu_assert_ok(shmkv_lock_init(kv, &lk, "first"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_ACQUIRED);
	tu_assert_rc(shmkv_lock_release(&lk), 0);
	cr_assert_eq(SLOT_STATE(shmkv__slot(shmkv__table_cmd(tu_kv), idx)->state), SLOT_EMPTY,
		     "the dead claim is still there");
	shmkv_close(kv);
	tu_assert_rc(shmkv_recover(tu_kv, &r), 0);
}
