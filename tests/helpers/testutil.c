/*
 * testutil.c - shared helpers for the Criterion unit tests.
 */
#include "testutil.h"
#include "helpers/clock.h"
#include "helpers/rng.h"
#include "internal.h"

#include <criterion/hooks.h>
#include <sched.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

shmkv_t *tu_kv;
char tu_name[TU_NAME_CAP];

/*
 * Names to unlink when the test ends. Paths are kept ready-made so that
 * the crash handler needs nothing but unlink(), which is async-signal-safe.
 */
#define TU_TRACK_MAX 64
static char tracked[TU_TRACK_MAX][TU_PATH_CAP];
static volatile sig_atomic_t ntracked;

/* Buffers handed out by the helpers; freed by tu_teardown(). */
static void **allocs;
static size_t nallocs, allocs_cap;

static struct shmkv_value scratch;

static void *tu_alloc(size_t len)
{
	void *p = malloc(len ? len : 1);
	void **grown;

	cr_assert_not_null(p, "out of memory for %zu bytes", len);
	if (nallocs == allocs_cap) {
		allocs_cap = allocs_cap ? 2 * allocs_cap : 32;
		grown = realloc(allocs, allocs_cap * sizeof(*allocs));
		cr_assert_not_null(grown, "out of memory");
		allocs = grown;
	}
	allocs[nallocs++] = p;
	return p;
}

static void unlink_tracked(void)
{
	for (int i = 0; i < ntracked; i++)
		unlink(tracked[i]);
	ntracked = 0;
}

/* A test that crashes or is told to stop still removes its segments, then
 * dies of the same signal so that Criterion reports it. */
static void on_crash(int sig)
{
	unlink_tracked();
	raise(sig);
}

static void install_crash_cleanup(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS,  SIGFPE, SIGILL,
				    SIGABRT, SIGTERM, SIGINT, SIGHUP };
	static int installed;
	struct sigaction sa;

	if (installed)
		return;
	installed = 1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	atexit(unlink_tracked);
}

/*
 * A test killed with SIGKILL (a Criterion timeout) cannot clean up. After
 * the run, the runner removes the segments of tests whose process is gone:
 * names are "shmkv-test-<pid>-...", so a live pid (a concurrent run) keeps
 * its segments.
 */
static void remove_orphans(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	char path[TU_PATH_CAP + 64];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		long pid;
		char *end;

		if (strncmp(e->d_name, "shmkv-test-", 11))
			continue;
		pid = strtol(e->d_name + 11, &end, 10);
		if (end == e->d_name + 11 || *end != '-' || pid <= 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", e->d_name);
		unlink(path);
	}
	closedir(d);
}

ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	(void)stats;
	remove_orphans();
}

void tu_track(const char *name)
{
	install_crash_cleanup();
	for (int i = 0; i < ntracked; i++)
		if (!strcmp(tracked[i] + strlen("/dev/shm"), name))
			return;
	cr_assert_lt(ntracked, TU_TRACK_MAX, "too many segments in one test");
	tu_shm_path(name, tracked[ntracked]);
	ntracked++;
}

void tu_shm_path(const char *name, char path[TU_PATH_CAP])
{
	snprintf(path, TU_PATH_CAP, "/dev/shm%s", name);
}

/* Copies @src into @dst keeping only characters that are safe in a file
 * name; returns the number of bytes written. */
