/*
 * redis_typed_rc.c - what the typed calls (redis_typed.c, redis_expire.c,
 * redis_admin.c) share to talk to the server: the key as sent (the
 * handle's prefix in front), a command's arguments, the call with its
 * error reply mapped to the shm store's errno, the value reply into the
 * caller's buffer, and the two scripts (EVALSHA, EVAL on NOSCRIPT).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "intconv.h"
#include "redis.h"
#include "redis_typed_impl.h"

/* ---- keys, commands, replies (redis_typed_impl.h) ---- */

int shmkv__rk_make(struct shmkv_redis *r, const void *key, size_t klen,
		   struct shmkv__rk *k)
{
	/* One spare byte: room for a NUL, whatever shmkv__redis_key wants. */
	size_t need = r->uri.prefix_len + klen + 1;
	ssize_t n;

	k->p = k->small;
	if (need > sizeof(k->small)) {
		k->p = malloc(need);
		if (k->p == NULL)
			return -ENOMEM;
	}
	n = shmkv__redis_key(r, key, klen, k->p, need);
	if (n < 0) {
		shmkv__rk_free(k);
		return (int)n;
	}
	k->len = (size_t)n;
	return 0;
}

void shmkv__rk_free(struct shmkv__rk *k)
{
	if (k->p != k->small)
		free(k->p);
	k->p = k->small;
}

void shmkv__rc_arg(struct shmkv__rc *c, const void *p, size_t n)
{
	/* Callers build at most SHMKV__RC_ARGS arguments (fixed shapes). */
	c->argv[c->argc] = p != NULL ? p : "";
	c->len[c->argc] = n;
	c->argc++;
}

void shmkv__rc_str(struct shmkv__rc *c, const char *s)
{
	shmkv__rc_arg(c, s, strlen(s));
}

void shmkv__rc_int(struct shmkv__rc *c, int64_t v)
{
	char *buf = c->num[c->nnum++];

	shmkv__rc_arg(c, buf, shmkv__ll2string(buf, v));
}

/* A server's error reply as the shm call's errno: the typed calls' own
 * cases first (INCR's "not an integer" is -EDOM there, as shm says). */
static int reply_err(const redisReply *rep)
{
	const char *s = rep->str != NULL ? rep->str : "";

	if (strstr(s, "not an integer") != NULL)
		return -EDOM;
	if (strstr(s, "would overflow") != NULL)
		return -EOVERFLOW;
	if (strstr(s, "invalid expire time") != NULL)
		return -EINVAL;
	return shmkv__redis_err(rep);
}

int shmkv__rc_call(struct shmkv_redis *r, const void *key, size_t klen,
		   int argc, const char **argv, const size_t *argvlen,
		   redisReply **rep)
{
	int err;

	*rep = NULL;
	err = shmkv__redis_call(r, key, klen, argc, argv, argvlen, rep);
	return err != 0 ? err : *rep != NULL ? 0 : -EPROTO;
}

int shmkv__rc_call_master(struct shmkv_redis *r, int m, int argc,
			  const char **argv, const size_t *argvlen,
			  redisReply **rep)
{
	int err;

	*rep = NULL;
	err = shmkv__redis_call_master(r, m, argc, argv, argvlen, rep);
	return err != 0 ? err : *rep != NULL ? 0 : -EPROTO;
}

int shmkv__rc_run(struct shmkv_redis *r, const struct shmkv__rk *k,
		  struct shmkv__rc *c, redisReply **rep)
{
	int err = shmkv__rc_call(r, k->p, k->len, c->argc, c->argv, c->len,
				 rep);

	if (err)
		return err;
	if ((*rep)->type != REDIS_REPLY_ERROR)
		return 0;
	err = reply_err(*rep);
	freeReplyObject(*rep);
	*rep = NULL;
	return err < 0 ? err : -EIO; /* an error reply is never a success */
}

/*
 * A value reply (GET's: a bulk string or nil; the scripts' integer: the
 * value's length when it did not fit @cap) into @out, as the shm store's
 * give_value: 1 and the value, 0 (none), or -ENOBUFS with out->len the
 * length needed.
 */
int shmkv__rc_value(const redisReply *rep, struct shmkv_value *out,
		    bool from_script)
{
	if (rep->type == REDIS_REPLY_NIL) {
		if (out != NULL)
			out->len = 0;
		return 0;
	}
	/* Only the getcmd script answers a length: from a command, an
	 * integer is a reply we do not understand, never a short buffer. */
	if (from_script && rep->type == REDIS_REPLY_INTEGER &&
	    rep->integer >= 0) {
		if (out != NULL)
			out->len = (size_t)rep->integer;
		return -ENOBUFS;
	}
	if (rep->type != REDIS_REPLY_STRING)
		return -EPROTO;
	if (out == NULL)
		return 1;
	out->len = rep->len;
	if (rep->len > out->cap)
		return -ENOBUFS;
	if (rep->len > 0)
		memcpy(out->buf, rep->str, rep->len);
	return 1;
}

/* ---- scripts ---- */

