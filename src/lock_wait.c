/*
 * lock_wait.c - what a blocked lock acquirer needs: futex words to sleep
 * on, and a way to tell whether the process it waits for still exists.
 *
 * The futex words live in the segment's header (lock_wait[]), mapped
 * MAP_SHARED by every process, so they are shared futexes (no
 * FUTEX_PRIVATE_FLAG): the kernel keys them by file and offset, not by
 * address, and a wake in one process reaches a sleeper in another.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomic.h"
#include "lock_record.h"

static struct shmkv_header_shm *header(const struct shmkv *kv)
{
	return (struct shmkv_header_shm *)kv->base;
}

uint32_t shmkv__lock_wait_index(const struct shmkv *kv, const void *key,
				size_t klen)
{
	/* Bits 24-31: neither the slot's home (low bits) nor its filter
	 * (high half), so keys sharing a slot neighbourhood spread here. */
	return (uint32_t)(shmkv__hash(key, klen, kv->hash_seed) >> 24) %
	       SHMKV_LOCK_WAIT_WORDS;
}

/* Adds @d to a shared word; returns the new value. Bounded by contention
 * on the word: each failed CAS means another process changed it. */
static uint32_t add32_full(uint32_t *p, uint32_t d)
{
	/* Relaxed: only the CAS's expected value; the CAS re-checks it. */
	uint32_t cur = shmkv__load32_relaxed(p);

	for (;;) {
		/* Full barrier: see the protocol in lock_record.h; each
		 * caller's comment says which side of it this is. */
		uint32_t seen = shmkv__cas32_full(p, cur, cur + d);

		if (seen == cur)
			return cur + d;
		cur = seen;
	}
}

void shmkv__lock_wait_enter(struct shmkv *kv, uint32_t idx)
{
	/* Full barrier: the waiter's half of the Dekker pair; the count is
	 * visible before our next load of the word and of the lock. */
	add32_full(&header(kv)->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS], 1);
}

void shmkv__lock_wait_leave(struct shmkv *kv, uint32_t idx)
{
	/* Full barrier (CAS): not needed for correctness, a waker that
	 * still counts us only makes a wasted FUTEX_WAKE. */
	add32_full(&header(kv)->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS],
		   UINT32_MAX);
}

uint32_t shmkv__lock_wait_seq(const struct shmkv *kv, uint32_t idx)
{
	/* Acquire: pairs with the waker's full-barrier increment; our try
	 * of the lock, which follows, sees the change made before it. */
	return shmkv__load32_acquire(
		&header(kv)->lock_wait[idx % SHMKV_LOCK_WAIT_WORDS]);
}

uint32_t shmkv__lock_waiters(const struct shmkv *kv, uint32_t idx)
{
	/* Relaxed: a statistic for inspection. */
	return shmkv__load32_relaxed(
		&header(kv)->lock_waiters[idx % SHMKV_LOCK_WAIT_WORDS]);
}

static long futex(uint32_t *word, int op, uint32_t val,
		  const struct timespec *rel)
{
	return syscall(SYS_futex, word, op, val, rel, NULL, 0);
}

int shmkv__lock_wait_sleep(struct shmkv *kv, uint32_t idx, uint32_t seq,
			   int64_t ms)
{
	uint32_t *word = &header(kv)->lock_wait[idx % SHMKV_LOCK_WAIT_WORDS];
	struct timespec rel = { .tv_sec = ms / 1000,
				.tv_nsec = (ms % 1000) * 1000000 };

	/* The kernel compares *word with seq and queues us atomically with
	 * respect to FUTEX_WAKE: a wake after our load of seq is not lost. */
	if (futex(word, FUTEX_WAIT, seq, &rel) == 0)
		return 0;
	/* EAGAIN: the word moved (a release); EINTR: a signal. Both mean
	 * "try again now", as a wake-up does. */
	return errno == ETIMEDOUT ? -ETIMEDOUT : 0;
}

void shmkv__lock_wake(struct shmkv *kv, uint32_t idx)
{
	struct shmkv_header_shm *h = header(kv);

	idx %= SHMKV_LOCK_WAIT_WORDS;
	/* Relaxed: the waker's half of the Dekker pair; the full-barrier
	 * CAS that changed the lock just before orders this load after it. */
	if (shmkv__load32_relaxed(&h->lock_waiters[idx]) == 0)
		return;
	/* Full barrier: the lock change is visible before the word moves,
	 * so a waiter that loads the new word and then tries sees it. */
	add32_full(&h->lock_wait[idx], 1);
	/* One waiter: the others would only find the lock taken again. */
	futex(&h->lock_wait[idx], FUTEX_WAKE, 1, NULL);
}

/*
 * Process identity.
 */

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
		return errno == ESRCH ? -ENOENT : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? -ENOENT : -errno;
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
		return !shmkv__pid_alive(pid);
	/* A zombie has exited: only its parent's wait() is missing. */
	if (state == 'Z' || state == 'X')
		return true;
	return start != 0 && now_start != start;
}