static size_t sanitize(char *dst, size_t cap, const char *src)
{
	size_t n = 0;

	for (; src && *src && n + 1 < cap; src++) {
		char c = *src;

		dst[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
					   (c >= '0' && c <= '9') || c == '_'
				   ? c
				   : '.';
	}
	dst[n] = '\0';
	return n;
}

void tu_make_name(char name[TU_NAME_CAP], const char *tag)
{
	static unsigned counter;
	char suite[64], test[96], extra[32], full[256];
	size_t len;

	sanitize(suite, sizeof(suite),
		 criterion_current_suite ? criterion_current_suite->name : "x");
	sanitize(test, sizeof(test),
		 criterion_current_test ? criterion_current_test->name : "x");
	sanitize(extra, sizeof(extra), tag ? tag : "");
	snprintf(full, sizeof(full), "/shmkv-test-%ld-%u-%s-%s%s%s",
		 (long)getpid(), counter++, suite, test, tag ? "-" : "", extra);
	/* The pid and counter come first, so a cut name stays unique. */
	len = strlen(full);
	if (len > SHMKV_NAME_MAX)
		len = SHMKV_NAME_MAX;
	memcpy(name, full, len);
	name[len] = '\0';
	tu_track(name);
}

struct shmkv_config tu_config(uint32_t slots, uint32_t key_max,
			      uint32_t value_max, uint64_t value_memory)
{
	struct shmkv_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.slots = slots;
	cfg.key_max = key_max;
	cfg.value_max = value_max;
	cfg.value_memory = value_memory;
	return cfg;
}

/* The exit status of a child that could not mount its tmpfs. */
#define NO_PRIVATE_SHM 125

int tu_in_private_shm(const char *options, int (*child)(const char *name),
		      const char *name, const char *untested)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) != 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
		    mount("tmpfs", "/dev/shm", "tmpfs", 0, options) != 0)
			_exit(NO_PRIVATE_SHM);
		_exit(child(name));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "child killed by signal %d",
		  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	if (WEXITSTATUS(status) == NO_PRIVATE_SHM)
		cr_skip_test("cannot mount a private tmpfs on /dev/shm (needs "
			     "root): %s not tested here",
			     untested);
	return WEXITSTATUS(status);
}

bool tu_shm_fill(void)
{
	struct statvfs sv;
	int fd = open("/dev/shm/filler", O_RDWR | O_CREAT | O_TRUNC, 0600);
	off_t at = 0;

	if (fd < 0)
		return false;
	for (off_t step = 1 << 20; step >= 4096; step /= 2)
		while (fallocate(fd, 0, at, step) == 0)
			at += step;
	close(fd);
	return statvfs("/dev/shm", &sv) == 0 && sv.f_bavail == 0;
}

unsigned tu_kill_lanes(unsigned lanes, unsigned kills_max, unsigned pause_us,
		       pid_t (*spawn)(unsigned lane, unsigned n, void *ctx),
		       void *ctx)
{
	return tu_kill_lanes_when(lanes, kills_max, pause_us, spawn, NULL, ctx);
}

unsigned
tu_kill_lanes_when(unsigned lanes, unsigned kills_max, unsigned pause_us,
		   pid_t (*spawn)(unsigned lane, unsigned n, void *ctx),
		   bool (*when)(void *ctx), void *ctx)
{
	pid_t pid[64];
	unsigned done = 0, kills = 0, deaths = 0, restarts = 0;
	uint64_t rng = 0x9e3779b97f4a7c15u ^ (uint64_t)getpid();

	cr_assert_leq(lanes, 64);
	for (unsigned l = 0; l < lanes; l++)
		pid[l] = spawn(l, 0, ctx);
	while (done < lanes) {
		unsigned l = (unsigned)(rng_next(&rng) % lanes);
		int status;
		pid_t got;

		if (kills < kills_max && pid[l] > 0) {
			usleep((useconds_t)(rng_next(&rng) % pause_us));
			if (when == NULL || when(ctx)) {
				kill(pid[l], SIGKILL);
				kills++;
			}
		}
		got = waitpid(-1, &status, kills < kills_max ? WNOHANG : 0);
		if (got <= 0)
			continue;
		for (l = 0; l < lanes && pid[l] != got; l++)
			;
		cr_assert_lt(l, lanes, "an unknown child %d", (int)got);
		cr_assert(WIFSIGNALED(status) || (WIFEXITED(status) &&
						  WEXITSTATUS(status) == 0),
			  "lane %u's writer: %#x", l, status);
		if (WIFEXITED(status)) {
			pid[l] = 0;
			done++;
			continue;
		}
		deaths++;
		pid[l] = spawn(l, ++restarts, ctx);
	}
	return deaths;
}

static struct shmkv_geometry geometry_of(const struct shmkv_config *cfg)
{
	struct shmkv_geometry g;

	cr_assert_eq(shmkv__geometry_from_config(cfg, 0, &g), 0,
		     "a config the library refuses");
	return g;
}

