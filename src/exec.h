/*
 * exec.h - internals of shmkv_exec(), shared by exec.c (dispatch),
 * exec_cmds.c (the commands) and exec_reply.c (replies, arguments).
 *
 * A handler gets one struct exec_ctx, validates its arguments as Redis
 * 7.0 does, calls the C API and fills c->reply through the reply helpers.
 * Every helper and handler returns 0 or a negative errno as shmkv_exec()
 * does: a Redis error is a reply like any other and returns 0.
 */
#ifndef SHMKV_SRC_EXEC_H
#define SHMKV_SRC_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "shmkv.h"
#include "shmkv_exec.h"

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

/* A row of the one command table (exec.c): the public facts, and the
 * handler that only the library sees. */
struct exec_cmd {
	struct shmkv_command pub;
	exec_fn fn;
};

/*
 * Replies (exec_reply.c). Each fills c->reply; on a failed allocation the reply
 * becomes an error without text and -ENOMEM is returned.
 */

/* A copy of the @len bytes at @p, of @type (a NUL is added after them). */
int shmkv__reply_copy(struct exec_ctx *c, enum shmkv_reply_type type,
		      const void *p, size_t len);
int shmkv__reply_status(struct exec_ctx *c, const char *status);
int shmkv__reply_int(struct exec_ctx *c, long long v);
int shmkv__reply_nil(struct exec_ctx *c);
/* "ERR " and the formatted text, with CR/LF as Redis's addReplyErrorFormat
 * leaves them: trailing ones trimmed, inner ones turned into spaces. */
int shmkv__reply_errorf(struct exec_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* "wrong number of arguments for '<command>' command". */
int shmkv__reply_arity(struct exec_ctx *c);
/* The error for @code: a Redis text for EXEC_E*, -EDOM and -EOVERFLOW
 * (returns 0), else shmkv_strerror()'s text (returns @code itself, so the
 * caller of shmkv_exec can tell a store failure Redis has no reply for). */
int shmkv__reply_fail(struct exec_ctx *c, int code);
/* For a command returning a value: @rc < 0 an error, 0 nil, else the
 * value in @v, whose buffer the reply takes over (@v->buf becomes NULL). */
int shmkv__reply_value(struct exec_ctx *c, int rc, struct shmkv_value *v);
/* @rc itself as an integer, or its error if negative. */
int shmkv__reply_count(struct exec_ctx *c, int rc);

/* A value buffer of the store's value_max (plus a byte for a NUL), which
 * always suffices; shmkv__reply_value() takes it over. Return: 0, -ENOMEM
 * or shmkv_get_config()'s error. */
int shmkv__value_init(struct exec_ctx *c, struct shmkv_value *v);

/*
 * Arguments (exec_reply.c).
 */

/* The (pointer, length) pair of argument @i, as the C API takes it. */
#define ARG(c, i) ((c)->argv[i]), ((c)->argvlen[i])

/* Whether argument @i is the option @name (lowercase), compared as Redis
 * does: as a C string (up to its first NUL) and ignoring case. */
int shmkv__arg_is(const struct exec_ctx *c, int i, const char *name);
/* Argument @i as a printable pointer (a NULL one has length 0). */
const char *shmkv__arg_str(const struct exec_ctx *c, int i);
/* Argument @i's length as a C string, as the int "%.*s" takes. */
int shmkv__arg_cstrlen(const struct exec_ctx *c, int i);
/* Parses integer argument @i. Return: 0, or -EDOM as Redis's string2ll. */
int shmkv__arg_int(const struct exec_ctx *c, int i, int64_t *v);

/*
 * The commands (exec_cmds.c), found through the table in exec.c. Each
 * runs with an argc its arity allows.
 */
int shmkv__cmd_set(struct exec_ctx *c);
int shmkv__cmd_setnx(struct exec_ctx *c);
int shmkv__cmd_get(struct exec_ctx *c);
int shmkv__cmd_getset(struct exec_ctx *c);
int shmkv__cmd_getdel(struct exec_ctx *c);
int shmkv__cmd_getex(struct exec_ctx *c);
int shmkv__cmd_del(struct exec_ctx *c);
int shmkv__cmd_exists(struct exec_ctx *c);
int shmkv__cmd_expire(struct exec_ctx *c);
int shmkv__cmd_pexpire(struct exec_ctx *c);
int shmkv__cmd_expireat(struct exec_ctx *c);
int shmkv__cmd_pexpireat(struct exec_ctx *c);
int shmkv__cmd_ttl(struct exec_ctx *c);
int shmkv__cmd_pttl(struct exec_ctx *c);
int shmkv__cmd_persist(struct exec_ctx *c);
int shmkv__cmd_incr(struct exec_ctx *c);
int shmkv__cmd_incrby(struct exec_ctx *c);
int shmkv__cmd_decr(struct exec_ctx *c);
int shmkv__cmd_decrby(struct exec_ctx *c);
int shmkv__cmd_delifeq(struct exec_ctx *c);
int shmkv__cmd_ping(struct exec_ctx *c);

#endif /* SHMKV_SRC_EXEC_H */
