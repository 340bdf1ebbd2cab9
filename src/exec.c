/*
 * exec.c - the Redis-style command interface: shmkv_exec() and the one
 * table of commands (its dispatch, and the public shmkv_command_*). The
 * commands are in exec_cmds.c; the reply and argument helpers they share
 * in exec_reply.c.
 *
 * Arguments are parsed as Redis 7.0 parses them (server.c
 * commandCheckExistence, commandCheckArity here; the commands' own in
 * exec_cmds.c), in the same order, so that a malformed command gets the
 * very error Redis would give. Validation happens first; the C API is then
 * called with valid arguments, and what it still refuses is mapped to
 * Redis's text or to shmkv_strerror()'s.
 */
#include "backend.h"
#include "exec.h"
#include "internal.h"
#include "shmkv.h"
#include "shmkv_exec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/*
 * Dispatch.
 */

/* Row helpers: flags and key positions as Redis 7.0's COMMAND INFO gives
 * them (diff_redis checks every row against a live redis-server). */
#define RO     SHMKV_CMD_READONLY
#define WR     SHMKV_CMD_WRITE
#define YESNO  SHMKV_CMD_YESNO
#define TTL    SHMKV_CMD_TTL_REPLY
#define KEY1   1, 1, 1	/* one key, argument 1 */
#define KEYS   1, -1, 1 /* keys from argument 1 to the last */
#define NOKEYS 0, 0, 0

#define EXPIRE_OPTS " [NX|XX|GT|LT]"
#define CMD(name, arity, flags, keys, syntax, fn)                              \
	{                                                                      \
		{ name, arity, flags, keys, syntax }, fn                       \
	}

/* The one table of commands: dispatch, arity, and what clients read
 * through shmkv_command_at(). */
static const struct exec_cmd exec_cmds[] = {
	CMD("set", -3, WR, KEY1,
	    "SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|"
	    "EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]",
	    shmkv__cmd_set),
	CMD("setnx", 3, WR | YESNO, KEY1, "SETNX key value", shmkv__cmd_setnx),
	CMD("get", 2, RO, KEY1, "GET key", shmkv__cmd_get),
	CMD("getset", 3, WR, KEY1, "GETSET key value", shmkv__cmd_getset),
	CMD("getdel", 2, WR, KEY1, "GETDEL key", shmkv__cmd_getdel),
	CMD("getex", -2, WR, KEY1,
	    "GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|"
	    "PXAT unix-time-milliseconds|PERSIST]",
	    shmkv__cmd_getex),
	CMD("del", -2, WR | YESNO, KEYS, "DEL key [key ...]", shmkv__cmd_del),
	CMD("exists", -2, RO | YESNO, KEYS, "EXISTS key [key ...]",
	    shmkv__cmd_exists),
	CMD("expire", -3, WR | YESNO, KEY1, "EXPIRE key seconds" EXPIRE_OPTS,
	    shmkv__cmd_expire),
	CMD("pexpire", -3, WR | YESNO, KEY1,
	    "PEXPIRE key milliseconds" EXPIRE_OPTS, shmkv__cmd_pexpire),
	CMD("expireat", -3, WR | YESNO, KEY1,
	    "EXPIREAT key unix-time-seconds" EXPIRE_OPTS, shmkv__cmd_expireat),
	CMD("pexpireat", -3, WR | YESNO, KEY1,
	    "PEXPIREAT key unix-time-milliseconds" EXPIRE_OPTS,
	    shmkv__cmd_pexpireat),
	CMD("ttl", 2, RO | TTL, KEY1, "TTL key", shmkv__cmd_ttl),
	CMD("pttl", 2, RO | TTL, KEY1, "PTTL key", shmkv__cmd_pttl),
	CMD("persist", 2, WR | YESNO, KEY1, "PERSIST key", shmkv__cmd_persist),
	CMD("incr", 2, WR, KEY1, "INCR key", shmkv__cmd_incr),
	CMD("incrby", 3, WR, KEY1, "INCRBY key increment", shmkv__cmd_incrby),
	CMD("decr", 2, WR, KEY1, "DECR key", shmkv__cmd_decr),
	CMD("decrby", 3, WR, KEY1, "DECRBY key decrement", shmkv__cmd_decrby),
	/* Not Redis's: DEL if the value is the one given (a lock's release),
	 * in one step. */
	CMD("delifeq", 3, WR | YESNO, KEY1, "DELIFEQ key value",
	    shmkv__cmd_delifeq),
	CMD("ping", -1, 0, NOKEYS, "PING [message]", shmkv__cmd_ping),
};

#undef RO
#undef WR
#undef YESNO
#undef TTL
#undef KEY1
#undef KEYS
#undef NOKEYS
#undef EXPIRE_OPTS
#undef CMD

#define NCMDS (sizeof(exec_cmds) / sizeof(exec_cmds[0]))

/* Redis finds commands by their full length: "get\0x" is not GET. */
static const struct exec_cmd *cmd_lookup(const char *name, size_t len)
{
	size_t k;

	if (!name && len)
		return NULL;
	for (k = 0; k < NCMDS; k++)
		if (strlen(exec_cmds[k].pub.name) == len &&
		    strncasecmp(exec_cmds[k].pub.name, name, len) == 0)
			return &exec_cmds[k];
	return NULL;
}

size_t shmkv_command_count(void)
{
	return NCMDS;
}

const struct shmkv_command *shmkv_command_at(size_t i)
{
	return i < NCMDS ? &exec_cmds[i].pub : NULL;
}

const struct shmkv_command *shmkv_command_find(const char *name, size_t len)
{
	const struct exec_cmd *cmd = cmd_lookup(name, len);

	return cmd ? &cmd->pub : NULL;
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
		n = shmkv__arg_cstrlen(c, i);
		if (n > 128 - (int)used)
			n = 128 - (int)used;
		used += (size_t)snprintf(args + used, sizeof(args) - used,
					 "'%.*s' ", n, shmkv__arg_str(c, i));
	}
	n = shmkv__arg_cstrlen(c, 0);
	return shmkv__reply_errorf(
		c,
		"unknown command '%.*s', with args beginning with: "
		"%s",
		n < 128 ? n : 128, shmkv__arg_str(c, 0), args);
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
		return shmkv__reply_fail(&c, -EINVAL);
	argv0 = argv[0] ? argv[0] : empty;
	c.cmd = cmd_lookup(argv0, argvlen[0]);
	if (!c.cmd)
		return reply_unknown(&c);
	if (!arity_ok(c.cmd->pub.arity, argc))
		return shmkv__reply_arity(&c);
	/* As a read-only Redis replica: a write command is refused before it
	 * parses its arguments, whether or not it would change anything
	 * (GETEX without options, DEL of a missing key). */
	if (kv->readonly && (c.cmd->pub.flags & SHMKV_CMD_WRITE))
		return shmkv__reply_fail(&c, -EROFS);
	/* A store elsewhere (backend.h), after the checks above: an unknown
	 * command, a wrong arity and a read-only refusal reply alike on
	 * every backend. */
	if (kv->backend != NULL)
		return kv->backend->exec(kv, argc, argv, argvlen, reply);
	return c.cmd->fn(&c);
}

void shmkv_reply_free(struct shmkv_reply *reply)
{
	if (!reply)
		return;
	free(reply->str);
	memset(reply, 0, sizeof(*reply));
}
