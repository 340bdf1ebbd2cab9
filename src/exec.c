/*
 * exec.c - the Redis-style command interface: shmkv_exec().
 *
 * Arguments are parsed as Redis 7.0 parses them (t_string.c
 * parseExtendedStringArgumentsOrReply, getExpireMillisecondsOrReply;
 * expire.c parseExtendedExpireArgumentsOrReply, expireGenericCommand;
 * server.c commandCheckExistence, commandCheckArity), in the same order, so
 * that a malformed command gets the very error Redis would give. Validation
 * happens here; the C API is then called with valid arguments, and what it
 * still refuses is mapped to Redis's text or to shmkv_strerror()'s.
 */
#include "intconv.h"
#include "shmkv.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/*
 * Redis errors found while parsing, as codes below any errno (the kernel's
 * largest is 4095) so that one int carries either. -EDOM and -EOVERFLOW
 * are used as themselves: the C API returns them for the same two errors.
 */
enum {
	EXEC_ESYNTAX = -4096 - 1,  /* "syntax error" */
	EXEC_EDECR = -4096 - 2,	   /* DECRBY LLONG_MIN: "decrement would.." */
	EXEC_EEXPIRE = -4096 - 3,  /* "invalid expire time in '%s' command" */
	EXEC_ENXCOMBO = -4096 - 4, /* NX with XX, GT or LT */
	EXEC_EGTLT = -4096 - 5,	   /* GT with LT */
};

/* Options of SET and GETEX: SHMKV_SET_* bits, plus GETEX's PERSIST. */
#define STR_OPT_PERSIST (1u << 8)
#define STR_OPT_EXPIRES                                                        \
	(SHMKV_SET_EX | SHMKV_SET_PX | SHMKV_SET_EXAT | SHMKV_SET_PXAT)

struct exec_cmd;

/* One command being run: its arguments and the reply to fill. */
struct exec_ctx {
	shmkv_t *kv;
	int argc;
	const char *const *argv;
	const size_t *argvlen;
	struct shmkv_reply *reply;
	const struct exec_cmd *cmd;
};

/* A handler fills c->reply; returns 0, or a negative errno as shmkv_exec. */
typedef int (*exec_fn)(struct exec_ctx *c);

struct exec_cmd {
	const char *name; /* lowercase, as Redis prints it in errors */
	int arity;	  /* Redis's: argc exactly, or at least -arity */
	exec_fn fn;
};

/*
 * Replies.
 */

/* Takes ownership of @s (malloc'd, @len bytes plus a NUL). A NULL @s is a
 * failed allocation: the reply becomes an error without text. */
static int reply_take(struct shmkv_reply *r, enum shmkv_reply_type type,
		      char *s, size_t len)
{
	if (!s) {
		r->type = SHMKV_REPLY_ERROR;
		r->str = NULL;
		r->len = 0;
		return -ENOMEM;
	}
	r->type = type;
	r->str = s;
	r->len = len;
	return 0;
}

static int reply_copy(struct exec_ctx *c, enum shmkv_reply_type type,
		      const void *p, size_t len)
{
	char *s = malloc(len + 1);

	if (s) {
		if (len)
			memcpy(s, p, len);
		s[len] = '\0';
	}
	return reply_take(c->reply, type, s, len);
}

static int reply_status(struct exec_ctx *c, const char *status)
{
	return reply_copy(c, SHMKV_REPLY_STATUS, status, strlen(status));
}

static int reply_int(struct exec_ctx *c, long long v)
{
	c->reply->type = SHMKV_REPLY_INTEGER;
	c->reply->integer = v;
	return 0;
}

static int reply_nil(struct exec_ctx *c)
{
	c->reply->type = SHMKV_REPLY_NIL;
	return 0;
}

/*
 * "ERR " and the formatted text. As Redis's addReplyErrorFormat, trailing
 * CR/LF are trimmed and inner ones become spaces: user bytes end up in
 * some messages and must not break the protocol of whoever relays them.
 */
