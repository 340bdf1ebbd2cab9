/*
 * bench_table.c - how a command's cost grows with the table: sizes from
 * 2^10 slots up to --max-log2 (default 24, or as far as free memory
 * allows), each at load factors 25, 50, 75 and 90%.
 *
 * Keys hold integers (inline in the slot), so the memory a command walks
 * is the slot array, and the floor beside each figure is a bare dependent
 * random load over exactly that many bytes of shared memory, through as
 * many lines as there are keys: a random GET must miss the cache at least
 * once, and the floor is that miss. Figures:
 *   get_dep    GET hit where the next key depends on this GET's result,
 *              so misses cannot overlap (comparable with the floor);
 *   get        GET hit, back to back (misses of successive GETs overlap);
 *   get_miss   GET of a key that is absent, back to back;
 *   set        SET of an existing key to another integer, back to back;
 *   floor      the dependent load.
 * Each is ns of CPU time per operation (bench_cpu_ns: on a shared machine
 * the time spent waiting for a core is not the operation's), the median of
 * --runs runs of ~15 ms (runs interleaved in rounds), at each size and
 * load. The store is created with
 * a probe limit of PROBE_LIMIT; with the default limit (128) a table is
 * full earlier, and how much earlier is measured too (capacity()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define LOG2_MIN     10u
#define LOG2_MAX     24u
#define STREAM_LEN   (1u << 20)
#define STREAM_QUICK (1u << 14)
#define KEY_MAX	     16u
/* High enough that 90% load fits at 2^24 slots (linear probing's longest
 * run grows with log(slots) / (a - 1 - ln a): thousands at a = 0.9). The
 * default limit's capacity is measured apart (capacity()). */
#define PROBE_LIMIT  8192u
#define CAP_LOG2_MAX 20u
#define TARGET_NS    15000000ull
#define TARGET_QUICK 1000000ull

enum op { OP_GET_DEP, OP_GET, OP_MISS, OP_SET, OP_FLOOR, OP_N };
static const char *const op_name[OP_N] = { "get_dep", "get", "get_miss", "set",
					   "floor" };
static const unsigned loads[] = { 25, 50, 75, 90 };
#define NLOADS (sizeof(loads) / sizeof(loads[0]))

struct table {
	shmkv_t *kv;
	char name[64];
	uint32_t slots;
	uint32_t live; /* keys 0..live-1 are present */
	uint64_t table_bytes;
	struct bench_chase chase;
	char *hit;  /* stream of present keys, BENCH_KEY_STRIDE apart */
	char *miss; /* stream of absent keys */
	uint64_t mask, pos;
	uint64_t ops[OP_N];
};

static struct table T;
static uint64_t target_ns;

/* Makes keys live..upto-1 present. Return: 0 or a negative errno. */
static int fill_to(uint32_t upto)
{
	char key[BENCH_KEY_STRIDE], val[24];

	for (; T.live < upto; T.live++) {
		int vlen = snprintf(val, sizeof(val), "%u", T.live);
		int rc;

		bench_key_format(key, T.live);
		rc = shmkv_set(T.kv, key, BENCH_KEY_LEN, val, (size_t)vlen, 0,
			       0, NULL);
		if (rc != 1)
			return rc < 0 ? rc : -EPROTO;
	}
	return 0;
}

/* Redraws both streams over the keys now live (hits) and beyond every
 * key ever made (misses). */
static void draw_streams(uint64_t seed)
{
	uint64_t rng = seed;

	for (uint64_t i = 0; i <= T.mask; i++) {
		uint32_t hit = (uint32_t)(bench_xorshift64(&rng) % T.live);
		uint32_t miss = T.slots +
				(uint32_t)(bench_xorshift64(&rng) % T.slots);

		bench_key_format(T.hit + i * BENCH_KEY_STRIDE, hit);
		bench_key_format(T.miss + i * BENCH_KEY_STRIDE, miss);
	}
}

static const char *next_key(const char *stream)
{
	return stream + (T.pos++ & T.mask) * BENCH_KEY_STRIDE;
}

static int bad(const char *what, int rc, int want)
{
	fprintf(stderr, "bench_table: %s returned %d (%s), expected %d\n", what,
		rc, shmkv_strerror(rc), want);
	return -EPROTO;
}

