/*
 * test_exec.c - shmkv_exec(): reply types, and dispatch by name, case
 * and arity with the exact error texts of Redis 7.0. The options of SET,
 * GETEX and EXPIRE, integers and store errors are in test_exec_options.c
 * (the same suite).
 *
 * Every expected error text was read from redis-server 7.0.15 given the
 * same arguments; tests/programs/diff_redis.c checks the same against a live server
 * on random streams. The store behind each command is tested in the
 * command's own test file: here the point is the parsing and the mapping.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers/exec_run.h"
#include "helpers/testutil.h"

TestSuite(exec, .init = tu_setup, .fini = tu_teardown);

/*
 * Reply types and values.
 */

Test(exec, set_replies_ok_and_get_replies_the_value_as_bulk)
{
	assert_status(RUN("SET", "k", "hello"), "OK");
	tu_assert_rc(ex_rc, 0);
	assert_bulk(RUN("GET", "k"), "hello");
	cr_assert_eq(ex_reply.str[ex_reply.len], '\0',
		     "a bulk reply is NUL-terminated for convenience");
	assert_nil(RUN("GET", "missing"));
}

Test(exec, replies_with_a_binary_value_byte_for_byte)
{
	static const char val[] = "a\0b\r\n\xff\0";

	assert_status(RUNB(LIT("SET"), LIT("k\0z"), LIT(val)), "OK");
	assert_str(RUNB(LIT("GET"), LIT("k\0z")), SHMKV_REPLY_BULK, val,
		   sizeof(val) - 1);
	assert_nil(RUNB(LIT("GET"), LIT("k")));
}

Test(exec, replies_with_an_empty_bulk_for_an_empty_value)
{
	assert_status(RUN("SET", "", ""), "OK");
	assert_str(RUN("GET", ""), SHMKV_REPLY_BULK, "", 0);
	cr_assert_not_null(ex_reply.str, "an empty bulk still has a string");
}

Test(exec, ping_replies_pong_or_echoes_its_argument)
{
	assert_status(RUN("PING"), "PONG");
	assert_bulk(RUN("ping", "hello"), "hello");
	assert_error(RUN("PING", "a", "b"),
		     "ERR wrong number of arguments for 'ping' command");
}

Test(exec, getset_and_getdel_reply_the_old_value_or_nil)
{
	assert_nil(RUN("GETSET", "k", "one"));
	assert_bulk(RUN("GETSET", "k", "two"), "one");
	assert_bulk(RUN("GETDEL", "k"), "two");
	assert_nil(RUN("GETDEL", "k"));
	assert_nil(RUN("GET", "k"));
}

Test(exec, setnx_and_delifeq_reply_integers)
{
	assert_int(RUN("SETNX", "k", "owner-1"), 1);
	assert_int(RUN("SETNX", "k", "owner-2"), 0);
	assert_int(RUN("DELIFEQ", "k", "owner-2"), 0);
	assert_bulk(RUN("GET", "k"), "owner-1");
	assert_int(RUN("DELIFEQ", "k", "owner-1"), 1);
	assert_int(RUN("DELIFEQ", "k", "owner-1"), 0);
	assert_nil(RUN("GET", "k"));
}

Test(exec, exists_counts_a_key_named_twice_twice)
{
	assert_status(RUN("SET", "a", "1"), "OK");
	assert_status(RUN("SET", "b", "2"), "OK");
	assert_int(RUN("EXISTS", "a", "a", "missing", "b", "a"), 4);
	assert_int(RUN("EXISTS", "missing"), 0);
}

Test(exec, del_deletes_several_keys_and_counts_each_once)
{
	assert_status(RUN("SET", "a", "1"), "OK");
	assert_status(RUN("SET", "b", "2"), "OK");
	assert_int(RUN("DEL", "a", "missing", "b", "a"), 2);
	assert_int(RUN("EXISTS", "a", "b"), 0);
	assert_int(RUN("DEL", "a"), 0);
}

Test(exec, ttl_and_pttl_reply_minus_two_minus_one_or_the_time_left)
{
	assert_int(RUN("TTL", "k"), -2);
	assert_int(RUN("PTTL", "k"), -2);
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_int(RUN("TTL", "k"), -1);
	assert_int(RUN("PERSIST", "k"), 0);
	assert_status(RUN("SET", "k", "v", "EX", "100"), "OK");
	assert_ttl(RUN("TTL", "k"), 100);
	RUN("PTTL", "k");
	assert_type(&ex_reply, SHMKV_REPLY_INTEGER);
	cr_assert(ex_reply.integer > 90000 && ex_reply.integer <= 100000,
		  "PTTL %lld after EX 100", ex_reply.integer);
	assert_int(RUN("PERSIST", "k"), 1);
	assert_int(RUN("PTTL", "k"), -1);
}

