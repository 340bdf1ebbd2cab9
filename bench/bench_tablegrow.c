/*
 * bench_tablegrow.c - what online growth of the hash table costs (issue
 * 13; bench_grow measures the growth of value memory). Two parts:
 *
 * latency   P processes (1, then 2) each SET new keys and GET keys they
 *           SET before, in turn (12-byte keys, 8-byte values, kept in the
 *           slot), into a store that starts at 2^10 slots and doubles as
 *           they fill it ("growing"), until it holds 50% of 2^LAT_LOG2
 *           keys (a store of that size doubles from ~60%, and the
 *           baseline below must not); each command is timed alone and tagged "during" when a
 *           growth was under way before or after it (the table's
 *           generation odd: lib/storeinfo.c, one load), else "outside".
 *           Beside it, in the same rounds, the same commands into a store
 *           created with 2^LAT_LOG2 slots, which never grows ("presized"):
 *           the baseline. Reported: p50, p99, p99.9, max and mean of each
 *           command and tag, and the time each growth took (from the first
 *           command that saw it start to the first that saw it end).
 *
 * doubling  W writer processes (2) insert keys (as above) into a store of
 *           2^10 slots until its growth into 2^24 slots has finished:
 *           the total time, keys a second, the time of each doubling
 *           and the old table's load when it began, the peak of the segment's allocated bytes (fstat, polled every
 *           millisecond: while a table grows, both it and the next one are
 *           allocated) and memory_bytes at the end; beside the same keys
 *           inserted by the same writers into a store created with 2^24
 *           slots. Needs ~1.6 GiB of /dev/shm at its peak: with less free
 *           (or less memory available) the target is scaled down, and the
 *           output says so. At most 3 rounds (each takes seconds).
 *
 * A figure is the median over --runs runs, taken in interleaved rounds.
 * Every run checks what it stored (each GET's value; afterwards every key
 * of the run, and shmkv_check in the first round of the doubling part) and
 * fails on a wrong answer: a figure is only given for a store that worked.
 * Wall-clock figures on a shared machine: read the ratios to the presized
 * store of the same run, not the absolute times.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define SLOTS0_LOG2    10u
#define LAT_LOG2       20u
#define LAT_LOG2_QUICK 16u
#define LAT_LOAD_PCT   50u /* a presized store grows from ~60% */
#define DBL_LOG2       24u
#define DBL_LOG2_QUICK 17u
#define DBL_LOG2_MIN   14u
#define WRITERS	       2u
#define WRITERS_MAX    4u
#define PROCS_MAX      4u
#define GENS	       64u /* generations a run can see: 2 a growth */
#define VALUE_LEN      8u
#define SLOT_BYTES     64u /* key_max 16: one-line slots */
#define SPIN_MAX       2000000000ul
#define POLL_NS	       1000000l
#define STOP_EVERY     1024u /* commands between looks at ctl->failed */
#define DBL_TIMEOUT_S  1800u
#define GROWTHS_MAX    (DBL_LOG2 - SLOTS0_LOG2)

static const unsigned lat_procs[] = { 1, 2 };
#define NLATPROCS (sizeof(lat_procs) / sizeof(lat_procs[0]))

enum store { ST_PRESIZED, ST_GROWING, ST_N };
static const char *const store_name[ST_N] = { "presized", "growing" };
enum op { OP_GET, OP_SET, OP_N };
static const char *const op_name[OP_N] = { "GET", "SET" };
enum phase { PH_OUTSIDE, PH_DURING, PH_N };
static const char *const phase_name[PH_N] = { "outside", "during" };

/* Shared with the workers (bench_shm_alloc). */
struct control {
	atomic_int ready;
	atomic_int go;
	atomic_int done;
	atomic_int failed;
	uint64_t go_ns;
	uint64_t first_ns[PROCS_MAX][GENS]; /* each worker's first sight */
	uint64_t end_ns[PROCS_MAX];
	uint64_t keys[PROCS_MAX]; /* doubling: keys each writer inserted */
	/* Keys each worker had inserted when it first saw generation g. */
	uint64_t keys_at[PROCS_MAX][GENS];
	struct bench_hist hist[PROCS_MAX][OP_N][PH_N];
};

struct job {
	const char *name; /* the store */
	unsigned idx, procs;
	uint64_t keys;		   /* keys to insert (doubling: at most) */
	const uint64_t *keys_each; /* if set: worker i inserts keys_each[i] */
	uint64_t stop_gen; /* doubling: stop once the table is this one */
	int timed;	   /* latency: time each command */
	uint64_t overhead; /* bench_timer.overhead */
	shmkv_t *kv;	   /* the worker's handle, once open */
};

