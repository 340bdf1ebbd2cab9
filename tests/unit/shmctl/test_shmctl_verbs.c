/*
 * test_shmctl_verbs.c - the store's views and chores in the data form
 * ("shmctl NAME keys") and at its prompt, dbsize, "did you mean" for a
 * mistyped command, and the default store of a command given without a
 * store name ("shmctl get k", as redis-cli).
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(shmctl_verbs, .init = tu_setup, .fini = ctl_teardown);
TestSuite(shmctl_default, .init = tu_setup, .fini = ctl_teardown);

static void three_keys(void)
{
	SET("user:1", "a");
	SET("user:2", "b");
	SET("order:1", "c");
}

Test(shmctl_verbs, the_data_form_runs_the_store_views_as_the_tool_form)
{
	static const char *const forms[][4] = {
		{ "keys", "user:*", NULL },
		{ "dbsize", NULL },
		{ "scan", "0", "--count", "1024" },
		{ "info", "--json", NULL },
		{ "locks", NULL },
		{ "check", NULL },
	};
	char want[TU_NAME_CAP + 64];
	struct run r;

	three_keys();
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		const char *const *f = forms[i];
		struct run tool = RUN(f[0], tu_name, f[1], f[2], f[3]);
		struct run data = RUN(tu_name + 1, f[0], f[1], f[2], f[3]);

		assert_code(tool, 0);
		assert_code(data, 0);
		/* info's counts of processes may differ between two runs:
		 * compare what is not about them. */
		if (strcmp(f[0], "info") == 0)
			assert_has(data.out, "\"keys\":{\"live\":3,");
		else
			cr_assert_str_eq(data.out, tool.out, "%s", f[0]);
	}
	r = RUN(tu_name, "DBSIZE");
	assert_reply(r, 0, "3\n");
	r = RUN("--no-raw", tu_name, "dbsize");
	assert_reply(r, 0, "(integer) 3\n");
	r = RUN(tu_name, "dbsize", "--json");
	snprintf(want, sizeof(want), "{\"name\":\"%s\",\"keys\":3}\n", tu_name);
	assert_reply(r, 0, want);
	r = RUN(tu_name, "info");
	assert_code(r, 0);
	assert_has(r.out, "keys      3 live");
	/* A verb's own usage errors are its own. */
	r = RUN(tu_name, "keys", "a", "b");
	assert_code(r, 2);
	assert_has(r.err, "shmctl keys: too many operands");
}

Test(shmctl_verbs, the_prompt_runs_the_store_views_and_their_help)
{
	struct run r;

	three_keys();
	r = RUN_STDIN("dbsize\nkeys order:*\nKEYS user:1\nhelp dbsize\n",
		      tu_name);
	assert_code(r, 0);
	cr_assert(strncmp(r.out, "3\norder:1\nuser:1\nUsage: shmctl dbsize",
			  36) == 0,
		  "%s", r.out);
	cr_assert_str_empty(r.err, "%s", r.err);
	r = RUN_STDIN("info\n", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "keys      3 live");
}

Test(shmctl_verbs, dbsize_counts_live_keys_not_expired_ones)
{
	struct run r;

	three_keys();
	ctl_set_kv(LIT("soon"), LIT("x"), 1);
	tu_sleep_ms(20);
	r = RUN("dbsize", tu_name);
	assert_reply(r, 0, "3\n");
	r = RUN("dbsize");
	assert_code(r, 2);
	assert_has(r.err, "missing operand");
}

