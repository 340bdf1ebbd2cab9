/*
 * test_shmctl_grow.c - shmctl and a table that doubles online: maintain
 * (finishing a growth an idle store was left in), info and watch while a
 * growth is under way and after it, and maintain's error paths.
 *
 * A growth is started from the test with the internal seam
 * shmkv__grow_start() (migrate.h), which flips the table into its growth
 * without moving anything: the store is then what an idle store looks like
 * after the insert that started a growth, and only shmctl moves it on.
 * Readers (info, watch) never move keys, so the counts the test takes
 * before a run are the counts shmctl sees.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>

#include "internal.h"
#include "layout.h"
#include "migrate.h"
#include "tables.h"

TestSuite(shmctl_grow, .init = tu_setup, .fini = ctl_teardown);

#define SLOTS 1024u
#define KEYS  300u
/* The most the test store may use: room for its next table. */
#define MAX_MEMORY (64u << 20)

/* Replaces the suite's store with one that may grow (tu_create caps a
 * store at its initial size), holding KEYS keys. */
static void growing_store(void)
{
	struct shmkv_config cfg = tu_config(SLOTS, 0, 0, 0);

	cfg.max_memory = MAX_MEMORY;
	shmkv_close(tu_kv);
	tu_kv = tu_create_growing(&cfg, tu_name);
	tu_populate(tu_kv, KEYS);
}

static struct shmkv_stats stats(void)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	return st;
}

/* Starts a growth of the table of @from slots and moves nothing of it. */
static void start_growth(uint64_t from)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   tu_kv->base;

	tu_assert_ok(shmkv__grow_start(tu_kv, h->life));
	cr_assert_eq(stats().growing_from, from, "no growth started");
	cr_assert_eq(stats().growing_moved, 0);
}

/* One bounded step of the growth, as a write runs (two chunks). */
static void step_growth(void)
{
	struct shmkv_tables tabs;

	cr_assert_eq(shmkv__tables(tu_kv, &tabs), SHMKV__GROWING);
	tu_assert_ok(shmkv__migrate_step(tu_kv, &tabs));
}

/* Every key tu_populate wrote reads back. */
static void assert_keys_intact(void)
{
	char k[32], v[32];

	for (unsigned i = 0; i < KEYS; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "base", i);

		tu_assert_get(tu_kv, k, kl, v,
			      tu_fmt(v, sizeof(v), "value", i));
	}
}

static void assert_clean(void)
{
	assert_code(RUN("check", tu_name), 0);
}

Test(shmctl_grow, maintain_finishes_a_growth_left_on_an_idle_store)
{
	char want[TU_NAME_CAP + 96];
	struct run r;

	growing_store();
	start_growth(SLOTS);
	r = RUN("maintain", tu_name);
	snprintf(want, sizeof(want),
		 "%s: table grew from 1024 to 2048 slots: moved\n", tu_name);
	assert_reply(r, 0, want);
	cr_assert_eq(stats().growing_from, 0);
	cr_assert_eq(stats().growths, 1);
	cr_assert_eq(stats().slots, 2 * SLOTS);
	assert_keys_intact();
	assert_clean();
	/* Nothing left to do: said so, and nothing changes. */
	r = RUN("maintain", tu_name);
	snprintf(want, sizeof(want), "%s: no growth under way (2048 slots)\n",
		 tu_name);
	assert_reply(r, 0, want);
	cr_assert_eq(stats().growths, 1);
}

Test(shmctl_grow, maintain_json_says_what_it_did)
{
	char want[TU_NAME_CAP + 160];
	struct run r;

	growing_store();
	start_growth(SLOTS);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"grew\":true,\"from\":1024,\"to\":2048,"
		 "\"slots\":2048,\"growths\":1,\"growing_from\":0}\n",
		 tu_name);
	/* assert_reply evaluates its run more than once: one run each. */
	r = RUN("maintain", "--json", tu_name);
	assert_reply(r, 0, want);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"grew\":false,\"from\":null,\"to\":null,"
		 "\"slots\":2048,\"growths\":1,\"growing_from\":0}\n",
		 tu_name);
	r = RUN("maintain", tu_name, "--json");
	assert_reply(r, 0, want);
}