static struct control *ctl;
/* --check: verify every round's stores, not only the first's. */
static int verify_every;

/*
 * Keys and values.
 */

/* Key @id as bench.h's, its value the key's last 8 digits: a GET that
 * answers another key's value is caught. */
static const char *value_of(const char *key)
{
	return key + BENCH_KEY_LEN - VALUE_LEN;
}

static int store_config(unsigned log2, struct shmkv_config *cfg)
{
	shmkv_config_init(cfg);
	cfg->slots = 1u << log2;
	cfg->key_max = 16; /* 64-byte slots; 8-byte values live in them */
	cfg->value_max = 16;
	cfg->value_memory = 256u << 10; /* the least: no value uses it */
	return 0;
}

/* Every key @idx of @procs inserted (@n of its ids), read back. */
static int verify_keys(shmkv_t *kv, unsigned idx, unsigned procs, uint64_t n)
{
	char key[BENCH_KEY_STRIDE], buf[16];
	struct shmkv_value out = { buf, sizeof(buf), 0 };

	for (uint64_t i = 0; i < n; i++) {
		bench_key_format(key, (uint32_t)(idx + procs * i));
		if (shmkv_get(kv, key, BENCH_KEY_LEN, &out) != 1 ||
		    out.len != VALUE_LEN ||
		    memcmp(buf, value_of(key), VALUE_LEN) != 0) {
			fprintf(stderr,
				"bench_tablegrow: key %.12s: missing or "
				"wrong after the run\n",
				key);
			return -EPROTO;
		}
	}
	return 0;
}

/*
 * Workers.
 */
static void fail(const struct job *j, const char *what, int err)
{
	uint64_t g = j->kv ? bench_store_generation(j->kv) : 0;

	fprintf(stderr, "bench_tablegrow[%u]: %s: %s\n", j->idx, what,
		shmkv_strerror(err));
	if (j->kv) /* where it happened: the table then */
		fprintf(stderr,
			"bench_tablegrow[%u]: table generation %llu (2^%llu "
			"slots%s)\n",
			j->idx, (unsigned long long)g,
			(unsigned long long)(SLOTS0_LOG2 + (g + 1) / 2),
			g & 1 ? ", growing into it" : "");
	atomic_store(&ctl->failed, 1);
	atomic_fetch_add(&ctl->done, 1);
	_exit(1);
}

/* The first time this worker saw generation @g, after @keys inserts. */
static void saw(unsigned idx, uint64_t g, uint64_t *last, uint64_t keys)
{
	if (g == *last)
		return;
	*last = g;
	if (g < GENS && !ctl->first_ns[idx][g]) {
		ctl->first_ns[idx][g] = bench_now_ns();
		ctl->keys_at[idx][g] = keys;
	}
}

/* Another worker failed: the run is void, stop (every STOP_EVERY). */
static void stop_if_failed(const struct job *j, uint64_t i)
{
	if (i % STOP_EVERY == 0 &&
	    atomic_load_explicit(&ctl->failed, memory_order_relaxed))
		fail(j, "stopped", -ECANCELED);
}

/* One command timed into the histogram of its tag. */
#define TIMED(j, kv, opi, last, keys, call, rc)                                \
	do {                                                                   \
		uint64_t g0_ = bench_store_generation(kv), a_, b_, g1_;        \
		a_ = bench_tick_begin();                                       \
		rc = (call);                                                   \
		b_ = bench_tick_end();                                         \
		g1_ = bench_store_generation(kv);                              \
		saw((j)->idx, g0_, last, keys);                                \
		saw((j)->idx, g1_, last, keys);                                \
		bench_hist_add(&ctl->hist[(j)->idx][opi]                       \
					 [((g0_ | g1_) & 1) || g0_ != g1_],    \
			       bench_sample(b_ - a_, (j)->overhead, 1), 1);    \
	} while (0)

