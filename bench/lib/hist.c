/*
 * hist.c - the per-operation timer and the log-bucket latency histogram
 * (see bench.h).
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Median ticks of an empty begin/end pair. */
static uint64_t empty_interval(void)
{
	enum { N = 1001 };
	static uint64_t d[N];

	for (unsigned i = 0; i < N; i++) {
		uint64_t t0 = bench_tick_begin();

		d[i] = bench_tick_end() - t0;
	}
	qsort(d, N, sizeof(d[0]), cmp_u64);
	return d[N / 2];
}

/* Ticks per ns over a 20 ms sleep, timed by CLOCK_MONOTONIC. */
static double tick_rate(void)
{
	struct timespec nap = { .tv_nsec = 20000000 };
	uint64_t n0 = bench_now_ns(), t0 = bench_tick_begin();
	uint64_t n1, t1;

	nanosleep(&nap, NULL);
	n1 = bench_now_ns();
	t1 = bench_tick_end();
	return (double)(t1 - t0) / (double)(n1 - n0);
}

void bench_timer_init(struct bench_timer *t)
{
	double r[3];

#if defined(__x86_64__)
	t->tsc = 1;
	for (int i = 0; i < 3; i++)
		r[i] = tick_rate();
	t->ns_per_tick = 1.0 / bench_median(r, 3);
#else
	(void)r;
	(void)tick_rate;
	t->tsc = 0;
	t->ns_per_tick = 1.0;
#endif
	t->overhead = empty_interval();
}

void bench_hist_reset(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/* The middle of the values bucket @b holds. */
static double bucket_mid(unsigned b)
{
	unsigned g = b / BENCH_HIST_SUB, e;
	uint64_t m, lo, width;

	if (g == 0)
		return b;
	e = g + BENCH_HIST_SUB_BITS - 1;
	m = BENCH_HIST_SUB + b % BENCH_HIST_SUB;
	lo = m << (e - BENCH_HIST_SUB_BITS);
	width = (uint64_t)1 << (e - BENCH_HIST_SUB_BITS);
	return (double)lo + (double)(width - 1) / 2.0;
}

double bench_hist_quantile(const struct bench_hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h->count == 0)
		return 0;
	/* The smallest value with at least ceil(q * count) samples <= it. */
	rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	for (unsigned b = 0; b < BENCH_HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			double mid = bucket_mid(b);

			/* Never outside what was recorded. */
			if (mid > (double)h->max)
				mid = (double)h->max;
			return mid < (double)h->min ? (double)h->min : mid;
		}
	}
	return (double)h->max;
}

void bench_hist_summary(const struct bench_hist *h, double ns_per_unit,
			struct bench_lat *out)
{
	double n = h->count ? (double)h->count : 1;

	out->mean = (double)h->sum / n * ns_per_unit;
	out->p50 = bench_hist_quantile(h, 0.50) * ns_per_unit;
	out->p99 = bench_hist_quantile(h, 0.99) * ns_per_unit;
	out->p999 = bench_hist_quantile(h, 0.999) * ns_per_unit;
	out->max = h->count ? (double)h->max * ns_per_unit : 0;
}
