/*
 * bench_misses.c - what a random GET costs next to the cache and TLB
 * misses it cannot avoid, on 4 KiB pages and on huge pages.
 *
 * At each table size (2^16 to 2^24 slots; --quick: 2^16, 2^18) a store of
 * 12-byte keys is filled to LOAD_PCT, half the keys holding inline
 * integers and half 16-byte strings, and three figures are taken, each ns
 * of CPU time per operation (median of --runs runs, interleaved):
 *   floor    a dependent random load through as many 64-byte lines of a
 *            buffer the size of the store's table as the store has keys
 *            (what any random GET pays: one miss, and on 4 KiB pages a
 *            TLB miss whose page walk is itself a chain of loads);
 *   get_int  a GET of a uniformly chosen integer key, the next key
 *            depending on this GET's result, so misses are serial;
 *   get_16b  the same over the 16-byte values.
 * Each on two kinds of memory: "4k" (the store as /dev/shm gives it, the
 * floor in POSIX shm like the store's) and "huge" (the store created with
 * SHMKV_CONFIG_HUGE_PAGES, the floor in anonymous memory advised
 * MADV_HUGEPAGE). A figure is shown as huge only if /proc/self/smaps says
 * the kernel gave huge pages; a store refused them is said so, and its
 * GETs are not shown as huge-page figures.
 *
 * --private-shm 1 (root only; bench/run.sh passes it when it can) first
 * moves this process into a mount namespace of its own and mounts a fresh
 * tmpfs on /dev/shm there with huge=advise, so the store can get huge
 * pages without touching the system's /dev/shm (other processes, and the
 * system's stores, see nothing of it).
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "bench.h"

#define LOG2_LO	     16u
#define LOG2_HI	     24u
#define LOG2_QUICK   18u
#define LOAD_PCT     50u
#define KEY_MAX	     16u
#define VALUE_LEN    16u
#define STREAM_LEN   (1u << 20)
#define STREAM_QUICK (1u << 14)
#define TARGET_NS    15000000ull
#define TARGET_QUICK 1000000ull
#define HUGE_MIN_PCT 90.0 /* of the memory in huge pages, to call it so */

enum op { OP_FLOOR, OP_GET_INT, OP_GET_STR, OP_N };
static const char *const op_name[OP_N] = { "floor", "get_int", "get_16b" };
enum pages { P_4K, P_HUGE, P_N };
static const char *const pages_name[P_N] = { "4k", "huge" };

static struct {
	shmkv_t *kv;
	char name[64];
	uint32_t live;
	uint64_t table_bytes;
	struct bench_chase chase;
	char *ints, *strs; /* key streams: integer keys, string keys */
	uint64_t mask, pos;
	uint64_t ops[OP_N];
} S;

static uint64_t target_ns;
static int store_huge; /* the store gets huge pages on this /dev/shm */

struct point {
	unsigned log2;
	enum pages pages;
	uint32_t live;
	double table_mib;
	double floor_huge_pct, store_huge_pct; /* -1: no store */
	struct bench_stats st[OP_N];
	int has[OP_N];
};

static struct point points[(LOG2_HI - LOG2_LO) / 2 + 1][P_N];
static unsigned npoints;

static int bad(const char *what, int rc)
{
	fprintf(stderr, "bench_misses: %s returned %d (%s)\n", what, rc,
		shmkv_strerror(rc));
	return rc < 0 ? rc : -EPROTO;
}

/* Key @id holds an integer if even, a 16-byte string if odd. */
static int fill(uint32_t n)
{
	char key[BENCH_KEY_STRIDE], val[24];

	for (S.live = 0; S.live < n; S.live++) {
		uint32_t id = S.live;
		int vlen = id & 1 ? snprintf(val, sizeof(val), "v:%014u", id)
				  : snprintf(val, sizeof(val), "%u", id);
		int rc;

		bench_key_format(key, id);
		rc = shmkv_set(S.kv, key, BENCH_KEY_LEN, val, (size_t)vlen, 0,
			       0, NULL);
		if (rc != 1)
			return bad("SET (fill)", rc);
	}
	return 0;
}