/* Latency: SET key i, then GET a key inserted before, for each i. */
static void latency_worker(const struct job *j, shmkv_t *kv)
{
	char key[BENCH_KEY_STRIDE], gkey[BENCH_KEY_STRIDE], buf[16];
	struct shmkv_value out = { buf, sizeof(buf), 0 };
	uint64_t rng = 0x9e3779b97f4a7c15ull * (j->idx + 1), last = UINT64_MAX;
	int rc;

	for (uint64_t i = 0; i < j->keys; i++) {
		uint64_t pick;

		stop_if_failed(j, i);
		bench_key_format(key, (uint32_t)(j->idx + j->procs * i));
		TIMED(j, kv, OP_SET, &last, i,
		      shmkv_set(kv, key, BENCH_KEY_LEN, value_of(key),
				VALUE_LEN, 0, 0, NULL),
		      rc);
		if (rc != 1)
			fail(j, "SET", rc < 0 ? rc : -EPROTO);
		pick = bench_xorshift64(&rng) % (i + 1);
		bench_key_format(gkey, (uint32_t)(j->idx + j->procs * pick));
		TIMED(j, kv, OP_GET, &last, i + 1,
		      shmkv_get(kv, gkey, BENCH_KEY_LEN, &out), rc);
		if (rc != 1 || out.len != VALUE_LEN ||
		    memcmp(buf, value_of(gkey), VALUE_LEN) != 0)
			fail(j, "GET of a key set before",
			     rc < 0 ? rc : -EPROTO);
	}
	ctl->keys[j->idx] = j->keys;
}

/* Doubling: insert until the table is stop_gen's, or j->keys. */
static void doubling_worker(const struct job *j, shmkv_t *kv)
{
	char key[BENCH_KEY_STRIDE];
	uint64_t last = UINT64_MAX, i;

	for (i = 0; i < j->keys; i++) {
		uint64_t g;
		int rc;

		stop_if_failed(j, i);
		bench_key_format(key, (uint32_t)(j->idx + j->procs * i));
		rc = shmkv_set(kv, key, BENCH_KEY_LEN, value_of(key), VALUE_LEN,
			       0, 0, NULL);
		if (rc != 1)
			fail(j, "SET", rc < 0 ? rc : -EPROTO);
		g = bench_store_generation(kv);
		saw(j->idx, g, &last, i + 1);
		if (j->stop_gen && g >= j->stop_gen) {
			i++;
			break;
		}
	}
	ctl->keys[j->idx] = i;
}

static void worker(struct job *j)
{
	shmkv_t *kv = NULL;
	int err = shmkv_open(j->name, 0, &kv);

	if (err)
		fail(j, "open", err);
	j->kv = kv;
	atomic_fetch_add(&ctl->ready, 1);
	if (bench_spin_until(&ctl->go, 1, SPIN_MAX))
		fail(j, "start", -ETIMEDOUT);
	if (j->timed)
		latency_worker(j, kv);
	else
		doubling_worker(j, kv);
	ctl->end_ns[j->idx] = bench_now_ns();
	shmkv_close(kv);
	atomic_fetch_add(&ctl->done, 1);
	_exit(0);
}

/* Has a worker died without saying so (a signal)? Peeks, reaps nothing. */
static int worker_died(const pid_t *pid, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)pid[i], &si,
			   WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == pid[i] &&
		    (si.si_code != CLD_EXITED || si.si_status != 0))
			return 1;
	}
	return 0;
}

/*
 * Runs: @procs workers of @proto on store @kv; the parent polls the
 * segment's allocated bytes into *@peak (if not NULL) until they are done.
 * Return: 0 or a negative errno.
 */
static int run_workers(const struct job *proto, shmkv_t *kv, uint64_t *peak)
{
	struct timespec nap = { .tv_nsec = POLL_NS };
	pid_t pid[PROCS_MAX];
	uint64_t until;
	int err;

	memset(ctl, 0, sizeof(*ctl));
	for (unsigned i = 0; i < proto->procs; i++) {
		struct job j = *proto;

		j.idx = i;
		if (proto->keys_each)
			j.keys = proto->keys_each[i];
		pid[i] = fork();
		if (pid[i] == 0)
			worker(&j);
		if (pid[i] < 0) {
			err = -errno;
			atomic_store(&ctl->failed, 1);
			atomic_store(&ctl->go, 1);
			bench_reap(pid, i);
			return err;
		}
	}
	/* Every worker ready, or one failed or died before it was. */
	while (atomic_load(&ctl->ready) < (int)proto->procs &&
	       !atomic_load(&ctl->failed) && !worker_died(pid, proto->procs))
		sched_yield();
	err = atomic_load(&ctl->ready) < (int)proto->procs ? -ECHILD : 0;
	if (err)
		atomic_store(&ctl->failed, 1);
	ctl->go_ns = bench_now_ns();
	atomic_store(&ctl->go, 1);
	until = ctl->go_ns + DBL_TIMEOUT_S * 1000000000ull;
	while (atomic_load(&ctl->done) < (int)proto->procs &&
	       !atomic_load(&ctl->failed) && bench_now_ns() < until) {
		if (worker_died(pid, proto->procs)) {
			atomic_store(&ctl->failed, 1); /* the others stop */
			break;
		}
		if (peak) {
			uint64_t b = bench_store_allocated(kv);

			*peak = b > *peak ? b : *peak;
		}
		nanosleep(&nap, NULL);
	}
	if (atomic_load(&ctl->done) < (int)proto->procs)
		atomic_store(&ctl->failed, 1); /* died or timed out: stop all */
	if (bench_reap(pid, proto->procs) || atomic_load(&ctl->failed))
		return -ECHILD;
	return err;
}