/* As config: "shmctl NAME maintain", and maintain typed at the prompt. */
Test(shmctl_grow, maintain_runs_in_the_data_form_and_at_the_prompt)
{
	char want[2 * TU_NAME_CAP + 96];
	struct run r;

	growing_store();
	start_growth(SLOTS);
	r = RUN(tu_name + 1, "maintain");
	snprintf(want, sizeof(want),
		 "%s: table grew from 1024 to 2048 slots: moved\n", tu_name);
	assert_reply(r, 0, want);
	start_growth(2 * SLOTS);
	r = RUN_STDIN("get base1\nmaintain\nmaintain\n", tu_name);
	snprintf(want, sizeof(want),
		 "value1\n%s: table grew from 2048 to 4096 slots: moved\n"
		 "%s: no growth under way (4096 slots)\n",
		 tu_name, tu_name);
	/* Not a terminal: the value comes raw (redis-cli's rule). */
	assert_reply(r, 0, want);
	/* At the prompt it takes no operand: a usage error, nothing done. */
	r = RUN_STDIN("maintain now\n", tu_name);
	assert_code(r, 0);
	assert_has(r.err, "shmctl maintain: takes no operand at the prompt");
	cr_assert_str_empty(r.out);
	assert_keys_intact();
}

/*
 * info and watch: the table now, at creation, and a growth's progress.
 */

Test(shmctl_grow, info_shows_a_growth_under_way_and_its_end)
{
	struct run r;

	growing_store();
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "  table     1024 slots (1024 at creation, doubled 0 "
			  "times, may double to 262144)\n");
	assert_lacks(r.out, "growing");
	start_growth(SLOTS);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "  table     2048 slots (1024 at creation, doubled 0 "
			  "times, may double to 262144)\n"
			  "  growing   from 1024 to 2048 slots: 0 of 1024 old "
			  "slots moved (0.0%); writes move the rest, shmctl "
			  "maintain finishes it\n");
	/* Keys in both tables are counted once; load is of the new one. */
	assert_has(r.out, "  keys      300 live, 100 with a TTL\n");
	assert_has(r.out, "  load      14.6% (live + pending / slots)");
	r = RUN("info", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"slots\":{\"total\":2048,");
	assert_has(r.out,
		   "\"load_factor\":0.1465,\"initial\":1024,"
		   "\"growths\":0,\"max\":262144,\"growing\":{\"from\":1024,"
		   "\"to\":2048,"
		   "\"moved\":0,\"progress\":0.0000}},");
	assert_code(RUN("maintain", tu_name), 0);
	r = RUN("info", tu_name);
	assert_has(r.out, "  table     2048 slots (1024 at creation, doubled 1 "
			  "time, may double to 262144)\n");
	assert_lacks(r.out, "growing");
	r = RUN("info", "--json", tu_name);
	assert_has(r.out, "\"initial\":1024,\"growths\":1,\"max\":262144,"
			  "\"growing\":null},");
	assert_has(r.out, "\"config\":{\"slots\":1024,");
}

/* Part of the way: the counts the library gives, as a share. */
Test(shmctl_grow, info_shows_how_far_a_growth_has_moved)
{
	char want[160];
	struct shmkv_stats st;
	struct run r;

	growing_store();
	start_growth(SLOTS);
	step_growth();
	st = stats();
	cr_assert_eq(st.growing_from, SLOTS, "one step finished the growth");
	cr_assert(st.growing_moved > 0 && st.growing_moved < SLOTS,
		  "moved %" PRIu64, st.growing_moved);
	snprintf(want, sizeof(want),
		 "  growing   from 1024 to 2048 slots: %" PRIu64 " of 1024 old "
		 "slots moved (%.1f%%);",
		 st.growing_moved, 100.0 * (double)st.growing_moved / SLOTS);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, want);
	snprintf(want, sizeof(want),
		 "\"growing\":{\"from\":1024,\"to\":2048,\"moved\":%" PRIu64
		 ",\"progress\":%.4f}",
		 st.growing_moved, (double)st.growing_moved / SLOTS);
	r = RUN("info", "--json", tu_name);
	assert_has(r.out, want);
	assert_keys_intact();
}

Test(shmctl_grow, watch_shows_a_growth_live)
{
	struct run r;

	growing_store();
	r = RUN("watch", tu_name, "--interval", "0.1", "--count", "1");
	assert_code(r, 0);
	assert_has(r.out, "table    1024 slots (1024 at creation, doubled 0 "
			  "times, may double to 262144)\n");
	assert_lacks(r.out, "growing");
	start_growth(SLOTS);
	r = RUN("watch", tu_name, "--interval", "0.1", "--count", "2");
	assert_code(r, 0);
	assert_has(r.out, "table    2048 slots (1024 at creation, doubled 0 "
			  "times, may double to 262144)\n"
			  "growing  from 1024 to 2048 slots: 0 of 1024 old "
			  "slots moved (0.0%), +0.0/s\n");
	cr_assert_eq(stats().growing_moved, 0, "watch moved keys");
	assert_code(RUN("maintain", tu_name), 0);
	r = RUN("watch", tu_name, "--interval", "0.1", "--count", "1");
	assert_has(r.out, "table    2048 slots (1024 at creation, doubled 1 "
			  "time, may double to 262144)\n");
	assert_lacks(r.out, "growing");
}

