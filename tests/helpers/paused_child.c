/*
 * paused_child.c - see paused_child.h.
 */
#include "helpers/paused_child.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fault.h"

/* The child's end of the choreography. */
static const char *pause_at;
static int pauses_left; /* how many passes through pause_at stop */
static int to_parent = -1, from_parent = -1;

#ifdef SHMKV_FAULT_INJECTION
static void pause_hook(const char *name)
{
	char b = 'p';

	if (pauses_left <= 0 || strcmp(name, pause_at) != 0)
		return;
	pauses_left--;
	if (write(to_parent, &b, 1) != 1 || read(from_parent, &b, 1) != 1)
		_exit(101);
}
#endif

struct tu_child tu_child_start(int (*call)(void *arg), void *arg,
			       const char *at, int pauses)
{
	int p2c[2], c2p[2], res[2];
	struct tu_child c;

	cr_assert(pipe(p2c) == 0 && pipe(c2p) == 0 && pipe(res) == 0);
	fflush(NULL);
	c.pid = fork();
	cr_assert(c.pid >= 0);
	if (c.pid == 0) {
		int rc;

		/* Only the parent's ends stay open elsewhere: a parent that
		 * dies (a failed assertion) ends a paused child's read. */
		close(p2c[1]);
		close(c2p[0]);
		close(res[0]);
		pause_at = at;
		pauses_left = pauses;
		to_parent = c2p[1];
		from_parent = p2c[0];
#ifdef SHMKV_FAULT_INJECTION
		shmkv__pause_hook = pause_hook;
#endif
		rc = call(arg);
#ifdef SHMKV_FAULT_INJECTION
		shmkv__pause_hook = NULL;
#endif
		_exit(write(res[1], &rc, sizeof(rc)) == sizeof(rc) ? 0 : 102);
	}
	close(p2c[0]);
	close(c2p[1]);
	close(res[1]);
	c.paused = c2p[0];
	c.go = p2c[1];
	c.result = res[0];
	return c;
}

bool tu_child_paused(const struct tu_child *c)
{
	char b;

	return read(c->paused, &b, 1) == 1;
}

void tu_child_await(const struct tu_child *c)
{
	cr_assert(tu_child_paused(c), "the child never paused");
}

void tu_child_let_go(const struct tu_child *c)
{
	char b = 'g';

	cr_assert_eq(write(c->go, &b, 1), 1);
}

int tu_child_finish(struct tu_child *c)
{
	int status, rc = -2000;

	cr_assert_eq(read(c->result, &rc, sizeof(rc)), (ssize_t)sizeof(rc),
		     "the child sent no result");
	cr_assert_eq(waitpid(c->pid, &status, 0), c->pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child status %d", status);
	close(c->paused);
	close(c->go);
	close(c->result);
	return rc;
}