/*
 * GET hits where the next key's position adds this GET's last value byte
 * times zero: a data dependency on what the GET read. The last digit of an
 * integer is arithmetic on the value word; a length or a sign could come
 * out of a predicted branch, and then the CPU would overlap the next GET's
 * misses with this one's. @zero is laundered through an asm so the
 * compiler cannot drop the product.
 */
static int run_get_dep(uint64_t ops, uint64_t *ns)
{
	char buf[32] = { 0 };
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf), .len = 1 };
	uint64_t zero = 0, t0;

	__asm__ __volatile__("" : "+r"(zero));
	t0 = bench_cpu_ns();
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t last = (unsigned char)buf[(v.len - 1) & 31];
		uint64_t at = (T.pos++ + last * zero) & T.mask;
		int rc = shmkv_get(T.kv, T.hit + at * BENCH_KEY_STRIDE,
				   BENCH_KEY_LEN, &v);

		if (rc != 1)
			return bad("GET (dependent)", rc, 1);
	}
	*ns = bench_cpu_ns() - t0;
	return 0;
}

static int run_get(const char *stream, int want, uint64_t ops, uint64_t *ns)
{
	char buf[32];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	uint64_t t0 = bench_cpu_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_get(T.kv, next_key(stream), BENCH_KEY_LEN, &v);

		if (rc != want)
			return bad("GET", rc, want);
	}
	*ns = bench_cpu_ns() - t0;
	return 0;
}

/* Stores an integer that differs from any the fill wrote (those are the
 * key's own id), so every SET changes the value word. */
static int run_set(uint64_t ops, uint64_t *ns)
{
	static const char *const vals[2] = { "-1", "-2" };
	uint64_t t0 = bench_cpu_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_set(T.kv, next_key(T.hit), BENCH_KEY_LEN,
				   vals[i & 1], 2, 0, 0, NULL);

		if (rc != 1)
			return bad("SET", rc, 1);
	}
	*ns = bench_cpu_ns() - t0;
	return 0;
}

static int run_op(enum op op, uint64_t ops, uint64_t *ns)
{
	switch (op) {
	case OP_GET_DEP:
		return run_get_dep(ops, ns);
	case OP_GET:
		return run_get(T.hit, 1, ops, ns);
	case OP_MISS:
		return run_get(T.miss, 0, ops, ns);
	case OP_SET:
		return run_set(ops, ns);
	default:
		*ns = bench_chase_run(&T.chase, ops);
		return 0;
	}
}

static int run_trial(void *ctx, uint64_t ops, uint64_t *ns)
{
	return run_op(*(const enum op *)ctx, ops, ns);
}

/* Ops per run so one run lasts about target_ns. */
static int calibrate(enum op op)
{
	return bench_calibrate(run_trial, &op, target_ns, &T.ops[op]);
}

/*
 * One size: create, fill in steps, measure at each load.
 */
struct point {
	unsigned log2, load;
	uint32_t live, longest_probe;
	double table_mib;
	struct bench_stats st[OP_N];
};

static struct point points[(LOG2_MAX - LOG2_MIN + 1) * NLOADS];
static unsigned npoints;

/*
 * The GETs and SETs of a round leave the table's lines in the caches for
 * each other; the chase's memory is cold after them. One untimed pass over
 * its lines (at most a run's worth) makes the floor as warm as the table.
 */
static void warm_chase(void)
{
	uint64_t n = T.chase.nodes < T.ops[OP_FLOOR] ? T.chase.nodes
						     : T.ops[OP_FLOOR];

	bench_keep(bench_chase_run(&T.chase, n));
}

static int measure_point(unsigned runs, struct point *pt)
{
	double s[OP_N][BENCH_RUNS_MAX];
	int err;

	for (int op = 0; op < OP_N; op++)
		if ((err = calibrate(op)))
			return err;
	for (unsigned r = 0; r < runs; r++)
		for (int op = 0; op < OP_N; op++) {
			uint64_t ns;

			if (op == OP_FLOOR)
				warm_chase();
			if ((err = run_op(op, T.ops[op], &ns)))
				return err;
			s[op][r] = (double)ns / (double)T.ops[op];
		}
	for (int op = 0; op < OP_N; op++)
		bench_stats_compute(s[op], runs, T.ops[op], &pt->st[op]);
	return 0;
}

