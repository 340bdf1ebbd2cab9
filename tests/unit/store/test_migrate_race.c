/*
 * test_migrate_race.c - races lost during a growth are retried, never
 * answered as errors: writer processes that all write the same few keys
 * while the table grows under them (so that every old slot of those keys
 * is copied by several of them at once, and their copies' CASes in the
 * new table race), and a process that drives each growth to its end with
 * shmkv_maintain meanwhile (so that helpers race for the frontier). The
 * migration's loops are bounded by a budget of passes shared per call
 * (src/migrate.c) and the growth's end by its frontier's progress: under
 * this contention every command still succeeds.
 *
 * Children never call cr_assert: they report through their exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/testutil.h"

TestSuite(migrate_race, .fini = tu_teardown);

#define WRITERS 3u
#define HOT	8u     /* keys every writer writes */
#define ROUNDS	40000u /* per writer: a hot key, and a key of its own */
#define SLOTS	256u   /* grows to 8192 or more slots */

/* A writer: ROUNDS times a hot key (the same ones in every writer) and a
 * key of its own, which fills the table and makes it grow. Exit status:
 * 0, or the errno of the first command that failed. */
static int writer(const char *name, unsigned id)
{
	shmkv_t *kv = NULL;
	char key[32], val[32];
	int rc = shmkv_open(name, 0, &kv);

	for (unsigned i = 0; rc >= 0 && i < ROUNDS; i++) {
		size_t kl = (size_t)snprintf(key, sizeof(key), "hot%u",
					     i % HOT);
		size_t vl = (size_t)snprintf(val, sizeof(val), "%u.%u", id, i);

		rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);
		if (rc < 0)
			break;
		kl = (size_t)snprintf(key, sizeof(key), "w%u.%u", id, i);
		rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);
	}
	if (rc < 0)
		fprintf(stderr, "writer %u: %s\n", id, shmkv_strerror(rc));
	return rc < 0 ? -rc : 0;
}

/* A helper: shmkv_maintain until the writers are done (@stop_fd at its
 * end). Exit status: 0, or the errno it failed with. */
static int maintainer(const char *name, int stop_fd)
{
	shmkv_t *kv = NULL;
	int rc = shmkv_open(name, 0, &kv);
	char c;

	/* A short nap between passes: the writers, not this loop, should
	 * have the CPUs. */
	while (rc == 0 && read(stop_fd, &c, 1) < 0 && errno == EAGAIN) {
		rc = shmkv_maintain(kv);
		usleep(200);
	}
	if (rc < 0)
		fprintf(stderr, "maintain: %s\n", shmkv_strerror(rc));
	return rc < 0 ? -rc : 0;
}

static pid_t spawn(int (*fn)(const char *, unsigned), const char *name,
		   unsigned arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(fn(name, arg));
	return pid;
}

/* The stop pipe's read end in @fds; the child closes the write end it
 * inherited, or it would never read the end of the pipe. */
static int stop_fds[2];

static int maintainer_main(const char *name, unsigned unused)
{
	(void)unused;
	close(stop_fds[1]);
	return maintainer(name, stop_fds[0]);
}

static int exit_code(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		cr_assert_eq(errno, EINTR, "waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(migrate_race, copiers_of_the_same_keys_and_helpers_never_see_an_error)
{
	struct shmkv_config cfg;
	struct shmkv_stats st;
	pid_t writers[WRITERS], helper;
	int *stop = stop_fds;

	shmkv_config_init(&cfg);
	cfg.slots = SLOTS;
	cfg.key_max = 16;
	tu_kv = tu_create_growing(&cfg, tu_name);
	cr_assert_eq(pipe(stop), 0);
	cr_assert_eq(fcntl(stop[0], F_SETFL, O_NONBLOCK), 0);
	helper = spawn(maintainer_main, tu_name, 0);
	close(stop[0]);
	for (unsigned w = 0; w < WRITERS; w++)
		writers[w] = spawn(writer, tu_name, w);
	for (unsigned w = 0; w < WRITERS; w++)
		cr_assert_eq(exit_code(writers[w]), 0,
			     "writer %u failed (errno in its status)", w);
	close(stop[1]);
	cr_assert_eq(exit_code(helper), 0, "shmkv_maintain failed");
	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_geq(st.growths, 4, "the table grew %llu times only",
		      (unsigned long long)st.growths);
	cr_assert_eq(st.live_keys, WRITERS * ROUNDS + HOT);
}
