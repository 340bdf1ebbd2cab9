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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"

uint32_t shmkv__pid_cache;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void refresh_pid(void)
{
	uatomic_set(&shmkv__pid_cache, (uint32_t)getpid());
}

static void init_pid(void)
{
	refresh_pid();
	pthread_atfork(NULL, NULL, refresh_pid);
}

uint32_t shmkv__self_pid_slow(void)
{
	pthread_once(&self_once, init_pid);
	/* Relaxed: see shmkv__self_pid(). */
	return uatomic_read(&shmkv__pid_cache);
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
uint64_t shmkv__start_cache;
uint64_t shmkv__start_pid;

void shmkv__proc_self_slow(struct shmkv_proc_id *me)
{
	uint32_t pid = shmkv__self_pid();
	char state;
	uint64_t start = 0;

	/* Unreadable /proc: start 0 tells others to judge by pid alone. */
	if (proc_stat(pid, &state, &start) != 0)
		start = 0;
	/* Relaxed, then release: the start time is visible before the pid
	 * that names it (shmkv__proc_self() loads the pid with acquire). */
	shmkv__store_relaxed(&shmkv__start_cache, start);
	shmkv__store_release(&shmkv__start_pid, pid);
	me->pid = pid;
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
 * with a margin of two ticks + 1 ms: a coarse reading lags the precise
 * clock by less than one tick while ticks come on time, and the margin
 * also covers one tick delayed by up to another tick (a VM's vCPU
 * descheduled). Only a longer delay of the kernel's timekeeping would make
 * coarse + margin earlier than now; then a lease is short by the excess.
 */
int64_t shmkv__coarse_margin;

int64_t shmkv__coarse_margin_slow(void)
{
	struct timespec res;
	int64_t m = 1000;

	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0)
		m = 2 * ((res.tv_nsec + 999999) / 1000000) + 1;
	/* Relaxed: a race only makes two threads store the same value. */
	uatomic_set(&shmkv__coarse_margin, m);
	return m;
}
