/*
 * kv_mutex.c - the baseline most C code would write: an open-addressed
 * hash map (linear probing, tombstones) in shared memory, every command
 * under one process-shared robust pthread mutex. Values live in a fixed
 * value_max-byte cell per slot, so no allocator is involved.
 *
 * The whole map is one bench_shm_alloc region: forked children share it.
 */
#include "kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KEY_CAP 20u

enum { E_EMPTY = 0, E_USED, E_TOMB };

struct entry {
	uint32_t hash;
	uint8_t state;
	uint8_t klen;
	uint16_t pad;
	uint32_t vlen;
	char key[KEY_CAP];
};
_Static_assert(sizeof(struct entry) == 32, "entry is half a cache line");

struct map_hdr {
	pthread_mutex_t lock;
	uint32_t slots;
	uint32_t value_stride;
};

struct map {
	struct map_hdr *hdr;
	struct entry *entries;
	unsigned char *values;
	size_t bytes;
	uint32_t mask;
	uint32_t value_max;
	uint32_t stride;
};

#define M(kv) ((struct map *)(kv)->impl)

static void map_lock(struct map *m)
{
	/* A holder died mid-command: the map may be half-updated. A real
	 * program would repair it; the bench only never kills a holder. */
	if (pthread_mutex_lock(&m->hdr->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&m->hdr->lock);
}

static void map_unlock(struct map *m)
{
	pthread_mutex_unlock(&m->hdr->lock);
}

static unsigned char *value_at(struct map *m, uint32_t i)
{
	return m->values + (size_t)i * m->stride;
}

/*
 * Looks @key up. Return: its index, or -1 with *@ins the first reusable
 * slot on its probe path (UINT32_MAX: the table is full). Bounded by the
 * table size.
 */
static int64_t find(struct map *m, const char *key, uint32_t klen,
		    uint32_t hash, uint32_t *ins)
{
	uint32_t i = hash & m->mask;

	*ins = UINT32_MAX;
	for (uint32_t n = 0; n <= m->mask; n++, i = (i + 1) & m->mask) {
		struct entry *e = &m->entries[i];

		if (e->state == E_EMPTY) {
			if (*ins == UINT32_MAX)
				*ins = i;
			return -1;
		}
		if (e->state == E_TOMB) {
			if (*ins == UINT32_MAX)
				*ins = i;
			continue;
		}
		if (e->hash == hash && e->klen == klen &&
		    memcmp(e->key, key, klen) == 0)
			return i;
	}
	return -1;
}

static void put_value(struct map *m, uint32_t i, const void *val, size_t len)
{
	memcpy(value_at(m, i), val, len);
	m->entries[i].vlen = (uint32_t)len;
}

/* Inserts at @ins (from find). Return: 0 or -ENOSPC. */
static int insert(struct map *m, uint32_t ins, const char *key, uint32_t klen,
		  uint32_t hash, const void *val, size_t len)
{
	struct entry *e;

	if (ins == UINT32_MAX)
		return -ENOSPC;
	e = &m->entries[ins];
	e->hash = hash;
	e->klen = (uint8_t)klen;
	memcpy(e->key, key, klen);
	e->state = E_USED;
	put_value(m, ins, val, len);
	return 0;
}

/* What every command starts with: the key, its hash, the lock. */
struct op {
	const char *key;
	uint32_t klen, hash, ins;
	int64_t at;
};

static int begin(struct bench_kv *kv, uint32_t id, size_t vlen, struct op *o)
{
	struct map *m = M(kv);

	if (vlen > m->value_max)
		return -E2BIG;
	o->key = bench_key(kv->keys, id);
	o->klen = BENCH_KEY_LEN;
	o->hash = (uint32_t)bench_hash(o->key, o->klen);
	map_lock(m);
	o->at = find(m, o->key, o->klen, o->hash, &o->ins);
	return 0;
}

static int end(struct bench_kv *kv, int rc)
{
	map_unlock(M(kv));
	return rc;
}

static int m_get(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	struct map *m = M(kv);
	struct op o;

	(void)v, (void)n;
	begin(kv, id, 0, &o);
	if (o.at < 0)
		return end(kv, 0);
	return end(kv, bench_kv_give(kv, value_at(m, (uint32_t)o.at),
				     m->entries[o.at].vlen));
}

/*
 * SET, SETNX and GETSET: one worker, as Redis's setGenericCommand. A
 * missing key is inserted by all three; a present one is kept by SETNX,
 * and overwritten by SET and GETSET (GETSET first copies the old value
 * out).
 */
static int m_store(struct bench_kv *kv, enum bench_cmd cmd, uint32_t id,
		   const void *v, size_t n)
{
	struct map *m = M(kv);
	struct op o;
	int rc = begin(kv, id, n, &o);

	if (rc)
		return rc;
	if (o.at < 0) {
		rc = insert(m, o.ins, o.key, o.klen, o.hash, v, n);
		return end(kv, rc ? rc : cmd != BCMD_GETSET);
	}
	if (cmd == BCMD_SETNX)
		return end(kv, 0);
	rc = cmd != BCMD_GETSET ? 1
				: bench_kv_give(kv, value_at(m, (uint32_t)o.at),
						m->entries[o.at].vlen);
	if (rc == 1)
		put_value(m, (uint32_t)o.at, v, n);
	return end(kv, rc);
}
BENCH_KV_FN(m_set, m_store, BCMD_SET)
BENCH_KV_FN(m_setnx, m_store, BCMD_SETNX)
BENCH_KV_FN(m_getset, m_store, BCMD_GETSET)

static int m_del(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	struct op o;

	(void)v, (void)n;
	begin(kv, id, 0, &o);
	if (o.at < 0)
		return end(kv, 0);
	M(kv)->entries[o.at].state = E_TOMB;
	return end(kv, 1);
}

static int m_delifeq(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	struct map *m = M(kv);
	struct op o;
	int rc = begin(kv, id, n, &o);

	if (rc)
		return rc;
	if (o.at < 0 || m->entries[o.at].vlen != n ||
	    memcmp(value_at(m, (uint32_t)o.at), v, n) != 0)
		return end(kv, 0);
	m->entries[o.at].state = E_TOMB;
	return end(kv, 1);
}

/* Redis's rule, simplified: an optional '-' and up to 19 digits. */
static int parse_int(const unsigned char *s, size_t len, int64_t *out)
{
	char buf[24];
	char *end;

	if (len == 0 || len > 20)
		return -EDOM;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*out = strtoll(buf, &end, 10);
	return errno || *end ? -EDOM : 0;
}

static int m_incr(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	struct map *m = M(kv);
	struct op o;
	int64_t cur = 0;
	char num[24];
	int len, rc;

	(void)v, (void)n;
	begin(kv, id, 0, &o);
	if (o.at >= 0 && (rc = parse_int(value_at(m, (uint32_t)o.at),
					 m->entries[o.at].vlen, &cur)))
		return end(kv, rc);
	if (cur == INT64_MAX)
		return end(kv, -EOVERFLOW);
	kv->incr_result = cur + 1;
	len = snprintf(num, sizeof(num), "%lld", (long long)kv->incr_result);
	if (o.at >= 0) {
		put_value(m, (uint32_t)o.at, num, (size_t)len);
		return end(kv, 0);
	}
	return end(kv,
		   insert(m, o.ins, o.key, o.klen, o.hash, num, (size_t)len));
}

static void m_close(struct bench_kv *kv)
{
	bench_shm_free(M(kv)->hdr, M(kv)->bytes);
}

static const struct bench_kv_ops mutex_ops = {
	.name = "mutex map",
	.tag = "mutex_map",
	.fn = { m_get, m_set, m_setnx, m_getset, m_del, m_delifeq, m_incr },
	.close = m_close,
};

int bench_kv_mutex_map(struct bench_kv *kv, uint32_t slots, const char *keys,
		       uint32_t n, uint32_t value_max)
{
	struct map *m = calloc(1, sizeof(*m));
	size_t ents;

	bench_kv_init(kv, &mutex_ops, keys, n, m);
	if (!m || slots == 0 || (slots & (slots - 1)) ||
	    BENCH_KEY_LEN > KEY_CAP)
		goto fail;
	m->mask = slots - 1;
	m->value_max = value_max;
	m->stride = (value_max + 7u) & ~7u;
	ents = (size_t)slots * sizeof(struct entry);
	m->bytes = 128 + ents + (size_t)slots * m->stride;
	m->hdr = bench_shm_alloc(m->bytes);
	if (!m->hdr || bench_robust_mutex_init(&m->hdr->lock) != 0)
		goto fail;
	m->hdr->slots = slots;
	m->hdr->value_stride = m->stride;
	m->entries = (struct entry *)((unsigned char *)m->hdr + 128);
	m->values = (unsigned char *)m->entries + ents;
	if (bench_kv_out_init(kv, value_max) == 0)
		return 0;
fail:
	bench_kv_close(kv);
	return -ENOMEM;
}
