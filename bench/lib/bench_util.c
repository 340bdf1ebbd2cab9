/*
 * bench_util.c - clock, statistics, machine description, CSV output and
 * the command line shared by the bench programs (see bench.h).
 */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_clock_overhead_ns(void)
{
	enum { N = 101 };
	double d[N];
	unsigned i;

	for (i = 0; i < N; i++) {
		uint64_t t0 = bench_now_ns();

		d[i] = (double)(bench_now_ns() - t0);
	}
	qsort(d, N, sizeof(d[0]), cmp_double);
	return d[N / 2];
}

/* Linear interpolation between the order statistics of sorted @s. */
static double quantile(const double *s, unsigned n, double q)
{
	double pos = q * (n - 1);
	unsigned lo = (unsigned)pos;

	if (lo + 1 >= n)
		return s[n - 1];
	return s[lo] + (pos - lo) * (s[lo + 1] - s[lo]);
}

void bench_stats_compute(double *samples, unsigned n, uint64_t ops_per_run,
			 struct bench_stats *st)
{
	qsort(samples, n, sizeof(samples[0]), cmp_double);
	st->min = samples[0];
	st->max = samples[n - 1];
	st->median = quantile(samples, n, 0.5);
	st->p25 = quantile(samples, n, 0.25);
	st->p75 = quantile(samples, n, 0.75);
	st->runs = n;
	st->ops_per_run = ops_per_run;
}

double bench_median(const double *v, unsigned n)
{
	double tmp[BENCH_RUNS_MAX];

	if (n == 0)
		return 0;
	if (n > BENCH_RUNS_MAX)
		n = BENCH_RUNS_MAX;
	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(tmp[0]), cmp_double);
	return quantile(tmp, n, 0.5);
}

double bench_stats_spread(const struct bench_stats *st)
{
	if (st->median <= 0)
		return 0;
	return 100.0 * (st->max - st->min) / st->median;
}

/* Copies @src into @dst, trimmed of surrounding blanks and the newline. */
static void copy_trimmed(char *dst, size_t cap, const char *src)
{
	size_t len;

	while (*src == ' ' || *src == '\t')
		src++;
	len = strcspn(src, "\n");
	while (len && (src[len - 1] == ' ' || src[len - 1] == '\t'))
		len--;
	if (len >= cap)
		len = cap - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Value of the first "@key : value" line of /proc/cpuinfo, or "?". */
static void cpuinfo_field(const char *key, char *dst, size_t cap)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	size_t klen = strlen(key);

	copy_trimmed(dst, cap, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon || strncmp(line, key, klen) != 0)
			continue;
		if (strspn(line + klen, " \t") != (size_t)(colon - line) - klen)
			continue;
		copy_trimmed(dst, cap, colon + 1);
		break;
	}
	fclose(f);
}

static void read_first_line(const char *path, char *dst, size_t cap)
{
	FILE *f = fopen(path, "r");
	char line[256];

	copy_trimmed(dst, cap, "?");
	if (!f)
		return;
	if (fgets(line, sizeof(line), f))
		copy_trimmed(dst, cap, line);
	fclose(f);
}

static void describe_compiler(struct bench_machine *m)
{
#if defined(__clang__)
	snprintf(m->compiler, sizeof(m->compiler), "clang %s",
		 __clang_version__);
#elif defined(__GNUC__)
	snprintf(m->compiler, sizeof(m->compiler), "gcc %s", __VERSION__);
#else
	snprintf(m->compiler, sizeof(m->compiler), "unknown");
#endif
#ifdef __OPTIMIZE__
	m->optimized = 1;
#else
	m->optimized = 0;
#endif
}

/* A "Key: N kB" line of /proc/meminfo in MiB, or -1. */
static long meminfo_mib(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0) {
			kb = strtol(line + strlen(key), NULL, 10);
			break;
		}
	fclose(f);
	return kb < 0 ? -1 : kb / 1024;
}