/* The first time any worker saw generation @g; 0 if none did. */
static uint64_t first_seen(unsigned procs, unsigned g)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < procs; i++) {
		uint64_t v = ctl->first_ns[i][g];

		if (v && (!t || v < t))
			t = v;
	}
	return t;
}

/* The ms growth @e (from 2^(10+e) slots) took; -1 if not seen both ends
 * (it finished in shmkv_maintain, or never started). */
static double growth_ms(unsigned procs, unsigned e)
{
	uint64_t a = first_seen(procs, 2 * e + 1),
		 b = first_seen(procs, 2 * e + 2);

	return a && b && b > a ? (double)(b - a) / 1e6 : -1;
}

/* The keys in the store when growth @e began: what each worker had
 * inserted when it first saw it, or the first generation after it that
 * it saw (a worker may not look while a short growth runs); -1: none saw
 * it. */
static double start_keys(unsigned procs, unsigned e)
{
	uint64_t sum = 0;

	if (!first_seen(procs, 2 * e + 1))
		return -1;
	for (unsigned i = 0; i < procs; i++)
		for (unsigned g = 2 * e + 1; g < GENS; g++)
			if (ctl->first_ns[i][g]) {
				sum += ctl->keys_at[i][g];
				break;
			}
	return (double)sum;
}

static uint64_t last_end(unsigned procs)
{
	uint64_t t = 0;

	for (unsigned i = 0; i < procs; i++)
		t = ctl->end_ns[i] > t ? ctl->end_ns[i] : t;
	return t;
}

/* After a run: finish a growth under way, then read every key back. */
static int settle(shmkv_t *kv, unsigned procs, int *finished_late)
{
	int err;

	*finished_late = bench_store_generation(kv) & 1;
	err = shmkv_maintain(kv);
	for (unsigned i = 0; i < procs && !err; i++)
		err = verify_keys(kv, i, procs, ctl->keys[i]);
	return err;
}

/*
 * Part 1: latency.
 */
struct lat_cell {
	unsigned procs;
	enum store s;
	/* per run: [op][phase] summaries, counts; total ms; growths' ms */
	struct bench_lat (*lat)[OP_N][PH_N];
	double (*count)[OP_N][PH_N];
	double *total_ms;
	double *growths; /* the table's doublings in the run */
	double (*grow_ms)[GROWTHS_MAX];
};

static int lat_run(struct lat_cell *c, unsigned r, unsigned log2,
		   const struct bench_timer *t)
{
	static struct bench_hist merged;
	struct shmkv_config cfg;
	struct job j = { 0 };
	char name[64];
	shmkv_t *kv;
	int err, late;

	store_config(c->s == ST_GROWING ? SLOTS0_LOG2 : log2, &cfg);
	err = bench_store_create("tgrow", &cfg, &kv, name);
	if (err)
		return err;
	j.name = name;
	j.procs = c->procs;
	j.keys = ((1ull << log2) * LAT_LOAD_PCT / 100) / c->procs;
	j.timed = 1;
	j.overhead = t->overhead;
	err = run_workers(&j, kv, NULL);
	if (!err) {
		c->total_ms[r] = (double)(last_end(c->procs) - ctl->go_ns) /
				 1e6;
		err = settle(kv, c->procs, &late);
		c->growths[r] = (double)(bench_store_generation(kv) / 2);
	}
	for (int o = 0; o < OP_N && !err; o++)
		for (int p = 0; p < PH_N; p++) {
			bench_hist_reset(&merged);
			for (unsigned i = 0; i < c->procs; i++)
				bench_hist_merge(&merged, &ctl->hist[i][o][p]);
			bench_hist_summary(&merged, t, &c->lat[r][o][p]);
			c->count[r][o][p] = (double)merged.count;
		}
	for (unsigned e = 0; e < GROWTHS_MAX && !err; e++)
		c->grow_ms[r][e] = growth_ms(c->procs, e);
	bench_store_destroy(kv, name);
	return err;
}