uint64_t tu_footprint(const struct shmkv_config *cfg, uint32_t pages)
{
	struct shmkv_geometry g = geometry_of(cfg);

	return shmkv__footprint(&g, pages);
}

uint64_t tu_initial_footprint(const struct shmkv_config *cfg)
{
	struct shmkv_geometry g = geometry_of(cfg);

	return shmkv__footprint(&g, g.pages_initial);
}

shmkv_t *tu_create_growing(const struct shmkv_config *cfg,
			   char name[TU_NAME_CAP])
{
	shmkv_t *kv = NULL;
	int rc;

	tu_make_name(name, NULL);
	rc = shmkv_create(name, cfg, &kv);
	cr_assert_eq(rc, 0, "shmkv_create(%s): %s", name, tu_rcname(rc));
	cr_assert_not_null(kv);
	return kv;
}

shmkv_t *tu_create(const struct shmkv_config *cfg, char name[TU_NAME_CAP])
{
	struct shmkv_config fixed;
	shmkv_t *kv = NULL;
	int rc;

	if (cfg != NULL && cfg->max_memory == 0) {
		fixed = *cfg;
		fixed.max_memory = tu_initial_footprint(cfg);
		cfg = &fixed;
	}
	tu_make_name(name, NULL);
	rc = shmkv_create(name, cfg, &kv);
	cr_assert_eq(rc, 0, "shmkv_create(%s): %s", name, tu_rcname(rc));
	cr_assert_not_null(kv);
	return kv;
}

shmkv_t *tu_open(const char *name, unsigned flags)
{
	shmkv_t *kv = NULL;
	int rc = shmkv_open(name, flags, &kv);

	cr_assert_eq(rc, 0, "shmkv_open(%s, %u): %s", name, flags,
		     tu_rcname(rc));
	cr_assert_not_null(kv);
	return kv;
}

struct shmkv_config tu_get_config(const shmkv_t *kv)
{
	struct shmkv_config cfg;

	memset(&cfg, 0xff, sizeof(cfg));
	tu_assert_ok(shmkv_get_config(kv, &cfg));
	return cfg;
}

void tu_setup(void)
{
	struct shmkv_config cfg = tu_config(TU_SLOTS, TU_KEY_MAX, TU_VALUE_MAX,
					    0);

	tu_kv = tu_create(&cfg, tu_name);
}

void tu_teardown(void)
{
	shmkv_close(tu_kv);
	tu_kv = NULL;
	unlink_tracked();
	for (size_t i = 0; i < nallocs; i++)
		free(allocs[i]);
	nallocs = 0;
	scratch.buf = NULL;
	scratch.cap = 0;
}

struct shmkv_value tu_value(size_t cap)
{
	struct shmkv_value v = { NULL, cap, (size_t)-1 };

	if (cap) {
		v.buf = tu_alloc(cap);
		memset(v.buf, TU_CANARY, cap);
	}
	return v;
}

struct shmkv_value tu_value_for(const shmkv_t *kv)
{
	return tu_value(tu_get_config(kv).value_max);
}

struct shmkv_value tu_scratch_for(const shmkv_t *kv)
{
	size_t need = tu_get_config(kv).value_max;

	if (scratch.cap < need)
		scratch = tu_value(need);
	scratch.len = (size_t)-1;
	return scratch;
}

size_t tu_fmt(char *buf, size_t cap, const char *prefix, unsigned long i)
{
	int n = snprintf(buf, cap, "%s%lu", prefix, i);

	cr_assert(n > 0 && (size_t)n < cap, "key buffer too small");
	return (size_t)n;
}

char *tu_fill(size_t len, int c)
{
	char *p = tu_alloc(len);

	memset(p, c, len);
	return p;
}

int64_t tu_now_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000;
}

void tu_sleep_ms(unsigned ms)
{
	sleep_ns((int64_t)ms * 1000000);
}

char tu_proc_state(int pid)
{
	char path[32], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return '?';
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* The command name may hold ") ": the state follows the last ')'. */
	p = p ? strrchr(buf, ')') : NULL;
	return p && p[1] == ' ' ? p[2] : '?';
}

