/*
 * bench.h - helpers shared by the benchmark programs in bench/.
 *
 * A figure is the median of several timed runs, taken in interleaved
 * rounds (round r runs every case once), so a noisy spell on a shared
 * machine spreads over all figures instead of skewing one, and the ratios
 * between figures of one program are measured in the same run. Min and max
 * are kept beside the median so the reader sees how noisy the machine was.
 *
 * Conventions every bench program follows, so bench/run.sh can drive them
 * alike: --quick (a smoke run of a few seconds), --runs N, --csv PATH; a
 * table on stdout that starts with bench_machine_print(); a CSV whose first
 * line names its columns.
 */
#ifndef SHMKV_BENCH_H
#define SHMKV_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "shmkv.h"

/*
 * Clocks.
 */

/* Nanoseconds from CLOCK_MONOTONIC (vDSO on Linux: no syscall). */
uint64_t bench_now_ns(void);

/* Median cost of reading the clock twice: the bias of one interval. */
double bench_clock_overhead_ns(void);

/*
 * CPU time of the calling thread, in ns (CLOCK_THREAD_CPUTIME_ID): what a
 * single-process loop costs, without the time it spent waiting for a core
 * that other jobs on a shared machine held. A system call: read it around
 * runs of milliseconds, not around one operation.
 */
uint64_t bench_cpu_ns(void);

/*
 * Ops per timed run so that one run lasts about @target_ns: the best of 3
 * trial runs of 4096 ops by @run(@ctx, ops, &ns), scaled, at least 1024,
 * into *@ops. Return: 0, or @run's error.
 */
int bench_calibrate(int (*run)(void *ctx, uint64_t ops, uint64_t *ns),
		    void *ctx, uint64_t target_ns, uint64_t *ops);

/*
 * Per-operation timing. On x86 the time-stamp counter, fenced so the timed
 * operation can neither start before bench_tick_begin() nor finish after
 * bench_tick_end(); elsewhere CLOCK_MONOTONIC.
 *
 * Samples are kept in units of 1/BENCH_TICK_FRAC tick, so the cost of an
 * empty interval, measured once and taken off every sample, keeps its
 * fraction. A virtual machine's counter may advance in steps of several
 * ticks (this project's VM: 26 ticks, 10 ns): an interval then reads as a
 * whole number of steps. Its start falls at a random point of a step, so
 * an operation of d ns reads as the step below or above d, in proportion to
 * how near d is to each: the mean stays exact, and the quantiles come out
 * of the histogram with each sample spread over one step around its value
 * (bench_hist_quantile), which resolves medians to ~1/10 of a step instead
 * of leaving them on the steps.
 */
#define BENCH_TICK_FRAC 16u

struct bench_timer {
	double ns_per_tick;
	uint64_t overhead;   /* an empty begin/end pair, 1/FRAC ticks (mean) */
	uint64_t resolution; /* the counter's smallest step, ticks */
	int tsc;	     /* 1: the TSC; 0: CLOCK_MONOTONIC */
};

/* Calibrates the TSC against CLOCK_MONOTONIC (~60 ms). */
void bench_timer_init(struct bench_timer *t);

/* One sample: @ticks of an interval less @overhead (1/FRAC ticks), in
 * 1/FRAC ticks, per operation when @ops ran in the interval. */
static inline uint64_t bench_sample(uint64_t ticks, uint64_t overhead,
				    uint64_t ops)
{
	uint64_t v = ticks * BENCH_TICK_FRAC;

	return (v > overhead ? v - overhead : 0) / ops;
}

/* Nanoseconds per histogram unit, and the counter's step in those units
 * (the spread of bench_hist_quantile). */
static inline double bench_timer_ns_per_unit(const struct bench_timer *t)
{
	return t->ns_per_tick / BENCH_TICK_FRAC;
}

