/*
 * proc.c - process identity, liveness and clocks.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
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

bool shmkv__pid_alive(uint32_t pid)
{
	if (pid == 0)
		return false;
	if (pid == shmkv__self_pid())
		return true;
	/* EPERM: it exists but belongs to someone else; only ESRCH is death. */
	return kill((pid_t)pid, 0) == 0 || errno != ESRCH;
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
