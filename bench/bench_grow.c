/*
 * bench_grow.c - what online growth of value memory costs the writers: the
 * latency of SETs of new keys (12-byte keys, 200-byte values, a block
 * each) into a store that starts with one page per size class and grows
 * as they need room ("growing"), beside the same SETs into a store whose
 * value memory was allocated at creation ("steady"), measured in the same
 * run, in interleaved rounds.
 *
 * The writer that finds no free page allocates the next run of pages
 * (src/grow.c: a quarter of what the store has, at most 8 MiB) before its
 * SET goes on: those SETs make the tail. Reported per store: p50, p99,
 * p99.9 and max of single SETs, the mean, the growths the run made, and
 * the run's total time (median over runs of each).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define LOG2	   18u /* slots */
#define LOG2_QUICK 15u
#define LOAD_PCT   60u
#define VALUE_LEN  200u
#define VALUE_MAX  1024u
#define MIN_PAGES  7u /* value_max 1024: 7 size classes, a page each */
#define PAGE	   (64u << 10)

enum store { ST_STEADY, ST_GROWING, ST_N };
static const char *const store_name[ST_N] = { "steady", "growing" };

struct run_out {
	struct bench_lat lat;
	double total_ms;
	uint32_t grows, pages;
};

/* Value memory that holds @n values of the 256-byte class, and a page for
 * every other class. */
static uint64_t steady_memory(uint32_t n)
{
	return ((uint64_t)n / (PAGE / 256) + 1 + MIN_PAGES) * PAGE;
}

/* The growths from @from ready pages to @to, one writer: src/grow.c's
 * steps (a quarter, at least a page, at most 8 MiB). */
static uint32_t growths(uint64_t from, uint64_t to)
{
	uint32_t n = 0;

	while (from < to) {
		uint64_t step = from / 4 < (8u << 20) / PAGE
					? from / 4
					: (8u << 20) / PAGE;

		from += step > 0 ? step : 1;
		n++;
	}
	return n;
}

static int one_run(enum store s, unsigned log2, uint32_t n,
		   const struct bench_timer *t, struct bench_hist *h,
		   struct run_out *out)
{
	char key[BENCH_KEY_STRIDE], val[VALUE_LEN], name[64];
	struct shmkv_config cfg;
	struct shmkv_stats st;
	uint64_t t0;
	shmkv_t *kv;
	int err;

	shmkv_config_init(&cfg);
	cfg.slots = 1u << log2;
	cfg.value_max = VALUE_MAX;
	cfg.value_memory = s == ST_STEADY ? steady_memory(n)
					  : (uint64_t)MIN_PAGES * PAGE;
	err = bench_store_create("grow", &cfg, &kv, name);
	if (err)
		return err;
	memset(val, 'v', sizeof(val));
	bench_hist_reset(h);
	t0 = bench_now_ns();
	for (uint32_t id = 0; id < n && !err; id++) {
		uint64_t a, b;
		int rc;

		bench_key_format(key, id);
		a = bench_tick_begin();
		rc = shmkv_set(kv, key, BENCH_KEY_LEN, val, VALUE_LEN, 0, 0,
			       NULL);
		b = bench_tick_end();
		if (rc != 1) {
			err = rc < 0 ? rc : -EPROTO;
			break;
		}
		bench_hist_add(h, bench_sample(b - a, t->overhead, 1), 1);
	}
	out->total_ms = (double)(bench_now_ns() - t0) / 1e6;
	if (!err && (err = shmkv_stats(kv, &st)) == 0) {
		out->pages = st.pages;
		out->grows = growths(cfg.value_memory / PAGE, st.pages);
		bench_hist_summary(h, t, &out->lat);
	}
	bench_store_destroy(kv, name);
	return err;
}

static double median_of(double *v, unsigned n)
{
	struct bench_stats st;

	bench_stats_compute(v, n, 1, &st);
	return st.median;
}

int main(int argc, char **argv)
{
	static struct bench_hist hist;
	static double fig[ST_N][7][BENCH_RUNS_MAX];
	struct bench_timer timer;
	struct bench_csv csv;
	struct bench_opts o;
	unsigned log2;
	uint32_t n;
	int err = 0;

	bench_opts_parse(
		argc, argv,
		"latency of SETs of new keys while value memory grows "
		"online, beside a store allocated in full at creation.",
		NULL, 0, &o);
	bench_begin(&o, 1, 5);
	bench_title("grow: SET latency while value memory grows", o.quick);
	log2 = o.quick ? LOG2_QUICK : LOG2;
	n = (uint32_t)((1ull << log2) * LOAD_PCT / 100);
	bench_timer_init(&timer);
	printf("# %u SETs of new keys (12-byte keys, %u-byte values) into a "
	       "store of 2^%u slots; %u runs, interleaved; medians of runs\n",
	       n, VALUE_LEN, log2, o.runs);
	for (unsigned r = 0; r < o.runs && !err; r++)
		for (int s = 0; s < ST_N && !err; s++) {
			struct run_out out;

			err = one_run(s, log2, n, &timer, &hist, &out);
			if (err)
				break;
			fig[s][0][r] = out.lat.p50;
			fig[s][1][r] = out.lat.p99;
			fig[s][2][r] = out.lat.p999;
			fig[s][3][r] = out.lat.max;
			fig[s][4][r] = out.lat.mean;
			fig[s][5][r] = out.grows;
			fig[s][6][r] = out.total_ms;
		}
	if (err) {
		fprintf(stderr, "bench_grow: %s\n", shmkv_strerror(err));
		return 1;
	}
	printf("  %-8s %9s %9s %9s %11s %9s %6s %10s\n", "store", "p50 ns",
	       "p99 ns", "p99.9 ns", "max ns", "mean ns", "grows", "total ms");
	if (o.csv)
		err = bench_csv_open(&csv, o.csv,
				     "store,sets,value_bytes,p50_ns,p99_ns,"
				     "p999_ns,max_ns,mean_ns,grows,total_ms");
	for (int s = 0; s < ST_N && !err; s++) {
		double m[7];

		for (int c = 0; c < 7; c++)
			m[c] = median_of(fig[s][c], o.runs);
		printf("  %-8s %9.0f %9.0f %9.0f %11.0f %9.0f %6.0f %10.1f\n",
		       store_name[s], m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
		if (o.csv)
			err = bench_csv_row(
				&csv,
				"%s,%u,%u,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f,"
				"%.1f",
				store_name[s], n, VALUE_LEN, m[0], m[1], m[2],
				m[3], m[4], m[5], m[6]);
	}
	if (!err && o.csv)
		err = bench_csv_close(&csv);
	return err ? 1 : 0;
}
