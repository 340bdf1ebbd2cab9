/*
 * redis_exec.c - shmkv_exec forwarded to a Redis server: each key
 * argument (by the command table's key positions) gets the handle's
 * prefix, and the server's reply becomes the struct shmkv_reply the
 * shared-memory store would give: the commands of the table are Redis's,
 * with Redis's replies and error texts, so the reply is passed through.
 *
 * Two commands are not sent as they are:
 * - DELIFEQ (shmkv's own, not Redis's) runs as a script that compares
 *   and deletes in one step, as the shared-memory store does.
 * - A command of several keys (DEL, EXISTS) on a cluster is sent one key
 *   at a time and the counts summed, as cluster clients do: its keys may
 *   live on different nodes. It is then not one atomic step (neither is
 *   it on a cluster client), and a connection error part-way returns the
 *   error, some keys possibly done.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"
#include "redis.h"
#include "redis_exec.h"

/* The compare-and-delete of DELIFEQ: 1 deleted, 0 not (no key, or
 * another value). */
static const char delifeq_script[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) end return 0";

/* The command's arguments as sent: keys prefixed. */
struct sent {
	int argc;
	const char **argv;
	size_t *len;
	char **owned; /* the prefixed keys, freed after */
	const char *route; /* the first key, as sent (NULL: none) */
	size_t route_len;
};

static bool is_key(const struct shmkv_command *cmd, int argc, int i)
{
	int last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;

	return cmd->first_key > 0 && cmd->key_step > 0 && i >= cmd->first_key &&
	       i <= last && (i - cmd->first_key) % cmd->key_step == 0;
}

static void sent_free(struct sent *s)
{
	for (int i = 0; s->owned != NULL && i < s->argc; i++)
		free(s->owned[i]);
	free(s->owned);
	free(s->argv);
	free(s->len);
}

/* @argv[@from..@argc) into @s, after @head's @nhead words, keys
 * prefixed. Return: 0, -ENOMEM, -ENAMETOOLONG. */
static int sent_build(struct shmkv_redis *r, const struct shmkv_command *cmd,
		      const char *const *head, int nhead, int argc,
		      const char *const *argv, const size_t *argvlen,
		      struct sent *s)
{
	int n = nhead + argc;

	memset(s, 0, sizeof(*s));
	s->argv = calloc((size_t)n, sizeof(*s->argv));
	s->len = calloc((size_t)n, sizeof(*s->len));
	s->owned = calloc((size_t)n, sizeof(*s->owned));
	if (s->argv == NULL || s->len == NULL || s->owned == NULL)
		return -ENOMEM;
	s->argc = n;
	for (int i = 0; i < nhead; i++) {
		s->argv[i] = head[i];
		s->len[i] = strlen(head[i]);
	}
	for (int i = 0; i < argc; i++) {
		int o = nhead + i;
		size_t cap = r->uri.prefix_len + argvlen[i];
		ssize_t k;

		s->argv[o] = argv[i] != NULL ? argv[i] : "";
		s->len[o] = argvlen[i];
		if (!is_key(cmd, argc, i))
			continue;
		if (r->uri.prefix_len > 0) {
			s->owned[o] = malloc(cap + 1);
			if (s->owned[o] == NULL)
				return -ENOMEM;
			k = shmkv__redis_key(r, argv[i], argvlen[i],
					     s->owned[o], cap);
			if (k < 0)
				return (int)k;
			s->argv[o] = s->owned[o];
			s->len[o] = (size_t)k;
		}
		if (s->route == NULL) {
			s->route = s->argv[o];
			s->route_len = s->len[o];
		}
	}
	return 0;
}

/* The server's @rep as shmkv_exec's reply. */
static int reply_from(struct exec_ctx *c, const redisReply *rep)
{
	switch (rep->type) {
	case REDIS_REPLY_STATUS:
		return shmkv__reply_copy(c, SHMKV_REPLY_STATUS, rep->str,
					 rep->len);
	case REDIS_REPLY_ERROR:
		return shmkv__reply_copy(c, SHMKV_REPLY_ERROR, rep->str,
					 rep->len);
	case REDIS_REPLY_INTEGER:
		return shmkv__reply_int(c, rep->integer);
	case REDIS_REPLY_NIL:
		return shmkv__reply_nil(c);
	case REDIS_REPLY_STRING:
		return shmkv__reply_copy(c, SHMKV_REPLY_BULK, rep->str,
					 rep->len);
	default: /* an array: no command of the table has one */
		return shmkv__reply_fail(c, -EPROTO);
	}
}

/* One command (@head words, then @argv's) and its reply into @c. */
static int send_one(struct exec_ctx *c, struct shmkv_redis *r,
		    const char *const *head, int nhead, int argc,
		    const char *const *argv, const size_t *argvlen,
		    redisReply **rep)
{
	const struct shmkv_command *cmd = &c->cmd->pub;
	struct sent s;
	int err = sent_build(r, cmd, head, nhead, argc, argv, argvlen, &s);

	*rep = NULL;
	if (err == 0)
		err = shmkv__redis_call(r, s.route, s.route_len, s.argc,
					s.argv, s.len, rep);
	sent_free(&s);
	return err;
}

static int forward(struct exec_ctx *c, struct shmkv_redis *r)
{
	redisReply *rep;
	int err;

	if (strcmp(c->cmd->pub.name, "delifeq") == 0) {
		const char *head[3] = { "EVAL", delifeq_script, "1" };

		/* argv[0] (DELIFEQ) is dropped: EVAL script 1 key value. */
		err = send_one(c, r, head, 3, c->argc - 1, c->argv + 1,
			       c->argvlen + 1, &rep);
	} else {
		err = send_one(c, r, NULL, 0, c->argc, c->argv, c->argvlen,
			       &rep);
	}
	if (err)
		return shmkv__reply_fail(c, err);
	err = reply_from(c, rep);
	freeReplyObject(rep);
	return err;
}

/* DEL k1 k2 ... on a cluster: one key at a time, the counts summed. */
static int forward_split(struct exec_ctx *c, struct shmkv_redis *r)
{
	long long sum = 0;

	for (int i = 1; i < c->argc; i++) {
		const char *argv[2] = { c->argv[0], c->argv[i] };
		size_t len[2] = { c->argvlen[0], c->argvlen[i] };
		redisReply *rep;
		int err = send_one(c, r, NULL, 0, 2, argv, len, &rep);

		if (err)
			return shmkv__reply_fail(c, err);
		if (rep->type != REDIS_REPLY_INTEGER) {
			err = reply_from(c, rep); /* an error reply: as is */
			freeReplyObject(rep);
			return err;
		}
		sum += rep->integer;
		freeReplyObject(rep);
	}
	return shmkv__reply_int(c, sum);
}

int shmkv__redis_exec(shmkv_t *kv, int argc, const char *const *argv,
		      const size_t *argvlen, struct shmkv_reply *reply)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);
	const struct shmkv_command *cmd =
		shmkv_command_find(argv[0], argvlen[0]);
	/* exec.c's row: its first member is the public one (C11 6.7.2.1). */
	struct exec_ctx c = { kv,     argc, argv, argvlen, reply,
			      (const struct exec_cmd *)(const void *)cmd };

	memset(reply, 0, sizeof(*reply));
	if (cmd == NULL) /* shmkv_exec looked it up first: not reached */
		return shmkv__reply_fail(&c, -EINVAL);
	if (r->cluster != NULL && cmd->last_key < 0 && argc > 2)
		return forward_split(&c, r);
	return forward(&c, r);
}
