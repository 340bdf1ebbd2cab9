/*
 * proc.c - process identity, liveness and clocks.
 *
 * A process is named by (pid, start time): a reused pid comes with a later
 * start time. Liveness is read from /proc/<pid>/stat, which also tells a
 * zombie (exited, not yet reaped) from a live process; kill(pid, 0) alone
 * cannot. Its state letter is the main thread's only: a process whose main
 * thread called pthread_exit() shows Z while its other threads run, so a
 * Z counts as dead only when the thread count says the zombie is alone.
 *
 * Pids are judged in our own pid namespace: every process that uses a
 * store is assumed to live in one namespace (as shmkv_recover() and the
 * locks document). A pid recorded from another namespace names another
 * process here, or none, so its owner could be taken for dead.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"

uint32_t shmkv__pid_cache;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void refresh_pid(void)
{
	/* Relaxed: the word publishes nothing but itself (see
	 * shmkv__self_pid()); pthread_once and fork order the first store. */
	shmkv__store32_relaxed(&shmkv__pid_cache, (uint32_t)getpid());
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
	return shmkv__load32_relaxed(&shmkv__pid_cache);
}

__thread struct shmkv_tid_cache shmkv__tid_cache
	__attribute__((tls_model("initial-exec")));

uint32_t shmkv__self_tid_slow(uint32_t pid)
{
	shmkv__tid_cache.tid = (uint32_t)syscall(SYS_gettid);
	shmkv__tid_cache.pid = pid;
	return shmkv__tid_cache.tid;
}

/* What /proc/<pid>/stat says of a process. */
struct proc_stat {
	char state;	/* of its main thread: R, S, D, T, Z, X... */
	long threads;	/* live threads, a zombie main thread counted */
	uint64_t start; /* clock ticks since boot */
};

/*
 * Reads the state (field 3), thread count (field 20) and start time
 * (field 22) of @pid: one small read. The command name (field 2) may hold
 * spaces and parentheses, so fields are counted from the last ')'.
 * Return: 0, -ENOENT (no such process, or one /proc hides from us:
 * hidepid=2), or another negative errno (-EACCES under hidepid=1).
 */
static int proc_stat(uint32_t pid, struct proc_stat *st)
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
	st->state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -EIO;
		p++;
		if (field + 1 == 20)
			st->threads = strtol(p, NULL, 10);
	}
	st->start = strtoull(p, NULL, 10);
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
	struct proc_stat st = { 0 };
	uint64_t start = 0;

	/* Unreadable /proc: start 0 tells others to judge by pid alone. */
	if (proc_stat(pid, &st) == 0)
		start = st.start;
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
	struct proc_stat st = { 0 };

	if (pid == 0)
		return true;
	shmkv__proc_self(&me);
	if (pid == me.pid)
		/* Our own pid with another start time: its holder is gone. */
		return start != 0 && me.start != 0 && start != me.start;
	if (proc_stat(pid, &st) != 0)
		/* No entry, or one hidden from us (hidepid): only ESRCH is
		 * death; EPERM is a process of another user. */
		return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
	if (start != 0 && st.start != start)
		return true; /* the pid was reused */
	/* Z with other threads: the main thread exited, the process runs.
	 * Z alone (the zombie counts itself) awaits only its parent's
	 * wait(); X is the instant of that reap. */
	return st.state == 'X' || (st.state == 'Z' && st.threads <= 1);
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
int64_t shmkv__fake_now_ms, shmkv__fake_unix_ms;

int64_t shmkv__now_ms(void)
{
	/* Relaxed: a test sets it before the calls it means to steer. */
	int64_t fake = (int64_t)shmkv__load_relaxed(
		(uint64_t *)&shmkv__fake_now_ms);

	return fake != 0 ? fake : clock_ms(CLOCK_BOOTTIME);
}

int64_t shmkv__unix_ms(void)
{
	/* Relaxed: as above. */
	int64_t fake = (int64_t)shmkv__load_relaxed(
		(uint64_t *)&shmkv__fake_unix_ms);

	return fake != 0 ? fake : clock_ms(CLOCK_REALTIME);
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
	shmkv__store_relaxed((uint64_t *)&shmkv__coarse_margin, (uint64_t)m);
	return m;
}

uint32_t shmkv__pid_ns(void)
{
	struct stat st;

	/* Not cached: read at create and at a read-write open only. */
	if (stat("/proc/self/ns/pid", &st) != 0 || st.st_ino > UINT32_MAX)
		return 0;
	return (uint32_t)st.st_ino;
}
