/*
 * bench_scale.c - throughput and fairness as processes are added: 1, 2, 4
 * and 8 forked processes (more than the cores included) run GET/SET mixes
 * on one store for a fixed time.
 *
 * Mixes: read-mostly (95% GET, 5% SET), balanced (50/50) and write-only
 * (SET), on three data sets: N keys holding 16-byte strings chosen uniform
 * or zipfian (0.99), and N keys holding integers (which shmkv keeps in the
 * slot: a SET is one CAS) chosen uniform. Each process opens the store by name (its own handle and
 * mapping, as an unrelated process would) and walks its own part of the
 * precomputed key and mix streams until told to stop. Figures per run:
 * total commands per second, and fairness: the fewest commands any process
 * completed divided by the most (1 = even shares). The baseline is the
 * mutex-guarded map (lib/kv_mutex.c) under the same load.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/kv.h"

#define KEYS_FULL  (1u << 15)
#define KEYS_QUICK (1u << 11)
#define VLEN_MAX   16u
#define PROCS_MAX  8
#define CHUNK	   64	       /* commands between looks at the stop flag */
#define STREAM_LEN (1u << 20)  /* key ids */
#define MIX_LEN	   (1u << 16)  /* percent draws, 0..99 */
#define SPIN_MAX   200000000ul /* sched_yield rounds: only ends a hang */

enum impl { I_SHMKV, I_MUTEX, I_N };
static const char *const impl_tag[I_N] = { "shmkv", "mutex_map" };
static const unsigned read_pct[] = { 95, 50, 0 };
static const char *const mix_name[] = { "95/5", "50/50", "write-only" };
#define NMIX (sizeof(read_pct) / sizeof(read_pct[0]))
static const unsigned procs[] = { 1, 2, 4, 8 };
#define NPROCS (sizeof(procs) / sizeof(procs[0]))
/* Data sets: which values (one store and one map each) and keys. */
enum values { V_STR, V_INT, NVALUES };
static const char *const value_name[NVALUES] = { "16B", "int" };
static const uint32_t value_len[NVALUES] = { 16, 5 };
static const struct {
	enum values v;
	enum bench_dist d;
} sets[] = { { V_STR, BENCH_UNIFORM },
	     { V_STR, BENCH_ZIPF },
	     { V_INT, BENCH_UNIFORM } };
#define NSETS (sizeof(sets) / sizeof(sets[0]))

/* Shared with the children (bench_shm_alloc). */
struct control {
	atomic_int ready;
	atomic_int go;
	atomic_int stop;
	atomic_int failed;
	uint64_t count[PROCS_MAX];
	uint64_t end_ns[PROCS_MAX];
};

struct scale {
	char *keys;
	uint32_t n;
	char name[NVALUES][64]; /* the stores */
	shmkv_t *store[NVALUES];
	struct bench_kv mutex[NVALUES]; /* the maps, shared through fork */
	uint32_t *ids[BENCH_DISTS];
	unsigned char *mix;
	struct control *ctl;
	char val[NVALUES][2][VLEN_MAX];
};

static struct scale S;

/* One figure: per run, Mops/s and fairness. */
struct cell {
	enum impl im;
	unsigned mix, set, procs;
	double *mops, *fair;
};

static struct cell cells[I_N * NMIX * NSETS * NPROCS];
static unsigned ncells;

static void spin_until(atomic_int *v, int want)
{
	if (bench_spin_until(v, want, SPIN_MAX)) {
		fprintf(stderr, "bench_scale: a process never came\n");
		_exit(1);
	}
}

/* One CHUNK of the commands of @c from stream position @pos.
 * Return: 0 or -1. */
