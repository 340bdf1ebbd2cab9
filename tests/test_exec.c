/*
 * test_exec.c - shmkv_exec(): argument parsing, reply types and the exact
 * error texts of Redis 7.0.
 *
 * Every expected error text was read from redis-server 7.0.15 given the
 * same arguments; tests/diff_redis.c checks the same against a live server
 * on random streams. The store behind each command is tested in the
 * command's own test file: here the point is the parsing and the mapping.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers/testutil.h"

TestSuite(exec, .init = tu_setup, .fini = tu_teardown);

#define EXEC_ARGS_MAX 16

/* The last reply, freed by the next command (or when the test's process
 * ends: Criterion runs each test in its own). */
static struct shmkv_reply ex_reply;
static int ex_rc;

/* Runs a command given as (pointer, length) pairs, ended by NULL. */
static const struct shmkv_reply *ex_runv(shmkv_t *kv, va_list ap)
{
	const char *argv[EXEC_ARGS_MAX];
	size_t lens[EXEC_ARGS_MAX];
	int argc = 0;
	const char *p;

	while ((p = va_arg(ap, const char *)) != NULL) {
		cr_assert_lt(argc, EXEC_ARGS_MAX, "too many arguments");
		argv[argc] = p;
		lens[argc++] = va_arg(ap, size_t);
	}
	shmkv_reply_free(&ex_reply);
	ex_rc = shmkv_exec(kv, argc, argv, lens, &ex_reply);
	return &ex_reply;
}

static const struct shmkv_reply *ex_runb(shmkv_t *kv, ...)
{
	const struct shmkv_reply *r;
	va_list ap;

	va_start(ap, kv);
	r = ex_runv(kv, ap);
	va_end(ap);
	return r;
}

/* Runs a command given as C strings, ended by NULL. */
static const struct shmkv_reply *ex_run(shmkv_t *kv, ...)
{
	const char *argv[EXEC_ARGS_MAX];
	size_t lens[EXEC_ARGS_MAX];
	int argc = 0;
	const char *p;
	va_list ap;

	va_start(ap, kv);
	while ((p = va_arg(ap, const char *)) != NULL) {
		cr_assert_lt(argc, EXEC_ARGS_MAX, "too many arguments");
		argv[argc] = p;
		lens[argc++] = strlen(p);
	}
	va_end(ap);
	shmkv_reply_free(&ex_reply);
	ex_rc = shmkv_exec(kv, argc, argv, lens, &ex_reply);
	return &ex_reply;
}

/* The arguments are C strings; the sentinel is added here. */
#define RUN(...) ex_run(tu_kv, __VA_ARGS__, (const char *)NULL)
/* The arguments are LIT() pairs. */
#define RUNB(...) ex_runb(tu_kv, __VA_ARGS__, (const char *)NULL)

static const char *type_name(enum shmkv_reply_type t)
{
	static const char *const names[] = { "?",	"status", "error",
					     "integer", "nil",	  "bulk" };

	return names[(unsigned)t <= 5 ? t : 0];
}

#define assert_type(r, t)                                                      \
	cr_assert_eq((r)->type, (t), "reply is %s \"%.*s\", expected %s",      \
		     type_name((r)->type), (int)(r)->len,                      \
		     (r)->str ? (r)->str : "", type_name(t))

/* The reply is exactly @n bytes at @p, of type @t. */
#define assert_str(r, t, p, n)                                                 \
	do {                                                                   \
		const struct shmkv_reply *r_ = (r);                            \
		size_t n_ = (n);                                               \
		assert_type(r_, t);                                            \
		cr_assert_eq(r_->len, n_,                                      \
			     "reply \"%.*s\" has %zu bytes, "                  \
			     "expected %zu",                                   \
			     (int)r_->len, r_->str, r_->len, n_);              \
		cr_assert(n_ == 0 || memcmp(r_->str, (p), n_) == 0,            \
			  "reply is \"%.*s\", expected \"%.*s\"",              \
			  (int)r_->len, r_->str, (int)n_, (const char *)(p));  \
	} while (0)

/* A Redis error is a reply, and shmkv_exec still returns 0. */
#define assert_error(r, text)                                                  \
	do {                                                                   \
		assert_str(r, SHMKV_REPLY_ERROR, text, strlen(text));          \
		tu_assert_rc(ex_rc, 0);                                        \
	} while (0)
#define assert_status(r, text)                                                 \
	assert_str(r, SHMKV_REPLY_STATUS, text, strlen(text))
#define assert_bulk(r, text) assert_str(r, SHMKV_REPLY_BULK, text, strlen(text))
#define assert_int(r, v)                                                       \
	do {                                                                   \
		const struct shmkv_reply *ri_ = (r);                           \
		assert_type(ri_, SHMKV_REPLY_INTEGER);                         \
		cr_assert_eq(ri_->integer, (long long)(v),                     \
			     "integer %lld, expected %lld", ri_->integer,      \
			     (long long)(v));                                  \
	} while (0)
#define assert_nil(r) assert_type(r, SHMKV_REPLY_NIL)

/* A TTL of @secs just set: TTL rounds to the nearest second, and a busy
 * machine may let half a second or so pass before the TTL is read. */
#define assert_ttl(r, secs)                                                    \
	do {                                                                   \
		const struct shmkv_reply *rt_ = (r);                           \
		assert_type(rt_, SHMKV_REPLY_INTEGER);                         \
		cr_assert(rt_->integer <= (secs) && rt_->integer >= (secs)-5,  \
			  "TTL %lld, expected %d or a little less",            \
			  rt_->integer, (secs));                               \
	} while (0)

static const char not_int[] = "ERR value is not an integer or out of range";
static const char syntax[] = "ERR syntax error";

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

Test(exec, a_key_longer_than_key_max_gets_the_library_error)
{
	char key[TU_KEY_MAX + 2];
	char want[256];

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	snprintf(want, sizeof(want), "ERR %s", shmkv_strerror(-ENAMETOOLONG));
	assert_str(RUN("SET", key, "v"), SHMKV_REPLY_ERROR, want, strlen(want));
	tu_assert_rc(ex_rc, -ENAMETOOLONG);
	assert_status(RUN("SET", "a", "1"), "OK");
	/* DEL checks every key first: "a" survives a bad key after it. */
	RUN("DEL", "a", key);
	tu_assert_rc(ex_rc, -ENAMETOOLONG);
	assert_bulk(RUN("GET", "a"), "1");
}

Test(exec, a_value_longer_than_value_max_gets_the_library_error)
{
	char *val = tu_fill(TU_VALUE_MAX + 1, 'v');
	char want[256];

	snprintf(want, sizeof(want), "ERR %s", shmkv_strerror(-E2BIG));
	assert_str(RUNB(LIT("SET"), LIT("k"), val, (size_t)TU_VALUE_MAX + 1),
		   SHMKV_REPLY_ERROR, want, strlen(want));
	tu_assert_rc(ex_rc, -E2BIG);
	assert_status(RUNB(LIT("SET"), LIT("k"), val, (size_t)TU_VALUE_MAX),
		      "OK");
	RUN("GET", "k");
	assert_type(&ex_reply, SHMKV_REPLY_BULK);
	cr_assert_eq(ex_reply.len, TU_VALUE_MAX);
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
