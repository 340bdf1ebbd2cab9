/*
 * test_shmctl_data.c - shmctl's data commands (replies printed as
 * redis-cli does: quoted on a terminal or with --no-raw, raw through a
 * pipe or with --raw; exit codes by their meaning, binary values, scripts
 * on stdin), the default store, and keys, scan and dbsize.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(shmctl_data, .init = tu_setup, .fini = ctl_teardown);
TestSuite(shmctl_keys, .init = tu_setup, .fini = ctl_teardown);

/*
 * Data commands.
 */

/* One command line and what it must print and exit with. */
struct step {
	const char *argv[6];
	const char *out;
	int code;
};

/* Runs each step on the suite's store with the global option @mode
 * ("--no-raw": redis-cli's quoted form, "--raw", or NULL: the default
 * for stdout, a memfd here: raw). */
static void run_steps_as(const char *mode, const struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *argv[10] = { "shmctl" };
		int at = 1;

		if (mode != NULL)
			argv[at++] = (char *)mode;
		argv[at++] = tu_name;
		for (int j = 0; s[i].argv[j]; j++)
			argv[at++] = (char *)s[i].argv[j];
		struct run r = ctl_run_v(NULL, 0, (uid_t)-1, argv);

		cr_assert_eq(r.code, s[i].code,
			     "%s: exit %d, expected %d\n%s%s", s[i].argv[0],
			     r.code, s[i].code, r.out, r.err);
		cr_assert_str_eq(r.out, s[i].out, "step %zu (%s)", i,
				 s[i].argv[0]);
	}
}

/* The quoted form, as redis-cli prints replies on a terminal. */
static void run_steps(const struct step *s, size_t n)
{
	run_steps_as("--no-raw", s, n);
}

Test(shmctl_data, prints_replies_as_redis_cli_and_exits_by_their_meaning)
{
	static const struct step steps[] = {
		{ { "get", "k" }, "(nil)\n", 1 },
		{ { "set", "k", "hello" }, "OK\n", 0 },
		{ { "GET", "k" }, "\"hello\"\n", 0 },
		{ { "set", "k", "x", "NX" }, "(nil)\n", 1 },
		{ { "setnx", "k", "y" }, "(integer) 0\n", 1 },
		{ { "setnx", "n", "10" }, "(integer) 1\n", 0 },
		{ { "exists", "k", "nope" }, "(integer) 1\n", 0 },
		{ { "exists", "nope" }, "(integer) 0\n", 1 },
		{ { "ttl", "k" }, "(integer) -1\n", 0 },
		{ { "pttl", "nope" }, "(integer) -2\n", 1 },
		{ { "expire", "k", "100" }, "(integer) 1\n", 0 },
		{ { "ttl", "k" }, "(integer) 100\n", 0 },
		{ { "persist", "k" }, "(integer) 1\n", 0 },
		{ { "persist", "k" }, "(integer) 0\n", 1 },
		{ { "expire", "nope", "5" }, "(integer) 0\n", 1 },
		{ { "incr", "n" }, "(integer) 11\n", 0 },
		{ { "getset", "n", "0" }, "\"11\"\n", 0 },
		{ { "incrby", "n", "0" }, "(integer) 0\n", 0 },
		{ { "delifeq", "k", "other" }, "(integer) 0\n", 1 },
		{ { "delifeq", "k", "hello" }, "(integer) 1\n", 0 },
		{ { "del", "k" }, "(integer) 0\n", 1 },
		{ { "ping" }, "PONG\n", 0 },
	};

	run_steps(steps, sizeof(steps) / sizeof(steps[0]));
}

Test(shmctl_data, error_replies_print_as_errors_and_exit_5)
{
	static const struct step steps[] = {
		{ { "set", "s", "text" }, "OK\n", 0 },
		{ { "incr", "s" },
		  "(error) ERR value is not an integer or out of range\n",
		  5 },
		{ { "set", "k" },
		  "(error) ERR wrong number of arguments for 'set' command\n",
		  5 },
		{ { "set", "k", "v", "NX", "XX" },
		  "(error) ERR syntax error\n",
		  5 },
		{ { "nosuch", "a" },
		  "(error) ERR unknown command 'nosuch', with args beginning "
		  "with: 'a' \n",
		  5 },
	};

	run_steps(steps, sizeof(steps) / sizeof(steps[0]));
}

