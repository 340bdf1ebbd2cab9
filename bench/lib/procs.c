/*
 * procs.c - what the benches that fork workers share (see bench.h): a
 * bounded wait on a flag in shared memory, and reaping the workers.
 */
#include "bench.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int bench_spin_until(atomic_int *v, int want, unsigned long bound)
{
	for (unsigned long i = 0; atomic_load(v) < want; i++) {
		if (i > bound)
			return -ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

int bench_reap(const pid_t *pid, unsigned n)
{
	int bad = 0;

	for (unsigned i = 0; i < n; i++) {
		int st;

		if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0)
			bad = 1;
	}
	return bad ? -ECHILD : 0;
}
