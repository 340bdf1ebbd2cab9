/*
 * keys.c - key names, precomputed key streams (one hot key, uniform,
 * zipfian), the baselines' hash, and the pointer chase (see bench.h).
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

const char *const bench_dist_name[BENCH_DISTS] = { "hot", "uniform", "zipf" };

void bench_key_format(char *out, uint32_t id)
{
	out[0] = 'k';
	out[1] = ':';
	for (int i = 11; i >= 2; i--) {
		out[i] = (char)('0' + id % 10);
		id /= 10;
	}
	for (unsigned i = BENCH_KEY_LEN; i < BENCH_KEY_STRIDE; i++)
		out[i] = '\0';
}

char *bench_keys_make(uint32_t n)
{
	char *keys = malloc((size_t)n * BENCH_KEY_STRIDE);

	if (!keys)
		return NULL;
	for (uint32_t id = 0; id < n; id++)
		bench_key_format(keys + (size_t)id * BENCH_KEY_STRIDE, id);
	return keys;
}

/* A uniform double in [0, 1). */
static double unit(uint64_t *rng)
{
	return (double)(bench_xorshift64(rng) >> 11) *
	       (1.0 / 9007199254740992.0);
}

/* A random permutation of 0..n-1 (Fisher-Yates). */
static uint32_t *permutation(uint32_t n, uint64_t *rng)
{
	uint32_t *p = malloc((size_t)n * sizeof(*p));

	if (!p)
		return NULL;
	for (uint32_t i = 0; i < n; i++)
		p[i] = i;
	for (uint32_t i = n - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(bench_xorshift64(rng) % (i + 1u));
		uint32_t t = p[i];

		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

/* Cumulative zipf distribution over ranks 1..n, normalised to 1. */
static double *zipf_cdf(uint32_t n, double s)
{
	double *cdf = malloc((size_t)n * sizeof(*cdf)), sum = 0;

	if (!cdf)
		return NULL;
	for (uint32_t r = 0; r < n; r++) {
		sum += 1.0 / pow((double)(r + 1), s);
		cdf[r] = sum;
	}
	for (uint32_t r = 0; r < n; r++)
		cdf[r] /= sum;
	return cdf;
}

/* The first rank whose cumulative probability exceeds @u. */
static uint32_t cdf_search(const double *cdf, uint32_t n, double u)
{
	uint32_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cdf[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int fill_zipf(uint32_t *ids, uint64_t len, uint32_t n, double s,
		     uint64_t *rng)
{
	double *cdf = zipf_cdf(n, s);
	uint32_t *perm = permutation(n, rng);

	if (cdf && perm)
		for (uint64_t i = 0; i < len; i++)
			ids[i] = perm[cdf_search(cdf, n, unit(rng))];
	free(cdf);
	free(perm);
	return cdf && perm ? 0 : -ENOMEM;
}

uint32_t *bench_stream_make(enum bench_dist d, uint64_t len, uint32_t n,
			    double s, uint32_t hot_id, uint64_t seed)
{
	uint32_t *ids = malloc(len * sizeof(*ids));
	uint64_t rng = seed ? seed : 1;

	if (!ids || n == 0)
		goto fail;
	for (uint64_t i = 0; i < len && d != BENCH_ZIPF; i++)
		ids[i] = d == BENCH_HOT
				 ? hot_id
				 : (uint32_t)(bench_xorshift64(&rng) % n);
	if (d == BENCH_ZIPF && fill_zipf(ids, len, n, s, &rng) != 0)
		goto fail;
	return ids;
fail:
	free(ids);
	return NULL;
}

/*
 * The hash: the store's wyhash-style mixing, so the baselines' tables pay
 * what the store pays to hash a key.
 */
static inline uint64_t mix(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t bench_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 0x5bd1e995u ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL);
	uint64_t a = 0, b = 0;

	while (len > 16) {
		memcpy(&a, p, 8);
		memcpy(&b, p + 8, 8);
		h = mix(a ^ 0xa0761d6478bd642fULL, b ^ h);
		p += 16;
		len -= 16;
	}
	a = b = 0;
	if (len >= 8) {
		memcpy(&a, p, 8);
		memcpy(&b, p + len - 8, 8);
	} else {
		memcpy(&a, p, len);
	}
	h = mix(a ^ 0xa0761d6478bd642fULL, b ^ h);
	return mix(h ^ 0x8ebc6af09c88c6e3ULL, 0xe7037ed1a0b428dbULL);
}

/*
 * The pointer chase, in shared memory like the store's. The nodes are a
 * random subset of the 64-byte lines, linked in a random order into one
 * cycle, so the chase never settles into a short loop that fits a cache.
 */
#define NODE 64u

/* Links the first @nodes entries of the shuffled @idx in a cycle. */
static void link_cycle(struct bench_chase *c, const uint32_t *idx, size_t nodes)
{
	for (size_t k = 0; k < nodes; k++) {
		size_t next = k + 1 < nodes ? k + 1 : 0;

		*(uint64_t *)(c->mem +
			      (size_t)idx[k] * NODE) = (uint64_t)idx[next] *
						       NODE;
	}
	c->pos = (uint64_t)idx[0] * NODE;
}

int bench_chase_init(struct bench_chase *c, size_t bytes, size_t nodes,
		     uint64_t seed)
{
	return bench_chase_init_on(c, bytes, nodes, seed, BENCH_PAGES_SHM);
}

int bench_chase_init_on(struct bench_chase *c, size_t bytes, size_t nodes,
			uint64_t seed, enum bench_pages pages)
{
	size_t n = bytes / NODE;
	uint32_t *idx;
	uint64_t rng = seed ? seed : 1;

	if (nodes == 0 || nodes > n)
		nodes = n;
	c->bytes = n * NODE;
	c->nodes = nodes;
	c->mem = n < 2			     ? NULL
		 : pages == BENCH_PAGES_HUGE ? bench_huge_alloc(c->bytes)
					     : bench_shm_alloc(c->bytes);
	idx = c->mem ? malloc(n * sizeof(*idx)) : NULL;
	if (!idx) {
		bench_chase_free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	/* The first @nodes places of a Fisher-Yates shuffle: a random
	 * subset in random order. */
	for (size_t i = 0; i < nodes && i + 1 < n; i++) {
		size_t j = i + bench_xorshift64(&rng) % (n - i);
		uint32_t t = idx[i];

		idx[i] = idx[j];
		idx[j] = t;
	}
	link_cycle(c, idx, nodes < 2 ? 2 : nodes);
	free(idx);
	return 0;
}

void bench_chase_free(struct bench_chase *c)
{
	bench_shm_free(c->mem, c->bytes);
	c->mem = NULL;
}

uint64_t bench_chase_run(struct bench_chase *c, uint64_t ops)
{
	uint64_t p = c->pos, t0 = bench_cpu_ns();

	for (uint64_t i = 0; i < ops; i++)
		p = *(const uint64_t *)(c->mem + p);
	t0 = bench_cpu_ns() - t0;
	c->pos = p;
	bench_keep(p);
	return t0;
}
