/*
 * shmctl_run.h - running shmctl as a real process in the unit tests
 * (test_shmctl*.c) and asserting on its exit code, stdout and stderr.
 *
 * The binary is $SHMCTL_BIN or SHMKV_BUILD_DIR/shmctl. Each run gets its
 * stdin from a memfd and its stdout and stderr into memfds; the child only
 * execs (an alarm inherited across exec ends a hung run), and the parent
 * asserts.
 */
#ifndef SHMKV_SHMCTL_RUN_H
#define SHMKV_SHMCTL_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "helpers/testutil.h"

/* The uid of nobody, for runs as another user (root only). */
#define NOBODY 65534

struct run {
	int code; /* exit code, or 128 + signal */
	char *out, *err;
	size_t out_len, err_len;
};

/* The shmctl binary to run. */
const char *shmctl_bin(void);

/* shmctl with @argv (argv[0] included, NULL-terminated) and @input on
 * stdin, as @uid ((uid_t)-1: as ourselves). Asserts that it ran. */
struct run ctl_run_v(const char *input, size_t inlen, uid_t uid, char **argv);

/* shmctl ARGS... (NULL-terminated) with @input on stdin, as @uid. */
struct run ctl_run_in(const char *input, size_t inlen, uid_t uid, ...);

#define RUN(...)	 ctl_run_in(NULL, 0, (uid_t)-1, __VA_ARGS__, (char *)NULL)
#define RUN_AS(uid, ...) ctl_run_in(NULL, 0, (uid), __VA_ARGS__, (char *)NULL)
#define RUN_STDIN(s, ...)                                                      \
	ctl_run_in((s), strlen(s), (uid_t)-1, __VA_ARGS__, (char *)NULL)

#define assert_code(r, want)                                                   \
	cr_assert_eq((r).code, (want),                                         \
		     "exit %d, expected %d\n--- stdout:\n%s--- stderr:\n%s",   \
		     (r).code, (want), (r).out, (r).err)
#define assert_has(buf, s)                                                     \
	cr_assert(strstr((buf), (s)) != NULL, "expected \"%s\" in:\n%s", (s),  \
		  (buf))
#define assert_lacks(buf, s)                                                   \
	cr_assert(strstr((buf), (s)) == NULL, "unexpected \"%s\" in:\n%s",     \
		  (s), (buf))
#define assert_out(r, s)                                                       \
	cr_assert_str_eq((r).out, (s), "stdout:\n%s\nstderr:\n%s", (r).out,    \
			 (r).err)
/* Exit code, exact stdout, empty stderr. */
#define assert_reply(r, code, s)                                               \
	do {                                                                   \
		assert_code(r, code);                                          \
		assert_out(r, s);                                              \
		cr_assert_str_empty((r).err, "stderr: %s", (r).err);           \
	} while (0)

bool ctl_is_root(void);

/* Whether /dev/shm holds @name. */
bool ctl_shm_exists(const char *name);

/* Replaces the suite's store (tu_kv, tu_name) with one of geometry @cfg. */
void ctl_recreate(const struct shmkv_config *cfg);

/* A fresh temporary file name into @path, removed when the test ends
 * (even when an assertion fails) by ctl_teardown(). */
void ctl_temp_path(char *path, size_t cap);

/* Suite .fini: removes the temporary files, then tu_teardown(). */
void ctl_teardown(void);

/* SET in tu_kv, with a PX of @px ms unless 0; asserts it set the key. */
void ctl_set_kv(const char *k, size_t kl, const char *v, size_t vl, int64_t px);

#define SET(k, v) ctl_set_kv((k), strlen(k), (v), strlen(v), 0)

/* A pid no process has: a child's, reaped (a store records it as a dead
 * owner). */
pid_t ctl_dead_pid(void);

/* Lines in @s. */
int ctl_count_lines(const char *s);

#endif /* SHMKV_SHMCTL_RUN_H */
