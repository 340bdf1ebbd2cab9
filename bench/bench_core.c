/*
 * bench_core.c - per-command latency of shmkv beside what users would pick
 * instead, on the same workloads in the same run.
 *
 * Commands GET SET SETNX GETSET DEL DELIFEQ INCR (see lib/workload.h for
 * how each is driven), values of four kinds (integers, which shmkv keeps
 * inline, and strings of 16 B, 256 B and 4 KiB), keys chosen three ways
 * (one hot key, uniform over the live set, zipfian with skew 0.99; the
 * streams are precomputed). Each command is timed alone with the TSC and
 * recorded in a log-bucket histogram; a figure is the median over --runs
 * runs (taken in interleaved rounds) of that run's mean, p50, p99, p99.9.
 *
 * Implementations (lib/kv.h): shmkv; shmkv with prepared keys (hot key
 * only: the fast path for a lock or a counter); a mutex-guarded hash map
 * in shared memory; liburcu's rculfhash (one process); Redis over loopback
 * with one round trip per command and pipelined (hot and uniform keys).
 * Each holds its own copy of the same keys and values: N keys in a table
 * of 2N slots (50% load). Floors: a bare CAS, exchange, robust mutex
 * lock+unlock and dependent load over the memory of the store's table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/workload.h"

#define KEYS_FULL  (1u << 15)
#define KEYS_QUICK (1u << 11)
#define ZIPF_SKEW  0.99

enum impl { I_SHMKV, I_PREP, I_MUTEX, I_URCU, I_REDIS, I_REDISP, I_N };

struct core {
	char *keys;
	uint32_t n;
	struct bench_stream stream[BENCH_DISTS];
	shmkv_t *store[2][BV_N]; /* [0] shmkv, [1] prepared */
	char store_name[2][BV_N][64];
	struct bench_dataset ds[I_N][BV_N];
	int have[I_N];
	struct bench_redis redis;
	struct bench_timer timer;
	struct bench_floors floors;
};

/* One thing timed: a workload on a data set and stream, or a floor. */
struct cell {
	enum impl im;
	enum bench_vkind vk;
	enum bench_work w;
	enum bench_dist d;
	int floor; /* enum bench_floor, or -1 */
	uint64_t pos, ops;
	struct bench_lat *lat[2]; /* per run: main, SETNX half of DEL */
};

static struct core C;
static struct cell *cells;
static unsigned ncells;
static struct bench_hist hist[2];

static int impl_uses(enum impl im, enum bench_dist d)
{
	if (im == I_PREP)
		return d == BENCH_HOT;
	if (im == I_REDIS || im == I_REDISP)
		return d != BENCH_ZIPF;
	return 1;
}

static int add_cell(const struct cell *proto, unsigned runs)
{
	struct cell *c = &cells[ncells++];

	*c = *proto;
	c->pos = (uint64_t)ncells * 7919; /* cells start apart */
	for (int h = 0; h < 2; h++) {
		c->lat[h] = calloc(runs, sizeof(*c->lat[h]));
		if (!c->lat[h])
			return -ENOMEM;
	}
	return 0;
}

/* Commands per run: fewer where each is a round trip (a hot key's
 * DEL/SETNX halves are one command each: nothing to pipeline). */
static uint64_t ops_for(enum impl im, enum bench_work w, enum bench_dist d,
			int quick)
{
	int trips = im == I_REDIS || (im == I_REDISP && d == BENCH_HOT &&
				      (w == BW_DEL || w == BW_DELIFEQ));

	if (trips)
		return quick ? 50 : 1000;
	return quick ? 500 : 10000;
}

static int make_cells(unsigned runs, int quick)
{
	struct cell p = { .floor = -1 };
	int err = 0;

	cells = calloc(I_N * BV_N * BW_N * BENCH_DISTS + BENCH_FLOORS,
		       sizeof(*cells));
	if (!cells)
		return -ENOMEM;
	for (p.vk = 0; p.vk < BV_N; p.vk++)
		for (p.w = 0; p.w < BW_N; p.w++)
			for (p.d = 0; p.d < BENCH_DISTS; p.d++)
				for (p.im = 0; p.im < I_N && !err; p.im++) {
					if (!C.have[p.im] ||
					    !impl_uses(p.im, p.d) ||
					    !bench_work_applies(p.w, p.vk))
						continue;
					p.ops = ops_for(p.im, p.w, p.d, quick);
					err = add_cell(&p, runs);
				}
	for (int f = 0; f < BENCH_FLOORS && !err; f++) {
		struct cell fl = { .floor = f, .ops = quick ? 500 : 50000 };

		err = add_cell(&fl, runs);
	}
	return err;
}