double bench_loadavg(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l = -1;

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

void bench_progress(unsigned done, unsigned total)
{
	if (!isatty(STDERR_FILENO))
		return;
	fprintf(stderr, "\r# round %u/%u done%s", done, total,
		done == total ? "\n" : "");
}

void bench_machine_describe(struct bench_machine *m)
{
	struct utsname u;
	time_t now = time(NULL);
	struct tm tm;

	memset(m, 0, sizeof(*m));
	cpuinfo_field("model name", m->cpu, sizeof(m->cpu));
	cpuinfo_field("cache size", m->cache, sizeof(m->cache));
	m->cores_online = sysconf(_SC_NPROCESSORS_ONLN);
	m->cores_conf = sysconf(_SC_NPROCESSORS_CONF);
	m->page_size = sysconf(_SC_PAGESIZE);
	m->mem_mib = meminfo_mib("MemTotal:");
	m->avail_mib = meminfo_mib("MemAvailable:");
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%s %s %s", u.sysname,
			 u.release, u.machine);
	else
		snprintf(m->kernel, sizeof(m->kernel), "?");
	read_first_line("/sys/devices/system/clocksource/clocksource0/"
			"current_clocksource",
			m->clocksource, sizeof(m->clocksource));
	read_first_line("/proc/loadavg", m->loadavg, sizeof(m->loadavg));
	/* Keep the three averages, drop the run-queue and last-pid fields. */
	for (int i = 0, n = 0; m->loadavg[i]; i++)
		if (m->loadavg[i] == ' ' && ++n == 3)
			m->loadavg[i] = '\0';
	gmtime_r(&now, &tm);
	strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	describe_compiler(m);
}

void bench_machine_print(FILE *f, const struct bench_machine *m)
{
	fprintf(f, "# cpu: %s (cache %s)\n", m->cpu, m->cache);
	fprintf(f, "# cores: %ld online, %ld configured\n", m->cores_online,
		m->cores_conf);
	fprintf(f, "# kernel: %s, page size %ld B, clocksource %s\n", m->kernel,
		m->page_size, m->clocksource);
	fprintf(f, "# memory: %ld MiB, %ld MiB available\n", m->mem_mib,
		m->avail_mib);
	fprintf(f, "# date: %s, load average %s\n", m->date, m->loadavg);
	fprintf(f, "# compiler: %s%s\n", m->compiler,
		m->optimized ? ", optimized"
			     : ", NOT OPTIMIZED (figures meaningless)");
}

int bench_csv_open(struct bench_csv *csv, const char *path, const char *columns)
{
	size_t len = strlen(path);

	csv->f = NULL;
	if (len == 0 || len >= sizeof(csv->path))
		return -ENAMETOOLONG;
	memcpy(csv->path, path, len + 1);
	snprintf(csv->tmp, sizeof(csv->tmp), "%s.tmp", path);
	csv->f = fopen(csv->tmp, "w");
	if (!csv->f)
		return -errno;
	fprintf(csv->f, "%s\n", columns);
	return 0;
}

int bench_csv_row(struct bench_csv *csv, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vfprintf(csv->f, fmt, ap);
	va_end(ap);
	if (n < 0 || fputc('\n', csv->f) == EOF)
		return -EIO;
	return 0;
}

int bench_csv_close(struct bench_csv *csv)
{
	int bad = ferror(csv->f);

	if (fclose(csv->f) != 0 || bad) {
		csv->f = NULL;
		unlink(csv->tmp);
		return -EIO;
	}
	csv->f = NULL;
	if (rename(csv->tmp, csv->path) != 0) {
		int err = -errno;

		unlink(csv->tmp);
		return err;
	}
	return 0;
}

void bench_csv_abort(struct bench_csv *csv)
{
	if (!csv->f)
		return;
	fclose(csv->f);
	csv->f = NULL;
	unlink(csv->tmp);
}

/*
 * Command line.
 */

static void usage(FILE *f, const char *argv0, const char *summary,
		  const struct bench_extra_opt *extra, unsigned nextra)
{
	fprintf(f,
		"usage: %s [--quick] [--runs N] [--csv PATH]%s\n%s\n"
		"  --quick     a smoke run of a few seconds (figures not "
		"meaningful)\n"
		"  --runs N    timed runs per figure, 1..%u\n"
		"  --csv PATH  also write the figures as CSV\n",
		argv0, nextra ? " [options]" : "", summary, BENCH_RUNS_MAX);
	for (unsigned i = 0; i < nextra; i++)
		fprintf(f, "  --%s N  %s (%u..%u)\n", extra[i].name,
			extra[i].help, extra[i].min, extra[i].max);
	fprintf(f, "  --help, --version\n");
}

