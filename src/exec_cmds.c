/*
 * exec_cmds.c - the commands of shmkv_exec(): SET and GETEX with their
 * options, the other string commands, DEL and EXISTS, the INCR family and
 * the EXPIRE family, TTL, PERSIST and PING.
 *
 * Arguments are parsed as Redis 7.0 parses them (t_string.c
 * parseExtendedStringArgumentsOrReply, getExpireMillisecondsOrReply;
 * expire.c parseExtendedExpireArgumentsOrReply, expireGenericCommand), in
 * the same order, so that a malformed command gets the very error Redis
 * would give. The command table and the helpers are in exec.c.
 */
#include "exec.h"
#include "internal.h"
#include "shmkv.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

/* Options of SET and GETEX: SHMKV_SET_* bits, plus GETEX's PERSIST. */
#define STR_OPT_PERSIST (1u << 8)
#define STR_OPT_EXPIRES                                                        \
	(SHMKV_SET_EX | SHMKV_SET_PX | SHMKV_SET_EXAT | SHMKV_SET_PXAT)

/*
 * SET and GETEX options.
 */

struct str_opt {
	const char *name;
	unsigned flag;
	unsigned excludes;
	int set_only; /* 1: SET only, -1: GETEX only, 0: both */
};

/* An expiry excludes the other kinds but not itself: the last one wins. */
static const struct str_opt str_opts[] = {
	{ "nx", SHMKV_SET_NX, SHMKV_SET_XX, 1 },
	{ "xx", SHMKV_SET_XX, SHMKV_SET_NX, 1 },
	{ "get", SHMKV_SET_GET, 0, 1 },
	{ "keepttl", SHMKV_SET_KEEPTTL, STR_OPT_EXPIRES | STR_OPT_PERSIST, 1 },
	{ "persist", STR_OPT_PERSIST, STR_OPT_EXPIRES | SHMKV_SET_KEEPTTL, -1 },
	{ "ex", SHMKV_SET_EX, 0, 0 },
	{ "px", SHMKV_SET_PX, 0, 0 },
	{ "exat", SHMKV_SET_EXAT, 0, 0 },
	{ "pxat", SHMKV_SET_PXAT, 0, 0 },
};

/* What the options of one SET or GETEX said. */
struct str_args {
	unsigned flags;
	int expire_arg; /* argv index of the expire time, or 0 */
};

static const struct str_opt *str_opt_find(const struct exec_ctx *c, int i)
{
	size_t k;

	for (k = 0; k < sizeof(str_opts) / sizeof(str_opts[0]); k++)
		if (shmkv__arg_is(c, i, str_opts[k].name))
			return &str_opts[k];
	return NULL;
}

/*
 * Parses options from argv[@first] on, for SET (@is_set) or GETEX.
 * Return: 0, or EXEC_ESYNTAX for an unknown option, a conflicting one, or
 * an expiry without its time (the time itself is not looked at here).
 */
static int str_args_parse(const struct exec_ctx *c, int first, int is_set,
			  struct str_args *a)
{
	const struct str_opt *o;
	unsigned excludes;
	int i;

	a->flags = 0;
	a->expire_arg = 0;
	for (i = first; i < c->argc; i++) {
		o = str_opt_find(c, i);
		if (!o || o->set_only == (is_set ? -1 : 1))
			return EXEC_ESYNTAX;
		excludes = o->excludes;
		if (o->flag & STR_OPT_EXPIRES)
			excludes = (STR_OPT_EXPIRES & ~o->flag) |
				   SHMKV_SET_KEEPTTL | STR_OPT_PERSIST;
		if (a->flags & excludes)
			return EXEC_ESYNTAX;
		a->flags |= o->flag;
		if (o->flag & STR_OPT_EXPIRES) {
			if (i == c->argc - 1)
				return EXEC_ESYNTAX;
			a->expire_arg = ++i;
		}
	}
	return 0;
}

/* Would now + @ms pass INT64_MAX (Redis's "invalid expire time")? Checked:
 * INT64_MAX - now itself overflows for a wall clock before 1970. */