/* The median of the runs' values that are >= 0 (-1: none are). */
static double median_known(const double *v, unsigned n)
{
	double k[BENCH_RUNS_MAX];
	unsigned m = 0;

	for (unsigned i = 0; i < n; i++)
		if (v[i] >= 0)
			k[m++] = v[i];
	return m ? bench_median(k, m) : -1;
}

static int lat_report(struct lat_cell *cells, unsigned ncells, unsigned runs,
		      unsigned log2, struct bench_csv *csv)
{
	double v[6][BENCH_RUNS_MAX];
	int err = 0;

	printf("\nlatency: ns per command, each timed alone; medians of %u "
	       "runs\n",
	       runs);
	printf("  %-5s %-8s %-7s %-3s %9s %8s %8s %8s %10s %8s\n", "procs",
	       "store", "growth", "op", "commands", "p50", "p99", "p99.9",
	       "max", "mean");
	for (unsigned ci = 0; ci < ncells && !err; ci++) {
		struct lat_cell *c = &cells[ci];

		for (int p = 0; p < PH_N && !err; p++)
			for (int o = 0; o < OP_N && !err; o++) {
				double m[6];

				double seen = 0;

				for (unsigned r = 0; r < runs; r++)
					seen += c->count[r][o][p];
				if (!seen) /* the presized store never grew */
					continue;
				for (unsigned r = 0; r < runs; r++) {
					const struct bench_lat *l =
						&c->lat[r][o][p];

					v[0][r] = c->count[r][o][p];
					v[1][r] = l->p50, v[2][r] = l->p99;
					v[3][r] = l->p999, v[4][r] = l->max;
					v[5][r] = l->mean;
				}
				for (int k = 0; k < 6; k++)
					m[k] = bench_median(v[k], runs);
				printf("  %-5u %-8s %-7s %-3s %9.0f %8.0f "
				       "%8.0f "
				       "%8.0f %10.0f %8.0f\n",
				       c->procs, store_name[c->s],
				       phase_name[p], op_name[o], m[0], m[1],
				       m[2], m[3], m[4], m[5]);
				if (csv->f)
					err = bench_csv_row(
						csv,
						"latency,%u,%s,%s,%s,,%.0f,%."
						"1f,"
						"%.1f,%.1f,%.1f,%.1f,,,,,,",
						c->procs, store_name[c->s],
						phase_name[p], op_name[o], m[0],
						m[1], m[2], m[3], m[4], m[5]);
			}
	}
	printf("\nlatency part: total ms of each run (SETs and GETs), and ms "
	       "of each growth (first command that saw it start to first "
	       "that saw it end), medians\n");
	for (unsigned ci = 0; ci < ncells && !err; ci++) {
		struct lat_cell *c = &cells[ci];
		double tot = bench_median(c->total_ms, runs);
		double grew = bench_median(c->growths, runs);

		printf("  %u procs, %-8s total %8.1f ms, %.0f growths\n",
		       c->procs, store_name[c->s], tot, grew);
		if (csv->f)
			err = bench_csv_row(
				csv, "total,%u,%s,,,,,,,,,,%.2f,%.0f,,,,%.0f",
				c->procs, store_name[c->s], tot,
				(double)((1ull << log2) * LAT_LOAD_PCT / 100),
				grew);
		if (c->s != ST_GROWING)
			continue;
		printf("    growth into:");
		for (unsigned e = 0; e + SLOTS0_LOG2 < log2 && !err; e++) {
			double g[BENCH_RUNS_MAX], m;

			for (unsigned r = 0; r < runs; r++)
				g[r] = c->grow_ms[r][e];
			m = median_known(g, runs);
			printf(" 2^%u %.2f", SLOTS0_LOG2 + e + 1, m);
			if (csv->f)
				err = bench_csv_row(
					csv,
					"growth,%u,growing,,,%llu,,,,,,,%.3f,,,"
					",,",
					c->procs, 1ull << (SLOTS0_LOG2 + e), m);
		}
		printf(" ms\n");
	}
	return err;
}

