/*
 * exec_reply.c - what the commands of shmkv_exec() share: building
 * replies (Redis's error texts included) and reading arguments as Redis
 * 7.0 reads them. exec.c dispatches to the commands (exec_cmds.c), which
 * call these: exec.c -> exec_cmds.c -> exec_reply.c, never back.
 */
#include "exec.h"
#include "intconv.h"
#include "shmkv.h"
#include "shmkv_exec.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int shmkv__reply_copy(struct exec_ctx *c, enum shmkv_reply_type type,
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

int shmkv__reply_status(struct exec_ctx *c, const char *status)
{
	return shmkv__reply_copy(c, SHMKV_REPLY_STATUS, status, strlen(status));
}

int shmkv__reply_int(struct exec_ctx *c, long long v)
{
	c->reply->type = SHMKV_REPLY_INTEGER;
	c->reply->integer = v;
	return 0;
}

int shmkv__reply_nil(struct exec_ctx *c)
{
	c->reply->type = SHMKV_REPLY_NIL;
	return 0;
}

/*
 * "ERR " and the formatted text. As Redis's addReplyErrorFormat, trailing
 * CR/LF are trimmed and inner ones become spaces: user bytes end up in
 * some messages and must not break the protocol of whoever relays them.
 */
int shmkv__reply_errorf(struct exec_ctx *c, const char *fmt, ...)
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

int shmkv__reply_arity(struct exec_ctx *c)
{
	return shmkv__reply_errorf(c,
				   "wrong number of arguments for '%s' command",
				   c->cmd->pub.name);
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

/* Whether argument @i is a key, by the command table's key positions. */
static bool arg_is_key(const struct exec_ctx *c, int i)
{
	const struct shmkv_command *cmd = &c->cmd->pub;
	int last = cmd->last_key < 0 ? c->argc + cmd->last_key : cmd->last_key;

	return cmd->first_key > 0 && cmd->key_step > 0 && i >= cmd->first_key &&
	       i <= last && (i - cmd->first_key) % cmd->key_step == 0;
}

/*
 * For a length error (-ENAMETOOLONG, -E2BIG), the text that names the
 * argument and the store's limit: "key is 70 bytes, this store's key_max
 * is 64". The key is the first one past key_max; the value the first
 * argument past value_max that is no key (every command's value comes
 * before its options). Return: 1 with the reply built (or its -ENOMEM),
 * 0 if no argument is too long (the caller says shmkv_strerror's text).
 */
static int reply_length(struct exec_ctx *c, int code, int *rc)
{
	bool key = code == -ENAMETOOLONG;
	struct shmkv_config cfg;
	uint32_t limit;

	if (c->cmd == NULL || shmkv_get_config(c->kv, &cfg) < 0)
		return 0;
	limit = key ? cfg.key_max : cfg.value_max;
	for (int i = 1; i < c->argc; i++) {
		if (arg_is_key(c, i) != key || c->argvlen[i] <= limit)
			continue;
		*rc = shmkv__reply_errorf(
			c, "%s is %zu bytes, this store's %s is %" PRIu32,
			key ? "key" : "value", c->argvlen[i],
			key ? "key_max" : "value_max", limit);
		return 1;
	}
	return 0;
}

/*
 * Replies with the error for @code. A Redis error is a reply like any
 * other (returns 0); a store failure Redis has no reply for also returns
 * its errno, so the caller can tell.
 */
int shmkv__reply_fail(struct exec_ctx *c, int code)
{
	size_t i;
	int rc;

	if (code == EXEC_EEXPIRE)
		return shmkv__reply_errorf(
			c, "invalid expire time in '%s' command",
			c->cmd->pub.name);
	for (i = 0; i < sizeof(redis_errors) / sizeof(redis_errors[0]); i++)
		if (redis_errors[i].code == code)
			return shmkv__reply_errorf(c, "%s",
						   redis_errors[i].text);
	if ((code == -ENAMETOOLONG || code == -E2BIG) &&
	    reply_length(c, code, &rc))
		return rc < 0 ? rc : code;
	rc = shmkv__reply_errorf(c, "%s", shmkv_strerror(code));
	return rc < 0 ? rc : code;
}

/*
 * Values read back: a buffer of the store's value_max always suffices.
 * One spare byte keeps bulk replies NUL-terminated, for callers' comfort.
 */
int shmkv__value_init(struct exec_ctx *c, struct shmkv_value *v)
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
int shmkv__reply_value(struct exec_ctx *c, int rc, struct shmkv_value *v)
{
	char *s = v->buf;

	v->buf = NULL;
	if (rc <= 0) {
		free(s);
		return rc < 0 ? shmkv__reply_fail(c, rc) : shmkv__reply_nil(c);
	}
	s[v->len] = '\0';
	return reply_take(c->reply, SHMKV_REPLY_BULK, s, v->len);
}

/* Replies with @rc itself as an integer, or its error. */
int shmkv__reply_count(struct exec_ctx *c, int rc)
{
	return rc < 0 ? shmkv__reply_fail(c, rc) : shmkv__reply_int(c, rc);
}

/*
 * Arguments.
 */

/* Redis compares option names as C strings: an argument counts up to its
 * first NUL, so "NX\0junk" is NX, as there. */
int shmkv__arg_is(const struct exec_ctx *c, int i, const char *name)
{
	size_t len = c->argvlen[i];
	const char *nul = len ? memchr(c->argv[i], '\0', len) : NULL;

	if (nul)
		len = (size_t)(nul - c->argv[i]);
	return len == strlen(name) && strncasecmp(c->argv[i], name, len) == 0;
}

/* The argument as a printable pointer (a NULL one has length 0). */
const char *shmkv__arg_str(const struct exec_ctx *c, int i)
{
	return c->argv[i] ? c->argv[i] : "";
}

/* The argument's length as a C string (what Redis's "%s" would print),
 * as the int a "%.*s" precision takes. */
int shmkv__arg_cstrlen(const struct exec_ctx *c, int i)
{
	size_t len = c->argvlen[i];
	const char *nul = len ? memchr(c->argv[i], '\0', len) : NULL;

	if (nul)
		len = (size_t)(nul - c->argv[i]);
	return len > INT_MAX ? INT_MAX : (int)len;
}

/* Parses an integer argument. Return: 0, or -EDOM as Redis's string2ll. */
int shmkv__arg_int(const struct exec_ctx *c, int i, int64_t *v)
{
	return shmkv__string2ll(c->argv[i], c->argvlen[i], v) ? 0 : -EDOM;
}
