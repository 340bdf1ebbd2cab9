/*
 * test_exec_options.c - shmkv_exec(): the options of SET, GETEX and the
 * EXPIRE family, integer arguments, and store errors Redis has no reply
 * for, with the exact error texts of Redis 7.0. Part of the exec suite
 * (declared in test_exec.c, whose comment says where the texts come from).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers/exec_run.h"
#include "helpers/testutil.h"

static const char not_int[] = "ERR value is not an integer or out of range";
static const char syntax[] = "ERR syntax error";

/*
 * SET options.
 */

Test(exec, set_with_nx_and_xx_is_a_syntax_error)
{
	assert_error(RUN("SET", "k", "v", "NX", "XX"), syntax);
	assert_error(RUN("SET", "k", "v", "xx", "nx"), syntax);
	assert_nil(RUN("GET", "k"));
}

Test(exec, set_with_two_kinds_of_expiry_is_a_syntax_error)
{
	assert_error(RUN("SET", "k", "v", "EX", "10", "PX", "10000"), syntax);
	assert_error(RUN("SET", "k", "v", "EXAT", "1", "PXAT", "1"), syntax);
	assert_error(RUN("SET", "k", "v", "KEEPTTL", "EX", "10"), syntax);
	assert_error(RUN("SET", "k", "v", "PX", "10", "KEEPTTL"), syntax);
	assert_nil(RUN("GET", "k"));
}

Test(exec, set_accepts_the_same_expiry_twice_and_the_last_wins)
{
	assert_status(RUN("SET", "k", "v", "EX", "10", "EX", "500"), "OK");
	assert_ttl(RUN("TTL", "k"), 500);
}

Test(exec, set_with_an_unknown_or_get_only_option_is_a_syntax_error)
{
	assert_error(RUN("SET", "k", "v", "NXX"), syntax);
	assert_error(RUN("SET", "k", "v", ""), syntax);
	assert_error(RUN("SET", "k", "v", "PERSIST"), syntax);
	assert_error(RUN("SET", "k", "v", "EX"), syntax);
	assert_nil(RUN("GET", "k"));
}

Test(exec, set_reads_options_as_c_strings_as_redis_does)
{
	assert_status(RUNB(LIT("SET"), LIT("k"), LIT("v"), LIT("NX\0junk")),
		      "OK");
	assert_nil(RUNB(LIT("SET"), LIT("k"), LIT("w"), LIT("nx\0")));
	assert_bulk(RUN("GET", "k"), "v");
}

Test(exec, set_checks_its_options_before_the_expire_time)
{
	assert_error(RUN("SET", "k", "v", "EX", "abc", "NX", "XX"), syntax);
	assert_error(RUN("SET", "k", "v", "EX", "abc"), not_int);
	assert_error(RUN("SET", "k", "v", "EX", "NX"), not_int);
	assert_error(RUN("SET", "k", "v", "PX", "007"), not_int);
}