static int reply_errorf(struct exec_ctx *c, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	s = malloc((size_t)n + 5);
	if (!s)
		return reply_take(c->reply, SHMKV_REPLY_ERROR, NULL, 0);
	memcpy(s, "ERR ", 4);
	va_start(ap, fmt);
	vsnprintf(s + 4, (size_t)n + 1, fmt, ap);
	va_end(ap);
	while (n > 0 && (s[n + 3] == '\r' || s[n + 3] == '\n'))
		s[3 + n--] = '\0';
	for (char *p = s + 4; *p; p++)
		if (*p == '\r' || *p == '\n')
			*p = ' ';
	return reply_take(c->reply, SHMKV_REPLY_ERROR, s, (size_t)n + 4);
}

static int reply_arity(struct exec_ctx *c)
{
	return reply_errorf(c, "wrong number of arguments for '%s' command",
			    c->cmd->name);
}

static const struct {
	int code;
	const char *text;
} redis_errors[] = {
	{ EXEC_ESYNTAX, "syntax error" },
	{ -EDOM, "value is not an integer or out of range" },
	{ -EOVERFLOW, "increment or decrement would overflow" },
	{ EXEC_EDECR, "decrement would overflow" },
	{ EXEC_ENXCOMBO,
	  "NX and XX, GT or LT options at the same time are not compatible" },
	{ EXEC_EGTLT, "GT and LT options at the same time are not compatible" },
};

/*
 * Replies with the error for @code. A Redis error is a reply like any
 * other (returns 0); a store failure Redis has no reply for also returns
 * its errno, so the caller can tell.
 */
static int reply_fail(struct exec_ctx *c, int code)
{
	size_t i;
	int rc;

	if (code == EXEC_EEXPIRE)
		return reply_errorf(c, "invalid expire time in '%s' command",
				    c->cmd->name);
	for (i = 0; i < sizeof(redis_errors) / sizeof(redis_errors[0]); i++)
		if (redis_errors[i].code == code)
			return reply_errorf(c, "%s", redis_errors[i].text);
	rc = reply_errorf(c, "%s", shmkv_strerror(code));
	return rc < 0 ? rc : code;
}

/*
 * Values read back: a buffer of the store's value_max always suffices.
 * One spare byte keeps bulk replies NUL-terminated, for callers' comfort.
 */
static int value_init(struct exec_ctx *c, struct shmkv_value *v)
{
	struct shmkv_config cfg;
	int rc = shmkv_get_config(c->kv, &cfg);

	if (rc < 0)
		return rc;
	v->cap = cfg.value_max;
	v->len = 0;
	v->buf = malloc(v->cap + 1);
	return v->buf ? 0 : -ENOMEM;
}

/* Replies for a command returning a value: @rc < 0 an error, 0 nil,
 * else the value (whose buffer the reply takes over). */
static int reply_value(struct exec_ctx *c, int rc, struct shmkv_value *v)
{
	char *s = v->buf;

	v->buf = NULL;
	if (rc <= 0) {
		free(s);
		return rc < 0 ? reply_fail(c, rc) : reply_nil(c);
	}
	s[v->len] = '\0';
	return reply_take(c->reply, SHMKV_REPLY_BULK, s, v->len);
}

/* Replies with @rc itself as an integer, or its error. */
static int reply_count(struct exec_ctx *c, int rc)
{
	return rc < 0 ? reply_fail(c, rc) : reply_int(c, rc);
}

/*
 * Arguments.
 */

#define ARG(c, i) ((c)->argv[i]), ((c)->argvlen[i])

/* Redis compares option names as C strings: an argument counts up to its
 * first NUL, so "NX\0junk" is NX, as there. */
static int arg_is(const struct exec_ctx *c, int i, const char *name)
{
	size_t len = c->argvlen[i];
	const char *nul = len ? memchr(c->argv[i], '\0', len) : NULL;

	if (nul)
		len = (size_t)(nul - c->argv[i]);
	return len == strlen(name) && strncasecmp(c->argv[i], name, len) == 0;
}

/* The argument as a printable pointer (a NULL one has length 0). */
static const char *arg_str(const struct exec_ctx *c, int i)
{
	return c->argv[i] ? c->argv[i] : "";
}

/* The argument's length as a C string (what Redis's "%s" would print),
 * as the int a "%.*s" precision takes. */
