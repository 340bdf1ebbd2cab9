/*
 * demo_util.c - what the demo's parts share: starting and reaping
 * children, the clock, waiting for a key a child writes, printing counts
 * and times.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"

int64_t demo_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int demo_prog_path(const struct demo *d, const char *prog, char *buf,
		   size_t cap)
{
	int n = snprintf(buf, cap, "%s/%s", d->dir, prog);

	if (n < 0 || (size_t)n >= cap || access(buf, X_OK) != 0) {
		fprintf(stderr, "shmkv-demo: %s/%s: %s\n", d->dir, prog,
			n < 0 || (size_t)n >= cap ? "path too long"
						  : strerror(errno));
		return -1;
	}
	return 0;
}

pid_t demo_spawn(char *const argv[])
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		/* A child outliving a killed demo would hold its store (a
		 * holder sleeps forever): it goes with us. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(127);
		execv(argv[0], argv);
		fprintf(stderr, "shmkv-demo: exec %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "shmkv-demo: fork: %s\n", strerror(errno));
	return pid;
}

int demo_reap(pid_t pid, const char *what)
{
	int st = 0;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			fprintf(stderr, "shmkv-demo: %s: waitpid: %s\n", what,
				strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	if (WIFSIGNALED(st))
		fprintf(stderr, "shmkv-demo: %s: signal %d\n", what,
			WTERMSIG(st));
	else
		fprintf(stderr, "shmkv-demo: %s exited %d\n", what,
			WEXITSTATUS(st));
	return -1;
}

/* Whether child @pid has exited, leaving it to be reaped by demo_reap. */
static int exited(pid_t pid)
{
	siginfo_t info;

	memset(&info, 0, sizeof(info));
	return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) ==
		       0 &&
	       info.si_pid == pid;
}

int demo_wait_key(const struct demo *d, const char *key, pid_t pid)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < DEMO_WAIT_MAX_MS; i++) {
		int rc = shmkv_exists(d->kv, key, strlen(key));

		if (rc == 1)
			return 0;
		if (rc < 0) {
			fprintf(stderr, "shmkv-demo: EXISTS %s: %s\n", key,
				shmkv_strerror(rc));
			return -1;
		}
		if (pid > 0 && exited(pid)) {
			fprintf(stderr,
				"shmkv-demo: child %ld exited before "
				"writing %s\n",
				(long)pid, key);
			return -1;
		}
		nanosleep(&ms, NULL);
	}
	fprintf(stderr, "shmkv-demo: no %s after %d s\n", key,
		DEMO_WAIT_MAX_MS / 1000);
	return -1;
}

int demo_get_i64(shmkv_t *kv, const char *key, int64_t *v)
{
	return shmkv_get_int(kv, key, strlen(key), v) == 1 ? 0 : -1;
}

const char *demo_count(char *buf, size_t cap, uint64_t n)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%llu",
			   (unsigned long long)n);
	size_t out = 0;

	for (int i = 0; i < len && out + 2 < cap; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			buf[out++] = ',';
		buf[out++] = digits[i];
	}
	buf[out] = '\0';
	return buf;
}

const char *demo_time(char *buf, size_t cap, double ns)
{
	if (ns < 1000)
		snprintf(buf, cap, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, cap, "%.1f us", ns / 1e3);
	else
		snprintf(buf, cap, "%.1f ms", ns / 1e6);
	return buf;
}