static int chunk(struct bench_kv *kv, const struct cell *c, uint64_t pos)
{
	const uint32_t *ids = S.ids[sets[c->set].d];
	enum values v = sets[c->set].v;
	size_t len = value_len[v];

	for (unsigned i = 0; i < CHUNK; i++, pos++) {
		uint32_t id = ids[pos & (STREAM_LEN - 1)];
		int rc;

		if (S.mix[pos & (MIX_LEN - 1)] < read_pct[c->mix]) {
			rc = kv->ops->fn[BCMD_GET](kv, id, NULL, 0);
			if (rc != 1 || kv->out.len != len)
				return -1;
		} else {
			rc = kv->ops->fn[BCMD_SET](kv, id, S.val[v][pos & 1],
						   len);
			if (rc != 1)
				return -1;
		}
	}
	return 0;
}

static int child_kv(const struct cell *c, struct bench_kv *kv, shmkv_t **h)
{
	enum values v = sets[c->set].v;
	int err;

	if (c->im == I_MUTEX) {
		*kv = S.mutex[v]; /* the parent's handle on the shared map */
		return 0;
	}
	err = shmkv_open(S.name[v], 0, h);
	return err ? err : bench_kv_shmkv(kv, *h, S.keys, S.n, VLEN_MAX);
}

static void child(const struct cell *c, unsigned idx)
{
	struct bench_kv kv;
	shmkv_t *h = NULL;
	uint64_t pos = (uint64_t)idx * (STREAM_LEN / PROCS_MAX), n = 0;
	int err = child_kv(c, &kv, &h);

	if (err) {
		fprintf(stderr, "bench_scale[%u]: %s\n", idx,
			shmkv_strerror(err));
		atomic_store(&S.ctl->failed, 1);
		_exit(1);
	}
	atomic_fetch_add(&S.ctl->ready, 1);
	spin_until(&S.ctl->go, 1);
	while (!atomic_load_explicit(&S.ctl->stop, memory_order_relaxed)) {
		if (chunk(&kv, c, pos)) {
			fprintf(stderr,
				"bench_scale[%u]: %s: a command "
				"failed\n",
				idx, impl_tag[c->im]);
			atomic_store(&S.ctl->failed, 1);
			_exit(1);
		}
		pos += CHUNK;
		n += CHUNK;
	}
	S.ctl->count[idx] = n;
	S.ctl->end_ns[idx] = bench_now_ns();
	_exit(0);
}

/* One run of @c for @ms milliseconds: fills mops/fair of run @r. */
static int run_cell(struct cell *c, unsigned r, unsigned ms)
{
	struct timespec d = { .tv_sec = ms / 1000,
			      .tv_nsec = (long)(ms % 1000) * 1000000 };
	pid_t pid[PROCS_MAX];
	uint64_t t0, end = 0, sum = 0, lo = UINT64_MAX, hi = 0;
	int err;

	memset(S.ctl, 0, sizeof(*S.ctl));
	for (unsigned i = 0; i < c->procs; i++) {
		pid[i] = fork();
		if (pid[i] == 0)
			child(c, i);
		if (pid[i] < 0) {
			atomic_store(&S.ctl->failed, 1);
			atomic_store(&S.ctl->stop, 1);
			bench_reap(pid, i);
			return -errno;
		}
	}
	/* A child that dies before it is ready (a signal) is caught by the
	 * bound; one that fails says so. */
	for (unsigned long i = 0; atomic_load(&S.ctl->ready) < (int)c->procs &&
				  !atomic_load(&S.ctl->failed);
	     i++)
		if (i > SPIN_MAX)
			atomic_store(&S.ctl->failed, 1);
		else
			sched_yield();
	t0 = bench_now_ns();
	atomic_store(&S.ctl->go, 1);
	nanosleep(&d, NULL);
	atomic_store(&S.ctl->stop, 1);
	err = bench_reap(pid, c->procs);
	if (err || atomic_load(&S.ctl->failed))
		return err ? err : -EPROTO;
	for (unsigned i = 0; i < c->procs; i++) {
		uint64_t k = S.ctl->count[i];

		sum += k;
		lo = k < lo ? k : lo;
		hi = k > hi ? k : hi;
		end = S.ctl->end_ns[i] > end ? S.ctl->end_ns[i] : end;
	}
	c->mops[r] = (double)sum / (double)(end - t0) * 1e3;
	c->fair[r] = hi ? (double)lo / (double)hi : 0;
	return 0;
}

