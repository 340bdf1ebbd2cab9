/*
 * test_shmctl_output.c - output that cannot be written is a failure.
 *
 * shmctl's stdout goes to /dev/full (every write fails with ENOSPC): the
 * command must exit non-zero and say so in the system's words, not exit 0
 * as if the dump or listing had been written.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(shmctl_output, .init = tu_setup, .fini = tu_teardown);

/* Runs shmctl @a0 @a1 with stdout on /dev/full; returns its exit code. */
static int run_to_full(const char *a0, const char *a1)
{
	char *argv[] = { "shmctl", (char *)a0, (char *)a1, NULL };
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork");
	if (pid == 0) {
		int fd = open("/dev/full", O_WRONLY);

		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(100);
		execv(shmctl_bin(), argv);
		_exit(101);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "shmctl died: status 0x%x", status);
	return WEXITSTATUS(status);
}

Test(shmctl_output, a_dump_to_a_full_disk_exits_3)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	cr_assert_eq(run_to_full("dump", tu_name), 3);
}

Test(shmctl_output, a_listing_to_a_full_disk_exits_3)
{
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	cr_assert_eq(run_to_full("keys", tu_name), 3);
	cr_assert_eq(run_to_full("info", tu_name), 3);
}