static bool overflows_from_now(int64_t ms)
{
	int64_t now = shmkv__unix_ms();

	return now > 0 && ms > INT64_MAX - now;
}

/*
 * Checks the time of an EX/PX/EXAT/PXAT option as Redis's
 * getExpireMillisecondsOrReply: positive, and its deadline in milliseconds
 * must fit in an int64.
 * Return: 0 and the time as given in *@t; -EDOM or EXEC_EEXPIRE.
 */
static int str_expire_check(const struct exec_ctx *c, const struct str_args *a,
			    int64_t *t)
{
	bool secs = (a->flags & (SHMKV_SET_EX | SHMKV_SET_EXAT)) != 0;
	bool rel = (a->flags & (SHMKV_SET_EX | SHMKV_SET_PX)) != 0;
	int64_t ms;

	if (shmkv__arg_int(c, a->expire_arg, t) < 0)
		return -EDOM;
	if (*t <= 0 || (secs && *t > INT64_MAX / 1000))
		return EXEC_EEXPIRE;
	ms = secs ? *t * 1000 : *t;
	if (rel && overflows_from_now(ms))
		return EXEC_EEXPIRE;
	return 0;
}

/*
 * String commands.
 */

int shmkv__cmd_set(struct exec_ctx *c)
{
	struct shmkv_value old = { NULL, 0, 0 };
	struct str_args a;
	int64_t t = 0;
	int rc;

	rc = str_args_parse(c, 3, 1, &a);
	if (rc == 0 && a.expire_arg)
		rc = str_expire_check(c, &a, &t);
	if (rc == 0 && (a.flags & SHMKV_SET_GET))
		rc = shmkv__value_init(c, &old);
	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	rc = shmkv_set(c->kv, ARG(c, 1), ARG(c, 2), a.flags, t,
		       (a.flags & SHMKV_SET_GET) ? &old : NULL);
	if (rc == -EINVAL && a.expire_arg)
		rc = EXEC_EEXPIRE;
	if (a.flags & SHMKV_SET_GET)
		return shmkv__reply_value(c, rc, &old);
	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	return rc ? shmkv__reply_status(c, "OK") : shmkv__reply_nil(c);
}

static enum shmkv_getex_mode getex_mode(unsigned flags)
{
	if (flags & SHMKV_SET_EX)
		return SHMKV_GETEX_EX;
	if (flags & SHMKV_SET_PX)
		return SHMKV_GETEX_PX;
	if (flags & SHMKV_SET_EXAT)
		return SHMKV_GETEX_EXAT;
	if (flags & SHMKV_SET_PXAT)
		return SHMKV_GETEX_PXAT;
	if (flags & STR_OPT_PERSIST)
		return SHMKV_GETEX_PERSIST;
	return SHMKV_GETEX_KEEP;
}

/* Redis looks the key up before it parses GETEX's time: a missing key
 * gets nil whatever the time says. */
static int getex_bad_time(struct exec_ctx *c, int code)
{
	int rc = shmkv_exists(c->kv, ARG(c, 1));

	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	return rc ? shmkv__reply_fail(c, code) : shmkv__reply_nil(c);
}

int shmkv__cmd_getex(struct exec_ctx *c)
{
	struct shmkv_value v;
	struct str_args a;
	int64_t t = 0;
	int rc;

	rc = str_args_parse(c, 2, 0, &a);
	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	if (a.expire_arg) {
		rc = str_expire_check(c, &a, &t);
		if (rc < 0)
			return getex_bad_time(c, rc);
	}
	rc = shmkv__value_init(c, &v);
	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	rc = shmkv_getex(c->kv, ARG(c, 1), getex_mode(a.flags), t, &v);
	if (rc == -EINVAL && a.expire_arg)
		rc = EXEC_EEXPIRE;
	return shmkv__reply_value(c, rc, &v);
}

int shmkv__cmd_setnx(struct exec_ctx *c)
{
	return shmkv__reply_count(c, shmkv_setnx(c->kv, ARG(c, 1), ARG(c, 2)));
}

