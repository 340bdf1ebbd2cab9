/*
 * shmkv-demo - separate processes share one counter under a SETNX lock.
 *
 * Creates a fresh store, starts W worker processes (shmkv-demo-worker, from
 * the directory this program lives in), each of which takes the lock
 * "lock.counter" K times with the Redis SETNX locking pattern and adds one
 * to "counter" by a GET and a SET under it. The final counter is W*K only
 * if the lock excluded every other process each time. The store is
 * removed at the end.
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shmkv.h"

#define WORKERS_DEFAULT 4u
#define WORKERS_MAX	256u
#define CYCLES_DEFAULT	20000ul
#define CYCLES_MAX	100000000ul
#define TIMEOUT_DEFAULT 1000ul
#define TIMEOUT_MAX	60000ul

struct opts {
	unsigned long workers, cycles, timeout_ms;
	const char *name;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: shmkv-demo [--workers W] [--cycles K] [--name /NAME]\n"
		"                  [--timeout-ms T]\n"
		"\n"
		"Starts W processes that each take a shared lock K times with\n"
		"the Redis SETNX lock pattern and add one to a counter under\n"
		"it, then checks that the counter is W*K.\n"
		"\n"
		"  -w, --workers W      worker processes (default %u, max %u)\n"
		"  -c, --cycles K       lock cycles per worker (default %lu)\n"
		"  -n, --name /NAME     store to create and remove after; an\n"
		"                       existing store is never touched\n"
		"                       (default %s-demo-<pid>)\n"
		"  -t, --timeout-ms T   lock timeout in ms (default %lu)\n"
		"  -h, --help           this text\n"
		"  -V, --version        the version\n",
		WORKERS_DEFAULT, WORKERS_MAX, CYCLES_DEFAULT,
		SHMKV_DEFAULT_NAME, TIMEOUT_DEFAULT);
}

static int parse_num(const char *opt, const char *s, unsigned long max,
		     unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	if (errno || end == s || *end || *out == 0 || *out > max ||
	    s[0] == '-') {
		fprintf(stderr,
			"shmkv-demo: %s wants a number from 1 to %lu, "
			"not \"%s\"\n",
			opt, max, s);
		return -1;
	}
	return 0;
}

/* Return: 0 to run, 1 done (help, version), 2 usage error. */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "name", required_argument, NULL, 'n' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c, bad = 0;

	static char default_name[64];

	/* A name of its own, so the demo never meets a user's store. */
	snprintf(default_name, sizeof(default_name), "%s-demo-%ld",
		 SHMKV_DEFAULT_NAME, (long)getpid());
	*o = (struct opts){ WORKERS_DEFAULT, CYCLES_DEFAULT, TIMEOUT_DEFAULT,
			    default_name };
	while (!bad &&
	       (c = getopt_long(argc, argv, "w:c:n:t:hV", longs, NULL)) != -1) {
		switch (c) {
		case 'w':
			bad = parse_num("--workers", optarg, WORKERS_MAX,
					&o->workers);
			break;
		case 'c':
			bad = parse_num("--cycles", optarg, CYCLES_MAX,
					&o->cycles);
			break;
		case 't':
			bad = parse_num("--timeout-ms", optarg, TIMEOUT_MAX,
					&o->timeout_ms);
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("shmkv-demo %s\n", SHMKV_VERSION_STRING);
			return 1;
		default:
			bad = 1;
		}
	}
	if (!bad && optind < argc) {
		fprintf(stderr, "shmkv-demo: unexpected argument \"%s\"\n",
			argv[optind]);
		bad = 1;
	}
	if (bad)
		fprintf(stderr, "Try 'shmkv-demo --help'.\n");
	return bad ? 2 : 0;
}

