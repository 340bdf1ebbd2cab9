/*
 * test_shmctl_maint.c - shmctl check, recover, sweep and locks, on clean
 * stores and on stores damaged by hand (a dead process's claim, a
 * malformed value word).
 */
#include "helpers/shmctl_run.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "internal.h"
#include "shmkv_lock.h"

TestSuite(shmctl_maint, .init = tu_setup, .fini = ctl_teardown);

/*
 * check, recover, sweep, locks.
 */

/* Marks an empty slot claimed by a process that is gone. */
/* A slot claimed by a dead process, placed just behind the reclamation
 * cursor, so that the step a read-write open runs does not reach it
 * first (a store's size is at least 1024 slots). Return: its index. */
static uint32_t plant_dead_claim(void)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)tu_kv->base;
	pid_t pid = ctl_dead_pid();

	for (uint32_t i = 0; i <= shmkv__table_cmd(tu_kv)->mask; i++) {
		struct shmkv_slot_shm *s = shmkv__slot(shmkv__table_cmd(tu_kv), i);

		if (s->state == 0) {
			s->state = SLOT_WORD(SLOT_BUSY, pid, 0);
			h->reap_slot = i + 1;
			return i;
		}
	}
	cr_assert_fail("no empty slot");
	return 0;
}

Test(shmctl_maint, check_passes_a_clean_store)
{
	char want[TU_NAME_CAP + 80];
	struct run r;

	tu_populate(tu_kv, 50);
	r = RUN("check", tu_name);
	snprintf(want, sizeof(want), "%s: 0 problems found\n", tu_name);
	assert_reply(r, 0, want);
	r = RUN("check", "--json", tu_name);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"problems\":[],\"count\":0,"
		 "\"clean\":true}\n",
		 tu_name);
	assert_reply(r, 0, want);
}

Test(shmctl_maint, check_reports_a_corrupted_store_and_exits_4)
{
	struct run r;

	tu_populate(tu_kv, 50);
	SET("n", "12"); /* an inline integer: no block to leak */
	tu_slot_of(tu_kv, "n")->value = (uint64_t)0x31 << 58;
	r = RUN("check", tu_name);
	assert_code(r, 4);
	assert_has(r.out, ": malformed value word 0xc400000000000000\n");
	assert_has(r.out, ": 1 problem found\n");
	r = RUN("check", "--json", tu_name);
	assert_code(r, 4);
	assert_has(r.out, "malformed value word");
	assert_has(r.out, "\"count\":1,\"clean\":false}\n");
}

Test(shmctl_maint, recover_reclaims_the_leftovers_check_shows)
{
	struct run r;

	plant_dead_claim();
	r = RUN("check", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "leftover: slot");
	assert_has(r.out, "which is dead");
	r = RUN("recover", tu_name);
	assert_code(r, 0);
	assert_has(r.out, ": 1 repair\n");
	assert_has(r.out, "stale claims            1");
	r = RUN("check", tu_name);
	assert_code(r, 0);
	r = RUN("recover", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"repairs\":0,\"stale_claims\":0,");
}

Test(shmctl_maint, sweep_deletes_the_expired_keys)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	ctl_set_kv(LIT("e1"), LIT("v"), 1);
	ctl_set_kv(LIT("e2"), LIT("v"), 1);
	ctl_set_kv(LIT("e3"), LIT("12"), 1);
	SET("stays", "v");
	tu_sleep_ms(20);
	r = RUN("sweep", tu_name);
	snprintf(want, sizeof(want), "%s: 3 expired keys deleted\n", tu_name);
	assert_reply(r, 0, want);
	r = RUN("sweep", "--json", tu_name);
	assert_has(r.out, "\"expired\":0}");
	tu_assert_get_str(tu_kv, "stays", "v");
}

Test(shmctl_maint, locks_lists_a_held_lock_with_its_holder)
{
	char want[TU_NAME_CAP + 160];
	struct shmkv_lock lk;
	struct run r;

	r = RUN("locks", tu_name);
	snprintf(want, sizeof(want), "%s: no locks\n", tu_name);
	assert_reply(r, 0, want);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "job"));
	cr_assert_geq(shmkv_lock_try_acquire(&lk, 600000), 0);
	r = RUN("locks", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "LOCK");
	assert_has(r.out, "\njob ");
	snprintf(want, sizeof(want),
		 "{\"lock\":\"job\",\"state\":\"held\",\"held\":true,"
		 "\"alive\":true,\"pid\":%d,\"token\":1,",
		 (int)getpid());
	r = RUN("locks", "--json", tu_name);
	assert_has(r.out, want);
	assert_has(r.out, "\"count\":1}\n");
	tu_assert_ok(shmkv_lock_release(&lk));
	r = RUN("locks", tu_name);
	assert_has(r.out, " free ");
}