Test(shmctl_verbs, a_mistyped_command_gets_the_closest_names)
{
	char want[TU_NAME_CAP + 128];
	struct run r;

	three_keys();
	/* The library's error reply stays Redis's; the hint is on stderr. */
	r = RUN(tu_name, "kyes");
	assert_code(r, 5);
	assert_has(r.out, "ERR unknown command 'kyes'");
	cr_assert_str_eq(r.err, "shmctl: did you mean 'keys'?\n");
	r = RUN(tu_name, "gett", "k");
	assert_code(r, 5);
	cr_assert_str_eq(r.err, "shmctl: did you mean 'get'?\n");
	r = RUN(tu_name, "dncr", "k");
	assert_code(r, 5);
	cr_assert_str_eq(r.err, "shmctl: did you mean 'incr' or 'decr'?\n");
	/* Nothing close: no hint. */
	r = RUN(tu_name, "frobnicate");
	assert_code(r, 5);
	cr_assert_str_empty(r.err, "%s", r.err);
	/* A tool command mistyped reads as a store that is not there. */
	r = RUN("inof", tu_name);
	assert_code(r, 3);
	assert_has(r.err, "shmctl: /inof: no such store (and 'inof' is not a "
			  "shmctl command: did you mean 'info'?)");
	r = RUN("help", "dbsiez");
	assert_code(r, 2);
	assert_has(r.err, "no such command: 'dbsiez'; did you mean "
			  "'dbsize'?");
	r = RUN_STDIN("kyes\nhelp dbsiez\n", tu_name);
	assert_code(r, 0);
	assert_has(r.err, "did you mean 'keys'?");
	assert_has(r.out, "no such command: 'dbsiez'; did you mean "
			  "'dbsize'?\n");
	snprintf(want, sizeof(want), "shmctl: %s: no such store", tu_name);
	tu_assert_rc(shmkv_unlink(tu_name), 0);
	r = RUN(tu_name, "kyes");
	assert_code(r, 3);
	assert_has(r.err, want);
}

/*
 * The default store.
 */

Test(shmctl_default, a_command_without_a_store_goes_to_shmkv_store)
{
	struct run r;

	setenv("SHMKV_STORE", tu_name + 1, 1); /* without its slash */
	r = RUN("set", "k", "v");
	assert_reply(r, 0, "OK\n");
	r = RUN("GET", "k");
	assert_reply(r, 0, "v\n");
	setenv("SHMKV_STORE", tu_name, 1);
	r = RUN("--no-raw", "incr", "n");
	assert_reply(r, 0, "(integer) 1\n");
	tu_assert_get_str(tu_kv, "k", "v");
	/* The named forms are untouched by it. */
	r = RUN(tu_name, "get", "n");
	assert_reply(r, 0, "1\n");
	r = RUN("keys", tu_name, "k");
	assert_reply(r, 0, "k\n");
	unsetenv("SHMKV_STORE");
}

Test(shmctl_default, a_missing_default_store_is_named_with_the_cure)
{
	char name[TU_NAME_CAP + 8];
	struct run r;

	snprintf(name, sizeof(name), "%s-none", tu_name);
	setenv("SHMKV_STORE", name, 1);
	r = RUN("get", "k");
	assert_code(r, 3);
	assert_has(r.err, name);
	assert_has(r.err, "no such store (the default store, for commands "
			  "given without a store name: set SHMKV_STORE");
	cr_assert(!ctl_shm_exists(name), "the get created it");
	unsetenv("SHMKV_STORE");
}

/* A store named like a data command: its slash makes it a store. */
Test(shmctl_default, a_store_named_like_a_command_is_reached_by_its_slash)
{
	struct shmkv_config cfg = tu_config(64, 16, 64, 0);
	shmkv_t *kv;
	struct run r;

	shmkv_unlink("/getdel"); /* a run of ours killed before its end */
	tu_assert_rc(shmkv_create("/getdel", &cfg, &kv), 0);
	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("mine"), 0, 0, NULL), 1);
	setenv("SHMKV_STORE", tu_name, 1);
	SET("k", "default");
	r = RUN("/getdel", "get", "k");
	assert_reply(r, 0, "mine\n");
	/* Without it, the first word is the command, on the default store. */
	r = RUN("getdel", "k");
	assert_reply(r, 0, "default\n");
	shmkv_close(kv);
	tu_assert_rc(shmkv_unlink("/getdel"), 0);
	unsetenv("SHMKV_STORE");
}