/* Parses @arg as an unsigned in [@min, @max]. Return: 0 or -1. */
static int parse_uint(const char *arg, unsigned min, unsigned max,
		      unsigned *out)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno || *end || end == arg || arg[0] == '-' || n < min || n > max)
		return -1;
	*out = (unsigned)n;
	return 0;
}

enum { OPT_QUICK = 256, OPT_RUNS, OPT_CSV, OPT_HELP, OPT_VERSION, OPT_X };
#define EXTRA_MAX 8

static void build_longopts(struct option *lo, const struct bench_extra_opt *x,
			   unsigned nx)
{
	static const struct option base[] = {
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "runs", required_argument, NULL, OPT_RUNS },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
	};
	unsigned n = sizeof(base) / sizeof(base[0]);

	memcpy(lo, base, sizeof(base));
	for (unsigned i = 0; i < nx; i++)
		lo[n + i] = (struct option){ x[i].name, required_argument, NULL,
					     OPT_X + (int)i };
	memset(&lo[n + nx], 0, sizeof(lo[0]));
}

static void bad_value(const char *argv0, const char *opt, const char *arg,
		      unsigned min, unsigned max)
{
	fprintf(stderr, "%s: --%s wants %u..%u, got '%s'\n", argv0, opt, min,
		max, arg);
	exit(2);
}

void bench_opts_parse(int argc, char **argv, const char *summary,
		      const struct bench_extra_opt *extra, unsigned nextra,
		      struct bench_opts *o)
{
	struct option lo[5 + EXTRA_MAX + 1];
	int opt;

	memset(o, 0, sizeof(*o));
	if (nextra > EXTRA_MAX)
		nextra = EXTRA_MAX;
	build_longopts(lo, extra, nextra);
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (opt == OPT_QUICK) {
			o->quick = 1;
		} else if (opt == OPT_RUNS) {
			if (parse_uint(optarg, 1, BENCH_RUNS_MAX, &o->runs))
				bad_value(argv[0], "runs", optarg, 1,
					  BENCH_RUNS_MAX);
		} else if (opt == OPT_CSV) {
			o->csv = optarg;
		} else if (opt == OPT_HELP) {
			usage(stdout, argv[0], summary, extra, nextra);
			exit(0);
		} else if (opt == OPT_VERSION) {
			printf("%s (shmkv %s)\n", argv[0],
			       SHMKV_VERSION_STRING);
			exit(0);
		} else if (opt >= OPT_X && opt < OPT_X + (int)nextra) {
			const struct bench_extra_opt *x = &extra[opt - OPT_X];

			if (parse_uint(optarg, x->min, x->max, x->value))
				bad_value(argv[0], x->name, optarg, x->min,
					  x->max);
		} else {
			usage(stderr, argv[0], summary, extra, nextra);
			exit(2);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0],
			argv[optind]);
		exit(2);
	}
}

void bench_begin(struct bench_opts *o, unsigned quick_runs, unsigned full_runs)
{
	if (o->runs == 0)
		o->runs = o->quick ? quick_runs : full_runs;
	bench_cleanup_init();
}

void bench_title(const char *what, int quick)
{
	struct bench_machine m;

	bench_machine_describe(&m);
	printf("# shmkv %s %s%s\n", SHMKV_VERSION_STRING, what,
	       quick ? " (QUICK: smoke run, figures not meaningful)" : "");
	bench_machine_print(stdout, &m);
}

int bench_calibrate(int (*run)(void *ctx, uint64_t ops, uint64_t *ns),
		    void *ctx, uint64_t target_ns, uint64_t *ops)
{
	uint64_t n = 4096, ns, best = UINT64_MAX;

	for (int t = 0; t < 3; t++) {
		int err = run(ctx, n, &ns);

		if (err)
			return err;
		best = ns < best ? ns : best;
	}
	n = (uint64_t)((double)n * (double)target_ns /
		       (double)(best ? best : 1));
	*ops = n < 1024 ? 1024 : n;
	return 0;
}