static int arg_cstrlen(const struct exec_ctx *c, int i)
{
	size_t len = c->argvlen[i];
	const char *nul = len ? memchr(c->argv[i], '\0', len) : NULL;

	if (nul)
		len = (size_t)(nul - c->argv[i]);
	return len > INT_MAX ? INT_MAX : (int)len;
}

/* Parses an integer argument. Return: 0, or -EDOM as Redis's string2ll. */
static int arg_int(const struct exec_ctx *c, int i, int64_t *v)
{
	return shmkv__string2ll(c->argv[i], c->argvlen[i], v) ? 0 : -EDOM;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
		if (arg_is(c, i, str_opts[k].name))
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

/*
 * Checks the time of an EX/PX/EXAT/PXAT option as Redis's
 * getExpireMillisecondsOrReply: positive, and its deadline in milliseconds
 * must fit in an int64.
 * Return: 0 and the time as given in *@t; -EDOM or EXEC_EEXPIRE.
 */
static int str_expire_check(const struct exec_ctx *c, const struct str_args *a,
			    int64_t *t)
{
	int secs = a->flags & (SHMKV_SET_EX | SHMKV_SET_EXAT);
	int rel = a->flags & (SHMKV_SET_EX | SHMKV_SET_PX);
	int64_t ms;

	if (arg_int(c, a->expire_arg, t) < 0)
		return -EDOM;
	if (*t <= 0 || (secs && *t > INT64_MAX / 1000))
		return EXEC_EEXPIRE;
	ms = secs ? *t * 1000 : *t;
	if (rel && ms > INT64_MAX - now_ms())
		return EXEC_EEXPIRE;
	return 0;
}

/*
 * String commands.
 */

static int cmd_set(struct exec_ctx *c)
{
	struct shmkv_value old = { NULL, 0, 0 };
	struct str_args a;
	int64_t t = 0;
	int rc;

	rc = str_args_parse(c, 3, 1, &a);
	if (rc == 0 && a.expire_arg)
		rc = str_expire_check(c, &a, &t);
	if (rc == 0 && (a.flags & SHMKV_SET_GET))
		rc = value_init(c, &old);
	if (rc < 0)
		return reply_fail(c, rc);
	rc = shmkv_set(c->kv, ARG(c, 1), ARG(c, 2), a.flags, t,
		       (a.flags & SHMKV_SET_GET) ? &old : NULL);
	if (rc == -EINVAL && a.expire_arg)
		rc = EXEC_EEXPIRE;
	if (a.flags & SHMKV_SET_GET)
		return reply_value(c, rc < 0 ? rc : rc & SHMKV_SET_HAD_OLD,
				   &old);
	if (rc < 0)
		return reply_fail(c, rc);
	return rc ? reply_status(c, "OK") : reply_nil(c);
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
		return reply_fail(c, rc);
	return rc ? reply_fail(c, code) : reply_nil(c);
}

static int cmd_getex(struct exec_ctx *c)
{
	struct shmkv_value v;
	struct str_args a;
	int64_t t = 0;
	int rc;

	rc = str_args_parse(c, 2, 0, &a);
	if (rc < 0)
		return reply_fail(c, rc);
	if (a.expire_arg) {
		rc = str_expire_check(c, &a, &t);
		if (rc < 0)
			return getex_bad_time(c, rc);
	}
	rc = value_init(c, &v);
	if (rc < 0)
		return reply_fail(c, rc);
	rc = shmkv_getex(c->kv, ARG(c, 1), getex_mode(a.flags), t, &v);
	if (rc == -EINVAL && a.expire_arg)
		rc = EXEC_EEXPIRE;
	return reply_value(c, rc, &v);
}

static int cmd_setnx(struct exec_ctx *c)
{
	return reply_count(c, shmkv_setnx(c->kv, ARG(c, 1), ARG(c, 2)));
}

static int cmd_get(struct exec_ctx *c)
{
	struct shmkv_value v;
	int rc = value_init(c, &v);

	if (rc < 0)
		return reply_fail(c, rc);
	return reply_value(c, shmkv_get(c->kv, ARG(c, 1), &v), &v);
}

static int cmd_getset(struct exec_ctx *c)
{
	struct shmkv_value v;
	int rc = value_init(c, &v);

	if (rc < 0)
		return reply_fail(c, rc);
	rc = shmkv_getset(c->kv, ARG(c, 1), ARG(c, 2), &v);
	return reply_value(c, rc, &v);
}

static int cmd_getdel(struct exec_ctx *c)
{
	struct shmkv_value v;
	int rc = value_init(c, &v);

	if (rc < 0)
		return reply_fail(c, rc);
	return reply_value(c, shmkv_getdel(c->kv, ARG(c, 1), &v), &v);
}

static int cmd_delifeq(struct exec_ctx *c)
{
	return reply_count(c, shmkv_delifeq(c->kv, ARG(c, 1), ARG(c, 2)));
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
		return reply_fail(c, rc);
	for (i = 1; i < c->argc; i++) {
		rc = fn(c->kv, ARG(c, i));
		if (rc < 0)
			return reply_fail(c, rc);
		n += rc;
	}
	return reply_int(c, n);
}

static int cmd_del(struct exec_ctx *c)
{
	return keys_count(c, shmkv_del);
}

static int cmd_exists(struct exec_ctx *c)
{
	return keys_count(c, shmkv_exists);
}

/*
 * Integers.
 */

static int reply_incr(struct exec_ctx *c, int rc, int64_t v)
{
	return rc < 0 ? reply_fail(c, rc) : reply_int(c, v);
}

static int cmd_incr(struct exec_ctx *c)
{
	int64_t v = 0;
	int rc = shmkv_incr(c->kv, ARG(c, 1), &v);

	return reply_incr(c, rc, v);
}

static int cmd_decr(struct exec_ctx *c)
{
	int64_t v = 0;
	int rc = shmkv_decr(c->kv, ARG(c, 1), &v);

	return reply_incr(c, rc, v);
}

static int cmd_incrby(struct exec_ctx *c)
{
	int64_t d, v = 0;
	int rc;

	if (arg_int(c, 2, &d) < 0)
		return reply_fail(c, -EDOM);
	rc = shmkv_incrby(c->kv, ARG(c, 1), d, &v);
	return reply_incr(c, rc, v);
}

static int cmd_decrby(struct exec_ctx *c)
{
	int64_t d, v = 0;
	int rc;

	if (arg_int(c, 2, &d) < 0)
		return reply_fail(c, -EDOM);
	/* -INT64_MIN does not exist: Redis refuses it with its own text. */
	if (d == INT64_MIN)
		return reply_fail(c, EXEC_EDECR);
	rc = shmkv_decrby(c->kv, ARG(c, 1), d, &v);
	return reply_incr(c, rc, v);
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
		for (k = 0; k < 4 && !arg_is(c, i, names[k]); k++)
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
	if (rel && t > INT64_MAX - now_ms())
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
		return reply_errorf(c, "Unsupported option %.*s",
				    arg_cstrlen(c, bad), arg_str(c, bad));
	if (rc == 0)
		rc = arg_int(c, 2, &t);
	if (rc == 0)
		rc = expire_time_check(t, unit);
	if (rc < 0)
		return reply_fail(c, rc);
	rc = shmkv_expire(c->kv, ARG(c, 1), t, unit, flags);
	return reply_count(c, rc == -EINVAL ? EXEC_EEXPIRE : rc);
}

static int cmd_expire(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_SEC);
}

