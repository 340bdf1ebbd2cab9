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
 * - A command of several keys (DEL, EXISTS) on a cluster is sent once per
 *   key slot and the counts summed, as cluster clients do: its keys may
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
	char **owned;	   /* the prefixed keys, freed after */
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

/* @argv[@from..@argc) into @s, after @head's @nhead words, keys (by
 * their index in @argv) prefixed. Return: 0, -ENOMEM, -ENAMETOOLONG. */
static int sent_build(struct shmkv_redis *r, const struct shmkv_command *cmd,
		      const char *const *head, int nhead, int from, int argc,
		      const char *const *argv, const size_t *argvlen,
		      struct sent *s)
{
	int n = nhead + argc - from;

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
	for (int i = from; i < argc; i++) {
		int o = nhead + i - from;
		size_t cap = r->uri.prefix_len + argvlen[i];

		s->argv[o] = argv[i] != NULL ? argv[i] : "";
		s->len[o] = argvlen[i];
		if (!is_key(cmd, argc, i))
			continue;
		if (r->uri.prefix_len > 0) {
			ssize_t k;

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

/* A server's error reply that says what a shared-memory store's failure
 * would (a write to a read-only replica, no memory left): the reply keeps
 * the server's text, and shmkv_exec returns the errno as the shm store
 * does. Other error replies are Redis's replies: 0. */
static int server_refusal(const struct shmkv_reply *r)
{
	static const struct {
		const char *word;
		int err;
	} refusals[] = { { "READONLY ", -EROFS }, { "OOM ", -ENOMEM } };

	if (r->type != SHMKV_REPLY_ERROR || r->str == NULL)
		return 0;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++)
		if (strncmp(r->str, refusals[i].word,
			    strlen(refusals[i].word)) == 0)
			return refusals[i].err;
	return 0;
}

/* One command (@head's words, then @argv's from @from on) and its
 * reply. */
static int send_one(struct exec_ctx *c, struct shmkv_redis *r,
		    const char *const *head, int nhead, int from, int argc,
		    const char *const *argv, const size_t *argvlen,
		    redisReply **rep)
{
	const struct shmkv_command *cmd = &c->cmd->pub;
	struct sent s;
	int err = sent_build(r, cmd, head, nhead, from, argc, argv, argvlen,
			     &s);

	*rep = NULL;
	if (err == 0)
		err = shmkv__redis_call(r, s.route, s.route_len, s.argc, s.argv,
					s.len, rep);
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
		err = send_one(c, r, head, 3, 1, c->argc, c->argv, c->argvlen,
			       &rep);
	} else {
		err = send_one(c, r, NULL, 0, 0, c->argc, c->argv, c->argvlen,
			       &rep);
	}
	if (err)
		return shmkv__reply_fail(c, err);
	err = reply_from(c, rep);
	freeReplyObject(rep);
	return err ? err : server_refusal(c->reply);
}

/* The keys of @s (argv[1..], prefixed) in @slot's group, after the
 * command's name, into @argv/@len. Return: how many words. */
static int slot_group(const struct sent *s, const unsigned *slots,
		      unsigned slot, bool *done, const char **argv, size_t *len)
{
	int n = 1;

	argv[0] = s->argv[0];
	len[0] = s->len[0];
	for (int i = 1; i < s->argc; i++)
		if (!done[i] && slots[i] == slot) {
			done[i] = true;
			argv[n] = s->argv[i];
			len[n++] = s->len[i];
		}
	return n;
}

/* One group's command; its count added to *@sum. Return: 0, 1 (an error
 * reply, now in @c), or the call's errno. */
static int send_group(struct exec_ctx *c, struct shmkv_redis *r, int argc,
		      const char **argv, const size_t *len, long long *sum)
{
	redisReply *rep;
	int err = shmkv__redis_call(r, argv[1], len[1], argc, argv, len, &rep);

	if (err)
		return err;
	if (rep->type != REDIS_REPLY_INTEGER) {
		err = reply_from(c, rep); /* an error reply: as it is */
		freeReplyObject(rep);
		return err ? err : 1;
	}
	*sum += rep->integer;
	freeReplyObject(rep);
	return 0;
}

/*
 * DEL k1 k2 ... on a cluster: one command per key slot, the counts summed,
 * as cluster clients do (a command's keys must share a slot). Keys are
 * prefixed first: the slot is the prefixed key's.
 */
static int forward_split(struct exec_ctx *c, struct shmkv_redis *r)
{
	const struct shmkv_command *cmd = &c->cmd->pub;
	unsigned *slots = calloc((size_t)c->argc, sizeof(*slots));
	bool *done = calloc((size_t)c->argc, sizeof(*done));
	const char **argv = calloc((size_t)c->argc, sizeof(*argv));
	size_t *len = calloc((size_t)c->argc, sizeof(*len));
	long long sum = 0;
	struct sent s;
	int err = sent_build(r, cmd, NULL, 0, 0, c->argc, c->argv, c->argvlen,
			     &s);

	if (err == 0 && (!slots || !done || !argv || !len))
		err = -ENOMEM;
	for (int i = 1; err == 0 && i < s.argc; i++)
		slots[i] = shmkv__redis_key_slot(s.argv[i], s.len[i]);
	for (int i = 1; err == 0 && i < s.argc; i++)
		if (!done[i]) {
			int n = slot_group(&s, slots, slots[i], done, argv,
					   len);

			err = send_group(c, r, n, argv, len, &sum);
		}
	sent_free(&s);
	free(slots);
	free(done);
	free(argv);
	free(len);
	if (err == 1)
		return 0; /* the error reply is built */
	if (err)
		return shmkv__reply_fail(c, err);
	return shmkv__reply_int(c, sum);
}

int shmkv__redis_exec(shmkv_t *kv, int argc, const char *const *argv,
		      const size_t *argvlen, struct shmkv_reply *reply)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);
	const struct shmkv_command *cmd = shmkv_command_find(argv[0],
							     argvlen[0]);
	/* exec.c's row: its first member is the public one (C11 6.7.2.1). */
	struct exec_ctx c = {
		kv,	 argc,	argv,
		argvlen, reply, (const struct exec_cmd *)(const void *)cmd
	};

	memset(reply, 0, sizeof(*reply));
	if (cmd == NULL) /* shmkv_exec looked it up first: not reached */
		return shmkv__reply_fail(&c, -EINVAL);
	if (r->cluster != NULL && cmd->last_key < 0 && argc > 2)
		return forward_split(&c, r);
	return forward(&c, r);
}
