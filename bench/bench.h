/*
 * bench.h - helpers shared by the benchmark programs in bench/.
 *
 * A figure is the median of several timed runs of one operation, each run
 * executing many operations back to back, so a noisy shared machine skews
 * a few runs rather than the figure. Min and max are kept beside the median
 * so the reader sees how noisy the machine was.
 *
 * Conventions every bench program follows, so bench/run.sh can drive them
 * alike: --quick (a smoke run of a few seconds), --runs N, --csv PATH; a
 * table on stdout that starts with bench_machine_print(); a CSV with the
 * columns of bench_csv_row().
 */
#ifndef SHMKV_BENCH_H
#define SHMKV_BENCH_H

#include <stdint.h>
#include <stdio.h>

/* Nanoseconds from CLOCK_MONOTONIC (vDSO on Linux: no syscall, no rdtsc). */
uint64_t bench_now_ns(void);

/* Median cost of reading the clock twice, i.e. the bias one timed interval
 * carries; a run must be long enough to make it negligible. */
double bench_clock_overhead_ns(void);

/* Summary of repeated runs of one benchmark, in ns per operation. */
struct bench_stats {
	double median;
	double min;
	double max;
	double p25;
	double p75;
	unsigned runs;
	uint64_t ops_per_run;
};

/* Sorts @samples (@n >= 1 ns/op values) in place and summarises them. */
void bench_stats_compute(double *samples, unsigned n, uint64_t ops_per_run,
			 struct bench_stats *st);

/* (max - min) / median in percent: how far apart the runs were. */
double bench_stats_spread(const struct bench_stats *st);

/* Where and how the figures were taken. */
struct bench_machine {
	char cpu[128];	      /* "model name" of /proc/cpuinfo */
	char cache[64];	      /* "cache size" of /proc/cpuinfo, or "?" */
	long cores_online;    /* sysconf(_SC_NPROCESSORS_ONLN) */
	long cores_conf;      /* sysconf(_SC_NPROCESSORS_CONF) */
	char kernel[200];     /* uname: sysname release machine */
	long page_size;	      /* sysconf(_SC_PAGESIZE) */
	char clocksource[32]; /* current clocksource, or "?" */
	char loadavg[32];     /* 1, 5, 15 min load averages at the start */
	char date[32];	      /* ISO 8601, UTC */
	char compiler[96];    /* compiler and version of this build */
	int optimized;	      /* built with optimisation (__OPTIMIZE__) */
};

void bench_machine_describe(struct bench_machine *m);

/* Prints the machine as "# key: value" lines (a header for the table). */
void bench_machine_print(FILE *f, const struct bench_machine *m);

/*
 * CSV output: name,median_ns,min_ns,max_ns,runs,ops_per_run.
 * Rows go to PATH.tmp, renamed to PATH by bench_csv_close(), so an
 * interrupted run never leaves a half-written results file.
 */
struct bench_csv {
	FILE *f;
	char path[4096];
	char tmp[4100];
};

/* Return: 0 or a negative errno (the directory of @path must exist). */
int bench_csv_open(struct bench_csv *csv, const char *path);
int bench_csv_row(struct bench_csv *csv, const char *name,
		  const struct bench_stats *st);
/* Flushes, closes and renames into place. Return: 0 or a negative errno. */
int bench_csv_close(struct bench_csv *csv);
/* Closes and removes the temporary file (on an error path). */
void bench_csv_abort(struct bench_csv *csv);

/* xorshift64: a cheap PRNG for choosing keys; @state must not be 0. */
static inline uint64_t bench_xorshift64(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*state = x;
	return x;
}

/* Keeps @v alive so the compiler cannot drop the work that computed it. */
static inline void bench_keep(uint64_t v)
{
	__asm__ __volatile__("" : : "r"(v) : "memory");
}

#endif /* SHMKV_BENCH_H */