static void print_point(const struct point *pt)
{
	printf("  2^%-3u %3u%% %9u %8.1f %6u", pt->log2, pt->load, pt->live,
	       pt->table_mib, pt->longest_probe);
	for (int op = 0; op < OP_N; op++)
		printf(" %8.1f", pt->st[op].median);
	printf(" %7.2f\n", pt->st[OP_GET_DEP].median / pt->st[OP_FLOOR].median);
	fflush(stdout);
}

static int table_open(unsigned log2, uint32_t probe_limit)
{
	struct shmkv_config cfg;
	struct shmkv_stats st;
	int err;

	shmkv_config_init(&cfg);
	cfg.slots = 1u << log2;
	cfg.key_max = KEY_MAX;
	cfg.value_max = 16;
	cfg.value_memory = 1u << 20; /* integers are inline: unused */
	cfg.probe_limit = probe_limit;
	err = bench_store_create("table", &cfg, &T.kv, T.name);
	if (!err)
		err = shmkv_stats(T.kv, &st);
	/* The table measured is the one created: no memory to grow into
	 * (a store grows its table online at 7/8 full, src/migrate.c). */
	if (!err)
		err = shmkv_set_max_memory(T.kv, st.memory_bytes);
	if (err)
		return err;
	T.slots = cfg.slots;
	T.live = 0;
	/* The segment less its value pages: header and slot array. */
	T.table_bytes = st.memory_bytes - (uint64_t)st.pages * st.page_size;
	return 0;
}

/* The floor for the keys now live: one line per key among the table's
 * lines, so it touches as many lines and pages as their GETs do. */
static int chase_live(void)
{
	bench_chase_free(&T.chase);
	return bench_chase_init(&T.chase, T.table_bytes, T.live,
				0x2545f4914f6cdd1dull + T.live);
}

static void table_close(void)
{
	bench_store_destroy(T.kv, T.name);
	bench_chase_free(&T.chase);
	T.kv = NULL;
}

/* Return: 1 if a size of 2^@log2 slots fits comfortably in free memory
 * (the store and the chase, twice over, with 1 GiB to spare). */
static int memory_allows(unsigned log2)
{
	struct bench_machine m;
	double need_mib = 2.0 * 64.0 * (double)(1ull << log2) / (1 << 20);

	bench_machine_describe(&m);
	if (m.avail_mib < 0 || (double)m.avail_mib >= 2 * need_mib + 1024)
		return 1;
	printf("# stopping before 2^%u slots: needs ~%.0f MiB, %ld MiB "
	       "available\n",
	       log2, need_mib, m.avail_mib);
	return 0;
}

static int run_size(unsigned log2, unsigned runs, unsigned nloads,
		    const unsigned *load)
{
	int err = table_open(log2, PROBE_LIMIT);

	for (unsigned l = 0; l < nloads && !err; l++) {
		struct point *pt = &points[npoints];
		struct shmkv_stats st;

		err = fill_to((uint32_t)((uint64_t)T.slots * load[l] / 100));
		if (err == -ENOSPC) {
			printf("  2^%-3u %3u%%  table full at %u keys (%.1f%%, "
			       "probe limit %u): no figures\n",
			       log2, load[l], T.live, 100.0 * T.live / T.slots,
			       PROBE_LIMIT);
			err = 0;
			break;
		}
		if (err || (err = shmkv_stats(T.kv, &st)) ||
		    (err = chase_live()))
			break;
		draw_streams(0x9e3779b97f4a7c15ull ^ (log2 << 8 | load[l]));
		pt->log2 = log2;
		pt->load = load[l];
		pt->live = T.live;
		pt->longest_probe = st.longest_probe;
		pt->table_mib = (double)T.table_bytes / (1 << 20);
		if (!(err = measure_point(runs, pt))) {
			print_point(pt);
			npoints++;
		}
	}
	if (T.kv)
		table_close();
	return err;
}

/*
 * Capacity with the default probe limit: the load at the first -ENOSPC.
 */
static double capacity_pct[LOG2_MAX + 1];

static int capacity(unsigned log2)
{
	int err = table_open(log2, SHMKV_PROBE_LIMIT_DEFAULT);

	if (!err) {
		err = fill_to(T.slots);
		capacity_pct[log2] = 100.0 * T.live / T.slots;
		table_close();
	}
	if (err && err != -ENOSPC)
		return err;
	printf("  2^%-3u full at %u keys: %.1f%% load\n", log2, T.live,
	       capacity_pct[log2]);
	return 0;
}