Test(shmctl_grow, ls_shows_the_slots_of_the_table_now)
{
	char want[TU_NAME_CAP + 32];
	struct run r;

	growing_store();
	start_growth(SLOTS);
	assert_code(RUN("maintain", tu_name), 0);
	r = RUN("ls", "--json");
	assert_code(r, 0);
	snprintf(want, sizeof(want), "{\"name\":\"%s\",", tu_name);
	assert_has(r.out, want);
	cr_assert(strstr(strstr(r.out, want), "\"slots\":2048,") != NULL, "%s",
		  r.out);
}

/*
 * maintain's errors.
 */

Test(shmctl_grow, maintain_rejects_bad_arguments_and_does_nothing)
{
	struct run r;

	growing_store();
	start_growth(SLOTS);
	r = RUN("maintain");
	assert_code(r, 2);
	assert_has(r.err, "missing operand (usage: shmctl maintain NAME");
	r = RUN("maintain", tu_name, "extra");
	assert_code(r, 2);
	assert_has(r.err, "too many operands");
	r = RUN("maintain", "--bogus", tu_name);
	assert_code(r, 2);
	assert_has(r.err, "Try 'shmctl maintain --help'");
	r = RUN("maintain", "a/b");
	assert_code(r, 2);
	assert_has(r.err, "invalid store name 'a/b'");
	r = RUN("maintain", "/shmkv-test-no-such-store");
	assert_code(r, 3);
	assert_has(r.err, "/shmkv-test-no-such-store: ");
	cr_assert_eq(stats().growing_from, SLOTS, "a refused run moved keys");
	cr_assert_eq(stats().growing_moved, 0);
}

/* Read permission only: the tool's open is refused; the prompt opens
 * read-only, and maintain there says why it cannot move keys. */
Test(shmctl_grow, maintain_needs_write_permission)
{
	char path[TU_NAME_CAP + 16], want[TU_NAME_CAP + 96];
	struct run r;

	if (!ctl_is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	growing_store();
	start_growth(SLOTS);
	snprintf(path, sizeof(path), SHMKV_SHM_DIR "%s", tu_name);
	cr_assert_eq(chmod(path, 0644), 0);
	r = RUN_AS(NOBODY, "maintain", tu_name);
	assert_code(r, 3);
	snprintf(want, sizeof(want), "shmctl: %s: permission denied\n",
		 tu_name);
	cr_assert_str_eq(r.err, want);
	r = ctl_run_in("maintain\n", 9, NOBODY, tu_name, (char *)NULL);
	assert_code(r, 3);
	snprintf(want, sizeof(want),
		 "shmctl: %s: maintain: opened read-only: moving keys needs "
		 "write permission\n",
		 tu_name);
	assert_has(r.err, want);
	cr_assert_eq(stats().growing_from, SLOTS);
	cr_assert_eq(stats().growing_moved, 0);
	assert_keys_intact();
}

/*
 * A key copied to the new table keeps its value block (the copy needs no
 * memory): with value memory full and max_memory at what the store uses,
 * maintain still finishes the move, and every key reads back.
 */
Test(shmctl_grow, maintain_finishes_the_move_with_value_memory_full)
{
	char k[32], want[TU_NAME_CAP + 64], *big = tu_fill(900, 'b');
	unsigned n = 0;
	struct run r;
	int rc;

	growing_store();
	/* Value memory full within a cap; then room for the new table. */
	tu_assert_ok(shmkv_set_max_memory(tu_kv, stats().memory_bytes));
	while ((rc = shmkv_set(tu_kv, k, tu_fmt(k, sizeof(k), "big", n), big,
			       900, 0, 0, NULL)) == 1 &&
	       n < 400)
		n++;
	tu_assert_rc(rc, -ENOMEM);
	cr_assert_gt(n, 0, "no block value fitted");
	tu_assert_ok(shmkv_set_max_memory(tu_kv, MAX_MEMORY));
	start_growth(SLOTS);
	tu_assert_ok(shmkv_set_max_memory(tu_kv, stats().memory_bytes));
	r = RUN("info", tu_name);
	assert_has(r.out, "  growing   from 1024 to 2048 slots: ");
	snprintf(want, sizeof(want),
		 "%s: table grew from 1024 to 2048 slots: moved\n", tu_name);
	r = RUN("maintain", tu_name);
	assert_reply(r, 0, want);
	cr_assert_eq(stats().growing_from, 0);
	for (unsigned i = 0; i < n; i++)
		tu_assert_get(tu_kv, k, tu_fmt(k, sizeof(k), "big", i), big,
			      900);
	assert_keys_intact();
	assert_clean();
}
