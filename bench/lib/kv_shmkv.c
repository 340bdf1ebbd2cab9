/*
 * kv_shmkv.c - the benchmarks' command interface (kv.h) over shmkv: the
 * public API, and the prepared-key API (shmkv_key_*).
 *
 * Each call resets kv->out to the full buffer: what any caller of GET
 * does, and the only work the wrapper adds besides the indirect call,
 * which every implementation pays alike.
 */
#include "kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline const char *key_of(const struct bench_kv *kv, uint32_t id)
{
	return bench_key(kv->keys, id);
}

static inline struct shmkv_value *out_reset(struct bench_kv *kv)
{
	kv->out.len = 0;
	return &kv->out;
}

/*
 * The public API.
 */
static int s_get(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v, (void)n;
	return shmkv_get(kv->impl, key_of(kv, id), BENCH_KEY_LEN,
			 out_reset(kv));
}

static int s_set(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_set(kv->impl, key_of(kv, id), BENCH_KEY_LEN, v, n, 0, 0,
			 NULL);
}

static int s_setnx(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_setnx(kv->impl, key_of(kv, id), BENCH_KEY_LEN, v, n);
}

static int s_getset(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_getset(kv->impl, key_of(kv, id), BENCH_KEY_LEN, v, n,
			    out_reset(kv));
}

static int s_del(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v, (void)n;
	return shmkv_del(kv->impl, key_of(kv, id), BENCH_KEY_LEN);
}

static int s_delifeq(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_delifeq(kv->impl, key_of(kv, id), BENCH_KEY_LEN, v, n);
}

static int s_incr(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v, (void)n;
	return shmkv_incr(kv->impl, key_of(kv, id), BENCH_KEY_LEN,
			  &kv->incr_result);
}

static const struct bench_kv_ops shmkv_ops = {
	.name = "shmkv",
	.tag = "shmkv",
	.fn = { s_get, s_set, s_setnx, s_getset, s_del, s_delifeq, s_incr },
};

int bench_kv_shmkv(struct bench_kv *kv, shmkv_t *store, const char *keys,
		   uint32_t n, uint32_t value_max)
{
	bench_kv_init(kv, &shmkv_ops, keys, n, store);
	return bench_kv_out_init(kv, value_max);
}

/*
 * The prepared-key API: impl is a struct prepared.
 */
struct prepared {
	shmkv_t *store;
	struct shmkv_keyref *refs; /* one per key id */
};

#define P(kv)	    ((struct prepared *)(kv)->impl)
#define REF(kv, id) (&P(kv)->refs[id])

static int p_get(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v, (void)n;
	return shmkv_key_get(P(kv)->store, REF(kv, id), out_reset(kv));
}

static int p_set(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_key_set(P(kv)->store, REF(kv, id), v, n, 0, 0, NULL);
}

static int p_setnx(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_key_setnx(P(kv)->store, REF(kv, id), v, n);
}

static int p_getset(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_key_getset(P(kv)->store, REF(kv, id), v, n, out_reset(kv));
}

static int p_del(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v, (void)n;
	return shmkv_key_del(P(kv)->store, REF(kv, id));
}

static int p_delifeq(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	return shmkv_key_delifeq(P(kv)->store, REF(kv, id), v, n);
}

static int p_incr(struct bench_kv *kv, uint32_t id, const void *v, size_t n)
{
	(void)v, (void)n;
	return shmkv_key_incrby(P(kv)->store, REF(kv, id), 1, &kv->incr_result);
}

static void p_close(struct bench_kv *kv)
{
	free(P(kv)->refs);
}

static const struct bench_kv_ops prepared_ops = {
	.name = "shmkv prepared key",
	.tag = "shmkv_prepared",
	.fn = { p_get, p_set, p_setnx, p_getset, p_del, p_delifeq, p_incr },
	.close = p_close,
};

int bench_kv_shmkv_prepared(struct bench_kv *kv, shmkv_t *store,
			    const char *keys, uint32_t n, uint32_t value_max)
{
	struct prepared *p = calloc(1, sizeof(*p));
	int err;

	bench_kv_init(kv, &prepared_ops, keys, n, p);
	if (!p || !(p->refs = calloc(n, sizeof(*p->refs)))) {
		bench_kv_close(kv);
		return -ENOMEM;
	}
	p->store = store;
	for (uint32_t id = 0; id < n; id++) {
		err = shmkv_key_prepare(store, &p->refs[id], key_of(kv, id),
					BENCH_KEY_LEN);
		if (err) {
			bench_kv_close(kv);
			return err;
		}
	}
	err = bench_kv_out_init(kv, value_max);
	if (err)
		bench_kv_close(kv);
	return err;
}