#if defined(__x86_64__)
static inline uint64_t bench_tick_begin(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t bench_tick_end(void)
{
	uint32_t lo, hi, aux;

	__asm__ __volatile__("rdtscp\n\tlfence"
			     : "=a"(lo), "=d"(hi), "=c"(aux)::"memory");
	return ((uint64_t)hi << 32) | lo;
}
#else
static inline uint64_t bench_tick_begin(void)
{
	return bench_now_ns();
}

static inline uint64_t bench_tick_end(void)
{
	return bench_now_ns();
}
#endif

/*
 * A log-bucket latency histogram in the manner of HdrHistogram, in units of
 * 1/BENCH_TICK_FRAC tick: values below 2^BENCH_HIST_SUB_BITS are exact;
 * above, each power of two is cut into 2^BENCH_HIST_SUB_BITS buckets, so a
 * bucket is within 1/128 (0.8%) of its values: 0.2 ns at 20 ns and 0.4 ns at
 * 60 ns with a 2.6 GHz counter, well below the resolution of a counter that
 * steps. Count, sum, min and max are exact.
 */
#define BENCH_HIST_SUB_BITS 7
#define BENCH_HIST_SUB	    (1u << BENCH_HIST_SUB_BITS)
#define BENCH_HIST_BUCKETS  ((64 - BENCH_HIST_SUB_BITS + 1) * BENCH_HIST_SUB)
struct bench_hist {
	uint64_t count;
	uint64_t sum;
	uint64_t min;
	uint64_t max;
	uint64_t bucket[BENCH_HIST_BUCKETS];
};

void bench_hist_reset(struct bench_hist *h);

static inline unsigned bench_hist_index(uint64_t v)
{
	unsigned e;

	if (v < BENCH_HIST_SUB)
		return (unsigned)v;
	e = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS */
	return (e - BENCH_HIST_SUB_BITS + 1) * BENCH_HIST_SUB +
	       (unsigned)((v >> (e - BENCH_HIST_SUB_BITS)) - BENCH_HIST_SUB);
}

/* Records @n samples of value @v. */
static inline void bench_hist_add(struct bench_hist *h, uint64_t v, uint64_t n)
{
	h->bucket[bench_hist_index(v)] += n;
	h->count += n;
	h->sum += v * n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* The value below which a fraction @q of the samples fall, each sample
 * spread evenly over @spread units (the counter's step) or its bucket,
 * whichever is wider, around its bucket's middle; never outside [min, max];
 * 0 for an empty histogram. */
double bench_hist_quantile(const struct bench_hist *h, double q, double spread);

/* What one run's histogram says, converted to ns with @t's rate and step. */
struct bench_lat {
	double mean, p50, p99, p999, max;
};
void bench_hist_summary(const struct bench_hist *h, const struct bench_timer *t,
			struct bench_lat *out);

/*
 * Statistics over runs.
 */
/* Most runs a figure may have (--runs). */
#define BENCH_RUNS_MAX 1000u

struct bench_stats {
	double median;
	double min;
	double max;
	double p25;
	double p75;
	unsigned runs;
	uint64_t ops_per_run;
};

/* Sorts @samples (@n >= 1 values) in place and summarises them. */
void bench_stats_compute(double *samples, unsigned n, uint64_t ops_per_run,
			 struct bench_stats *st);

/* Median of @n values (@v is left unchanged). */
double bench_median(const double *v, unsigned n);

/* (max - min) / median in percent: how far apart the runs were. */
double bench_stats_spread(const struct bench_stats *st);

/*
 * The machine.
 */
struct bench_machine {
	char cpu[128];	      /* "model name" of /proc/cpuinfo */
	char cache[64];	      /* "cache size" of /proc/cpuinfo, or "?" */
	long cores_online;    /* sysconf(_SC_NPROCESSORS_ONLN) */
	long cores_conf;      /* sysconf(_SC_NPROCESSORS_CONF) */
	char kernel[200];     /* uname: sysname release machine */
	long page_size;	      /* sysconf(_SC_PAGESIZE) */
	long mem_mib;	      /* MemTotal */
	long avail_mib;	      /* MemAvailable */
	char clocksource[32]; /* current clocksource, or "?" */
	char loadavg[32];     /* 1, 5, 15 min load averages now */
	char date[32];	      /* ISO 8601, UTC */
	char compiler[96];    /* compiler and version of this build */
	int optimized;	      /* built with optimisation (__OPTIMIZE__) */
};

void bench_machine_describe(struct bench_machine *m);

/* Prints the machine as "# key: value" lines (a header for the table). */
void bench_machine_print(FILE *f, const struct bench_machine *m);

/* The 1-minute load average now (a figure's context on a shared box). */
double bench_loadavg(void);

/* "round @done/@total" on stderr, only when it is a terminal. */
void bench_progress(unsigned done, unsigned total);

/*
 * CSV output. Rows go to PATH.tmp, renamed to PATH by bench_csv_close(),
 * so an interrupted run never leaves a half-written results file.
 */
struct bench_csv {
	FILE *f;
	char path[4096];
	char tmp[4100];
};

/* Opens and writes the @columns line. Return: 0 or a negative errno. */
int bench_csv_open(struct bench_csv *csv, const char *path,
		   const char *columns);
/* One row, printf-style, without the newline. */
int bench_csv_row(struct bench_csv *csv, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Flushes, closes and renames into place. Return: 0 or a negative errno. */
int bench_csv_close(struct bench_csv *csv);
/* Closes and removes the temporary file (an error path; NULL f: no-op). */
void bench_csv_abort(struct bench_csv *csv);

/*
 * Command line: --quick, --runs N, --csv PATH, --help, --version, and any
 * program-specific unsigned options in @extra.
 */
struct bench_extra_opt {
	const char *name; /* long option name */
	const char *help;
	unsigned min, max;
	unsigned *value; /* set when given */
};

struct bench_opts {
	int quick;
	unsigned runs; /* 0: the program's default */
	const char *csv;
};

/* Exits 0 after --help/--version, 2 on a usage error. */
void bench_opts_parse(int argc, char **argv, const char *summary,
		      const struct bench_extra_opt *extra, unsigned nextra,
		      struct bench_opts *o);

/* What every bench's main does next: settles o->runs (--runs, else
 * @quick_runs or @full_runs) and calls bench_cleanup_init(). */
void bench_begin(struct bench_opts *o, unsigned quick_runs, unsigned full_runs);

/* The table's first lines: "# shmkv <version> @what", marked as a smoke
 * run if @quick, then bench_machine_print(). */
void bench_title(const char *what, int quick);

/*
 * Cleanup of what a bench leaves outside itself: shared-memory names, files
 * and server processes. Registered items are removed at exit and on
 * SIGINT/SIGTERM/SIGHUP, by the process that called bench_cleanup_init()
 * only (forked children never remove them).
 */
void bench_cleanup_init(void);
/* Return: 0, or -ENOSPC when too many are registered. */
int bench_cleanup_shm(const char *name);
int bench_cleanup_file(const char *path);
int bench_cleanup_pid(pid_t pid);
/* Forgets @pid (it was stopped and reaped by its owner). */
void bench_cleanup_forget_pid(pid_t pid);
/* Removes the CSV's temporary file too, if the run dies. */
void bench_cleanup_csv(struct bench_csv *csv);

/*
 * Shared memory, like the store's: shm_open, unlinked at once, mapped
 * MAP_SHARED (forked children share it). Return: NULL on failure (errno).
 */
void *bench_shm_alloc(size_t len);
void bench_shm_free(void *p, size_t len);

/*
 * Huge pages (lib/hugemem.c). bench_huge_alloc: anonymous memory aligned to
 * 2 MiB and advised MADV_HUGEPAGE, so that where transparent huge pages are
 * "madvise" or "always" it is backed by 2 MiB pages as it is touched;
 * freed with bench_shm_free (munmap). NULL on failure (errno).
 * bench_huge_bytes: the bytes of the mapping that starts at @base that are
 * in huge pages now (AnonHugePages, ShmemPmdMapped and FilePmdMapped of
 * /proc/self/smaps); 0 if unknown. bench_thp_setting: the bracketed word
 * of /sys/kernel/mm/transparent_hugepage/@file ("enabled",
 * "shmem_enabled") into @buf, or "?".
 */
void *bench_huge_alloc(size_t len);
uint64_t bench_huge_bytes(const void *base);
void bench_thp_setting(const char *file, char *buf, size_t cap);

/* A process-shared robust mutex. Return: 0 or a negative errno. */
int bench_robust_mutex_init(pthread_mutex_t *m);

/* Creates "/shmkv-bench-<tag>-<pid>" exclusively, registered for cleanup.
 * @name gets the name (64 bytes). Return: 0 or a negative errno. */
int bench_store_create(const char *tag, const struct shmkv_config *cfg,
		       shmkv_t **kv, char *name);
/* Closes and unlinks a store made by bench_store_create(). */
void bench_store_destroy(shmkv_t *kv, const char *name);

/*
 * A store's state without a walk of it (lib/storeinfo.c). The table's
 * generation (the life word's bits 1-63): odd while the table grows
 * (migrates into one of twice the slots), even otherwise; one relaxed load
 * of the header. The bytes the segment's file has allocated (fstat's
 * blocks: header, the live tables, value pages); 0 if unknown.
 */
uint64_t bench_store_generation(shmkv_t *kv);
uint64_t bench_store_allocated(shmkv_t *kv);

/*
 * Forked workers (lib/procs.c). bench_spin_until: yields until *@v >=
 * @want; -ETIMEDOUT after @bound rounds (only ends a hang). bench_reap:
 * waits for @n children; -ECHILD if any did not exit 0.
 */
int bench_spin_until(atomic_int *v, int want, unsigned long bound);
int bench_reap(const pid_t *pid, unsigned n);

/* Adds @src's samples to @dst (lib/hist.c). */
void bench_hist_merge(struct bench_hist *dst, const struct bench_hist *src);

/*
 * Keys and key streams. Key @id is the 12 bytes "k:%010u" (no NUL in the
 * length), BENCH_KEY_STRIDE bytes apart in a key array.
 */
#define BENCH_KEY_LEN	 12u
#define BENCH_KEY_STRIDE 16u

void bench_key_format(char *out, uint32_t id);
/* @n keys, ids 0..n-1. Return: NULL on allocation failure. */
char *bench_keys_make(uint32_t n);

static inline const char *bench_key(const char *keys, uint32_t id)
{
	return keys + (size_t)id * BENCH_KEY_STRIDE;
}

enum bench_dist { BENCH_HOT, BENCH_UNIFORM, BENCH_ZIPF, BENCH_DISTS };
extern const char *const bench_dist_name[BENCH_DISTS];

/*
 * A precomputed stream of @len key ids (a power of two) among @n keys:
 * one key (@hot_id), uniform, or zipfian with skew @s (rank r drawn with
 * probability proportional to 1/r^s; ranks mapped to ids by a random
 * permutation so popular keys are scattered). Return: NULL on failure.
 */
uint32_t *bench_stream_make(enum bench_dist d, uint64_t len, uint32_t n,
			    double s, uint32_t hot_id, uint64_t seed);

/* xorshift64: a cheap PRNG; @state must not be 0. */
static inline uint64_t bench_xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/* The store's hash family (wyhash-style, as src/hash.c), for baselines. */
uint64_t bench_hash(const void *key, size_t len);

/* Keeps @v alive so the compiler cannot drop the work that computed it. */
static inline void bench_keep(uint64_t v)
{
	__asm__ __volatile__("" : : "r"(v) : "memory");
}

/*
 * A pointer chase over @bytes of shared memory: @nodes 64-byte lines
 * chosen at random among all of them (0: every line), linked in a random
 * order into one cycle, so each load's address is the previous load's
 * result. With @nodes = the keys of a table of @bytes, the chase touches
 * as many lines, spread over as many pages, as GETs of those keys do.
 */
struct bench_chase {
	unsigned char *mem;
	size_t bytes;
	size_t nodes;
	uint64_t pos;
};
int bench_chase_init(struct bench_chase *c, size_t bytes, size_t nodes,
		     uint64_t seed);
/* The same on other memory: BENCH_PAGES_SHM is bench_shm_alloc()'s (what
 * bench_chase_init uses), BENCH_PAGES_HUGE bench_huge_alloc()'s. */
enum bench_pages { BENCH_PAGES_SHM, BENCH_PAGES_HUGE };
int bench_chase_init_on(struct bench_chase *c, size_t bytes, size_t nodes,
			uint64_t seed, enum bench_pages pages);
void bench_chase_free(struct bench_chase *c);

/* @ops dependent loads. Return: the thread's CPU time, ns. */
uint64_t bench_chase_run(struct bench_chase *c, uint64_t ops);

/*
 * The floors: what any command on shared memory costs at least, each
 * operation timed alone like a command (lib/floors.c).
 */
enum bench_floor {
	BENCH_FLOOR_CAS,
	BENCH_FLOOR_XCHG,
	BENCH_FLOOR_MUTEX, /* robust process-shared lock + unlock */
	BENCH_FLOOR_LOAD,  /* one step of a dependent random load */
	BENCH_FLOORS
};
extern const char *const bench_floor_name[BENCH_FLOORS];

struct bench_floors {
	uint64_t *words;
	pthread_mutex_t *mutex;
	struct bench_chase chase;
};

/* The load chases @nodes lines of @chase_bytes (bench_chase_init).
 * Return: 0 or a negative errno. */
int bench_floors_init(struct bench_floors *f, size_t chase_bytes, size_t nodes);

/* @ops operations of @which, each timed into @h less @overhead
 * (bench_timer.overhead, 1/BENCH_TICK_FRAC ticks). */
void bench_floor_run(struct bench_floors *f, enum bench_floor which,
		     uint64_t ops, uint64_t overhead, struct bench_hist *h);

#endif /* SHMKV_BENCH_H */
