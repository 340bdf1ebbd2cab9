/*
 * test_proc.c - process liveness (src/proc.c) judged on real processes:
 * this one, live children, zombies before and after their reap, and a
 * child whose main thread called pthread_exit() while another thread runs
 * (its leader shows state Z, yet the process is alive).
 *
 * Children never assert: they report their start time through a pipe and
 * wait on another one; the parent asserts. Every wait is bounded.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "internal.h"

TestSuite(liveness);

/* A forked child and the pipes it talks through. */
struct child {
	pid_t pid;
	uint64_t start; /* its start time, as it read it itself */
	int go;		/* write end: one byte lets it exit */
};

enum child_kind {
	CHILD_PLAIN,	   /* one thread, waits for the go byte */
	CHILD_MAIN_EXITED, /* main thread pthread_exit()s; a second waits */
};

static int go_fd; /* the child's read end; a global for the thread */

static void *wait_for_go(void *arg)
{
	char c;

	(void)arg;
	_exit(read(go_fd, &c, 1) == 1 ? 0 : 1);
	return NULL;
}

/* In the child: reports the start time, then waits as @kind says. */
static void child_main(enum child_kind kind, int report)
{
	struct shmkv_proc_id me;
	pthread_t t;

	shmkv__proc_self(&me);
	if (write(report, &me.start, sizeof(me.start)) != sizeof(me.start))
		_exit(2);
	if (kind == CHILD_PLAIN)
		wait_for_go(NULL);
	if (pthread_create(&t, NULL, wait_for_go, NULL) != 0)
		_exit(3);
	pthread_exit(NULL);
}

static struct child spawn(enum child_kind kind)
{
	struct child ch;
	int report[2], go[2];

	cr_assert_eq(pipe(report), 0);
	cr_assert_eq(pipe(go), 0);
	fflush(NULL);
	ch.pid = fork();
	cr_assert_geq(ch.pid, 0, "fork: %s", strerror(errno));
	if (ch.pid == 0) {
		close(report[0]);
		close(go[1]);
		go_fd = go[0];
		child_main(kind, report[1]);
	}
	close(report[1]);
	close(go[0]);
	cr_assert_eq(read(report[0], &ch.start, sizeof(ch.start)),
		     (ssize_t)sizeof(ch.start), "child %d did not report",
		     (int)ch.pid);
	close(report[0]);
	ch.go = go[1];
	return ch;
}

/* Lets @ch exit and reaps it; returns its exit code. */
static int finish(struct child *ch)
{
	int st = 0;

	cr_assert_eq(write(ch->go, "x", 1), 1);
	close(ch->go);
	cr_assert_eq(waitpid(ch->pid, &st, 0), ch->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

Test(liveness, own_process_is_alive)
{
	struct shmkv_proc_id me;

	shmkv__proc_self(&me);
	cr_assert(shmkv__pid_alive(me.pid));
	cr_assert_not(shmkv__proc_dead(me.pid, me.start));
	cr_assert_not(shmkv__proc_dead(me.pid, 0));
}

Test(liveness, live_child_is_alive_and_its_pid_with_another_start_is_dead)
{
	struct child ch = spawn(CHILD_PLAIN);

	cr_assert_neq(ch.start, 0, "the child could not read its start time");
	cr_assert(shmkv__pid_alive((uint32_t)ch.pid));
	cr_assert_not(shmkv__proc_dead((uint32_t)ch.pid, ch.start));
	/* The same pid with another start time: a reused pid. */
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, ch.start - 1));
	cr_assert_eq(finish(&ch), 0);
}

Test(liveness, zombie_child_not_yet_reaped_is_dead)
{
	siginfo_t si;
	struct child ch = spawn(CHILD_PLAIN);

	cr_assert_eq(write(ch.go, "x", 1), 1);
	/* WNOWAIT: returns once it is a zombie, and leaves it one. */
	cr_assert_eq(waitid(P_PID, (id_t)ch.pid, &si, WEXITED | WNOWAIT), 0);
	cr_assert_eq(tu_proc_state(ch.pid), 'Z');
	cr_assert_not(shmkv__pid_alive((uint32_t)ch.pid));
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, ch.start));
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, 0));
	close(ch.go);
	cr_assert_eq(waitpid(ch.pid, NULL, 0), ch.pid);
}

Test(liveness, reaped_child_is_dead)
{
	struct child ch = spawn(CHILD_PLAIN);

	cr_assert_eq(finish(&ch), 0);
	cr_assert_not(shmkv__pid_alive((uint32_t)ch.pid));
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, ch.start));
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, 0));
}

Test(liveness, child_whose_main_thread_exited_while_another_runs_is_alive)
{
	struct child ch = spawn(CHILD_MAIN_EXITED);

	/* The leader shows Z as soon as its main thread is gone. */
	tu_wait_proc_state(ch.pid, 'Z');
	cr_assert(shmkv__pid_alive((uint32_t)ch.pid));
	cr_assert_not(shmkv__proc_dead((uint32_t)ch.pid, ch.start));
	cr_assert_not(shmkv__proc_dead((uint32_t)ch.pid, 0));
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, ch.start - 1));
	cr_assert_eq(finish(&ch), 0, "the child's second thread failed");
}

Test(liveness, child_whose_last_thread_exited_after_its_main_is_dead)
{
	siginfo_t si;
	struct child ch = spawn(CHILD_MAIN_EXITED);

	tu_wait_proc_state(ch.pid, 'Z');
	cr_assert_eq(write(ch.go, "x", 1), 1);
	cr_assert_eq(waitid(P_PID, (id_t)ch.pid, &si, WEXITED | WNOWAIT), 0);
	cr_assert_not(shmkv__pid_alive((uint32_t)ch.pid));
	cr_assert(shmkv__proc_dead((uint32_t)ch.pid, ch.start));
	close(ch.go);
	cr_assert_eq(waitpid(ch.pid, NULL, 0), ch.pid);
}

Test(liveness, pid_zero_names_no_process)
{
	cr_assert_not(shmkv__pid_alive(0));
	cr_assert(shmkv__proc_dead(0, 0));
}
