/*
 * test_shmctl_special_files.c - shmctl on a name that is not a regular file
 * (a FIFO anyone may make under a store's name in /dev/shm): info, a data
 * command, destroy --force and ls answer at once, say "not a shmkv store",
 * and leave the FIFO where it is. Each run has an alarm (shmctl_run.h),
 * so a command that waits on the FIFO fails the test (exit 128 + SIGALRM)
 * instead of hanging it.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>

TestSuite(shmctl_special_files, .fini = ctl_teardown);

/* A FIFO under a fresh store name in tu_name. */
static void make_fifo(void)
{
	char path[TU_PATH_CAP];

	tu_make_name(tu_name, "fifo");
	tu_shm_path(tu_name, path);
	cr_assert_eq(mkfifo(path, 0666), 0);
}

static void assert_not_a_store(struct run r)
{
	cr_assert_neq(r.code, 128 + SIGALRM, "shmctl waited on the FIFO");
	assert_code(r, 3);
	assert_has(r.err, tu_name);
	assert_has(r.err, "not a shmkv store");
	cr_assert(ctl_shm_exists(tu_name), "the FIFO was removed");
}

Test(shmctl_special_files, info_of_a_fifo_says_not_a_store_at_once)
{
	make_fifo();
	assert_not_a_store(RUN("info", tu_name));
}

Test(shmctl_special_files, get_on_a_fifo_says_not_a_store_at_once)
{
	make_fifo();
	assert_not_a_store(RUN(tu_name, "get", "k"));
}

Test(shmctl_special_files, destroy_force_of_a_fifo_refuses_and_leaves_it)
{
	make_fifo();
	assert_not_a_store(RUN("destroy", "--force", tu_name));
}

Test(shmctl_special_files, ls_lists_no_fifo_and_does_not_wait_on_it)
{
	struct run r;

	make_fifo();
	r = RUN("ls", "--all");
	cr_assert_neq(r.code, 128 + SIGALRM, "shmctl ls waited on the FIFO");
	assert_code(r, 0);
	assert_lacks(r.out, tu_name);
}