static int run_cell(struct cell *c, unsigned r)
{
	struct bench_run_out out = { &hist[0], &hist[1] };
	int err = 0;

	bench_hist_reset(&hist[0]);
	bench_hist_reset(&hist[1]);
	if (c->floor >= 0)
		bench_floor_run(&C.floors, c->floor, c->ops, C.timer.overhead,
				&hist[0]);
	else
		err = bench_work_run(&C.ds[c->im][c->vk], c->w, &C.stream[c->d],
				     &c->pos, c->ops, C.timer.overhead, &out);
	for (int h = 0; h < 2 && !err; h++)
		bench_hist_summary(&hist[h], &C.timer, &c->lat[h][r]);
	return err;
}

static int measure(unsigned runs)
{
	for (unsigned r = 0; r < runs; r++) {
		for (unsigned i = 0; i < ncells; i++) {
			int err = run_cell(&cells[i], r);

			if (err)
				return err;
		}
		bench_progress(r + 1, runs);
	}
	return 0;
}

/*
 * Setup.
 */
static int make_stores(void)
{
	static const char *const tag[2][BV_N] = {
		{ "core-int", "core-16", "core-256", "core-4k" },
		{ "prep-int", "prep-16", "prep-256", "prep-4k" },
	};

	for (int s = 0; s < 2; s++)
		for (int vk = 0; vk < BV_N; vk++) {
			struct shmkv_config cfg = bench_store_config(vk, C.n);
			int err = bench_store_create(tag[s][vk], &cfg,
						     &C.store[s][vk],
						     C.store_name[s][vk]);

			if (err) {
				fprintf(stderr, "bench_core: create %s: %s\n",
					tag[s][vk], shmkv_strerror(err));
				return err;
			}
		}
	return 0;
}

/* Constructs implementation @im's kv for kind @vk. */
static int open_kv(enum impl im, enum bench_vkind vk, struct bench_kv *kv)
{
	uint32_t vmax = bench_vkind_max[vk];

	switch (im) {
	case I_SHMKV:
		return bench_kv_shmkv(kv, C.store[0][vk], C.keys, C.n, vmax);
	case I_PREP:
		return bench_kv_shmkv_prepared(kv, C.store[1][vk], C.keys, C.n,
					       vmax);
	case I_MUTEX:
		return bench_kv_mutex_map(kv, 2 * C.n, C.keys, C.n, vmax);
	case I_URCU:
		return bench_kv_rculfhash(kv, C.keys, C.n, vmax);
	default:
		/* Plain and pipelined each get their own databases. */
		return bench_kv_redis(kv, C.redis.port,
				      (im == I_REDISP ? BV_N : 0) + (int)vk,
				      im == I_REDISP, C.keys, C.n, vmax);
	}
}

static int make_datasets(enum impl im)
{
	for (int vk = 0; vk < BV_N; vk++) {
		struct bench_dataset *ds = &C.ds[im][vk];
		int err = open_kv(im, vk, &ds->kv);

		if (!err && im == I_REDIS) {
			/* Fill through a pipeline: round trips would take
			 * seconds. The initial values are fixed. */
			struct bench_dataset tmp = { 0 };

			err = bench_kv_redis(&tmp.kv, C.redis.port, vk, 1,
					     C.keys, C.n, bench_vkind_max[vk]);
			if (!err)
				err = bench_dataset_fill(&tmp, vk, 1);
			bench_dataset_free(&tmp);
			if (!err)
				err = bench_dataset_fill(ds, vk, 0);
		} else if (!err) {
			err = bench_dataset_fill(ds, vk, 1);
		}
		if (err) {
			fprintf(stderr, "bench_core: %s, %s values: %s\n",
				ds->kv.ops ? ds->kv.ops->name : "?",
				bench_vkind_name[vk], shmkv_strerror(err));
			return err;
		}
	}
	C.have[im] = 1;
	return 0;
}