void tu_wait_proc_state(int pid, char want)
{
	for (int i = 0; i < 10000 && tu_proc_state(pid) != want; i++)
		tu_sleep_ms(1);
	cr_assert_eq(tu_proc_state(pid), want, "pid %d is in state %c, not %c",
		     pid, tu_proc_state(pid), want);
}

/*
 * Raw segment files.
 */

static int shm_fd(const char *name, int flags)
{
	int fd = shm_open(name, flags, 0600);

	cr_assert(fd >= 0, "shm_open(%s): %s", name, strerror(errno));
	return fd;
}

void tu_shm_write_new(const char *name, const void *data, size_t len)
{
	int fd;

	tu_track(name);
	fd = shm_fd(name, O_RDWR | O_CREAT | O_EXCL);
	cr_assert_eq(pwrite(fd, data, len, 0), (ssize_t)len, "pwrite %s", name);
	close(fd);
}

void tu_shm_pwrite(const char *name, const void *data, size_t len, off_t off)
{
	int fd = shm_fd(name, O_RDWR);

	cr_assert_eq(pwrite(fd, data, len, off), (ssize_t)len, "pwrite %s",
		     name);
	close(fd);
}

void tu_shm_pread(const char *name, void *data, size_t len, off_t off)
{
	int fd = shm_fd(name, O_RDONLY);

	cr_assert_eq(pread(fd, data, len, off), (ssize_t)len, "pread %s", name);
	close(fd);
}

void tu_shm_truncate(const char *name, off_t len)
{
	int fd = shm_fd(name, O_RDWR);

	cr_assert_eq(ftruncate(fd, len), 0, "ftruncate %s: %s", name,
		     strerror(errno));
	close(fd);
}

unsigned tu_count_new_files(int pid)
{
	char prefix[48];
	unsigned n = 0;
	struct dirent *e;
	DIR *d = opendir("/dev/shm");

	cr_assert_not_null(d, "opendir /dev/shm: %s", strerror(errno));
	snprintf(prefix, sizeof(prefix), ".shmkv-new-%d-", pid);
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

off_t tu_shm_size(const char *name)
{
	struct stat st;
	int fd = shm_fd(name, O_RDONLY);

	cr_assert_eq(fstat(fd, &st), 0, "fstat %s", name);
	close(fd);
	return st.st_size;
}

off_t tu_shm_allocated(const char *name)
{
	struct stat st;
	int fd = shm_fd(name, O_RDONLY);

	cr_assert_eq(fstat(fd, &st), 0, "fstat %s", name);
	close(fd);
	return (off_t)st.st_blocks * 512;
}

void *tu_shm_read_all(const char *name, size_t *len)
{
	size_t n = (size_t)tu_shm_size(name);
	void *p = tu_alloc(n);

	if (n)
		tu_shm_pread(name, p, n, 0);
	*len = n;
	return p;
}

/*
 * Snapshots.
 */

struct tu_entry {
	char *key;
	size_t klen;
	char *val;
	size_t vlen;
	int has_ttl;
};

struct tu_snap {
	struct tu_entry *e;
	size_t n, cap;
	uint64_t live;
};

static int snap_add_key(const void *key, size_t klen, void *arg)
{
	struct tu_snap *s = arg;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct tu_entry *e = tu_alloc(cap * sizeof(*e));

		if (s->n)
			memcpy(e, s->e, s->n * sizeof(*e));
		s->e = e;
		s->cap = cap;
	}
	s->e[s->n].key = tu_alloc(klen);
	if (klen)
		memcpy(s->e[s->n].key, key, klen);
	s->e[s->n].klen = klen;
	s->n++;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct tu_entry *x = a, *y = b;
	size_t n = x->klen < y->klen ? x->klen : y->klen;
	int c = n ? memcmp(x->key, y->key, n) : 0;

	if (c)
		return c;
	return (x->klen > y->klen) - (x->klen < y->klen);
}

/* Sorts the keys and drops duplicates (a scan may visit a key twice). */
static void snap_dedupe(struct tu_snap *s)
{
	size_t out = 0;

	if (!s->n)
		return;
	qsort(s->e, s->n, sizeof(*s->e), entry_cmp);
	for (size_t i = 1; i < s->n; i++)
		if (entry_cmp(&s->e[out], &s->e[i]))
			s->e[++out] = s->e[i];
	s->n = out + 1;
}