static void draw_streams(uint64_t seed)
{
	uint64_t rng = seed;
	uint32_t half = S.live / 2;

	for (uint64_t i = 0; i <= S.mask; i++) {
		uint32_t a = (uint32_t)(bench_xorshift64(&rng) % half);
		uint32_t b = (uint32_t)(bench_xorshift64(&rng) % half);

		bench_key_format(S.ints + i * BENCH_KEY_STRIDE, 2 * a);
		bench_key_format(S.strs + i * BENCH_KEY_STRIDE, 2 * b + 1);
	}
}

/*
 * GETs where the next key's position adds this GET's last value byte times
 * zero: a data dependency on what the GET read, so the CPU cannot overlap
 * the next GET's misses with this one's (as bench_table's get_dep). @zero
 * is laundered through an asm so the compiler cannot drop the product.
 */
static int run_get_dep(const char *stream, uint64_t ops, uint64_t *ns)
{
	char buf[32] = { 0 };
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf), .len = 1 };
	uint64_t zero = 0, t0;

	__asm__ __volatile__("" : "+r"(zero));
	t0 = bench_cpu_ns();
	for (uint64_t i = 0; i < ops; i++) {
		uint64_t last = (unsigned char)buf[(v.len - 1) & 31];
		uint64_t at = (S.pos++ + last * zero) & S.mask;
		int rc = shmkv_get(S.kv, stream + at * BENCH_KEY_STRIDE,
				   BENCH_KEY_LEN, &v);

		if (rc != 1)
			return bad("GET (dependent)", rc);
	}
	*ns = bench_cpu_ns() - t0;
	return 0;
}