static int make_streams(uint64_t len)
{
	for (int d = 0; d < BENCH_DISTS; d++) {
		uint32_t *ids = bench_stream_make(
			d, len, C.n, ZIPF_SKEW, C.n / 2,
			0x9e3779b97f4a7c15ull + (uint64_t)d);

		if (!ids)
			return -ENOMEM;
		C.stream[d].ids = ids;
		C.stream[d].mask = len - 1;
	}
	return 0;
}

/* The chase spans the int store's table: the memory a uniform GET of an
 * integer walks (the segment less its value pages). */
static int make_floors(void)
{
	struct shmkv_stats st;
	int err = shmkv_stats(C.store[0][BV_INT], &st);

	/* One line per key among the table's lines, as GETs walk. */
	return err ? err
		   : bench_floors_init(&C.floors,
				       st.memory_bytes - (uint64_t)st.pages *
								 st.page_size,
				       C.n);
}

static int setup(int quick)
{
	int err;

	C.n = quick ? KEYS_QUICK : KEYS_FULL;
	C.keys = bench_keys_make(C.n);
	if (!C.keys)
		return -ENOMEM;
	bench_timer_init(&C.timer);
	if ((err = make_streams(quick ? 1u << 14 : 1u << 20)) ||
	    (err = make_stores()) || (err = make_floors()))
		return err;
	for (int im = I_SHMKV; im <= I_URCU; im++)
		if ((err = make_datasets(im)))
			return err;
	if (bench_redis_start(&C.redis) != 0) {
		printf("# redis: skipped (redis-server could not be started "
		       "on 127.0.0.1)\n");
		return 0;
	}
	if ((err = make_datasets(I_REDIS)) || (err = make_datasets(I_REDISP)))
		return err;
	return 0;
}

/*
 * Report.
 */
struct fig {
	double mean, mean_min, mean_max, p50, p50_min, p50_max, p99, p999, max;
};

/* Commands in table order, and the workload and half that time each. */
static const struct {
	enum bench_work w;
	int half;
} cmd_src[BCMD_N] = {
	[BCMD_GET] = { BW_GET, 0 },   [BCMD_SET] = { BW_SET, 0 },
	[BCMD_SETNX] = { BW_DEL, 1 }, [BCMD_GETSET] = { BW_GETSET, 0 },
	[BCMD_DEL] = { BW_DEL, 0 },   [BCMD_DELIFEQ] = { BW_DELIFEQ, 0 },
	[BCMD_INCR] = { BW_INCR, 0 },
};

static const struct cell *find(enum impl im, enum bench_vkind vk,
			       enum bench_work w, enum bench_dist d)
{
	for (unsigned i = 0; i < ncells; i++) {
		const struct cell *c = &cells[i];

		if (c->floor < 0 && c->im == im && c->vk == vk && c->w == w &&
		    c->d == d)
			return c;
	}
	return NULL;
}

static void fig_of(const struct cell *c, int h, unsigned runs, struct fig *f)
{
	double v[5][BENCH_RUNS_MAX];

	f->mean_min = f->mean_max = c->lat[h][0].mean;
	f->p50_min = f->p50_max = c->lat[h][0].p50;
	for (unsigned r = 0; r < runs; r++) {
		const struct bench_lat *l = &c->lat[h][r];

		v[0][r] = l->mean, v[1][r] = l->p50, v[2][r] = l->p99;
		v[3][r] = l->p999, v[4][r] = l->max;
		f->mean_min = l->mean < f->mean_min ? l->mean : f->mean_min;
		f->mean_max = l->mean > f->mean_max ? l->mean : f->mean_max;
		f->p50_min = l->p50 < f->p50_min ? l->p50 : f->p50_min;
		f->p50_max = l->p50 > f->p50_max ? l->p50 : f->p50_max;
	}
	f->mean = bench_median(v[0], runs);
	f->p50 = bench_median(v[1], runs);
	f->p99 = bench_median(v[2], runs);
	f->p999 = bench_median(v[3], runs);
	f->max = bench_median(v[4], runs);
}

