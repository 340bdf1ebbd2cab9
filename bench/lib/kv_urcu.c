/*
 * kv_urcu.c - liburcu's rculfhash as the in-process reference for a
 * lock-free hash table. A key's node holds the key and its value (nodes
 * are immutable once published: SET and INCR publish a new node with
 * cds_lfht_add_replace / cds_lfht_replace, as the rculfhash manual
 * recommends). Retired nodes are freed after synchronize_rcu() in batches
 * of RETIRE_BATCH, in this thread: no call_rcu helper thread runs on the
 * other core during the timed loops, so the figure is one thread's work.
 *
 * The table is presized for the key set (no resize during a run) and uses
 * the default (memb) flavor; the calling thread registers as an RCU reader.
 */
#include <urcu.h>
#include <urcu/rculfhash.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kv.h"

#define RETIRE_BATCH 1024u

struct unode {
	struct cds_lfht_node node;
	uint32_t klen;
	uint32_t vlen;
	char key[16];
	unsigned char val[];
};

struct utable {
	struct cds_lfht *ht;
	uint32_t value_max;
	unsigned nretired;
	struct unode *retired[RETIRE_BATCH];
};

#define U(kv) ((struct utable *)(kv)->impl)

/* Tables open in this thread: it is an RCU reader while any is. */
static unsigned open_tables;

static int match(struct cds_lfht_node *node, const void *key)
{
	const struct unode *u = caa_container_of(node, struct unode, node);

	return u->klen == BENCH_KEY_LEN &&
	       memcmp(u->key, key, BENCH_KEY_LEN) == 0;
}

static void reclaim(struct utable *t)
{
	synchronize_rcu();
	for (unsigned i = 0; i < t->nretired; i++)
		free(t->retired[i]);
	t->nretired = 0;
}

/* Call outside a read-side critical section. */
static void retire(struct utable *t, struct unode *u)
{
	if (t->nretired == RETIRE_BATCH)
		reclaim(t);
	t->retired[t->nretired++] = u;
}

static struct unode *node_new(const char *key, const void *val, size_t vlen)
{
	struct unode *u = malloc(sizeof(*u) + vlen);

	if (!u)
		return NULL;
	cds_lfht_node_init(&u->node);
	u->klen = BENCH_KEY_LEN;
	u->vlen = (uint32_t)vlen;
	memcpy(u->key, key, BENCH_KEY_LEN);
	memcpy(u->val, val, vlen);
	return u;
}

/* Under rcu_read_lock: the key's node, or NULL. */
static struct unode *lookup(struct utable *t, const char *key, uint64_t hash,
			    struct cds_lfht_iter *it)
{
	struct cds_lfht_node *n;

	cds_lfht_lookup(t->ht, hash, match, key, it);
	n = cds_lfht_iter_get_node(it);
	return n ? caa_container_of(n, struct unode, node) : NULL;
}

#define KEY(kv, id) bench_key((kv)->keys, (id))
#define HASH(key)   bench_hash((key), BENCH_KEY_LEN)

static int u_get(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	const char *key = KEY(kv, id);
	struct cds_lfht_iter it;
	struct unode *u;
	int rc = 0;

	(void)v, (void)n;
	rcu_read_lock();
	u = lookup(U(kv), key, HASH(key), &it);
	if (u)
		rc = bench_kv_give(kv, u->val, u->vlen);
	rcu_read_unlock();
	return rc;
}

/* SET and GETSET: publish a new node, replacing any old one. */
static int replace(struct bench_kv *kv, uint32_t id, const void *v, size_t n,
		   int give_old)
{
	const char *key = KEY(kv, id);
	struct cds_lfht_node *old;
	struct unode *u, *o = NULL;
	int rc = give_old ? 0 : 1;

	if (n > U(kv)->value_max)
		return -E2BIG;
	u = node_new(key, v, n);
	if (!u)
		return -ENOMEM;
	rcu_read_lock();
	old = cds_lfht_add_replace(U(kv)->ht, HASH(key), match, key, &u->node);
	if (old) {
		o = caa_container_of(old, struct unode, node);
		if (give_old)
			rc = bench_kv_give(kv, o->val, o->vlen);
	}
	rcu_read_unlock();
	if (o)
		retire(U(kv), o);
	return rc;
}

static int u_set(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return replace(kv, id, v, n, 0);
}

static int u_getset(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return replace(kv, id, v, n, 1);
}

static int u_setnx(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	const char *key = KEY(kv, id);
	uint64_t hash = HASH(key);
	struct cds_lfht_iter it;
	struct cds_lfht_node *got;
	struct unode *u;

	if (n > U(kv)->value_max)
		return -E2BIG;
	rcu_read_lock();
	/* Present: answer without allocating, as a careful caller would. */
	if (lookup(U(kv), key, hash, &it)) {
		rcu_read_unlock();
		return 0;
	}
	u = node_new(key, v, n);
	got = u ? cds_lfht_add_unique(U(kv)->ht, hash, match, key, &u->node)
		: NULL;
	rcu_read_unlock();
	if (!u)
		return -ENOMEM;
	if (got == &u->node)
		return 1;
	free(u); /* never published */
	return 0;
}

