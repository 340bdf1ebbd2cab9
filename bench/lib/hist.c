/*
 * hist.c - the per-operation timer and the log-bucket latency histogram
 * (see bench.h), whose quantiles undo a stepping counter's rounding.
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

enum { EMPTY_N = 10001 };

/*
 * An empty begin/end pair, in 1/BENCH_TICK_FRAC ticks: the mean of the
 * pairs within two steps of the median, so a stepping counter's readings
 * (one step or two, here) average to the true cost, and an interrupt's
 * outlier does not count.
 */
static uint64_t empty_interval(uint64_t step)
{
	static uint64_t d[EMPTY_N];
	uint64_t sum = 0, n = 0, cut;

	for (unsigned i = 0; i < EMPTY_N; i++) {
		uint64_t t0 = bench_tick_begin();

		d[i] = bench_tick_end() - t0;
	}
	qsort(d, EMPTY_N, sizeof(d[0]), cmp_u64);
	cut = d[EMPTY_N / 2] + 2 * step;
	for (unsigned i = 0; i < EMPTY_N && d[i] <= cut; i++, n++)
		sum += d[i];
	return (sum * BENCH_TICK_FRAC + n / 2) / n;
}

/* The smallest step between two readings of the counter that differ. */
static uint64_t counter_step(void)
{
	uint64_t step = UINT64_MAX;

	for (unsigned i = 0; i < EMPTY_N; i++) {
		uint64_t a = bench_tick_begin(), b = bench_tick_begin();

		if (b > a && b - a < step)
			step = b - a;
	}
	return step == UINT64_MAX ? 1 : step;
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
	t->resolution = counter_step();
	t->overhead = empty_interval(t->resolution);
}

void bench_hist_reset(struct bench_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

/* The lowest value bucket @b holds, and how many values it holds. */
static uint64_t bucket_lo(unsigned b, uint64_t *width)
{
	unsigned g = b / BENCH_HIST_SUB, e;

	if (g == 0) {
		*width = 1;
		return b;
	}
	e = g + BENCH_HIST_SUB_BITS - 1;
	*width = (uint64_t)1 << (e - BENCH_HIST_SUB_BITS);
	return (uint64_t)(BENCH_HIST_SUB + b % BENCH_HIST_SUB)
	       << (e - BENCH_HIST_SUB_BITS);
}

/*
 * How many samples lie below @x when each sample of bucket b is spread
 * evenly over [mid[b] - half[b], mid[b] + half[b]).
 */
static double spread_below(const double *mid, const double *half,
			   const uint64_t *cnt, unsigned n, double x)
{
	double below = 0;

	for (unsigned i = 0; i < n; i++) {
		double f = (x - (mid[i] - half[i])) / (2 * half[i]);

		below += (double)cnt[i] * (f <= 0 ? 0 : f >= 1 ? 1 : f);
	}
	return below;
}

double bench_hist_quantile(const struct bench_hist *h, double q, double spread)
{
	static double mid[BENCH_HIST_BUCKETS], half[BENCH_HIST_BUCKETS];
	static uint64_t cnt[BENCH_HIST_BUCKETS];
	double rank, lo, hi;
	unsigned n = 0;

	if (h->count == 0)
		return 0;
	for (unsigned b = 0; b < BENCH_HIST_BUCKETS; b++) {
		uint64_t w, l;

		if (!h->bucket[b])
			continue;
		l = bucket_lo(b, &w);
		mid[n] = (double)l + (double)(w - 1) / 2.0;
		half[n] = ((double)w > spread ? (double)w : spread) / 2.0;
		if (half[n] < 0.5)
			half[n] = 0.5;
		cnt[n++] = h->bucket[b];
	}
	/* The smallest x with q * count samples below it: the count below
	 * grows with x, so bisect between the spread ends. */
	rank = q * (double)h->count;
	lo = mid[0] - half[0];
	hi = mid[n - 1] + half[n - 1];
	for (int i = 0; i < 48 && hi - lo > 1e-3; i++) {
		double x = (lo + hi) / 2;

		if (spread_below(mid, half, cnt, n, x) < rank)
			lo = x;
		else
			hi = x;
	}
	/* Never outside what was recorded. */
	if (hi > (double)h->max)
		hi = (double)h->max;
	return hi < (double)h->min ? (double)h->min : hi;
}

void bench_hist_summary(const struct bench_hist *h, const struct bench_timer *t,
			struct bench_lat *out)
{
	double n = h->count ? (double)h->count : 1;
	double ns = bench_timer_ns_per_unit(t);
	double step = (double)t->resolution * BENCH_TICK_FRAC;

	out->mean = (double)h->sum / n * ns;
	out->p50 = bench_hist_quantile(h, 0.50, step) * ns;
	out->p99 = bench_hist_quantile(h, 0.99, step) * ns;
	out->p999 = bench_hist_quantile(h, 0.999, step) * ns;
	out->max = h->count ? (double)h->max * ns : 0;
}

void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src)
{
	if (!src->count)
		return;
	for (unsigned b = 0; b < BENCH_HIST_BUCKETS; b++)
		dst->bucket[b] += src->bucket[b];
	dst->count += src->count;
	dst->sum += src->sum;
	dst->min = src->min < dst->min ? src->min : dst->min;
	dst->max = src->max > dst->max ? src->max : dst->max;
}