/* The figure of command @c by @im, or 0 with no such cell. */
static int cmd_fig(enum impl im, enum bench_vkind vk, enum bench_dist d,
		   enum bench_cmd c, unsigned runs, struct fig *f)
{
	const struct cell *cl = find(im, vk, cmd_src[c].w, d);

	if (!cl)
		return 0;
	fig_of(cl, cmd_src[c].half, runs, f);
	return 1;
}

static void print_latency(enum impl im, unsigned runs)
{
	struct fig f;

	printf("\n%s: ns per command, median of %u runs of each figure\n",
	       C.ds[im][0].kv.ops->name, runs);
	printf("  %-5s %-8s %-8s %9s %9s %9s %9s %21s\n", "value", "keys",
	       "command", "mean", "p50", "p99", "p99.9", "p50 [min-max]");
	for (int vk = 0; vk < BV_N; vk++)
		for (int d = 0; d < BENCH_DISTS; d++)
			for (int c = 0; c < BCMD_N; c++) {
				if (!cmd_fig(im, vk, d, c, runs, &f))
					continue;
				printf("  %-5s %-8s %-8s %9.1f %9.1f %9.1f "
				       "%9.1f   [%7.1f - %7.1f]\n",
				       bench_vkind_name[vk], bench_dist_name[d],
				       bench_cmd_name[c], f.mean, f.p50, f.p99,
				       f.p999, f.p50_min, f.p50_max);
			}
}

static void print_compare(unsigned runs)
{
	struct fig base, f;

	printf("\nmedian latency (p50), ns per command; in brackets: that / "
	       "shmkv\n");
	printf("  %-5s %-8s %-8s %8s", "value", "keys", "command", "shmkv");
	for (int im = I_PREP; im < I_N; im++)
		printf(" %19.19s", C.have[im] ? C.ds[im][0].kv.ops->tag : "-");
	printf("\n");
	for (int vk = 0; vk < BV_N; vk++)
		for (int d = 0; d < BENCH_DISTS; d++)
			for (int c = 0; c < BCMD_N; c++) {
				if (!cmd_fig(I_SHMKV, vk, d, c, runs, &base))
					continue;
				printf("  %-5s %-8s %-8s %8.1f",
				       bench_vkind_name[vk], bench_dist_name[d],
				       bench_cmd_name[c], base.p50);
				for (int im = I_PREP; im < I_N; im++)
					if (!cmd_fig(im, vk, d, c, runs, &f))
						printf(" %19s", "");
					else if (base.p50 > 0 && f.p50 > 0)
						printf(" %10.1f [%5.2fx]",
						       f.p50, f.p50 / base.p50);
					else
						printf(" %10.1f [    -]",
						       f.p50);
				printf("\n");
			}
}

static void print_floors(unsigned runs)
{
	struct fig f;

	printf("\nfloors on shared memory, ns per operation (timed alone)\n");
	for (unsigned i = 0; i < ncells; i++) {
		if (cells[i].floor < 0)
			continue;
		fig_of(&cells[i], 0, runs, &f);
		printf("  %-16s mean %6.1f  p50 %6.1f  p99 %6.1f  p99.9 "
		       "%7.1f\n",
		       bench_floor_name[cells[i].floor], f.mean, f.p50, f.p99,
		       f.p999);
	}
	printf("  (dependent load: %zu lines among %.1f MiB, as the int "
	       "store's keys in its table)\n",
	       C.floors.chase.nodes, (double)C.floors.chase.bytes / (1 << 20));
}

static int csv_fig(struct bench_csv *csv, const char *impl, const char *cmd,
		   const char *value, const char *keys, const struct fig *f,
		   unsigned runs, uint64_t ops)
{
	return bench_csv_row(csv,
			     "%s,%s,%s,%s,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,%.2f,"
			     "%.2f,%.2f,%u,%llu",
			     impl, cmd, value, keys, f->mean, f->mean_min,
			     f->mean_max, f->p50, f->p99, f->p999, f->max,
			     f->p50_min, f->p50_max, runs,
			     (unsigned long long)ops);
}