/* DEL, and DELIFEQ when @val is not NULL. */
static int remove_key(struct bench_kv *kv, uint32_t id, const void *val,
		      size_t n)
{
	const char *key = KEY(kv, id);
	struct cds_lfht_iter it;
	struct unode *u;
	int rc = 0;

	rcu_read_lock();
	u = lookup(U(kv), key, HASH(key), &it);
	if (u && (!val || (u->vlen == n && memcmp(u->val, val, n) == 0)))
		rc = cds_lfht_del(U(kv)->ht, &u->node) == 0;
	rcu_read_unlock();
	if (rc)
		retire(U(kv), u);
	return rc;
}

static int u_del(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v;
	return remove_key(kv, id, NULL, n);
}

static int u_delifeq(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return remove_key(kv, id, v ? v : "", n);
}

/* Under rcu_read_lock: the node's integer (0 when missing). */
static int node_int(const struct unode *u, int64_t *out)
{
	char buf[24], *end;

	*out = 0;
	if (!u)
		return 0;
	if (u->vlen == 0 || u->vlen > 20)
		return -EDOM;
	memcpy(buf, u->val, u->vlen);
	buf[u->vlen] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return errno || *end ? -EDOM : 0;
}

static int u_incr(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	const char *key = KEY(kv, id);
	uint64_t hash = HASH(key);
	struct cds_lfht_iter it;
	struct unode *o, *u = NULL;
	char num[24];
	int64_t cur;
	int rc, len;

	(void)v, (void)n;
	rcu_read_lock();
	o = lookup(U(kv), key, hash, &it);
	rc = node_int(o, &cur);
	if (!rc && cur == INT64_MAX)
		rc = -EOVERFLOW;
	if (!rc) {
		len = snprintf(num, sizeof(num), "%lld", (long long)(cur + 1));
		u = node_new(key, num, (size_t)len);
		rc = !u	 ? -ENOMEM
		     : o ? cds_lfht_replace(U(kv)->ht, &it, hash, match, key,
					    &u->node)
			 : (cds_lfht_add_unique(U(kv)->ht, hash, match, key,
						&u->node) == &u->node
				    ? 0
				    : -EAGAIN);
	}
	rcu_read_unlock();
	if (rc) {
		free(u); /* never published (NULL when not allocated) */
		return rc;
	}
	if (o)
		retire(U(kv), o);
	kv->incr_result = cur + 1;
	return 0;
}

/* Unlinks every node; returns them in a malloc'ed array (NULL: none or
 * out of memory, then they leak: the process is closing the table). */
static struct unode **unlink_all(struct utable *t, size_t *count)
{
	struct unode **all = NULL, **grown;
	size_t cap = 0;
	struct cds_lfht_iter it;
	struct cds_lfht_node *n;

	*count = 0;
	rcu_read_lock();
	cds_lfht_for_each(t->ht, &it, n)
	{
		if (cds_lfht_del(t->ht, n) != 0)
			continue;
		if (*count == cap) {
			cap = cap ? 2 * cap : 1024;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown)
				break;
			all = grown;
		}
		all[(*count)++] = caa_container_of(n, struct unode, node);
	}
	rcu_read_unlock();
	return all;
}

static void u_close(struct bench_kv *kv)
{
	struct utable *t = U(kv);
	struct unode **all;
	size_t count;

	if (t->ht) {
		all = unlink_all(t, &count);
		reclaim(t); /* the grace period covers the unlinked too */
		for (size_t i = 0; i < count; i++)
			free(all[i]);
		free(all);
		cds_lfht_destroy(t->ht, NULL);
	}
	if (--open_tables == 0)
		rcu_unregister_thread();
}

static const struct bench_kv_ops urcu_ops = {
	.name = "rculfhash (1 process)",
	.tag = "rculfhash",
	.fn = { u_get, u_set, u_setnx, u_getset, u_del, u_delifeq, u_incr },
	.close = u_close,
};

int bench_kv_rculfhash(struct bench_kv *kv, const char *keys, uint32_t n,
		       uint32_t value_max)
{
	struct utable *t = calloc(1, sizeof(*t));
	unsigned long size = 1;

	bench_kv_init(kv, &urcu_ops, keys, n, NULL);
	if (!t)
		return -ENOMEM;
	while (size < 2ul * n)
		size <<= 1;
	t->value_max = value_max;
	t->ht = cds_lfht_new(size, size, size, 0, NULL);
	if (open_tables++ == 0)
		rcu_register_thread();
	kv->impl = t;
	if (!t->ht || bench_kv_out_init(kv, value_max) != 0) {
		bench_kv_close(kv);
		return -ENOMEM;
	}
	return 0;
}
