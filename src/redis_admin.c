/*
 * redis_admin.c - the whole-store calls on a Redis handle (redis_typed.h):
 * shmkv_scan as SCAN over every master, shmkv_stats and shmkv_get_config
 * as far as a Redis can answer them honestly, without a read of the
 * zeroed header a remote handle points at. The shm store's maintenance
 * calls (sweep, maintain, recover, check, huge pages, max_memory, the
 * eviction policy) have no meaning on a server that runs its own: they
 * answer -ENOTSUP in their own files, before any read of the segment.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "redis_typed_impl.h"

/* A SCAN cursor's master in its top bits: a server's own cursor is below
 * its table's size (Redis reverses the bits of a bucket index), far from
 * 2^58; 6 bits name up to SHMKV_REDIS_NODES_MAX masters. */
#define MASTER_SHIFT	 58
#define NODE_CURSOR_MASK ((1ull << MASTER_SHIFT) - 1)

/* "<prefix>*" with the prefix's glob characters escaped, into @buf
 * (2 * SHMKV_REDIS_PREFIX_MAX + 2 bytes). Return: its length. */
static size_t match_of(const struct shmkv_redis *r, char *buf)
{
	size_t n = 0;

	for (size_t i = 0; i < r->uri.prefix_len; i++) {
		char ch = r->uri.prefix[i];

		if (strchr("*?[]\\", ch) != NULL && ch != '\0')
			buf[n++] = '\\';
		buf[n++] = ch;
	}
	buf[n++] = '*';
	return n;
}

/* One SCAN reply's keys to @fn, the prefix stripped. Return: 0, or the
 * non-zero @fn returned. */
static int scan_keys(const struct shmkv_redis *r, const redisReply *keys,
		     shmkv_scan_fn fn, void *arg)
{
	size_t plen = r->uri.prefix_len;

	for (size_t i = 0; i < keys->elements; i++) {
		const redisReply *k = keys->element[i];
		int stop;

		/* MATCH is a filter the server applies: a key without the
		 * prefix cannot come back, but is never shown if it does. */
		if (k->type != REDIS_REPLY_STRING || k->len < plen ||
		    memcmp(k->str, r->uri.prefix, plen) != 0)
			continue;
		stop = fn(k->str + plen, k->len - plen, arg);
		if (stop)
			return stop;
	}
	return 0;
}

/* A SCAN reply's next cursor, or -EPROTO. */
static int scan_cursor(const redisReply *rep, uint64_t *c)
{
	char *end;

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
	    rep->element[0]->type != REDIS_REPLY_STRING ||
	    rep->element[1]->type != REDIS_REPLY_ARRAY)
		return -EPROTO;
	errno = 0;
	*c = strtoull(rep->element[0]->str, &end, 10);
	if (errno != 0 || *end != '\0' || *c > NODE_CURSOR_MASK)
		return -EPROTO;
	return 0;
}

int shmkv__redis_scan(shmkv_t *kv, uint64_t cursor, uint32_t count,
		      shmkv_scan_fn fn, void *arg, uint64_t *next)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);
	char match[2 * SHMKV_REDIS_PREFIX_MAX + 2];
	int masters = shmkv__redis_masters(r);
	int m = (int)(cursor >> MASTER_SHIFT), err, stop;
	struct shmkv__rc c = { 0 };
	redisReply *rep;
	uint64_t nc = 0;

	if (masters <= 0)
		return masters < 0 ? masters : -EIO;
	/* A cursor of a cluster that had more masters: start again (SCAN
	 * may visit a key twice, never skip one present throughout). */
	if (m >= masters) {
		m = 0;
		cursor = 0;
	}
	shmkv__rc_str(&c, "SCAN");
	shmkv__rc_int(&c, (int64_t)(cursor & NODE_CURSOR_MASK));
	shmkv__rc_str(&c, "MATCH");
	shmkv__rc_arg(&c, match, match_of(r, match));
	shmkv__rc_str(&c, "COUNT");
	shmkv__rc_int(&c, count == 0 ? 10 : count);
	err = shmkv__rc_call_master(r, m, c.argc, c.argv, c.len, &rep);
	if (err)
		return err;
	err = rep->type == REDIS_REPLY_ERROR ? shmkv__redis_err(rep)
					     : scan_cursor(rep, &nc);
	if (err) {
		freeReplyObject(rep);
		return err;
	}
	stop = scan_keys(r, rep->element[1], fn, arg);
	freeReplyObject(rep);
	if (stop) {
		/* Where this batch began: the server's cursor cannot resume
		 * within a batch, and a key may be visited twice, never
		 * skipped. */
		*next = cursor;
		return stop;
	}
	if (nc == 0 && m + 1 >= masters)
		*next = 0;
	else if (nc == 0)
		*next = (uint64_t)(m + 1) << MASTER_SHIFT;
	else
		*next = (uint64_t)m << MASTER_SHIFT | nc;
	return 0;
}

static int count_key(const void *key, size_t klen, void *arg)
{
	(void)key;
	(void)klen;
	(*(uint64_t *)arg)++;
	return 0;
}

/* Keys under the handle's prefix: SCAN (whole keyspace, O(keys)); a key
 * a rehash shows twice is counted twice, as SCAN's contract allows. */
static int count_prefixed(shmkv_t *kv, uint64_t *n)
{
	uint64_t cur = 0;
	int err;

	do
		err = shmkv__redis_scan(kv, cur, 1000, count_key, n, &cur);
	while (err == 0 && cur != 0);
	return err;
}

/* DBSIZE summed over the masters: every key of the db, when the handle
 * has no prefix. */
static int count_dbsize(struct shmkv_redis *r, uint64_t *n)
{
	static const char *argv[] = { "DBSIZE" };
	static const size_t len[] = { 6 };
	int masters = shmkv__redis_masters(r);

	if (masters <= 0)
		return masters < 0 ? masters : -EIO;
	for (int m = 0; m < masters; m++) {
		redisReply *rep;
		int err = shmkv__rc_call_master(r, m, 1, argv, len, &rep);

		if (err)
			return err;
		err = rep->type == REDIS_REPLY_INTEGER ? 0
		      : rep->type == REDIS_REPLY_ERROR ? shmkv__redis_err(rep)
						       : -EPROTO;
		if (err == 0)
			*n += (uint64_t)rep->integer;
		freeReplyObject(rep);
		if (err)
			return err;
	}
	return 0;
}

int shmkv__redis_stats(shmkv_t *kv, struct shmkv_stats *st)
{
	struct shmkv_redis *r = shmkv__redis_of(kv);
	uint64_t n = 0;
	int err;

	/* Only live_keys has a meaning here; the table, pages, classes and
	 * growth of the shm store are not Redis's: left 0. */
	memset(st, 0, sizeof(*st));
	err = r->uri.prefix_len == 0 ? count_dbsize(r, &n)
				     : count_prefixed(kv, &n);
	if (err)
		return err;
	st->live_keys = n;
	return 0;
}

int shmkv__redis_get_config(const shmkv_t *kv, struct shmkv_config *cfg)
{
	/* The limits a key and a value have on this handle; no geometry,
	 * memory, policy or mode: the server's settings are not the store's. */
	memset(cfg, 0, sizeof(*cfg));
	cfg->key_max = kv->geo.key_max;
	cfg->value_max = kv->geo.value_max;
	return 0;
}
