/*
 * proc.c - process identity, liveness and clocks.
 *
 * A process is named by (pid, start time): a reused pid comes with a later
 * start time. Liveness is read from /proc/<pid>/stat, which also tells a
 * zombie (exited, not yet reaped) from a live process; kill(pid, 0) alone
 * cannot.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"

/*
 * glibc no longer caches getpid(), and a claim records our pid on the hot
 * path, so keep it here and refresh it in every child after fork.
 */
static uint32_t self_pid;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void refresh_pid(void)
{
	uatomic_set(&self_pid, (uint32_t)getpid());
}

static void init_pid(void)
{
	refresh_pid();
	pthread_atfork(NULL, NULL, refresh_pid);
}

uint32_t shmkv__self_pid(void)
{
	pthread_once(&self_once, init_pid);
	/* Relaxed: a process-local word written only by this process. */
	return uatomic_read(&self_pid);
}

/*
 * Reads the state (field 3) and start time (field 22, clock ticks since
 * boot) of @pid. The command name (field 2) may hold spaces and
 * parentheses, so fields are counted from the last ')'.
 * Return: 0, -ENOENT (no such process), or another negative errno.
 */
static int proc_stat(uint32_t pid, char *state, uint64_t *start)
{
	char path[32], buf[1024], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ESRCH ? -ENOENT : shmkv__errno();
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? -ENOENT : shmkv__errno();
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -EIO;
	p += 2;
	*state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -EIO;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

/*
 * Our start time, cached with the pid it belongs to: a child after fork
 * sees a different pid and reads its own. Process-local; a race between
 * threads only makes both read the same value.
 */
static _Atomic uint64_t self_start;
static _Atomic uint32_t self_start_pid;

void shmkv__proc_self(struct shmkv_proc_id *me)
{
	uint32_t pid = shmkv__self_pid();
	char state;
	uint64_t start = 0;

	me->pid = pid;
	/* Acquire: pairs with the release below; self_start is then ours. */
	if (atomic_load_explicit(&self_start_pid, memory_order_acquire) ==
	    pid) {
		me->start = atomic_load_explicit(&self_start,
						 memory_order_relaxed);
		return;
	}
	/* Unreadable /proc: start 0 tells others to judge by pid alone. */
	if (proc_stat(pid, &state, &start) != 0)
		start = 0;
	atomic_store_explicit(&self_start, start, memory_order_relaxed);
	/* Release: the start time is visible before the pid that names it. */
	atomic_store_explicit(&self_start_pid, pid, memory_order_release);
	me->start = start;
}

bool shmkv__proc_dead(uint32_t pid, uint64_t start)
{
	struct shmkv_proc_id me;
	uint64_t now_start;
	char state;
	int err;

	if (pid == 0)
		return true;
	shmkv__proc_self(&me);
	if (pid == me.pid)
		/* Our own pid with another start time: its holder is gone. */
		return start != 0 && me.start != 0 && start != me.start;
	err = proc_stat(pid, &state, &now_start);
	if (err == -ENOENT)
		return true;
	if (err)
		/* /proc hidden (hidepid) or odd: fall back to the pid. */
		return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
	/* A zombie has exited: only its parent's wait() is missing. */
	if (state == 'Z' || state == 'X')
		return true;
	return start != 0 && now_start != start;
}

bool shmkv__pid_alive(uint32_t pid)
{
	if (pid == 0)
		return false;
	if (pid == shmkv__self_pid())
		return true;
	/* EPERM: it exists but belongs to someone else; only ESRCH is death.
	 * kill() succeeds on a zombie, so /proc settles the rest. */
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return false;
	return !shmkv__proc_dead(pid, 0);
}

static int64_t clock_ms(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Deadlines are kept on CLOCK_BOOTTIME: wall-clock steps (NTP, date -s)
 * cannot move them, and unlike CLOCK_MONOTONIC it keeps counting through
 * suspend, as a TTL set in wall-clock terms should.
 */
int64_t shmkv__now_ms(void)
{
	return clock_ms(CLOCK_BOOTTIME);
}

int64_t shmkv__unix_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

int64_t shmkv__mono_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/*
 * The coarse clocks cost a quarter of the precise ones (they read the time
 * of the last tick, with no counter read), so the lock fast paths use them
 * with a margin: a coarse reading lags the precise clock by less than one
 * tick (its resolution), so coarse + margin is never earlier than now.
 */
static int64_t coarse_margin_ms(void)
{
	static int64_t margin; /* 0: not measured yet */
	/* Relaxed: every thread computes the same value; a race only makes
	 * two of them compute it. */
	int64_t m = uatomic_read(&margin);
	struct timespec res;

	if (m != 0)
		return m;
	m = 1000;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0)
		m = (res.tv_nsec + 999999) / 1000000 + 1;
	uatomic_set(&margin, m);
	return m;
}

int64_t shmkv__mono_upper_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC_COARSE) + coarse_margin_ms();
}

int64_t shmkv__unix_upper_ms(void)
{
	return clock_ms(CLOCK_REALTIME_COARSE) + coarse_margin_ms();
}