static int write_csv(struct bench_csv *csv, unsigned runs)
{
	struct fig f;
	int err = 0;

	for (unsigned i = 0; i < ncells && !err; i++) {
		const struct cell *c = &cells[i];

		if (c->floor >= 0) {
			fig_of(c, 0, runs, &f);
			err = csv_fig(csv, "floor", bench_floor_name[c->floor],
				      "-", "-", &f, runs, c->ops);
			continue;
		}
		for (int cmd = 0; cmd < BCMD_N && !err; cmd++) {
			if (cmd_src[cmd].w != c->w)
				continue;
			fig_of(c, cmd_src[cmd].half, runs, &f);
			err = csv_fig(csv, C.ds[c->im][c->vk].kv.ops->tag,
				      bench_cmd_name[cmd],
				      bench_vkind_name[c->vk],
				      bench_dist_name[c->d], &f, runs, c->ops);
		}
	}
	if (err) {
		bench_csv_abort(csv);
		return err;
	}
	return bench_csv_close(csv);
}

static const char csv_columns[] =
	"impl,cmd,value,keys,mean_ns,mean_min_ns,mean_max_ns,p50_ns,p99_ns,"
	"p999_ns,max_ns,p50_min_ns,p50_max_ns,runs,ops_per_run";

static void print_header(const struct bench_opts *o, unsigned runs)
{
	bench_title("per-command latency", o->quick);
	printf("# timer: %s, %.3f ns per tick, %.1f ns per empty interval "
	       "(mean, taken off every sample)\n",
	       C.timer.tsc ? "TSC (lfence;rdtsc .. rdtscp;lfence)"
			   : "CLOCK_MONOTONIC",
	       C.timer.ns_per_tick,
	       (double)C.timer.overhead * bench_timer_ns_per_unit(&C.timer));
	/* report.sh reads this line: no ratio with a figure below it. */
	printf("# resolution: %.1f ns (the counter advances in steps of %llu "
	       "ticks; quantiles are interpolated within a step, see "
	       "bench.h)\n",
	       (double)C.timer.resolution * C.timer.ns_per_tick,
	       (unsigned long long)C.timer.resolution);
	printf("# method: %u runs per figure in interleaved rounds; each run "
	       "times %llu commands one by one (redis round trips: %llu; "
	       "pipelined: in pipelines of %u, each charged 1/%u)\n",
	       runs, (unsigned long long)ops_for(I_SHMKV, 0, 0, o->quick),
	       (unsigned long long)ops_for(I_REDIS, 0, 0, o->quick), BENCH_PIPE,
	       BENCH_PIPE);
	printf("# data: %u keys of %u bytes in %u slots (50%% load) per store "
	       "and value kind; zipf skew %.2f\n",
	       C.n, BENCH_KEY_LEN, 2 * C.n, ZIPF_SKEW);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	/* Static: bench_cleanup_csv hands it to an exit handler, which runs
	 * after main has returned. */
	static struct bench_csv csv;
	unsigned runs;
	int err;

	bench_opts_parse(argc, argv,
			 "Per-command latency of shmkv beside a mutex-guarded "
			 "map, rculfhash and Redis.",
			 NULL, 0, &o);
	bench_begin(&o, 2, 7);
	runs = o.runs;
	if (o.csv && (err = bench_csv_open(&csv, o.csv, csv_columns))) {
		fprintf(stderr, "bench_core: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	bench_cleanup_csv(&csv);
	if ((err = setup(o.quick)) || (err = make_cells(runs, o.quick))) {
		fprintf(stderr, "bench_core: setup failed: %s\n",
			shmkv_strerror(err));
		return 1;
	}
	print_header(&o, runs);
	fflush(stdout);
	if (measure(runs)) {
		fprintf(stderr, "bench_core: a benchmark failed; no figures\n");
		return 1;
	}
	print_latency(I_SHMKV, runs);
	print_latency(I_PREP, runs);
	print_compare(runs);
	print_floors(runs);
	printf("# load average at the end: %.2f\n", bench_loadavg());
	if (o.csv && (err = write_csv(&csv, runs))) {
		fprintf(stderr, "bench_core: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