static int latency_part(const struct bench_opts *o, struct bench_csv *csv)
{
	struct lat_cell cells[NLATPROCS * ST_N];
	struct bench_timer t;
	unsigned log2 = o->quick ? LAT_LOG2_QUICK : LAT_LOG2, n = 0;
	int err = 0;

	bench_timer_init(&t);
	for (unsigned p = 0; p < NLATPROCS; p++)
		for (int s = 0; s < ST_N; s++) {
			struct lat_cell *c = &cells[n++];

			c->procs = lat_procs[p];
			c->s = s;
			c->lat = calloc(o->runs, sizeof(*c->lat));
			c->count = calloc(o->runs, sizeof(*c->count));
			c->total_ms = calloc(o->runs, sizeof(*c->total_ms));
			c->growths = calloc(o->runs, sizeof(*c->growths));
			c->grow_ms = calloc(o->runs, sizeof(*c->grow_ms));
			if (!c->lat || !c->count || !c->total_ms ||
			    !c->growths || !c->grow_ms)
				return -ENOMEM;
		}
	printf("# latency: %llu keys (%u%% of 2^%u slots) SET by 1 or 2 "
	       "processes, each SET followed by a GET of a key the process "
	       "set before; growing: from 2^%u slots; presized: 2^%u; "
	       "%u runs, interleaved\n",
	       (unsigned long long)((1ull << log2) * LAT_LOAD_PCT / 100),
	       LAT_LOAD_PCT, log2, SLOTS0_LOG2, log2, o->runs);
	fflush(stdout);
	for (unsigned r = 0; r < o->runs && !err; r++) {
		for (unsigned i = 0; i < n && !err; i++)
			err = lat_run(&cells[i], r, log2, &t);
		bench_progress(r + 1, o->runs);
	}
	if (!err)
		err = lat_report(cells, n, o->runs, log2, csv);
	for (unsigned i = 0; i < n; i++) {
		free(cells[i].lat);
		free(cells[i].count);
		free(cells[i].total_ms);
		free(cells[i].growths);
		free(cells[i].grow_ms);
	}
	return err;
}

/*
 * Part 2: doubling from 2^10 to 2^DBL_LOG2 slots.
 */
struct dbl_run {
	double ms, keys, peak, memory, growths;
	double grow_ms[GROWTHS_MAX];
	double start_keys[GROWTHS_MAX]; /* keys when each growth began */
};

/* Bytes at the peak of a growth into 2^@log2 slots: both tables. */
static uint64_t peak_estimate(unsigned log2)
{
	return (3ull << (log2 - 1)) * SLOT_BYTES + (8u << 20);
}

/* The largest target <= @want whose peak fits, with half again to spare,
 * in /dev/shm's free space and the memory available. */
static unsigned dbl_target(unsigned want, uint64_t *room)
{
	struct bench_machine m;
	struct statvfs vfs;
	uint64_t shm = UINT64_MAX, mem;
	unsigned log2 = want;

	bench_machine_describe(&m);
	mem = (uint64_t)m.avail_mib << 20;
	if (statvfs("/dev/shm", &vfs) == 0)
		shm = (uint64_t)vfs.f_bavail * vfs.f_frsize;
	*room = shm < mem ? shm : mem;
	while (log2 > DBL_LOG2_MIN && peak_estimate(log2) * 3 / 2 > *room)
		log2--;
	return log2;
}

static int dbl_run(enum store s, unsigned log2, unsigned writers, int check,
		   uint64_t *keys_each, struct dbl_run *out)
{
	struct shmkv_config cfg;
	struct shmkv_stats st;
	struct job j = { 0 };
	uint64_t peak = 0, per[PROCS_MAX];
	char name[64];
	shmkv_t *kv;
	int err, late;

	store_config(s == ST_GROWING ? SLOTS0_LOG2 : log2, &cfg);
	err = bench_store_create("tgrow", &cfg, &kv, name);
	if (err)
		return err;
	j.name = name;
	j.procs = writers;
	/* Growing: until the target table stands alone, at most as many
	 * keys as fill it; presized: the keys the growing run inserted. */
	j.keys = (1ull << log2) / writers;
	j.stop_gen = s == ST_GROWING ? 2ull * (log2 - SLOTS0_LOG2) : 0;
	j.keys_each = s == ST_GROWING ? NULL : keys_each;
	err = run_workers(&j, kv, &peak);
	if (!err) {
		out->ms = (double)(last_end(writers) - ctl->go_ns) / 1e6;
		for (unsigned i = 0; i < writers; i++)
			per[i] = ctl->keys[i];
		out->keys = 0;
		for (unsigned i = 0; i < writers; i++)
			out->keys += (double)per[i];
		for (unsigned e = 0; e < GROWTHS_MAX; e++)
			out->grow_ms[e] = growth_ms(writers, e);
		for (unsigned e = 0; e < GROWTHS_MAX; e++)
			out->start_keys[e] = start_keys(writers, e);
		if (s == ST_GROWING)
			for (unsigned i = 0; i < writers; i++)
				keys_each[i] = per[i];
		err = check ? settle(kv, writers, &late) : 0;
	}
	if (!err)
		err = shmkv_stats(kv, &st);
	if (!err && st.slots != 1ull << log2 && s == ST_GROWING) {
		fprintf(stderr,
			"bench_tablegrow: the table has %llu slots, not "
			"2^%u\n",
			(unsigned long long)st.slots, log2);
		err = -EPROTO;
	}
	if (!err && check) {
		int bad = shmkv_check(kv, NULL, NULL);

		if (bad != 0) {
			fprintf(stderr,
				"bench_tablegrow: shmkv_check after the run: "
				"%d\n",
				bad);
			err = bad < 0 ? bad : -EPROTO;
		}
	}
	if (!err) {
		uint64_t now = bench_store_allocated(kv);

		out->peak = (double)(peak > now ? peak : now);
		out->memory = (double)st.memory_bytes;
		out->growths = (double)(bench_store_generation(kv) / 2);
	}
	bench_store_destroy(kv, name);
	return err;
}