Test(exec, set_refuses_zero_negative_and_overflowing_expire_times)
{
	static const char *const bad[][2] = {
		{ "EX", "0" },
		{ "PX", "-1" },
		{ "EXAT", "0" },
		{ "PXAT", "-5" },
		{ "EX", "9223372036854775" }, /* * 1000 + now overflows */
		{ "EX", "9223372036854776" }, /* * 1000 overflows */
		{ "PX", "9223372036854775807" },
		{ "EXAT", "9223372036854776" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_error(RUN("SET", "k", "v", bad[i][0], bad[i][1]),
			     "ERR invalid expire time in 'set' command");
	assert_nil(RUN("GET", "k"));
}

Test(exec, set_checks_the_expire_time_even_when_nx_would_refuse)
{
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_error(RUN("SET", "k", "w", "NX", "EX", "0"),
		     "ERR invalid expire time in 'set' command");
}

Test(exec, set_with_nx_and_get_returns_the_old_value_without_setting)
{
	assert_status(RUN("SET", "k", "old"), "OK");
	assert_bulk(RUN("SET", "k", "new", "NX", "GET"), "old");
	assert_bulk(RUN("GET", "k"), "old");
}

Test(exec, set_with_nx_and_get_on_a_missing_key_sets_it_and_returns_nil)
{
	assert_nil(RUN("SET", "k", "new", "GET", "NX"));
	assert_bulk(RUN("GET", "k"), "new");
}

Test(exec, set_with_xx_replies_nil_when_the_key_is_missing)
{
	assert_nil(RUN("SET", "k", "v", "XX"));
	assert_nil(RUN("GET", "k"));
	assert_nil(RUN("SET", "k", "v", "XX", "GET"));
	assert_nil(RUN("GET", "k"));
}

Test(exec, set_with_keepttl_keeps_the_ttl_and_plain_set_drops_it)
{
	assert_status(RUN("SET", "k", "v", "EX", "100"), "OK");
	assert_status(RUN("SET", "k", "w", "KEEPTTL"), "OK");
	assert_ttl(RUN("TTL", "k"), 100);
	assert_status(RUN("SET", "k", "x"), "OK");
	assert_int(RUN("TTL", "k"), -1);
}

Test(exec, set_with_an_exat_in_the_past_leaves_no_key)
{
	assert_status(RUN("SET", "k", "v", "EXAT", "1"), "OK");
	assert_nil(RUN("GET", "k"));
	assert_int(RUN("EXISTS", "k"), 0);
}

/*
 * GETEX.
 */

Test(exec, getex_refuses_set_only_and_conflicting_options)
{
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_error(RUN("GETEX", "k", "NX"), syntax);
	assert_error(RUN("GETEX", "k", "KEEPTTL"), syntax);
	assert_error(RUN("GETEX", "k", "GET"), syntax);
	assert_error(RUN("GETEX", "k", "PERSIST", "EX", "10"), syntax);
	assert_error(RUN("GETEX", "k", "EX", "10", "PXAT", "10"), syntax);
	assert_error(RUN("GETEX", "k", "PX"), syntax);
}

Test(exec, getex_refuses_a_bad_time_on_an_existing_key)
{
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_error(RUN("GETEX", "k", "EX", "-1"),
		     "ERR invalid expire time in 'getex' command");
	assert_error(RUN("GETEX", "k", "PXAT", "0"),
		     "ERR invalid expire time in 'getex' command");
	assert_error(RUN("GETEX", "k", "EX", "x"), not_int);
	assert_int(RUN("TTL", "k"), -1);
}

Test(exec, getex_replies_nil_for_a_missing_key_whatever_the_time)
{
	assert_nil(RUN("GETEX", "k", "EX", "-1"));
	assert_nil(RUN("GETEX", "k", "PX", "abc"));
	/* Syntax is checked before the key is looked up. */
	assert_error(RUN("GETEX", "k", "NX"), syntax);
}

Test(exec, getex_sets_or_removes_the_ttl_and_returns_the_value)
{
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_bulk(RUN("GETEX", "k", "EX", "300"), "v");
	assert_ttl(RUN("TTL", "k"), 300);
	assert_bulk(RUN("GETEX", "k"), "v");
	assert_ttl(RUN("TTL", "k"), 300);
	assert_bulk(RUN("GETEX", "k", "PERSIST"), "v");
	assert_int(RUN("TTL", "k"), -1);
	assert_bulk(RUN("GETEX", "k", "PXAT", "1"), "v");
	assert_nil(RUN("GET", "k"));
}

/*
 * EXPIRE family.
 */

Test(exec, expire_with_nx_and_another_condition_is_refused)
{
	static const char text[] = "ERR NX and XX, GT or LT options at the "
				   "same time are not compatible";

	assert_status(RUN("SET", "k", "v"), "OK");
	assert_error(RUN("EXPIRE", "k", "10", "NX", "XX"), text);
	assert_error(RUN("PEXPIRE", "k", "10", "gt", "nx"), text);
	assert_error(RUN("EXPIREAT", "k", "10", "NX", "LT"), text);
	assert_int(RUN("TTL", "k"), -1);
}

Test(exec, expire_with_gt_and_lt_is_refused)
{
	assert_error(RUN("EXPIRE", "k", "10", "GT", "LT"),
		     "ERR GT and LT options at the same time are not "
		     "compatible");
	assert_error(RUN("EXPIRE", "k", "10", "XX", "LT", "GT"),
		     "ERR GT and LT options at the same time are not "
		     "compatible");
}

Test(exec, expire_with_an_unknown_option_names_it)
{
	assert_error(RUN("EXPIRE", "k", "10", "foo"),
		     "ERR Unsupported option foo");
	assert_error(RUN("EXPIRE", "k", "10", "NX", "XX", "bar"),
		     "ERR Unsupported option bar");
	/* Trailing CR/LF are trimmed, inner ones become spaces. */
	assert_error(RUN("EXPIRE", "k", "10", "a\r\nb\r\n"),
		     "ERR Unsupported option a  b");
}

Test(exec, expire_checks_options_before_the_time)
{
	assert_error(RUN("EXPIRE", "k", "abc", "foo"),
		     "ERR Unsupported option foo");
	assert_error(RUN("EXPIRE", "k", "abc", "NX", "XX"),
		     "ERR NX and XX, GT or LT options at the same time are "
		     "not compatible");
	assert_error(RUN("EXPIRE", "k", "abc"), not_int);
	assert_error(RUN("PEXPIRE", "k", " 10"), not_int);
}

Test(exec, expire_refuses_times_that_overflow_in_milliseconds)
{
	assert_error(RUN("EXPIRE", "k", "9223372036854775807"),
		     "ERR invalid expire time in 'expire' command");
	assert_error(RUN("EXPIRE", "k", "-9223372036854776"),
		     "ERR invalid expire time in 'expire' command");
	assert_error(RUN("PEXPIRE", "k", "9223372036854775807"),
		     "ERR invalid expire time in 'pexpire' command");
	assert_error(RUN("EXPIREAT", "k", "9223372036854775807"),
		     "ERR invalid expire time in 'expireat' command");
	/* An absolute time in milliseconds cannot overflow. */
	assert_int(RUN("PEXPIREAT", "k", "9223372036854775807"), 0);
}

Test(exec, expire_checks_the_time_before_looking_up_the_key)
{
	assert_error(RUN("EXPIRE", "missing", "9223372036854775807"),
		     "ERR invalid expire time in 'expire' command");
	assert_int(RUN("EXPIRE", "missing", "10"), 0);
}

Test(exec, expire_with_a_negative_time_deletes_the_key)
{
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_int(RUN("EXPIRE", "k", "-5"), 1);
	assert_nil(RUN("GET", "k"));
	assert_int(RUN("EXPIRE", "k", "-5"), 0);
}

Test(exec, expire_conditions_reply_zero_when_they_fail)
{
	assert_status(RUN("SET", "k", "v"), "OK");
	assert_int(RUN("EXPIRE", "k", "100", "XX"), 0);
	assert_int(RUN("EXPIRE", "k", "100", "GT"), 0);
	assert_int(RUN("EXPIRE", "k", "100", "NX"), 1);
	assert_int(RUN("EXPIRE", "k", "200", "NX"), 0);
	assert_int(RUN("EXPIRE", "k", "200", "LT"), 0);
	assert_int(RUN("EXPIRE", "k", "50", "LT"), 1);
	assert_ttl(RUN("TTL", "k"), 50);
}

/*
 * Integers.
 */

Test(exec, incr_of_a_non_integer_value_is_refused)
{
	static const char *const values[] = { "abc", "007", "-0", "+1",
					      " 1",  "1.5", "" };
	size_t i;

	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		assert_status(RUN("SET", "k", values[i]), "OK");
		assert_error(RUN("INCR", "k"), not_int);
		assert_bulk(RUN("GET", "k"), values[i]);
	}
}

Test(exec, incrby_with_a_non_integer_increment_is_refused)
{
	assert_error(RUN("INCRBY", "k", "1.5"), not_int);
	assert_error(RUN("INCRBY", "k", "007"), not_int);
	assert_error(RUN("DECRBY", "k", "9223372036854775808"), not_int);
	assert_error(RUN("INCRBY", "k", ""), not_int);
	assert_nil(RUN("GET", "k"));
}

Test(exec, incr_past_the_int64_limits_is_refused)
{
	static const char text[] = "ERR increment or decrement would overflow";

	assert_status(RUN("SET", "k", "9223372036854775807"), "OK");
	assert_error(RUN("INCR", "k"), text);
	assert_error(RUN("INCRBY", "k", "1"), text);
	assert_status(RUN("SET", "k", "-9223372036854775808"), "OK");
	assert_error(RUN("DECR", "k"), text);
	assert_error(RUN("DECRBY", "k", "1"), text);
	assert_bulk(RUN("GET", "k"), "-9223372036854775808");
}

Test(exec, decrby_int64_min_has_its_own_error)
{
	assert_error(RUN("DECRBY", "k", "-9223372036854775808"),
		     "ERR decrement would overflow");
	assert_nil(RUN("GET", "k"));
}

/*
 * Store errors Redis has no reply for.
 */

/* A length error names the length and the store's limit; the C return
 * stays the errno (shmkv_exec.h). */
static void assert_length_error(int want_rc, const char *what, size_t len,
				unsigned limit)
{
	char want[128];

	snprintf(want, sizeof(want),
		 "ERR %s is %zu bytes, this store's %s_max is %u", what, len,
		 what, limit);
	assert_str(&ex_reply, SHMKV_REPLY_ERROR, want, strlen(want));
	tu_assert_rc(ex_rc, want_rc);
}

Test(exec, a_key_longer_than_key_max_gets_its_length_and_the_limit)
{
	char key[TU_KEY_MAX + 2];

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	RUN("SET", key, "v");
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
	assert_status(RUN("SET", "a", "1"), "OK");
	/* DEL checks every key first: "a" survives a bad key after it, and
	 * the error names the bad one. */
	RUN("DEL", "a", key);
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
	assert_bulk(RUN("GET", "a"), "1");
	RUN("EXISTS", "a", "b", key);
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
	RUN("INCR", key);
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
	RUN("GET", key);
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
	RUN("EXPIRE", key, "10");
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
	/* A key of exactly key_max is fine. */
	key[TU_KEY_MAX] = '\0';
	assert_status(RUN("SET", key, "v"), "OK");
}

Test(exec, a_value_longer_than_value_max_gets_its_length_and_the_limit)
{
	char *val = tu_fill(TU_VALUE_MAX + 1, 'v');
	size_t n = (size_t)TU_VALUE_MAX + 1;

	RUNB(LIT("SET"), LIT("k"), val, n);
	assert_length_error(-E2BIG, "value", n, TU_VALUE_MAX);
	RUNB(LIT("SET"), LIT("k"), val, n, LIT("EX"), LIT("10"));
	assert_length_error(-E2BIG, "value", n, TU_VALUE_MAX);
	RUNB(LIT("SETNX"), LIT("k"), val, n);
	assert_length_error(-E2BIG, "value", n, TU_VALUE_MAX);
	RUNB(LIT("GETSET"), LIT("k"), val, n);
	assert_length_error(-E2BIG, "value", n, TU_VALUE_MAX);
	RUNB(LIT("DELIFEQ"), LIT("k"), val, n);
	assert_length_error(-E2BIG, "value", n, TU_VALUE_MAX);
	assert_nil(RUN("GET", "k"));
	assert_status(RUNB(LIT("SET"), LIT("k"), val, (size_t)TU_VALUE_MAX),
		      "OK");
	RUN("GET", "k");
	assert_type(&ex_reply, SHMKV_REPLY_BULK);
	cr_assert_eq(ex_reply.len, TU_VALUE_MAX);
}

/* The key is checked first: a command with both too long names the key. */
Test(exec, a_too_long_key_and_value_name_the_key)
{
	char key[TU_KEY_MAX + 2];
	char *val = tu_fill(TU_VALUE_MAX + 1, 'v');

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	RUNB(LIT("SET"), key, strlen(key), val, (size_t)TU_VALUE_MAX + 1);
	assert_length_error(-ENAMETOOLONG, "key", TU_KEY_MAX + 1, TU_KEY_MAX);
}

Test(exec, reply_free_leaves_an_empty_reply)
{
	struct shmkv_reply r;
	const char *argv[] = { "PING" };
	size_t lens[] = { 4 };

	tu_assert_rc(shmkv_exec(tu_kv, 1, argv, lens, &r), 0);
	cr_assert_not_null(r.str);
	shmkv_reply_free(&r);
	cr_assert_null(r.str);
	cr_assert_eq(r.len, 0);
	shmkv_reply_free(&r); /* twice is harmless */
	shmkv_reply_free(NULL);
}