Test(exec, incr_family_replies_the_new_value)
{
	assert_int(RUN("INCR", "n"), 1);
	assert_int(RUN("INCRBY", "n", "41"), 42);
	assert_int(RUN("DECR", "n"), 41);
	assert_int(RUN("DECRBY", "n", "-9"), 50);
	assert_bulk(RUN("GET", "n"), "50");
}

/*
 * Dispatch: names, case, arity.
 */

Test(exec, command_names_and_options_ignore_case)
{
	assert_status(RUN("sEt", "k", "v", "nX", "Ex", "100"), "OK");
	assert_ttl(RUN("tTl", "k"), 100);
	assert_int(RUN("expire", "k", "200", "gT"), 1);
	assert_bulk(RUN("GeTeX", "k", "pErSiSt"), "v");
	assert_int(RUN("ttl", "k"), -1);
}

Test(exec, unknown_command_error_quotes_the_name_and_its_first_args)
{
	assert_error(RUN("foo", "a", "b"), "ERR unknown command 'foo', with "
					   "args beginning with: 'a' 'b' ");
	assert_error(RUN("FOO"),
		     "ERR unknown command 'FOO', with args beginning with: ");
	/* SETEX is a Redis command, but not one of ours. */
	assert_error(RUN("setex", "k", "10", "v"),
		     "ERR unknown command 'setex', with args beginning with: "
		     "'k' '10' 'v' ");
}

Test(exec, unknown_command_error_cuts_the_args_at_128_bytes)
{
	char big[300], want[400];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* The quoted args stop once they reach 128 bytes: 'a' takes 4,
   * then 124 x's and the closing quote and space. */
	snprintf(want, sizeof(want),
		 "ERR unknown command 'foo', with args beginning with: "
		 "'a' '%.124s' ",
		 big);
	assert_error(RUN("foo", "a", big, "never"), want);
}

Test(exec, unknown_command_error_adds_args_while_the_list_is_short)
{
	char a[29], b[29], want[256];
	int i;

	/* Four args of 28 bytes take 4 * 31 = 124 bytes, still under 128:
   * the fifth is added, cut to the 4 bytes left. */
	memset(a, 'a', 28);
	a[28] = '\0';
	memset(b, 'e', 28);
	b[28] = '\0';
	i = snprintf(want, sizeof(want),
		     "ERR unknown command 'foo', with args beginning with: ");
	for (int k = 0; k < 4; k++)
		i += snprintf(want + i, sizeof(want) - (size_t)i, "'%s' ", a);
	snprintf(want + i, sizeof(want) - (size_t)i, "'eeee' ");
	assert_error(RUN("foo", a, a, a, a, b, "f"), want);
}

Test(exec, unknown_command_error_turns_newlines_into_spaces)
{
	assert_error(RUN("foo", "a\r\nb"),
		     "ERR unknown command 'foo', with args beginning with: "
		     "'a  b' ");
}

Test(exec, a_command_name_with_a_nul_is_unknown)
{
	assert_error(RUNB(LIT("GET\0"), LIT("k")),
		     "ERR unknown command 'GET', with args beginning with: "
		     "'k' ");
}

Test(exec, wrong_arity_names_the_command_in_lowercase)
{
	assert_error(RUN("GET"),
		     "ERR wrong number of arguments for 'get' command");
	assert_error(RUN("GET", "a", "b"),
		     "ERR wrong number of arguments for 'get' command");
	assert_error(RUN("SET", "k"),
		     "ERR wrong number of arguments for 'set' command");
	assert_error(RUN("GETEX"),
		     "ERR wrong number of arguments for 'getex' command");
	assert_error(RUN("DEL"),
		     "ERR wrong number of arguments for 'del' command");
	assert_error(RUN("PEXPIREAT", "k"),
		     "ERR wrong number of arguments for 'pexpireat' command");
	assert_error(RUN("TTL", "a", "b"),
		     "ERR wrong number of arguments for 'ttl' command");
	assert_error(RUN("DELIFEQ", "k"),
		     "ERR wrong number of arguments for 'delifeq' command");
	assert_error(RUN("incrby", "k"),
		     "ERR wrong number of arguments for 'incrby' command");
}

Test(exec, refuses_no_arguments_or_a_null_pointer_with_a_length)
{
	const char *argv[] = { "GET", NULL };
	size_t lens[] = { 3, 1 };
	struct shmkv_reply r;

	tu_assert_rc(shmkv_exec(tu_kv, 0, argv, lens, &r), -EINVAL);
	cr_assert_eq(r.type, SHMKV_REPLY_ERROR);
	shmkv_reply_free(&r);
	tu_assert_rc(shmkv_exec(tu_kv, 2, argv, lens, &r), -EINVAL);
	shmkv_reply_free(&r);
	tu_assert_rc(shmkv_exec(NULL, 1, argv, lens, &r), -EINVAL);
	shmkv_reply_free(&r);
	tu_assert_rc(shmkv_exec(tu_kv, 1, argv, lens, NULL), -EINVAL);
}