static void dbl_csv_row(struct bench_csv *csv, int *err, unsigned writers,
			const char *store, const double *m)
{
	/* m: keys, ms, peak, memory, growths */
	if (csv->f && !*err)
		*err = bench_csv_row(csv,
				     "doubling,%u,%s,,,,,,,,,,%.1f,%.0f,%.0f,"
				     "%.0f,%.0f,%.0f",
				     writers, store, m[1], m[0],
				     m[1] > 0 ? m[0] / m[1] * 1e3 : 0, m[2],
				     m[3], m[4]);
}

static int dbl_report(struct dbl_run (*runs)[ST_N], unsigned n, unsigned log2,
		      unsigned writers, struct bench_csv *csv)
{
	double v[5][BENCH_RUNS_MAX], m[ST_N][5];
	int err = 0;

	printf("\ndoubling: %u writers insert keys until the table has 2^%u "
	       "slots; medians of %u runs\n",
	       writers, log2, n);
	printf("  %-8s %10s %10s %10s %10s %12s %8s\n", "store", "keys", "ms",
	       "keys/s", "peak MiB", "memory MiB", "B/key");
	for (int s = 0; s < ST_N; s++) {
		for (unsigned r = 0; r < n; r++) {
			v[0][r] = runs[r][s].keys, v[1][r] = runs[r][s].ms;
			v[2][r] = runs[r][s].peak, v[3][r] = runs[r][s].memory;
			v[4][r] = runs[r][s].growths;
		}
		for (int k = 0; k < 5; k++)
			m[s][k] = bench_median(v[k], n);
	}
	for (int s = ST_N - 1; s >= 0; s--) {
		printf("  %-8s %10.0f %10.1f %10.0f %10.1f %12.1f %8.1f\n",
		       store_name[s], m[s][0], m[s][1],
		       m[s][1] > 0 ? m[s][0] / m[s][1] * 1e3 : 0,
		       m[s][2] / (1 << 20), m[s][3] / (1 << 20),
		       m[s][0] > 0 ? m[s][3] / m[s][0] : 0);
		dbl_csv_row(csv, &err, writers, store_name[s], m[s]);
	}
	for (unsigned r = 0; r < n; r++)
		v[0][r] = runs[r][ST_GROWING].ms / runs[r][ST_PRESIZED].ms;
	printf("  growing / presized time, same round: %.2fx (median)\n",
	       bench_median(v[0], n));
	printf("  each doubling, ms from its start to its end, and the old "
	       "table's load when it started (median):\n   ");
	for (unsigned e = 0; e + SLOTS0_LOG2 < log2 && !err; e++) {
		double g[BENCH_RUNS_MAX], ms, at;

		for (unsigned r = 0; r < n; r++)
			g[r] = runs[r][ST_GROWING].grow_ms[e];
		ms = median_known(g, n);
		for (unsigned r = 0; r < n; r++)
			g[r] = runs[r][ST_GROWING].start_keys[e];
		at = median_known(g, n);
		printf(" 2^%u %.1f (from %.0f%%)", SLOTS0_LOG2 + e + 1, ms,
		       100.0 * at / (double)(1ull << (SLOTS0_LOG2 + e)));
		if (csv->f)
			err = bench_csv_row(
				csv,
				"doubling_step,%u,growing,,,%llu,,,,,,"
				",%.3f,%.0f,,,,",
				writers, 1ull << (SLOTS0_LOG2 + e), ms, at);
	}
	printf("\n");
	return err;
}