/*
 * GET the key; if its value is longer than ARGV[1], answer that length
 * and change nothing; else run ARGV[2] (SET, DEL, GETEX) on the key with
 * ARGV[3..] when there was a value (SET: always), and answer the value
 * read (nil when none). One script, so one SHA cached per server.
 */
const struct shmkv__script shmkv__script_getcmd = {
	.sha = "e2993638e770091e2cf05be1d0a56485041a2b05",
	.body = "local v = redis.call('GET', KEYS[1])\n"
		"if v and #v > tonumber(ARGV[1]) then return #v end\n"
		"if v or ARGV[2] == 'SET' then redis.call(ARGV[2], KEYS[1], "
		"unpack(ARGV, 3)) end\n"
		"return v",
};

/* DELIFEQ where the server has no native one: compare and delete in one
 * script (atomic on the server, as Valkey's command is). */
const struct shmkv__script shmkv__script_delifeq = {
	.sha = "7f8f6677b8f2b4b65b9b9905151ced126e6b7e49",
	.body = "if redis.call('GET', KEYS[1]) == ARGV[1] then return "
		"redis.call('DEL', KEYS[1]) end\n"
		"return 0",
};

/*
 * Runs @s on key @k with the arguments of @c (ARGV only): EVALSHA first
 * (the body is sent once per server, not per call); NOSCRIPT (a server
 * restarted, or another node of a cluster) sends the body by EVAL, which
 * caches it there. Either runs the script at most once: NOSCRIPT means it
 * did not run.
 */
int shmkv__rc_script(struct shmkv_redis *r, const struct shmkv__rk *k,
		     const struct shmkv__script *s,
		     const struct shmkv__rc *args, redisReply **rep)
{
	struct shmkv__rc c = { 0 };
	int err;

	for (int eval = 0; eval < 2; eval++) {
		c.argc = 0;
		c.nnum = 0;
		shmkv__rc_str(&c, eval ? "EVAL" : "EVALSHA");
		shmkv__rc_str(&c, eval ? s->body : s->sha);
		shmkv__rc_str(&c, "1");
		shmkv__rc_arg(&c, k->p, k->len);
		for (int i = 0; i < args->argc; i++)
			shmkv__rc_arg(&c, args->argv[i], args->len[i]);
		err = shmkv__rc_call(r, k->p, k->len, c.argc, c.argv, c.len,
				     rep);
		if (err)
			return err;
		if ((*rep)->type != REDIS_REPLY_ERROR)
			return 0;
		if (eval || strncmp((*rep)->str, "NOSCRIPT", 8) != 0)
			break;
		freeReplyObject(*rep);
	}
	err = reply_err(*rep);
	freeReplyObject(*rep);
	*rep = NULL;
	return err < 0 ? err : -EIO;
}

/* The buffer bound a script compares with: a NULL buffer takes any. Lua
 * numbers are doubles: 2^52 is exact, and no value is that long. */
static int64_t cap_of(const struct shmkv_value *out)
{
	if (out == NULL || out->cap > (1ull << 52))
		return (int64_t)1 << 52;
	return (int64_t)out->cap;
}

/*
 * Reads the key's value into @out and, when it fits, runs command @cmd
 * with @opts (SET with its value and options, DEL, GETEX with its
 * option) on it, by shmkv__script_getcmd: the shm store's GET-then-write
 * calls, all or nothing.
 */
int shmkv__rc_get_then(struct shmkv_redis *r, const struct shmkv__rk *k,
		       const char *cmd, const struct shmkv__rc *opts,
		       struct shmkv_value *out)
{
	struct shmkv__rc c = { 0 };
	redisReply *rep;
	int err;

	shmkv__rc_int(&c, cap_of(out));
	shmkv__rc_str(&c, cmd);
	for (int i = 0; opts != NULL && i < opts->argc; i++)
		shmkv__rc_arg(&c, opts->argv[i], opts->len[i]);
	err = shmkv__rc_script(r, k, &shmkv__script_getcmd, &c, &rep);
	if (err)
		return err;
	err = shmkv__rc_value(rep, out, true);
	freeReplyObject(rep);
	return err;
}

/* A command on one key whose reply is an integer, as the call's return
 * (EXISTS, DEL, SETNX, PERSIST: 1 or 0) or into *@v. */
int shmkv__rc_key_int(shmkv_t *kv, const void *key, size_t klen,
		      struct shmkv__rc *c, int64_t *v)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);
	struct shmkv__rk k;
	redisReply *rep;
	int64_t n = 0;
	int err = shmkv__rk_make(r, key, klen, &k);

	if (err)
		return err;
	/* The key goes second: after the command's name. */
	c->argv[1] = k.p;
	c->len[1] = k.len;
	err = shmkv__rc_run(r, &k, c, &rep);
	if (err == 0) {
		if (rep->type == REDIS_REPLY_INTEGER)
			n = rep->integer;
		else
			err = -EPROTO;
		freeReplyObject(rep);
	}
	shmkv__rk_free(&k);
	if (err)
		return err;
	if (v != NULL)
		*v = n;
	return v != NULL ? 0 : (int)(n != 0);
}