/* The worker program sits next to this one: <dir of /proc/self/exe>/. */
static int worker_path(char *buf, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0) {
		fprintf(stderr, "shmkv-demo: /proc/self/exe: %s\n",
			strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	snprintf(buf, cap, "%s/shmkv-demo-worker", dirname(exe));
	if (access(buf, X_OK)) {
		fprintf(stderr, "shmkv-demo: worker %s: %s\n", buf,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* Creates the demo's store. An existing store of that name is someone's
 * data: never removed, the demo stops instead. */
static int fresh_store(const char *name, shmkv_t **kv)
{
	int rc = shmkv_create(name, NULL, kv);

	if (rc == -EINVAL) {
		fprintf(stderr,
			"shmkv-demo: bad store name \"%s\": want "
			"\"/NAME\", one leading slash and no other\n",
			name);
		return -1;
	}
	if (rc) {
		fprintf(stderr, "shmkv-demo: cannot create store %s: %s\n",
			name, shmkv_strerror(rc));
		return -1;
	}
	return 0;
}

static pid_t spawn(const char *path, const struct opts *o)
{
	char cycles[24], timeout[24];
	pid_t pid;

	snprintf(cycles, sizeof(cycles), "%lu", o->cycles);
	snprintf(timeout, sizeof(timeout), "%lu", o->timeout_ms);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execl(path, path, o->name, cycles, timeout, (char *)NULL);
		fprintf(stderr, "shmkv-demo: exec %s: %s\n", path,
			strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "shmkv-demo: fork: %s\n", strerror(errno));
	return pid;
}

/*
 * Starts the workers, lets them all go at once, and waits for all of them;
 * returns how many failed (one that could not be started counts). @t0 is
 * set to the moment they were let go.
 */
static unsigned run_workers(shmkv_t *kv, const char *path, const struct opts *o,
			    struct timespec *t0)
{
	pid_t pids[WORKERS_MAX];
	unsigned failed = 0;
	int rc;

	for (unsigned long i = 0; i < o->workers; i++)
		pids[i] = spawn(path, o);
	clock_gettime(CLOCK_MONOTONIC, t0);
	rc = shmkv_set(kv, "demo.start", 10, "1", 1, 0, 0, NULL);
	if (rc != 1)
		fprintf(stderr, "shmkv-demo: SET demo.start: %s\n",
			shmkv_strerror(rc));
	for (unsigned long i = 0; i < o->workers; i++) {
		int st = 0;

		if (pids[i] < 0) {
			failed++;
			continue;
		}
		while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
			;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			continue;
		failed++;
		if (WIFSIGNALED(st))
			fprintf(stderr, "shmkv-demo: worker %lu: signal %d\n",
				i, WTERMSIG(st));
		else
			fprintf(stderr, "shmkv-demo: worker %lu exited %d\n", i,
				WEXITSTATUS(st));
	}
	return failed;
}

/* An integer key's value, or -1 if it is missing or unreadable. */
static long long read_int(shmkv_t *kv, const char *key)
{
	char buf[32];
	struct shmkv_value v = { buf, sizeof(buf) - 1, 0 };
	char *end;
	long long n;

	if (shmkv_get(kv, key, strlen(key), &v) != 1)
		return -1;
	buf[v.len] = '\0';
	n = strtoll(buf, &end, 10);
	return *end ? -1 : n;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
	       (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static int report(shmkv_t *kv, const struct opts *o, unsigned failed,
		  double secs)
{
	long long counter = read_int(kv, "counter");
	unsigned long long want = (unsigned long long)o->workers * o->cycles;

	printf("shmkv demo: %lu processes x %lu lock cycles on store %s\n",
	       o->workers, o->cycles, o->name);
	if (failed) {
		printf("  FAILED: %u of %lu workers failed (see above)\n",
		       failed, o->workers);
		return 1;
	}
	if (counter < 0 || (unsigned long long)counter != want) {
		printf("  FAILED: counter = %lld, expected %llu: updates were "
		       "lost, so the lock\n  let two processes in at once\n",
		       counter, want);
		return 1;
	}
	printf("  counter = %lld, expected %llu: OK, no update was lost\n",
	       counter, want);
	printf("  %llu lock cycles in %.2f s = %.0f cycles/s; the lock was "
	       "found taken\n  %lld times and %lld expired locks were broken\n",
	       want, secs, secs > 0 ? (double)want / secs : 0.0,
	       read_int(kv, "demo.waits"), read_int(kv, "demo.breaks"));
	printf("Each worker took the lock with SETNX lock.counter <expiry>, "
	       "broke only\nan expired lock with GETSET, then did GET counter "
	       "+ SET counter+1 and\nreleased with DEL: a lost update would "
	       "mean two processes held the lock.\n");
	return 0;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	struct timespec t0;
	struct opts o;
	shmkv_t *kv;
	unsigned failed;
	int rc = parse_opts(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : 2;
	if (worker_path(path, sizeof(path)) || fresh_store(o.name, &kv))
		return 1;
	failed = run_workers(kv, path, &o, &t0);
	rc = report(kv, &o, failed, seconds_since(&t0));
	shmkv_close(kv);
	shmkv_unlink(o.name);
	return rc;
}
