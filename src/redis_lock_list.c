/*
 * redis_lock_list.c - shmkv_lock_list() on a Redis store: SCAN every
 * master for the safe locks' counter keys ("P lock.{*}:token", hashes:
 * every lock that ever had a grant has one, held or free), then read each
 * lock's record on its node. Reads only. A snapshot: locks come and go
 * while it runs, and each is read at its own instant.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis_lock_call.h"
#include "redis_lock.h"

struct rlist {
	struct shmkv_redis *r;
	shmkv_lock_list_fn fn;
	void *arg;
	struct shmkv__rl_self me;
	int count;
};

/* The glob of every counter key of @r: the prefix with its glob
 * characters escaped, then "lock.{*}:token". */
static size_t pattern(const struct shmkv_redis *r, char *buf, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < r->uri.prefix_len && n + 2 < cap; i++) {
		char c = r->uri.prefix[i];

		if (strchr("*?[]\\", c))
			buf[n++] = '\\';
		buf[n++] = c;
	}
	n += (size_t)snprintf(buf + n, cap - n, "lock.{*}:token");
	return n;
}

static int call(struct rlist *l, const char *key, size_t klen, int argc,
		const char **av, const size_t *al, redisReply **rep)
{
	int rc = shmkv__rl_call(l->r, key, klen, argc, av, al, rep);

	if (rc == 0 && (*rep)->type == REDIS_REPLY_ERROR) {
		rc = shmkv__rl_err(*rep);
		freeReplyObject(*rep);
		*rep = NULL;
		return rc < 0 ? rc : -EIO; /* (for the analyzer: never 0) */
	}
	return rc;
}

/* Reads one lock (its record, lease left, last token) and reports it.
 * Return: 1 to stop, 0 to go on, -errno. */
static int visit(struct rlist *l, const char *name, size_t nlen)
{
	struct shmkv_lock_info info = { .name = name, .name_len = nlen };
	struct shmkv__rl_keys k;
	struct shmkv__rl_rec rec;
	const char *av[3];
	size_t al[3];
	redisReply *g = NULL, *t = NULL, *tm = NULL;
	int rc = shmkv__rl_keys(l->r, name, nlen, &k);

	if (rc)
		return 0;
	av[0] = "GET", al[0] = 3, av[1] = k.rec, al[1] = k.rec_len;
	rc = call(l, k.rec, k.rec_len, 2, av, al, &g);
	av[0] = "PTTL", al[0] = 4;
	if (rc == 0)
		rc = call(l, k.rec, k.rec_len, 2, av, al, &t);
	av[0] = "TIME", al[0] = 4;
	if (rc == 0)
		rc = call(l, k.rec, k.rec_len, 1, av, al, &tm);
	if (rc)
		goto out;
	if (g->type == REDIS_REPLY_STRING &&
	    shmkv__rl_rec_parse(g->str, g->len, &rec) == 0 &&
	    t->type == REDIS_REPLY_INTEGER && t->integer > 0 &&
	    tm->type == REDIS_REPLY_ARRAY && tm->elements == 2) {
		long long s = 0, us = 0;

		if (tm->element[0]->type == REDIS_REPLY_STRING &&
		    tm->element[1]->type == REDIS_REPLY_STRING) {
			s = strtoll(tm->element[0]->str, NULL, 10);
			us = strtoll(tm->element[1]->str, NULL, 10);
		}
		info.held = 1; /* a record exists only while its PX runs */
		/* Judged on this host only: another host's holder (or one
		 * in another pid namespace) is reported alive. */
		info.alive = !shmkv__rl_holder_dead(&rec, &l->me);
		info.pid = rec.pid;
		info.token = rec.token;
		info.held_for_ms = s * 1000 + us / 1000 - rec.grant_ms;
		info.lease_left_ms = t->integer;
	} else if (g->type == REDIS_REPLY_NIL) {
		redisReply *h = NULL;

		av[0] = "HGET", al[0] = 4, av[1] = k.ctr, al[1] = k.ctr_len;
		av[2] = "t", al[2] = 1;
		rc = call(l, k.ctr, k.ctr_len, 3, av, al, &h);
		if (rc)
			goto out;
		info.alive = -1;
		if (h->type == REDIS_REPLY_STRING)
			info.token = strtoull(h->str, NULL, 10);
		freeReplyObject(h);
	} else {
		goto out; /* not a lock, or gone meanwhile: skipped */
	}
	l->count++;
	rc = l->fn(&info, l->arg) ? 1 : 0;
out:
	if (g)
		freeReplyObject(g);
	if (t)
		freeReplyObject(t);
	if (tm)
		freeReplyObject(tm);
	return rc;
}

/* One SCAN round's keys. Return: 1 stop, 0 go on, -errno. */
static int visit_keys(struct rlist *l, const redisReply *keys)
{
	char name[SHMKV_LOCK_NAME_MAX];

	for (size_t i = 0; i < keys->elements; i++) {
		const redisReply *e = keys->element[i];
		ssize_t n;
		int rc;

		if (e->type != REDIS_REPLY_STRING)
			continue;
		n = shmkv__rl_name_of(l->r, e->str, e->len, true, name,
				      sizeof(name));
		if (n <= 0)
			continue;
		rc = visit(l, name, (size_t)n);
		if (rc)
			return rc;
	}
	return 0;
}

/* SCAN master @m to its end. Return: 1 stop, 0 done, -errno. */
static int scan_master(struct rlist *l, int m)
{
	char cursor[32] = "0", pat[2 * 128 + 32];
	size_t plen = pattern(l->r, pat, sizeof(pat));

	do {
		const char *av[8] = { "SCAN",  cursor, "MATCH", pat,
				      "COUNT", "512",  "TYPE",	"hash" };
		size_t al[8] = { 4, strlen(cursor), 5, plen, 5, 3, 4, 4 };
		redisReply *rep;
		int rc = shmkv__rl_call_master(l->r, m, 8, av, al, &rep);

		if (rc)
			return rc;
		if (rep->type == REDIS_REPLY_ERROR)
			rc = shmkv__rl_err(rep);
		else if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
			 rep->element[0]->type != REDIS_REPLY_STRING ||
			 rep->element[0]->len >= sizeof(cursor) ||
			 rep->element[1]->type != REDIS_REPLY_ARRAY)
			rc = -EPROTO;
		else {
			memcpy(cursor, rep->element[0]->str,
			       rep->element[0]->len + 1);
			rc = visit_keys(l, rep->element[1]);
		}
		freeReplyObject(rep);
		if (rc)
			return rc;
	} while (strcmp(cursor, "0") != 0);
	return 0;
}

int shmkv__redis_lock_list(shmkv_t *kv, shmkv_lock_list_fn fn, void *arg)
{
	struct rlist l = { .r = shmkv__redis_of(kv), .fn = fn, .arg = arg };
	int masters;

	shmkv__rl_self(&l.me);
	masters = shmkv__redis_masters(l.r);
	if (masters < 0)
		return masters;
	for (int m = 0; m < masters; m++) {
		int rc = scan_master(&l, m);

		if (rc < 0)
			return rc;
		if (rc > 0)
			break;
	}
	return l.count;
}