static int cmd_pexpire(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_MSEC);
}

static int cmd_expireat(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_AT_SEC);
}

static int cmd_pexpireat(struct exec_ctx *c)
{
	return expire_generic(c, SHMKV_EXPIRE_AT_MSEC);
}

static int cmd_ttl(struct exec_ctx *c)
{
	int64_t v = 0;
	int rc = shmkv_ttl(c->kv, ARG(c, 1), &v);

	return rc < 0 ? reply_fail(c, rc) : reply_int(c, v);
}

static int cmd_pttl(struct exec_ctx *c)
{
	int64_t v = 0;
	int rc = shmkv_pttl(c->kv, ARG(c, 1), &v);

	return rc < 0 ? reply_fail(c, rc) : reply_int(c, v);
}

static int cmd_persist(struct exec_ctx *c)
{
	return reply_count(c, shmkv_persist(c->kv, ARG(c, 1)));
}

/* PING's arity is -1 in Redis's table; the command itself refuses more
 * than one argument, with the same text. */
static int cmd_ping(struct exec_ctx *c)
{
	if (c->argc > 2)
		return reply_arity(c);
	if (c->argc == 1)
		return reply_status(c, "PONG");
	return reply_copy(c, SHMKV_REPLY_BULK, ARG(c, 1));
}

