/*
 * test_mp_demo.c - the demo: separate processes counting under the SETNX
 * lock pattern lose no update, break the lock a dead holder left, and
 * remove their store at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/mp.h"
#include "helpers/redis_server.h"
#include "helpers/testutil.h"

#define DEMO_WORKERS 4
#define DEMO_CYCLES  3000

/* @prog (a file in the build directory) into @buf; asserts it exists.
 * The Makefile names the directory; else it is the one above ours. */
static void build_path(char *buf, size_t cap, const char *prog)
{
#ifdef SHMKV_BUILD_DIR
	int n = snprintf(buf, cap, "%s/%s", SHMKV_BUILD_DIR, prog);
#else
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int n = -1;

	if (len > 0) {
		exe[len] = '\0';
		n = snprintf(buf, cap, "%s/../%s", dirname(exe), prog);
	}
#endif
	cr_assert(n > 0 && (size_t)n < cap, "path of %s too long", prog);
	cr_assert_eq(access(buf, X_OK), 0, "no program %s: %s", buf,
		     strerror(errno));
}

/* Runs @argv to completion, its stdout into @out if not NULL; returns
 * its wait status. */
static int run_prog_to(char *const argv[], const char *out)
{
	int st = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int fd = out ? open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)
			     : -1;

		if (fd >= 0)
			dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

static int run_prog(char *const argv[])
{
	return run_prog_to(argv, NULL);
}

/* The whole of file @path (up to 64 KiB), NUL-terminated; freed when
 * the test ends. */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = tu_fill(1 << 16, 0);
	size_t n;

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, (1 << 16) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void assert_says(const char *out, const char *what)
{
	cr_assert(strstr(out, what) != NULL, "the demo did not say \"%s\":\n%s",
		  what, out);
}

TestSuite(mp_demo, .fini = tu_teardown);

Test(mp_demo, keeps_every_update_and_removes_its_store)
{
	char path[PATH_MAX], name[TU_NAME_CAP], w[16], c[16];
	char *argv[] = { path, "--name",   name, "--workers",
			 w,    "--cycles", c,	 NULL };
	shmkv_t *kv = NULL;
	int st;

	build_path(path, sizeof(path), "shmkv-demo");
	tu_make_name(name, NULL);
	snprintf(w, sizeof(w), "%d", DEMO_WORKERS);
	snprintf(c, sizeof(c), "%d", DEMO_CYCLES);
	st = run_prog(argv);
	cr_assert(mp_status_ok(st), "shmkv-demo: wait status %#x", st);
	tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
}

/* Each claim is a sentence of its own, and the demo's exit status says
 * whether each held (the times in them are not judged). */
Test(mp_demo, says_each_claim_in_a_sentence)
{
	char path[PATH_MAX], name[TU_NAME_CAP], out[64];
	char *argv[] = { path, "--name", name, "--cycles", "200", NULL };
	char *text;
	int st;

	build_path(path, sizeof(path), "shmkv-demo");
	tu_make_name(name, NULL);
	snprintf(out, sizeof(out), "/tmp/shmkv-test-demo-%ld.out",
		 (long)getpid());
	st = run_prog_to(argv, out);
	text = slurp(out);
	unlink(out);
	cr_assert(mp_status_ok(st), "shmkv-demo: wait status %#x:\n%s", st,
		  text);
	assert_says(text, "counter = 800, expected 800, so no update was lost");
	assert_says(text, "was SIGKILLed inside its critical section");
	assert_says(text, "told that the owner died, with token 2.");
	assert_says(text, "found 0 problems in");
	assert_says(text, "4. One lock cycle");
	assert_says(text, redis_server_find() ? "Redis " : "Redis skipped: ");
	assert_says(text, "shmkv demo: every claim above held.");
	cr_assert(strstr(text, "FAILED") == NULL, "%s", text);
}

/* The demo's store name could be a user's store: it must stop rather
 * than remove or touch it. */
Test(mp_demo, never_touches_an_existing_store)
{
	char path[PATH_MAX], name[TU_NAME_CAP];
	char *argv[] = { path, "--name", name, "--cycles", "10", NULL };
	struct shmkv_config cfg = tu_config(64, 16, 64, 0);
	shmkv_t *kv;
	int st;

	build_path(path, sizeof(path), "shmkv-demo");
	kv = tu_create(&cfg, name);
	tu_assert_rc(shmkv_set(kv, LIT("data"), LIT("precious"), 0, 0, NULL),
		     1);
	st = run_prog(argv);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0,
		  "shmkv-demo ran on an existing store: status %#x", st);
	tu_assert_get_str(kv, "data", "precious");
	tu_assert_rc(shmkv_exists(kv, LIT("lock.counter")), 0);
	shmkv_close(kv);
}

/* Starts the demo's workers on @name; returns how many failed. */
static int demo_workers_run(const char *name, shmkv_t *kv)
{
	char path[PATH_MAX], c[16], n[TU_NAME_CAP];
	char *argv[] = { path, n, c, "1000", NULL };
	pid_t pid[DEMO_WORKERS];
	int failed = 0;

	build_path(path, sizeof(path), "shmkv-demo-worker");
	snprintf(n, sizeof(n), "%s", name);
	snprintf(c, sizeof(c), "%d", DEMO_CYCLES);
	fflush(NULL);
	for (int i = 0; i < DEMO_WORKERS; i++) {
		pid[i] = fork();
		if (pid[i] == 0) {
			execv(path, argv);
			_exit(127);
		}
	}
	tu_assert_rc(shmkv_set(kv, "demo.start", 10, "1", 1, 0, 0, NULL), 1);
	for (int i = 0; i < DEMO_WORKERS; i++) {
		int st = 0;

		if (pid[i] < 0) {
			failed++;
			continue;
		}
		while (waitpid(pid[i], &st, 0) < 0 && errno == EINTR)
			;
		failed += !mp_status_ok(st);
	}
	return failed;
}

Test(mp_demo, workers_break_a_lock_a_dead_holder_left)
{
	char name[TU_NAME_CAP], lock[32], val[32], want[32];
	shmkv_t *kv = mp_create_store(name, 1024, 0);
	size_t ll, vl,
		wl = (size_t)sprintf(want, "%d", DEMO_WORKERS * DEMO_CYCLES);

	/* The lock of a holder that died 5 s after its timeout: no worker
	 * can SETNX it, so one must break it with GETSET. */
	ll = (size_t)sprintf(lock, "%lld", (long long)(tu_now_ms() - 5000));
	tu_assert_rc(shmkv_set(kv, "lock.counter", 12, lock, ll, 0, 0, NULL),
		     1);
	cr_assert_eq(demo_workers_run(name, kv), 0, "a demo worker failed");
	tu_assert_rc(mp_get_str(kv, "counter", val, sizeof(val), &vl), 1);
	cr_assert(vl == wl && !memcmp(val, want, wl),
		  "counter is %.*s, expected %s", (int)vl, val, want);
	tu_assert_rc(mp_get_str(kv, "demo.breaks", val, sizeof(val), &vl), 1);
	cr_assert(vl > 0 && val[0] >= '1' && val[0] <= '9',
		  "demo.breaks is %.*s: no one broke the dead lock", (int)vl,
		  val);
	shmkv_close(kv);
}