static int run_op(enum op op, uint64_t ops, uint64_t *ns)
{
	switch (op) {
	case OP_GET_INT:
		return run_get_dep(S.ints, ops, ns);
	case OP_GET_STR:
		return run_get_dep(S.strs, ops, ns);
	default:
		*ns = bench_chase_run(&S.chase, ops);
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
	return bench_calibrate(run_trial, &op, target_ns, &S.ops[op]);
}

/* The GETs leave the table's lines in the caches for each other; one
 * untimed pass over the chase's lines makes the floor as warm. */
static void warm_chase(void)
{
	uint64_t n = S.chase.nodes < S.ops[OP_FLOOR] ? S.chase.nodes
						     : S.ops[OP_FLOOR];

	bench_keep(bench_chase_run(&S.chase, n));
}

static int measure(struct point *pt, unsigned runs)
{
	double s[OP_N][BENCH_RUNS_MAX];
	int err;

	for (int op = 0; op < OP_N; op++)
		if (pt->has[op] && (err = calibrate(op)))
			return err;
	for (unsigned r = 0; r < runs; r++)
		for (int op = 0; op < OP_N; op++) {
			uint64_t ns;

			if (!pt->has[op])
				continue;
			if (op == OP_FLOOR)
				warm_chase();
			if ((err = run_op(op, S.ops[op], &ns)))
				return err;
			s[op][r] = (double)ns / (double)S.ops[op];
		}
	for (int op = 0; op < OP_N; op++)
		if (pt->has[op])
			bench_stats_compute(s[op], runs, S.ops[op],
					    &pt->st[op]);
	return 0;
}

static int store_open(unsigned log2, enum pages pages)
{
	uint32_t slots = 1u << log2;
	uint32_t n = (uint32_t)((uint64_t)slots * LOAD_PCT / 100);
	struct shmkv_config cfg;
	struct shmkv_stats st;
	int err;

	shmkv_config_init(&cfg);
	cfg.slots = slots;
	cfg.key_max = KEY_MAX;
	cfg.value_max = VALUE_LEN;
	/* Room for the strings' blocks, whatever their class, and a page
	 * per class. */
	cfg.value_memory = (uint64_t)n / 2 * 64 + (4u << 20);
	cfg.flags = pages == P_HUGE ? SHMKV_CONFIG_HUGE_PAGES : 0;
	err = bench_store_create("misses", &cfg, &S.kv, S.name);
	if (!err)
		err = fill(n & ~1u);
	if (!err)
		err = shmkv_stats(S.kv, &st);
	if (err)
		return err;
	/* The segment less its value pages: header and slot array. */
	S.table_bytes = st.memory_bytes - (uint64_t)st.pages * st.page_size;
	return 0;
}

static void store_close(void)
{
	if (S.kv)
		bench_store_destroy(S.kv, S.name);
	S.kv = NULL;
	bench_chase_free(&S.chase);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* Store's share in huge pages, from a mapping pre-faulted to ask. */
static double store_huge_pct(void)
{
	shmkv_t *kv;
	uint64_t got = 0;
	struct shmkv_stats st;
	double p = 0;

	if (shmkv_open(S.name, SHMKV_OPEN_READONLY | SHMKV_OPEN_POPULATE,
		       &kv) != 0)
		return 0;
	if (shmkv_huge_mapped(kv, &got) == 0 && shmkv_stats(kv, &st) == 0)
		p = pct(got, st.memory_bytes);
	shmkv_close(kv);
	return p;
}

static void print_point(const struct point *pt)
{
	printf("  2^%-3u %-4s %9u %9.1f %6.0f%%", pt->log2,
	       pages_name[pt->pages], pt->live, pt->table_mib,
	       pt->floor_huge_pct);
	printf(" %8.1f", pt->st[OP_FLOOR].median);
	for (int op = OP_GET_INT; op < OP_N; op++) {
		if (pt->has[op])
			printf(" %8.1f %6.2f", pt->st[op].median,
			       pt->st[op].median / pt->st[OP_FLOOR].median);
		else
			printf(" %8s %6s", "-", "-");
	}
	if (pt->store_huge_pct >= 0)
		printf(" %6.0f%%", pt->store_huge_pct);
	putchar('\n');
	fflush(stdout);
}

/* One size on one kind of pages. The floor's buffer is the 4 KiB store's
 * table (a huge-page store's segment has a tail up to its last 2 MiB). */
static int run_point(unsigned log2, enum pages pages, unsigned runs,
		     struct point *pt)
{
	static uint64_t table_bytes;
	int want_store = pages == P_4K || store_huge;
	int err = 0;

	memset(pt, 0, sizeof(*pt));
	pt->log2 = log2;
	pt->pages = pages;
	pt->store_huge_pct = -1;
	if (want_store) {
		err = store_open(log2, pages);
		if (err)
			goto out;
		if (pages == P_4K)
			table_bytes = S.table_bytes;
		pt->store_huge_pct = store_huge_pct();
		pt->has[OP_GET_INT] = pt->has[OP_GET_STR] = 1;
		draw_streams(0x9e3779b97f4a7c15ull ^ log2 ^ (uint64_t)pages);
	}
	pt->live = S.live;
	pt->table_mib = (double)table_bytes / (1 << 20);
	err = bench_chase_init_on(
		&S.chase, table_bytes, S.live, 0x2545f4914f6cdd1dull + log2,
		pages == P_HUGE ? BENCH_PAGES_HUGE : BENCH_PAGES_SHM);
	if (err)
		goto out;
	pt->floor_huge_pct = pct(bench_huge_bytes(S.chase.mem), S.chase.bytes);
	pt->has[OP_FLOOR] = 1;
	err = measure(pt, runs);
out:
	store_close();
	return err;
}

/* Return: 1 if 2^@log2 slots fit in free memory: the store (64-byte
 * slots and the strings' blocks) and the floor's buffer, with 1 GiB to
 * spare. */
static int memory_allows(unsigned log2)
{
	struct bench_machine m;
	double need_mib = 3.0 * 64.0 * (double)(1ull << log2) / (1 << 20);

	bench_machine_describe(&m);
	if (m.avail_mib < 0 || (double)m.avail_mib >= need_mib + 1024)
		return 1;
	printf("# stopping before 2^%u slots: needs ~%.0f MiB, %ld MiB "
	       "available\n",
	       log2, need_mib, m.avail_mib);
	return 0;
}

/* --private-shm: a mount namespace of our own with a huge=advise tmpfs on
 * /dev/shm. Return: 0, or -1 (said why). */
static int private_shm(void)
{
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "huge=advise") != 0) {
		printf("# private /dev/shm: not made (%s; needs root)\n",
		       strerror(errno));
		return -1;
	}
	printf("# private /dev/shm: a tmpfs mounted huge=advise in this "
	       "process's own mount namespace\n");
	return 0;
}