static int write_csv(const char *path)
{
	struct bench_csv csv;
	int err = bench_csv_open(&csv, path,
				 "slots_log2,load_pct,live_keys,table_mib,"
				 "op,median_ns,min_ns,max_ns,runs,ops_per_run");

	for (unsigned i = 0; i < npoints && !err; i++) {
		const struct point *pt = &points[i];

		for (int op = 0; op < OP_N && !err; op++) {
			const struct bench_stats *s = &pt->st[op];

			err = bench_csv_row(&csv,
					    "%u,%u,%u,%.3f,%s,%.2f,%.2f,"
					    "%.2f,%u,%llu",
					    pt->log2, pt->load, pt->live,
					    pt->table_mib, op_name[op],
					    s->median, s->min, s->max, s->runs,
					    (unsigned long long)s->ops_per_run);
		}
	}
	for (unsigned l = 0; l <= LOG2_MAX && !err; l++)
		if (capacity_pct[l] > 0)
			err = bench_csv_row(&csv,
					    "%u,0,0,0,full_at_pct,%.2f,"
					    "%.2f,%.2f,1,0",
					    l, capacity_pct[l], capacity_pct[l],
					    capacity_pct[l]);
	if (err) {
		bench_csv_abort(&csv);
		return err;
	}
	return bench_csv_close(&csv);
}

static void print_header(const struct bench_opts *o, unsigned runs,
			 unsigned max_log2)
{
	bench_title("table size and load factor", o->quick);
	printf("# method: ns of thread CPU time per op, median of %u runs of "
	       "~%.0f ms in rounds; "
	       "keys of %u bytes, integer values, key_max %u, probe limit "
	       "%u, slots 2^%u..2^%u\n",
	       runs, (double)target_ns / 1e6, BENCH_KEY_LEN, KEY_MAX,
	       PROBE_LIMIT, LOG2_MIN, max_log2);
	printf("\n  %-5s %4s %9s %8s %6s", "slots", "load", "keys", "MiB",
	       "probe");
	for (int op = 0; op < OP_N; op++)
		printf(" %8s", op_name[op]);
	printf(" %7s\n", "dep/flr");
}

int main(int argc, char **argv)
{
	static const unsigned quick_loads[] = { 50, 90 };
	unsigned max_log2 = LOG2_MAX, runs;
	const struct bench_extra_opt extra[] = {
		{ "max-log2", "largest table, log2 of its slots", LOG2_MIN,
		  LOG2_MAX, &max_log2 },
	};
	struct bench_opts o;
	uint64_t len;
	int err = 0;

	bench_opts_parse(argc, argv,
			 "ns per GET/SET as the table grows, at several load "
			 "factors, beside a dependent load over the same "
			 "memory.",
			 extra, 1, &o);
	bench_begin(&o, 2, 5);
	runs = o.runs;
	if (o.quick && max_log2 > 14)
		max_log2 = 14;
	target_ns = o.quick ? TARGET_QUICK : TARGET_NS;
	len = o.quick ? STREAM_QUICK : STREAM_LEN;
	T.hit = malloc(len * BENCH_KEY_STRIDE);
	T.miss = malloc(len * BENCH_KEY_STRIDE);
	T.mask = len - 1;
	if (!T.hit || !T.miss)
		return 1;
	print_header(&o, runs, max_log2);
	for (unsigned s = LOG2_MIN; s <= max_log2 && !err;
	     s += o.quick ? 2 : 1) {
		if (!memory_allows(s))
			break;
		err = o.quick ? run_size(s, runs, 2, quick_loads)
			      : run_size(s, runs, NLOADS, loads);
	}
	printf("\ncapacity with the default probe limit (%u): load at the "
	       "first -ENOSPC, keys inserted in order\n",
	       SHMKV_PROBE_LIMIT_DEFAULT);
	for (unsigned s = LOG2_MIN; s <= CAP_LOG2_MAX && s <= max_log2 && !err;
	     s += 2)
		err = capacity(s);
	printf("# load average at the end: %.2f\n", bench_loadavg());
	if (err) {
		fprintf(stderr, "bench_table: %s\n", shmkv_strerror(err));
		return 1;
	}
	if (o.csv && (err = write_csv(o.csv))) {
		fprintf(stderr, "bench_table: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
