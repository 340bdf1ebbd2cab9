/*
 * bench_util.c - timing, statistics, machine description and CSV output
 * shared by the bench programs (see bench.h).
 */
#include "../bench.h"

#include <errno.h>
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
	fprintf(f, "# date: %s, load average %s\n", m->date, m->loadavg);
	fprintf(f, "# compiler: %s%s\n", m->compiler,
		m->optimized ? ", optimized"
			     : ", NOT OPTIMIZED (figures meaningless)");
}

int bench_csv_open(struct bench_csv *csv, const char *path)
{
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(csv->path))
		return -ENAMETOOLONG;
	memcpy(csv->path, path, len + 1);
	snprintf(csv->tmp, sizeof(csv->tmp), "%s.tmp", path);
	csv->f = fopen(csv->tmp, "w");
	if (!csv->f)
		return -errno;
	fprintf(csv->f, "name,median_ns,min_ns,max_ns,runs,ops_per_run\n");
	return 0;
}

int bench_csv_row(struct bench_csv *csv, const char *name,
		  const struct bench_stats *st)
{
	int n = fprintf(csv->f, "%s,%.2f,%.2f,%.2f,%u,%llu\n", name, st->median,
			st->min, st->max, st->runs,
			(unsigned long long)st->ops_per_run);

	return n < 0 ? -EIO : 0;
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
	if (csv->f)
		fclose(csv->f);
	csv->f = NULL;
	unlink(csv->tmp);
}
