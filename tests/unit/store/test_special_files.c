/*
 * test_special_files.c - a name in /dev/shm that is not a regular file (a
 * FIFO anyone may make under a store's name, a socket, a directory, a
 * symbolic link, a device) is no store: every open and every removal of it
 * answers -EPROTO at once, never waits on it, and leaves it in place.
 *
 * The calls run in a child with an alarm, so that a call that waits (a
 * FIFO opened for reading waits for a writer) ends the child by SIGALRM
 * and fails the test instead of hanging it.
 */
#include "helpers/testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(special_files, .fini = tu_teardown);

/* Seconds a child's calls may take before the alarm ends it: far above
 * what refusing a name costs, far below a test's timeout. */
#define HANG_S 5

/* Child exit codes: which call answered wrongly. */
enum { CALLS_OK, BAD_OPEN_RO, BAD_OPEN_RW, BAD_OPEN_OR_CREATE, BAD_UNLINK };

static int calls_on(const char *name)
{
	struct shmkv_config cfg = tu_config(64, 0, 0, 0);
	shmkv_t *kv = NULL;

	alarm(HANG_S);
	if (shmkv_open(name, SHMKV_OPEN_READONLY, &kv) != -EPROTO)
		return BAD_OPEN_RO;
	if (shmkv_open(name, 0, &kv) != -EPROTO)
		return BAD_OPEN_RW;
	if (shmkv_open_or_create(name, &cfg, &kv) != -EPROTO)
		return BAD_OPEN_OR_CREATE;
	if (shmkv_unlink(name) != -EPROTO)
		return BAD_UNLINK;
	return kv == NULL ? CALLS_OK : BAD_OPEN_RO;
}

/* Runs calls_on(@name) in a child; asserts that every call answered
 * -EPROTO within the alarm and that @name is still the same kind of file
 * (@type, an S_IF* value). */
static void assert_refused(const char *name, mode_t type)
{
	char path[TU_PATH_CAP];
	struct stat st;
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(calls_on(name));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(!WIFSIGNALED(status) || WTERMSIG(status) != SIGALRM,
		  "a call on %s waited %d s on it", name, HANG_S);
	cr_assert(WIFEXITED(status), "child killed by signal %d",
		  WTERMSIG(status));
	cr_assert_eq(WEXITSTATUS(status), CALLS_OK,
		     "call %d did not answer -EPROTO", WEXITSTATUS(status));
	tu_shm_path(name, path);
	cr_assert_eq(lstat(path, &st), 0, "%s was removed", path);
	cr_assert_eq(st.st_mode & S_IFMT, type, "%s changed kind", path);
}

Test(special_files, a_fifo_under_a_store_name_is_eproto_at_once_and_stays)
{
	char path[TU_PATH_CAP];

	tu_make_name(tu_name, NULL);
	tu_shm_path(tu_name, path);
	cr_assert_eq(mkfifo(path, 0666), 0);
	assert_refused(tu_name, S_IFIFO);
}

Test(special_files, a_socket_under_a_store_name_is_eproto_and_stays)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char path[TU_PATH_CAP];
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	cr_assert_geq(fd, 0);
	tu_make_name(tu_name, "sock");
	tu_shm_path(tu_name, path);
	cr_assert_lt(
		(size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path),
		sizeof(sa.sun_path), "name too long for a socket");
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_refused(tu_name, S_IFSOCK);
	close(fd);
}

Test(special_files, a_directory_under_a_store_name_is_eproto_and_stays)
{
	char path[TU_PATH_CAP];

	tu_make_name(tu_name, NULL);
	tu_shm_path(tu_name, path);
	cr_assert_eq(mkdir(path, 0700), 0);
	assert_refused(tu_name, S_IFDIR);
	cr_assert_eq(rmdir(path), 0);
}

Test(special_files, a_symlink_to_a_store_is_eproto_and_both_stay)
{
	struct shmkv_config cfg = tu_config(64, 0, 0, 0);
	char link_name[TU_NAME_CAP], path[TU_PATH_CAP], target[TU_PATH_CAP];

	tu_kv = tu_create(&cfg, tu_name);
	tu_make_name(link_name, "link");
	tu_shm_path(tu_name, target);
	tu_shm_path(link_name, path);
	cr_assert_eq(symlink(target, path), 0);
	assert_refused(link_name, S_IFLNK);
	cr_assert_eq(shmkv_set(tu_kv, "k", 1, "v", 1, 0, 0, NULL), 1,
		     "the store the link names was removed");
}

Test(special_files, a_device_under_a_store_name_is_eproto_and_stays)
{
	char path[TU_PATH_CAP];

	tu_make_name(tu_name, NULL);
	tu_shm_path(tu_name, path);
	/* The null device's numbers: opening it would not harm either. */
	if (mknod(path, S_IFCHR | 0666, makedev(1, 3)) != 0)
		cr_skip_test("mknod refused (needs root): devices not tested");
	assert_refused(tu_name, S_IFCHR);
}