/*
 * Setup.
 */
static int fill(enum values v)
{
	struct bench_kv kv;
	int err = bench_kv_shmkv(&kv, S.store[v], S.keys, S.n, VLEN_MAX);
	struct bench_kv *map = &S.mutex[v];

	for (uint32_t id = 0; id < S.n && !err; id++) {
		int a = kv.ops->fn[BCMD_SET](&kv, id, S.val[v][0],
					     value_len[v]);
		int b = map->ops->fn[BCMD_SET](map, id, S.val[v][0],
					       value_len[v]);

		err = a < 0 ? a : b < 0 ? b : 0;
	}
	bench_kv_close(&kv);
	return err;
}

static int make_streams(void)
{
	uint64_t rng = 0x2545f4914f6cdd1dull;

	for (unsigned d = BENCH_UNIFORM; d < BENCH_DISTS; d++) {
		S.ids[d] = bench_stream_make(d, STREAM_LEN, S.n, 0.99, 0,
					     0x9e3779b97f4a7c15ull + d);
		if (!S.ids[d])
			return -ENOMEM;
	}
	for (unsigned i = 0; i < MIX_LEN; i++)
		S.mix[i] = (unsigned char)(bench_xorshift64(&rng) % 100);
	return 0;
}

/* A store and a map for values @v. */
static int make_set(enum values v)
{
	static const char *const tag[NVALUES] = { "scale-str", "scale-int" };
	struct shmkv_config cfg;
	int err;

	shmkv_config_init(&cfg);
	cfg.slots = 2 * S.n;
	cfg.key_max = 16;
	cfg.value_max = VLEN_MAX;
	/* Every key's block three times over: writes in flight and room to
	 * find a free block. 40-byte blocks, 64 KiB pages. */
	cfg.value_memory = ((uint64_t)S.n * 3 / (65536 / 40) + 16) * 65536;
	if ((err = bench_store_create(tag[v], &cfg, &S.store[v], S.name[v])) ||
	    (err = bench_kv_mutex_map(&S.mutex[v], 2 * S.n, S.keys, S.n,
				      VLEN_MAX)))
		return err;
	return fill(v);
}

static int setup(int quick)
{
	int err;

	S.n = quick ? KEYS_QUICK : KEYS_FULL;
	S.keys = bench_keys_make(S.n);
	S.mix = malloc(MIX_LEN);
	S.ctl = bench_shm_alloc(sizeof(*S.ctl));
	if (!S.keys || !S.mix || !S.ctl)
		return -ENOMEM;
	memset(S.val[V_STR][0], 'a', VLEN_MAX);
	memset(S.val[V_STR][1], 'b', VLEN_MAX);
	memcpy(S.val[V_INT][0], "12345", 5);
	memcpy(S.val[V_INT][1], "54321", 5);
	if ((err = make_streams()) || (err = make_set(V_STR)) ||
	    (err = make_set(V_INT)))
		return err;
	return 0;
}

static int make_cells(unsigned runs)
{
	for (unsigned im = 0; im < I_N; im++)
		for (unsigned m = 0; m < NMIX; m++)
			for (unsigned set = 0; set < NSETS; set++)
				for (unsigned p = 0; p < NPROCS; p++) {
					struct cell *c = &cells[ncells++];

					c->im = im;
					c->mix = m;
					c->set = set;
					c->procs = procs[p];
					c->mops = calloc(runs, sizeof(double));
					c->fair = calloc(runs, sizeof(double));
					if (!c->mops || !c->fair)
						return -ENOMEM;
				}
	return 0;
}