/* Does a store get huge pages here? A small one is created to see. */
static void probe_store_huge(void)
{
	char anon[32], shmem[32];

	S.live = 0;
	if (store_open(LOG2_LO, P_HUGE) == 0)
		store_huge = store_huge_pct() >= HUGE_MIN_PCT;
	store_close();
	bench_thp_setting("enabled", anon, sizeof(anon));
	bench_thp_setting("shmem_enabled", shmem, sizeof(shmem));
	printf("# transparent huge pages: anonymous '%s', shmem_enabled '%s'; "
	       "a store with SHMKV_CONFIG_HUGE_PAGES %s\n",
	       anon, shmem,
	       store_huge ? "gets them"
			  : "gets none here (/dev/shm is not mounted "
			    "huge=advise): its GETs are not shown on huge "
			    "pages");
}

static int write_csv(const char *path)
{
	struct bench_csv csv;
	int err = bench_csv_open(&csv, path,
				 "slots_log2,pages,live_keys,table_mib,"
				 "floor_huge_pct,store_huge_pct,op,median_ns,"
				 "min_ns,max_ns,runs,ops_per_run");

	for (unsigned i = 0; i < npoints && !err; i++)
		for (int p = 0; p < P_N && !err; p++) {
			const struct point *pt = &points[i][p];

			for (int op = 0; op < OP_N && !err; op++) {
				const struct bench_stats *s = &pt->st[op];

				if (!pt->has[op])
					continue;
				err = bench_csv_row(
					&csv,
					"%u,%s,%u,%.3f,%.1f,%.1f,%s,%.2f,"
					"%.2f,%.2f,%u,%llu",
					pt->log2, pages_name[p], pt->live,
					pt->table_mib, pt->floor_huge_pct,
					pt->store_huge_pct, op_name[op],
					s->median, s->min, s->max, s->runs,
					(unsigned long long)s->ops_per_run);
			}
		}
	return err ? err : bench_csv_close(&csv);
}

int main(int argc, char **argv)
{
	unsigned priv = 0, hi;
	const struct bench_extra_opt extra[] = {
		{ "private-shm",
		  "1: mount a huge=advise tmpfs on /dev/shm in a private "
		  "mount namespace first (root)",
		  0, 1, &priv },
	};
	struct bench_opts o;
	uint64_t len;
	int err = 0;

	bench_opts_parse(argc, argv,
			 "ns per dependent random GET (integers, 16-byte "
			 "values) against a dependent random load over the "
			 "table's bytes, on 4 KiB and on huge pages.",
			 extra, 1, &o);
	bench_begin(&o, 2, 5);
	bench_title("misses: dependent GET against the dependent-load floor",
		    o.quick);
	if (priv)
		(void)private_shm();
	target_ns = o.quick ? TARGET_QUICK : TARGET_NS;
	hi = o.quick ? LOG2_QUICK : LOG2_HI;
	len = o.quick ? STREAM_QUICK : STREAM_LEN;
	S.mask = len - 1;
	S.ints = malloc(len * BENCH_KEY_STRIDE);
	S.strs = malloc(len * BENCH_KEY_STRIDE);
	if (!S.ints || !S.strs)
		return 1;
	probe_store_huge();
	printf("# %u%% load, 12-byte keys (key_max %u), half of them inline "
	       "integers, half %u-byte strings; ns of CPU time per op, median "
	       "of %u runs; huge%%: share of the floor's buffer the kernel put "
	       "in huge pages; last column: the store's\n",
	       LOAD_PCT, KEY_MAX, VALUE_LEN, o.runs);
	printf("  %-5s %-4s %9s %9s %7s %8s %8s %6s %8s %6s\n", "slots", "page",
	       "keys", "table MiB", "huge%", "floor", "get_int", "/floor",
	       "get_16b", "/floor");
	for (unsigned log2 = LOG2_LO; log2 <= hi && !err; log2 += 2) {
		if (!memory_allows(log2))
			break;
		for (int p = 0; p < P_N && !err; p++) {
			struct point *pt = &points[npoints][p];

			err = run_point(log2, p, o.runs, pt);
			if (!err)
				print_point(pt);
		}
		npoints++;
	}
	if (err) {
		fprintf(stderr, "bench_misses: %s\n", shmkv_strerror(err));
		return 1;
	}
	if (o.csv && (err = write_csv(o.csv)) != 0) {
		fprintf(stderr, "bench_misses: %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