/* GET and GETDEL: @fn reads the key's value, which is the reply. */
static int read_value(struct exec_ctx *c,
		      int (*fn)(shmkv_t *, const void *, size_t,
				struct shmkv_value *))
{
	struct shmkv_value v;
	int rc = shmkv__value_init(c, &v);

	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	return shmkv__reply_value(c, fn(c->kv, ARG(c, 1), &v), &v);
}

int shmkv__cmd_get(struct exec_ctx *c)
{
	return read_value(c, shmkv_get);
}

int shmkv__cmd_getset(struct exec_ctx *c)
{
	struct shmkv_value v;
	int rc = shmkv__value_init(c, &v);

	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	rc = shmkv_getset(c->kv, ARG(c, 1), ARG(c, 2), &v);
	return shmkv__reply_value(c, rc, &v);
}

int shmkv__cmd_getdel(struct exec_ctx *c)
{
	return read_value(c, shmkv_getdel);
}

int shmkv__cmd_delifeq(struct exec_ctx *c)
{
	return shmkv__reply_count(c,
				  shmkv_delifeq(c->kv, ARG(c, 1), ARG(c, 2)));
}

/*
 * DEL and EXISTS take many keys: all are checked first, so a bad one
 * leaves the store untouched instead of failing halfway through.
 */
static int keys_check(const struct exec_ctx *c)
{
	struct shmkv_config cfg;
	int rc = shmkv_get_config(c->kv, &cfg);
	int i;

	if (rc < 0)
		return rc;
	for (i = 1; i < c->argc; i++)
		if (c->argvlen[i] > cfg.key_max)
			return -ENAMETOOLONG;
	return 0;
}

/* Sums @fn over the keys; a duplicate key counts again, as in Redis. */
static int keys_count(struct exec_ctx *c,
		      int (*fn)(shmkv_t *, const void *, size_t))
{
	long long n = 0;
	int i, rc = keys_check(c);

	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	for (i = 1; i < c->argc; i++) {
		rc = fn(c->kv, ARG(c, i));
		if (rc < 0)
			return shmkv__reply_fail(c, rc);
		n += rc;
	}
	return shmkv__reply_int(c, n);
}

int shmkv__cmd_del(struct exec_ctx *c)
{
	return keys_count(c, shmkv_del);
}

int shmkv__cmd_exists(struct exec_ctx *c)
{
	return keys_count(c, shmkv_exists);
}

/*
 * Integers.
 */

/* @v as the integer reply, or @rc's error if negative. */
static int reply_number(struct exec_ctx *c, int rc, int64_t v)
{
	return rc < 0 ? shmkv__reply_fail(c, rc) : shmkv__reply_int(c, v);
}

int shmkv__cmd_incr(struct exec_ctx *c)
{
	int64_t v = 0;
	int rc = shmkv_incr(c->kv, ARG(c, 1), &v);

	return reply_number(c, rc, v);
}

int shmkv__cmd_decr(struct exec_ctx *c)
{
	int64_t v = 0;
	int rc = shmkv_decr(c->kv, ARG(c, 1), &v);

	return reply_number(c, rc, v);
}

int shmkv__cmd_incrby(struct exec_ctx *c)
{
	int64_t d, v = 0;
	int rc;

	if (shmkv__arg_int(c, 2, &d) < 0)
		return shmkv__reply_fail(c, -EDOM);
	rc = shmkv_incrby(c->kv, ARG(c, 1), d, &v);
	return reply_number(c, rc, v);
}

int shmkv__cmd_decrby(struct exec_ctx *c)
{
	int64_t d, v = 0;
	int rc;

	if (shmkv__arg_int(c, 2, &d) < 0)
		return shmkv__reply_fail(c, -EDOM);
	/* -INT64_MIN does not exist: Redis refuses it with its own text. */
	if (d == INT64_MIN)
		return shmkv__reply_fail(c, EXEC_EDECR);
	rc = shmkv_decrby(c->kv, ARG(c, 1), d, &v);
	return reply_number(c, rc, v);
}

/*
 * Expiry.
 */