/* A free lock keeps only its token, not who held it last. */
Test(shmctl_maint, locks_shows_no_pid_for_a_free_lock)
{
	char row[64];
	struct shmkv_lock lk;
	struct run r;

	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "job"));
	cr_assert_geq(shmkv_lock_try_acquire(&lk, 600000), 0);
	tu_assert_ok(shmkv_lock_release(&lk));
	r = RUN("locks", tu_name);
	assert_code(r, 0);
	/* STATE, then PID and ALIVE both "-", as the table lays them out. */
	snprintf(row, sizeof(row), " %-17s %8s %5s ", "free", "-", "-");
	assert_has(r.out, row);
	r = RUN("locks", "--json", tu_name);
	assert_has(r.out, "\"state\":\"free\",\"held\":false,\"alive\":null,"
			  "\"pid\":null,\"token\":1,");
}

/*
 * config: settings of a store in use.
 */

Test(shmctl_maint, config_gets_and_sets_maxmemory)
{
	uint64_t max = tu_get_config(tu_kv).max_memory;
	char want[64], all[128];
	struct run r;

	snprintf(want, sizeof(want), "maxmemory\n%" PRIu64 "\n", max);
	snprintf(all, sizeof(all), "%smaxmemory-policy\nnoeviction\n", want);
	assert_reply(RUN("config", tu_name, "get"), 0, all);
	assert_reply(RUN("config", tu_name, "GET", "MaxMemory"), 0, want);
	/* A test store reserved its initial size only: that is the limit
	 * it may have, and 0 means it too. */
	r = RUN("config", tu_name, "set", "maxmemory", "1k");
	assert_code(r, 2);
	assert_has(r.err, "maxmemory '1k': below the store's initial size");
	assert_reply(RUN("config", tu_name, "get"), 0, all);
	assert_reply(RUN("config", tu_name, "set", "maxmemory", "0"), 0,
		     "OK\n");
	assert_reply(RUN("config", tu_name, "get", "maxmemory"), 0, want);
	cr_assert_eq(tu_get_config(tu_kv).max_memory, max);
}

/* As Redis's CONFIG GET: a glob, in any case; one matching nothing is an
 * empty reply, not an error. set takes no pattern. */
Test(shmctl_maint, config_get_takes_a_redis_glob)
{
	char mem[64], all[128];

	tu_assert_ok(shmkv_set_evict_policy(tu_kv, SHMKV_EVICT_VOLATILE_LRU));
	snprintf(mem, sizeof(mem), "maxmemory\n%" PRIu64 "\n",
		 tu_get_config(tu_kv).max_memory);
	snprintf(all, sizeof(all), "%smaxmemory-policy\nvolatile-lru\n", mem);
	assert_reply(RUN("config", tu_name, "get", "maxmemory*"), 0, all);
	assert_reply(RUN("config", tu_name, "get", "*"), 0, all);
	assert_reply(RUN("config", tu_name, "get", "MAXMEMORY-*"), 0,
		     "maxmemory-policy\nvolatile-lru\n");
	assert_reply(RUN("config", tu_name, "get", "*-[a-p]olicy"), 0,
		     "maxmemory-policy\nvolatile-lru\n");
	assert_reply(RUN("config", tu_name, "get", "max?emory"), 0, mem);
	assert_reply(RUN("config", tu_name, "get", "save*"), 0, "");
	assert_code(RUN("config", tu_name, "set", "maxmemory*", "0"), 2);
	cr_assert_eq(tu_get_config(tu_kv).evict_policy,
		     SHMKV_EVICT_VOLATILE_LRU);
}

Test(shmctl_maint, config_refuses_what_it_does_not_know)
{
	struct run r = RUN("config", tu_name, "set", "maxmemory-samples", "5");

	assert_code(r, 2);
	assert_has(r.err, "unknown parameter 'maxmemory-samples' (known: "
			  "maxmemory, maxmemory-policy)");
	r = RUN("config", tu_name, "del", "maxmemory");
	assert_code(r, 2);
	assert_has(r.err, "'del': expected get or set");
	assert_code(RUN("config", tu_name, "set", "maxmemory"), 2);
	assert_code(RUN("config", tu_name, "get", "maxmemory", "x"), 2);
	r = RUN("config", tu_name, "set", "maxmemory", "lots");
	assert_code(r, 2);
	assert_has(r.err, "expected a size in bytes");
	assert_code(RUN("config", tu_name), 2);
	r = RUN("config", "/no-such-store", "get");
	assert_code(r, 3);
}