static int doubling_part(const struct bench_opts *o, unsigned writers,
			 unsigned want, struct bench_csv *csv)
{
	struct dbl_run(*runs)[ST_N] = calloc(o->runs, sizeof(*runs));
	uint64_t keys_each[PROCS_MAX], room;
	unsigned log2 = dbl_target(want, &room);
	int err = runs ? 0 : -ENOMEM;

	printf("\n# doubling: 2^%u -> 2^%u slots, %u writer processes, 12-byte "
	       "keys, %u-byte values; presized: the same keys into 2^%u slots; "
	       "%u runs, interleaved\n",
	       SLOTS0_LOG2, log2, writers, VALUE_LEN, log2, o->runs);
	if (log2 < want)
		printf("# SCALED DOWN from 2^%u slots: %.0f MiB free in "
		       "/dev/shm "
		       "and memory, a peak of ~%.0f MiB wanted with half again "
		       "to spare\n",
		       want, (double)room / (1 << 20),
		       (double)peak_estimate(want) / (1 << 20));
	fflush(stdout);
	for (unsigned r = 0; r < o->runs && !err; r++) {
		err = dbl_run(ST_GROWING, log2, writers, r == 0 || verify_every,
			      keys_each, &runs[r][ST_GROWING]);
		if (!err)
			err = dbl_run(ST_PRESIZED, log2, writers,
				      r == 0 || verify_every, keys_each,
				      &runs[r][ST_PRESIZED]);
		bench_progress(r + 1, o->runs);
	}
	if (!err)
		err = dbl_report(runs, o->runs, log2, writers, csv);
	free(runs);
	return err;
}

int main(int argc, char **argv)
{
	unsigned writers = 0, target = 0, part = 0, check = 0;
	const struct bench_extra_opt extra[] = {
		{ "writers", "doubling: writer processes (default 2)", 1,
		  WRITERS_MAX, &writers },
		{ "target",
		  "doubling: log2 of the slots to grow to "
		  "(default 24; --quick 17)",
		  SLOTS0_LOG2 + 1, DBL_LOG2, &target },
		{ "part", "1: latency only; 2: doubling only (default both)", 1,
		  2, &part },
		{ "check",
		  "test mode: this many rounds of the doubling part (to "
		  "2^17 slots unless --target), every store checked; exit 1 "
		  "on any failed command or wrong key; times are not judged",
		  1, BENCH_RUNS_MAX, &check },
	};
	/* Static: bench_cleanup_csv hands it to an exit handler, which runs
	 * after main has returned. */
	static struct bench_csv csv;
	struct bench_opts o;
	int err = 0;

	bench_opts_parse(argc, argv,
			 "GET and SET latency while the table grows, beside a "
			 "presized store; the time to grow from 2^10 to 2^24 "
			 "slots under load.",
			 extra, sizeof(extra) / sizeof(extra[0]), &o);
	if (check) {
		o.runs = check;
		part = part ? part : 2;
		verify_every = 1;
		o.quick = 1; /* smaller sizes, marked as not figures */
	}
	bench_begin(&o, 1, 5);
	bench_title("tablegrow: online growth of the hash table", o.quick);
	ctl = bench_shm_alloc(sizeof(*ctl));
	if (!ctl) {
		fprintf(stderr, "bench_tablegrow: %s\n", strerror(errno));
		return 1;
	}
	if (o.csv) {
		err = bench_csv_open(&csv, o.csv,
				     "kind,procs,store,phase,op,from_slots,"
				     "count,p50_ns,p99_ns,p999_ns,max_ns,"
				     "mean_ns,ms,keys,keys_per_s,peak_bytes,"
				     "memory_bytes,growths");
		bench_cleanup_csv(&csv);
	}
	if (!err && part != 2)
		err = latency_part(&o, &csv);
	if (!err && part != 1) {
		struct bench_opts d = o;

		/* Each doubling run takes seconds: fewer rounds. */
		d.runs = check ? check : o.runs < 3 ? o.runs : 3;
		err = doubling_part(&d, writers ? writers : WRITERS,
				    target    ? target
				    : o.quick ? DBL_LOG2_QUICK
					      : DBL_LOG2,
				    &csv);
	}
	printf("# load average at the end: %.2f\n", bench_loadavg());
	if (!err && csv.f)
		err = bench_csv_close(&csv);
	if (err) {
		bench_csv_abort(&csv);
		/* -ECHILD: a worker failed, and said why above. */
		fprintf(stderr, "bench_tablegrow: %s\n",
			err == -ECHILD ? "a worker failed: no figures"
				       : shmkv_strerror(err));
		if (check)
			printf("# check: FAIL\n");
		return 1;
	}
	if (check)
		printf("# check: PASS (%u rounds, every key read back, "
		       "shmkv_check clean)\n",
		       check);
	return 0;
}