/* Parses [NX|XX|GT|LT]... from argv[3]; *@bad gets an unknown one's index. */
static int expire_flags_parse(const struct exec_ctx *c, unsigned *flags,
			      int *bad)
{
	static const char *const names[] = { "nx", "xx", "gt", "lt" };
	unsigned f = 0, k;
	int i;

	for (i = 3; i < c->argc; i++) {
		for (k = 0; k < 4 && !shmkv__arg_is(c, i, names[k]); k++)
			;
		if (k == 4) {
			*bad = i;
			return EXEC_ESYNTAX;
		}
		f |= 1u << k; /* the order of enum shmkv_expire_flags */
	}
	*flags = f;
	if ((f & SHMKV_EXPIRE_NX) && (f & ~(unsigned)SHMKV_EXPIRE_NX))
		return EXEC_ENXCOMBO;
	if ((f & SHMKV_EXPIRE_GT) && (f & SHMKV_EXPIRE_LT))
		return EXEC_EGTLT;
	return 0;
}

/* As expireGenericCommand: the time in milliseconds, plus now for the
 * relative forms, must fit in an int64 (a negative time is allowed). */
static int expire_time_check(int64_t t, enum shmkv_expire_unit unit)
{
	int secs = unit == SHMKV_EXPIRE_SEC || unit == SHMKV_EXPIRE_AT_SEC;
	int rel = unit == SHMKV_EXPIRE_SEC || unit == SHMKV_EXPIRE_MSEC;

	if (secs) {
		if (t > INT64_MAX / 1000 || t < INT64_MIN / 1000)
			return EXEC_EEXPIRE;
		t *= 1000;
	}
	if (rel && overflows_from_now(t))
		return EXEC_EEXPIRE;
	return 0;
}

static int expire_generic(struct exec_ctx *c, enum shmkv_expire_unit unit)
{
	unsigned flags = 0;
	int64_t t = 0;
	int bad = 0, rc;

	rc = expire_flags_parse(c, &flags, &bad);
	if (bad)
		return shmkv__reply_errorf(c, "Unsupported option %.*s",
					   shmkv__arg_cstrlen(c, bad),
					   shmkv__arg_str(c, bad));
	if (rc == 0)
		rc = shmkv__arg_int(c, 2, &t);
	if (rc == 0)
		rc = expire_time_check(t, unit);
	if (rc < 0)
		return shmkv__reply_fail(c, rc);
	rc = shmkv_expire(c->kv, ARG(c, 1), unit, flags, t);
	return shmkv__reply_count(c, rc == -EINVAL ? EXEC_EEXPIRE : rc);
}

int shmkv__cmd_expire(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_SEC);
}

int shmkv__cmd_pexpire(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_MSEC);
}

int shmkv__cmd_expireat(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_AT_SEC);
}

int shmkv__cmd_pexpireat(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_AT_MSEC);
}

/* TTL and PTTL: @fn reads the key's time left, which is the reply. */
static int read_ttl(struct exec_ctx *c,
		    int (*fn)(shmkv_t *, const void *, size_t, int64_t *))
{
	int64_t v = 0;
	int rc = fn(c->kv, ARG(c, 1), &v);

	return reply_number(c, rc, v);
}

int shmkv__cmd_ttl(struct exec_ctx *c)
{
	return read_ttl(c, shmkv_ttl);
}

int shmkv__cmd_pttl(struct exec_ctx *c)
{
	return read_ttl(c, shmkv_pttl);
}

int shmkv__cmd_persist(struct exec_ctx *c)
{
	return shmkv__reply_count(c, shmkv_persist(c->kv, ARG(c, 1)));
}

/* PING's arity is -1 in Redis's table; the command itself refuses more
 * than one argument, with the same text. */
int shmkv__cmd_ping(struct exec_ctx *c)
{
	if (c->argc > 2)
		return shmkv__reply_arity(c);
	if (c->argc == 1)
		return shmkv__reply_status(c, "PONG");
	return shmkv__reply_copy(c, SHMKV_REPLY_BULK, ARG(c, 1));
}