static void snap_scan(shmkv_t *kv, struct tu_snap *s)
{
	uint64_t cursor = 0, next = 0;
	unsigned long rounds = 0;

	do {
		int rc = shmkv_scan(kv, cursor, 256, snap_add_key, s, &next);

		cr_assert_eq(rc, 0, "shmkv_scan: %s", tu_rcname(rc));
		cursor = next;
		cr_assert_lt(++rounds, 1ul << 22, "scan does not terminate");
	} while (cursor != 0);
}

/* Reads each key's value and TTL; keys that vanished meanwhile (expired)
 * are dropped. */
static void snap_fill_values(shmkv_t *kv, struct tu_snap *s)
{
	size_t cap = tu_get_config(kv).value_max, out = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct tu_entry *e = &s->e[i];
		struct shmkv_value v = tu_value(cap);
		int64_t ttl = 0;
		int rc = shmkv_get(kv, e->key, e->klen, &v);

		cr_assert(rc == 0 || rc == 1, "snapshot GET: %s",
			  tu_rcname(rc));
		if (rc == 0)
			continue;
		tu_assert_ok(shmkv_pttl(kv, e->key, e->klen, &ttl));
		e->val = v.buf;
		e->vlen = v.len;
		e->has_ttl = ttl >= 0;
		s->e[out++] = *e;
	}
	s->n = out;
}

struct tu_snap *tu_snap_take(shmkv_t *kv)
{
	struct tu_snap *s = tu_alloc(sizeof(*s));
	struct shmkv_stats st;

	memset(s, 0, sizeof(*s));
	snap_scan(kv, s);
	snap_dedupe(s);
	snap_fill_values(kv, s);
	tu_assert_ok(shmkv_stats(kv, &st));
	s->live = st.live_keys;
	return s;
}

size_t tu_snap_count(const struct tu_snap *snap)
{
	return snap->n;
}

int tu_snap_diff(shmkv_t *kv, const struct tu_snap *snap, char *why, size_t cap)
{
	struct tu_snap *now = tu_snap_take(kv);

	if (now->live != snap->live) {
		snprintf(why, cap, "live_keys %llu, was %llu",
			 (unsigned long long)now->live,
			 (unsigned long long)snap->live);
		return -1;
	}
	if (now->n != snap->n) {
		snprintf(why, cap, "%zu keys, was %zu", now->n, snap->n);
		return -1;
	}
	for (size_t i = 0; i < snap->n; i++) {
		const struct tu_entry *a = &snap->e[i], *b = &now->e[i];
		int klen = (int)(a->klen > 64 ? 64 : a->klen);

		if (entry_cmp(a, b)) {
			snprintf(why, cap, "key \"%.*s\" is gone", klen,
				 a->key);
			return -1;
		}
		if (a->vlen != b->vlen ||
		    (a->vlen && memcmp(a->val, b->val, a->vlen))) {
			snprintf(why, cap, "key \"%.*s\" changed value", klen,
				 a->key);
			return -1;
		}
		if (a->has_ttl != b->has_ttl) {
			snprintf(why, cap, "key \"%.*s\" %s its TTL", klen,
				 a->key, a->has_ttl ? "lost" : "gained");
			return -1;
		}
	}
	snprintf(why, cap, "nothing");
	return 0;
}

void tu_populate(shmkv_t *kv, unsigned n)
{
	char k[32], v[32];

	for (unsigned i = 0; i < n; i++) {
		size_t kl = tu_fmt(k, sizeof(k), "base", i);
		size_t vl = tu_fmt(v, sizeof(v), "value", i);
		unsigned flags = i % 3 ? 0 : SHMKV_SET_EX;

		tu_assert_rc(shmkv_set(kv, k, kl, v, vl, flags, 3600, NULL), 1);
	}
}

const char *tu_rcname(int rc)
{
	static char buf[4][48];
	static unsigned turn;
	char *out = buf[turn++ % 4];
	const char *name = rc < 0 ? strerrorname_np(-rc) : NULL;

	if (name)
		snprintf(out, sizeof(buf[0]), "-%s", name);
	else
		snprintf(out, sizeof(buf[0]), "%d", rc);
	return out;
}