/*
 * Dispatch.
 */

static const struct exec_cmd exec_cmds[] = {
	{ "set", -3, cmd_set },
	{ "setnx", 3, cmd_setnx },
	{ "get", 2, cmd_get },
	{ "getset", 3, cmd_getset },
	{ "getdel", 2, cmd_getdel },
	{ "getex", -2, cmd_getex },
	{ "del", -2, cmd_del },
	{ "exists", -2, cmd_exists },
	{ "expire", -3, cmd_expire },
	{ "pexpire", -3, cmd_pexpire },
	{ "expireat", -3, cmd_expireat },
	{ "pexpireat", -3, cmd_pexpireat },
	{ "ttl", 2, cmd_ttl },
	{ "pttl", 2, cmd_pttl },
	{ "persist", 2, cmd_persist },
	{ "incr", 2, cmd_incr },
	{ "incrby", 3, cmd_incrby },
	{ "decr", 2, cmd_decr },
	{ "decrby", 3, cmd_decrby },
	{ "delifeq", 3, cmd_delifeq },
	{ "ping", -1, cmd_ping },
};

/* Redis finds commands by their full length: "get\0x" is not GET. */
static const struct exec_cmd *cmd_lookup(const char *name, size_t len)
{
	size_t k;

	for (k = 0; k < sizeof(exec_cmds) / sizeof(exec_cmds[0]); k++)
		if (strlen(exec_cmds[k].name) == len &&
		    strncasecmp(exec_cmds[k].name, name, len) == 0)
			return &exec_cmds[k];
	return NULL;
}

/*
 * As Redis's commandCheckExistence: the name, then each argument quoted,
 * until the list reaches 128 bytes; every part printed as a C string.
 */
static int reply_unknown(struct exec_ctx *c)
{
	char args[128 + 3 * 128 + 1];
	size_t used = 0;
	int i, n;

	args[0] = '\0';
	for (i = 1; i < c->argc && used < 128; i++) {
		n = arg_cstrlen(c, i);
		if (n > 128 - (int)used)
			n = 128 - (int)used;
		used += (size_t)snprintf(args + used, sizeof(args) - used,
					 "'%.*s' ", n, arg_str(c, i));
	}
	n = arg_cstrlen(c, 0);
	return reply_errorf(c,
			    "unknown command '%.*s', with args beginning with: "
			    "%s",
			    n < 128 ? n : 128, arg_str(c, 0), args);
}

static int arity_ok(int arity, int argc)
{
	return arity > 0 ? argc == arity : argc >= -arity;
}

static int args_valid(int argc, const char *const *argv, const size_t *lens)
{
	int i;

	if (argc < 1 || !argv || !lens)
		return 0;
	for (i = 0; i < argc; i++)
		if (!argv[i] && lens[i])
			return 0;
	return 1;
}

int shmkv_exec(shmkv_t *kv, int argc, const char *const *argv,
	       const size_t *argvlen, struct shmkv_reply *reply)
{
	struct exec_ctx c = { kv, argc, argv, argvlen, reply, NULL };
	static const char empty[1];
	const char *argv0;

	if (!reply)
		return -EINVAL;
	memset(reply, 0, sizeof(*reply));
	if (!kv || !args_valid(argc, argv, argvlen))
		return reply_fail(&c, -EINVAL);
	argv0 = argv[0] ? argv[0] : empty;
	c.cmd = cmd_lookup(argv0, argvlen[0]);
	if (!c.cmd)
		return reply_unknown(&c);
	if (!arity_ok(c.cmd->arity, argc))
		return reply_arity(&c);
	return c.cmd->fn(&c);
}

void shmkv_reply_free(struct shmkv_reply *reply)
{
	if (!reply)
		return;
	free(reply->str);
	memset(reply, 0, sizeof(*reply));
}