Test(shmctl_data, escapes_binary_values_and_prints_them_raw_with_raw)
{
	static const char val[] = "a\0b\n\xff\"\\";
	struct run r;

	ctl_set_kv(LIT("bin"), val, sizeof(val) - 1, 0);
	r = RUN("--no-raw", tu_name, "get", "bin");
	assert_reply(r, 0, "\"a\\x00b\\n\\xff\\\"\\\\\"\n");
	/* --raw, and no option at all on a pipe: the bytes as they are. */
	for (int i = 0; i < 2; i++) {
		r = i ? RUN(tu_name, "get", "bin")
		      : RUN("--raw", tu_name, "get", "bin");
		assert_code(r, 0);
		cr_assert_eq(r.out_len, sizeof(val));
		cr_assert(memcmp(r.out, val, sizeof(val) - 1) == 0);
		cr_assert_eq(r.out[sizeof(val) - 1], '\n');
	}
}

/* redis-cli's rule (redis-cli.c: isatty(stdout), FAKETTY, then --raw and
 * --no-raw in order): raw replies when stdout is not a terminal, quoted
 * ones when it is, the options overriding, the last one winning. */
Test(shmctl_data, prints_raw_replies_off_a_terminal_as_redis_cli)
{
	static const struct step raw[] = {
		{ { "get", "k" }, "\n", 1 },
		{ { "set", "k", "a b\n" }, "OK\n", 0 },
		{ { "get", "k" }, "a b\n\n", 0 },
		{ { "incr", "n" }, "1\n", 0 },
		{ { "exists", "nope" }, "0\n", 1 },
		{ { "incr", "k" },
		  "ERR value is not an integer or out of range\n",
		  5 },
		{ { "ping" }, "PONG\n", 0 },
	};
	struct run r;

	run_steps_as(NULL, raw, sizeof(raw) / sizeof(raw[0]));
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("n")), 1);
	run_steps_as("--raw", raw, sizeof(raw) / sizeof(raw[0]));
	r = RUN("--no-raw", "--raw", tu_name, "get", "n");
	assert_reply(r, 0, "1\n");
	r = RUN("--raw", "--no-raw", tu_name, "get", "n");
	assert_reply(r, 0, "\"1\"\n");
	/* FAKETTY stands for a terminal, as in redis-cli; --raw still
	 * wins. */
	setenv("FAKETTY", "1", 1);
	r = RUN(tu_name, "get", "n");
	assert_reply(r, 0, "\"1\"\n");
	r = RUN(tu_name, "get", "nope");
	assert_reply(r, 1, "(nil)\n");
	r = RUN("--raw", tu_name, "get", "n");
	assert_reply(r, 0, "1\n");
	unsetenv("FAKETTY");
}

Test(shmctl_data, reports_a_store_failure_as_a_store_error)
{
	char *big = tu_fill(TU_VALUE_MAX + 2, 'v'), want[TU_NAME_CAP + 64];
	struct run r;

	big[TU_VALUE_MAX + 1] = '\0'; /* one byte over value_max */
	r = RUN(tu_name, "set", "k", big);
	assert_code(r, 3);
	snprintf(want, sizeof(want),
		 "shmctl: %s: value is %d bytes, this store's value_max is "
		 "%d\n",
		 tu_name, TU_VALUE_MAX + 1, TU_VALUE_MAX);
	cr_assert_str_eq(r.err, want);
}

