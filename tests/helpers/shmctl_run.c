/*
 * shmctl_run.c - running shmctl in the unit tests (see shmctl_run.h).
 */
#include "helpers/shmctl_run.h"

#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Not a time limit on behaviour: only a hung run's end. */
#define RUN_ALARM_S 60

const char *shmctl_bin(void)
{
	const char *env = getenv("SHMCTL_BIN");

	return env ? env : SHMKV_BUILD_DIR "/shmctl";
}

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("shmctl-test", 0);

	cr_assert_geq(fd, 0, "memfd_create: %s", strerror(errno));
	if (len)
		cr_assert_eq(write(fd, data, len), (ssize_t)len);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static char *slurp_fd(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *p = malloc((size_t)n + 1);

	cr_assert_not_null(p);
	cr_assert_eq(pread(fd, p, (size_t)n, 0), (ssize_t)n);
	p[n] = '\0';
	*len = (size_t)n;
	close(fd);
	return p;
}

/*
 * In the child: become @uid (root only), wire the fds, exec. The binary is
 * opened before the privileges go and run from that descriptor, so that
 * another user runs it wherever the checkout is: a private directory (a
 * root checkout in /root, mode 0700) is searched only by its owner, and a
 * path-based exec as that user would fail (exit 127).
 */
static void child(char **argv, int in, int out, int err, uid_t uid)
{
	int bin = open(shmctl_bin(), O_RDONLY | O_CLOEXEC);

	if (bin < 0)
		_exit(127);
	if (uid != (uid_t)-1 &&
	    (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
		_exit(126);
	dup2(in, 0), dup2(out, 1), dup2(err, 2);
	alarm(RUN_ALARM_S);
	fexecve(bin, argv, environ);
	_exit(127);
}

struct run ctl_run_v(const char *input, size_t inlen, uid_t uid, char **argv)
{
	int in = memfd_with(input, inlen), out = memfd_with(NULL, 0),
	    err = memfd_with(NULL, 0), st;
	struct run r;
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork");
	if (pid == 0)
		child(argv, in, out, err, uid);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	close(in);
	r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = slurp_fd(out, &r.out_len);
	r.err = slurp_fd(err, &r.err_len);
	return r;
}

/* shmctl ARGS... (NULL-terminated) with @input on stdin, as @uid. */
struct run ctl_run_in(const char *input, size_t inlen, uid_t uid, ...)
{
	char *argv[32] = { "shmctl" };
	va_list ap;
	int n = 1;

	va_start(ap, uid);
	while ((argv[n] = va_arg(ap, char *)) != NULL)
		cr_assert_lt(++n, 31, "too many arguments");
	va_end(ap);
	return ctl_run_v(input, inlen, uid, argv);
}

bool ctl_is_root(void)
{
	return geteuid() == 0;
}

bool ctl_shm_exists(const char *name)
{
	char path[TU_PATH_CAP];

	tu_shm_path(name, path);
	return access(path, F_OK) == 0;
}

/* Replaces the suite's store with one of geometry @cfg. */
void ctl_recreate(const struct shmkv_config *cfg)
{
	shmkv_close(tu_kv);
	tu_kv = tu_create(cfg, tu_name);
}

/* Temporary files of the running test, removed when it ends (even when
 * an assertion fails). */
#define TEMP_MAX 8
static char temps[TEMP_MAX][64];
static unsigned ntemps;

void ctl_temp_path(char *path, size_t cap)
{
	cr_assert_lt(ntemps, TEMP_MAX, "too many temporary files");
	snprintf(temps[ntemps], sizeof(temps[0]), "/tmp/shmctl-test-%d-%u",
		 (int)getpid(), ntemps);
	snprintf(path, cap, "%s", temps[ntemps++]);
}

void ctl_teardown(void)
{
	while (ntemps > 0)
		unlink(temps[--ntemps]);
	tu_teardown();
}

void ctl_set_kv(const char *k, size_t kl, const char *v, size_t vl, int64_t px)
{
	tu_assert_rc(
		shmkv_set(tu_kv, k, kl, v, vl, px ? SHMKV_SET_PX : 0, px, NULL),
		1);
}

int ctl_count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

pid_t ctl_dead_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}