static int measure(unsigned runs, unsigned ms)
{
	for (unsigned r = 0; r < runs; r++) {
		for (unsigned i = 0; i < ncells; i++) {
			int err = run_cell(&cells[i], r, ms);

			if (err) {
				fprintf(stderr,
					"bench_scale: %s %s %u procs: "
					"%s\n",
					impl_tag[cells[i].im],
					mix_name[cells[i].mix], cells[i].procs,
					shmkv_strerror(err));
				return err;
			}
		}
		bench_progress(r + 1, runs);
	}
	return 0;
}

/*
 * Report.
 */
static void print_table(unsigned runs)
{
	printf("\nmillion commands per second, all processes together "
	       "[fairness: fewest/most per process], median of %u runs\n",
	       runs);
	printf("  %-10s %-10s %-5s %-8s", "impl", "mix", "value", "keys");
	for (unsigned p = 0; p < NPROCS; p++)
		printf("   %2u proc%s      ", procs[p],
		       procs[p] > 1 ? "s" : " ");
	printf("\n");
	for (unsigned i = 0; i < ncells; i += NPROCS) {
		printf("  %-10s %-10s %-5s %-8s", impl_tag[cells[i].im],
		       mix_name[cells[i].mix], value_name[sets[cells[i].set].v],
		       bench_dist_name[sets[cells[i].set].d]);
		for (unsigned p = 0; p < NPROCS; p++)
			printf("  %7.2f [%4.2f]",
			       bench_median(cells[i + p].mops, runs),
			       bench_median(cells[i + p].fair, runs));
		printf("\n");
	}
}

static int write_csv(const char *path, unsigned runs, unsigned ms)
{
	struct bench_csv csv;
	int err = bench_csv_open(&csv, path,
				 "impl,mix,value,keys,procs,mops_median,"
				 "mops_min,mops_max,fair_median,fair_min,runs,"
				 "run_ms");

	for (unsigned i = 0; i < ncells && !err; i++) {
		struct cell *c = &cells[i];
		struct bench_stats m, f;

		bench_stats_compute(c->mops, runs, 0, &m);
		bench_stats_compute(c->fair, runs, 0, &f);
		err = bench_csv_row(&csv,
				    "%s,%s,%s,%s,%u,%.4f,%.4f,%.4f,%.3f,%.3f,"
				    "%u,%u",
				    impl_tag[c->im], mix_name[c->mix],
				    value_name[sets[c->set].v],
				    bench_dist_name[sets[c->set].d], c->procs,
				    m.median, m.min, m.max, f.median, f.min,
				    runs, ms);
	}
	if (err) {
		bench_csv_abort(&csv);
		return err;
	}
	return bench_csv_close(&csv);
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	unsigned runs, ms;
	int err;

	bench_opts_parse(argc, argv,
			 "Total throughput and fairness of 1-8 processes on "
			 "GET/SET mixes, shmkv beside a mutex-guarded map.",
			 NULL, 0, &o);
	bench_begin(&o, 1, 5);
	runs = o.runs;
	ms = o.quick ? 10 : 120;
	if ((err = setup(o.quick)) || (err = make_cells(runs))) {
		fprintf(stderr, "bench_scale: setup failed: %s\n",
			shmkv_strerror(err));
		return 1;
	}
	bench_title("multi-process scaling", o.quick);
	printf("# method: %u runs of %u ms per figure in interleaved rounds; "
	       "%u keys in %u slots; processes forked, each opens the store "
	       "by name\n",
	       runs, ms, S.n, 2 * S.n);
	fflush(stdout);
	if (measure(runs, ms))
		return 1;
	print_table(runs);
	printf("# load average at the end: %.2f\n", bench_loadavg());
	if (o.csv && (err = write_csv(o.csv, runs, ms))) {
		fprintf(stderr, "bench_scale: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