Test(shmctl_data, reads_with_read_permission_only)
{
	struct shmkv_config cfg = tu_config(64, 16, 64, 0);
	char want[TU_NAME_CAP + 64];
	struct run r;

	if (!ctl_is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	cfg.mode = 0644;
	ctl_recreate(&cfg);
	SET("k", "v");
	r = RUN_AS(NOBODY, tu_name, "get", "k");
	assert_reply(r, 0, "v\n");
	r = RUN_AS(NOBODY, tu_name, "set", "k", "w");
	assert_code(r, 3);
	snprintf(want, sizeof(want), "shmctl: %s: permission denied\n",
		 tu_name);
	cr_assert_str_eq(r.err, want);
}

Test(shmctl_data, runs_a_script_from_stdin_with_redis_cli_quoting)
{
	struct run r = RUN_STDIN("set \"a b\" \"x\\x00y\\n\"\n"
				 "get 'a b'\n"
				 "set k \"unterminated\n"
				 "\n"
				 "incr \"a b\"\n"
				 "quit\n"
				 "get k\n",
				 "--no-raw", tu_name);

	assert_reply(r, 0,
		     "OK\n\"x\\x00y\\n\"\nInvalid argument(s)\n"
		     "(error) ERR value is not an integer or out of range\n");
	tu_assert_get(tu_kv, LIT("a b"), LIT("x\0y\n"));
}

/*
 * keys and scan.
 */

Test(shmctl_keys, lists_every_key_or_those_matching_a_pattern)
{
	struct run r;

	SET("user:1", "a");
	SET("user:2", "b");
	SET("order:1", "c");
	r = RUN("--no-raw", "keys", tu_name);
	assert_code(r, 0);
	cr_assert_eq(ctl_count_lines(r.out), 3, "%s", r.out);
	assert_has(r.out, ") \"order:1\"\n");
	r = RUN("--no-raw", "keys", tu_name, "user:*");
	assert_code(r, 0);
	cr_assert_eq(ctl_count_lines(r.out), 2, "%s", r.out);
	assert_lacks(r.out, "order");
	r = RUN("--no-raw", "keys", tu_name, "nomatch*");
	assert_reply(r, 0, "(empty array)\n");
	/* Through a pipe: one raw key a line, nothing for no key. */
	r = RUN("keys", tu_name, "user:*");
	cr_assert(strcmp(r.out, "user:1\nuser:2\n") == 0 ||
			  strcmp(r.out, "user:2\nuser:1\n") == 0,
		  "%s", r.out);
	r = RUN("keys", tu_name, "nomatch*");
	assert_reply(r, 0, "");
}

Test(shmctl_keys, matches_binary_keys_with_the_redis_glob)
{
	static const char *const cases[][2] = {
		{ "a?b", "1) \"a\\x00b\"\n" },	  { "x\\*y", "1) \"x*y\"\n" },
		{ "[^a-b]1", "1) \"c1\"\n" },	  { "[ab]1", "1) \"b1\"\n" },
		{ "*\\x00*", "(empty array)\n" },
	};

	ctl_set_kv("a\0b", 3, LIT("v"), 0);
	SET("x*y", "1");
	SET("xzy", "1");
	SET("b1", "1");
	SET("c1", "1");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run r = RUN("--no-raw", "keys", tu_name, cases[i][0]);

		assert_reply(r, 0, cases[i][1]);
	}
}

Test(shmctl_keys, json_writes_each_byte_as_one_code_point)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	ctl_set_kv("k\xff\n\"", 4, LIT("v"), 0);
	r = RUN("keys", "--json", tu_name);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"keys\":[\"k\\u00ff\\n\\\"\"],\"count\":1}"
		 "\n",
		 tu_name);
	assert_reply(r, 0, want);
}

Test(shmctl_keys, scan_with_a_cursor_visits_every_key)
{
	unsigned seen[100] = { 0 }, steps = 0;
	char cursor[24] = "0";

	for (unsigned i = 0; i < 100; i++) {
		char k[16];

		ctl_set_kv(k, tu_fmt(k, sizeof(k), "key", i), LIT("v"), 0);
	}
	do {
		struct run r = RUN("--raw", "scan", tu_name, cursor, "--count",
				   "50");
		char *line = strtok(r.out, "\n");

		assert_code(r, 0);
		snprintf(cursor, sizeof(cursor), "%s", line);
		while ((line = strtok(NULL, "\n")) != NULL)
			seen[atoi(line + 3)]++;
		cr_assert_lt(++steps, 100, "scan does not end");
	} while (strcmp(cursor, "0") != 0);
	cr_assert_eq(steps, (TU_SLOTS + 49) / 50);
	for (unsigned i = 0; i < 100; i++)
		cr_assert_geq(seen[i], 1, "key%u never seen", i);
}

Test(shmctl_keys, scan_prints_the_cursor_then_the_keys_as_redis_cli)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	SET("one", "1");
	SET("two", "2");
	r = RUN("--no-raw", "scan", tu_name, "0", "--count", "1024");
	assert_code(r, 0);
	cr_assert(strncmp(r.out, "1) \"0\"\n2) 1) \"", 14) == 0, "%s", r.out);
	assert_has(r.out, "\n   2) \"");
	r = RUN("scan", tu_name, "0", "--count", "1024", "--match", "t*",
		"--json");
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"cursor\":0,\"keys\":[\"two\"]}\n",
		 tu_name);
	assert_reply(r, 0, want);
	r = RUN("--no-raw", "scan", tu_name, "1000", "--match", "nothing");
	assert_reply(r, 0, "1) \"1010\"\n2) (empty array)\n");
	r = RUN("scan", tu_name, "1000", "--match", "nothing");
	assert_reply(r, 0, "1010\n");
}

Test(shmctl_keys, scan_rejects_a_bad_cursor_or_count)
{
	struct run a = RUN("scan", tu_name, "abc");
	struct run b = RUN("scan", tu_name, "--", "-1");
	struct run c = RUN("scan", tu_name, "--count", "0");

	assert_code(a, 2);
	assert_has(a.err, "invalid cursor 'abc'");
	assert_code(b, 2);
	assert_code(c, 2);
	assert_has(c.err, "--count '0'");
}
