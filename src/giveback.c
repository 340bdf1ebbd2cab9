/*
 * giveback.c - which tables a handle may touch, and when an old table's
 * memory goes back (tests/model/migration-design.md §7).
 *
 * A table's memory is given back (punched) only when no process can still
 * be in it, and the kernel vouches for that: each handle holds an OFD read
 * lock on one byte per table it may use (byte SHMKV_TABLE_LOCK_BASE + x
 * stands for T(x), layout.h), each on an open file description of its own,
 * taken before the handle first reads the life word that sends it into
 * the table, and kept until shmkv_close. Whoever gives T(x) back first
 * reads a generation >= 2x + 2 (T(x) is no longer live), then takes the
 * write lock on byte x, which the kernel grants only while no description
 * holds a read lock on it, punches, and unlocks. A process that dies
 * drops its locks with its descriptions, so nobody waits for a dead one;
 * a fork child shares its parent's descriptions, so the lock stays while
 * either has them open.
 *
 * A reader that takes its read lock while a give-back holds the write
 * lock is refused: the giver read the later generation before it took
 * the lock, so the reader, reading the life word after the refusal, sees
 * it too and does not use the table. One that takes it after the
 * give-back reads the later generation the same way. So no access to a
 * given-back table can happen, and none can fault.
 *
 * The same slow path checks against the file what a life word claims:
 * the tables it names are allocated (no hole), so that a corrupt word
 * gives -EBADMSG instead of sending commands into memory the file does
 * not hold, where a fault allocates (or raises SIGBUS on a full tmpfs).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "fault.h"
#include "internal.h"
#include "segment.h"
#include "tables.h"

static const struct shmkv_header_shm *header(const struct shmkv *kv)
{
	return (const struct shmkv_header_shm *)kv->base;
}

/* One OFD lock operation (@type: F_RDLCK, F_WRLCK, F_UNLCK) on table @x's
 * byte, through descriptor @fd. Return: 0, or a negative errno (-EAGAIN:
 * a conflicting lock is held). */
static int lock_byte(int fd, short type, uint32_t x)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = (off_t)(SHMKV_TABLE_LOCK_BASE + x);
	fl.l_len = 1;
	if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return errno == EACCES ? -EAGAIN : shmkv__errno();
}

/* Read-locks T(@x) for @kv, once per handle. Return: 0, 1 (refused: it
 * is being given back, so the life word has moved past it), or a
 * negative errno. */
static int hold_one(const struct shmkv *kv, uint32_t x)
{
	uint32_t *slot = (uint32_t *)&kv->table_fd[x];
	int fd, err;

	/* Acquire: pairs with the CAS below; a set slot names a descriptor
	 * whose lock was granted before it was stored. */
	if (shmkv__load32_acquire(slot) != 0)
		return 0;
	fd = shmkv__store_file_reopen(kv, O_RDONLY);
	if (fd < 0)
		return fd;
	err = lock_byte(fd, F_RDLCK, x);
	if (err) {
		close(fd);
		return err == -EAGAIN ? 1 : err;
	}
	/* Full barrier (process-local word; only atomicity is needed): one
	 * descriptor per table and handle. A thread that loses closes its
	 * own, which drops only its own description's lock. */
	if (shmkv__cas32_full(slot, 0, (uint32_t)fd + 1) != 0)
		close(fd);
	return 0;
}

/* Is [@from, @to) of @fd without a hole? Allocations leave their pages
 * up to date (grow.c), so the kernel's SEEK_HOLE is exact for them. */
static bool no_hole(int fd, uint64_t from, uint64_t to)
{
	off_t at;

	if (to <= from)
		return true;
	at = lseek(fd, (off_t)from, SEEK_HOLE);
	return at >= 0 && (uint64_t)at >= to; /* ENXIO: past the file's end */
}

bool shmkv__file_holds(const struct shmkv *kv, uint64_t from, uint64_t to)
{
	return no_hole(kv->fd, from, to);
}

/* Does the file hold memory in T(@x) (whole allocation units of it)? */
static bool table_has_data(const struct shmkv *kv, uint32_t x)
{
	uint64_t unit = kv->geo.flags & SHMKV_HDR_HUGE_PAGES ? SHMKV_HUGE_PAGE
							     : 4096;
	uint64_t from = (shmkv__table_start(&kv->geo, x) + unit - 1) / unit *
			unit;
	uint64_t to = shmkv__table_end(&kv->geo, x);
	off_t at;

	if (to <= from)
		return false;
	at = lseek(kv->fd, (off_t)from, SEEK_DATA);
	return at >= 0 && (uint64_t)at < to;
}

int shmkv__tables_verify(const struct shmkv *kv, uint64_t life)
{
	uint64_t g = SHMKV_LIFE_GEN(life), e = g >> 1;

	if (e + (g & 1) > kv->geo.epoch_max)
		return -EBADMSG;
	for (uint64_t x = e; x <= e + (g & 1); x++)
		if (!no_hole(kv->fd,
			     x == 0 ? 0
				    : shmkv__table_start(&kv->geo, (uint32_t)x),
			     shmkv__table_end(&kv->geo, (uint32_t)x)))
			return -EBADMSG;
	return 0;
}

int shmkv__tables_hold(const struct shmkv *kv, uint64_t life)
{
	uint64_t g = SHMKV_LIFE_GEN(life), e = g >> 1;

	if (e + (g & 1) > kv->geo.epoch_max)
		return -EBADMSG;
	for (uint64_t x = e; x <= e + (g & 1); x++) {
		int r = hold_one(kv, (uint32_t)x);

		if (r != 0)
			return r;
	}
	/* Acquire fence, then relaxed: the locks were granted (system calls,
	 * ordered anyway) before this load; a life word still @life says
	 * every table it names was live after our locks, so none can be
	 * given back before we drop them. */
	shmkv__fence_acquire();
	if (shmkv__load_relaxed(&header(kv)->life) != life)
		return 1;
	/* Held, so no give-back can make a hole we would mistake for
	 * corruption. */
	return shmkv__tables_verify(kv, life);
}

uint64_t shmkv__tables_kept(const struct shmkv *kv)
{
	/* Relaxed: a count of memory, read as it is now. */
	uint64_t g = SHMKV_LIFE_GEN(shmkv__load_relaxed(&header(kv)->life));
	uint64_t low = g >> 1, sum = 0;

	if (kv->backend != NULL || low > kv->geo.epoch_max)
		return 0;
	for (uint32_t x = 0; x < low; x++)
		if (table_has_data(kv, x))
			sum += shmkv__table_alloc(&kv->geo, x);
	return sum;
}

void shmkv__tables_give_back(const struct shmkv *kv)
{
	uint64_t g, low;

	if (kv->backend != NULL || kv->readonly)
		return;
	/* Acquire: the generation is read before the write lock is asked
	 * for (a reader refused by that lock then reads it too). */
	g = SHMKV_LIFE_GEN(shmkv__load_acquire(&header(kv)->life));
	low = g >> 1;
	if (low > kv->geo.epoch_max)
		return; /* corrupt: nothing is given back on its word */
	for (uint32_t x = 0; x < low; x++) {
		/* Relaxed: our own descriptor for T(x): a thread of ours
		 * may be in it until shmkv_close. */
		if (shmkv__load32_relaxed(&kv->table_fd[x]) != 0 ||
		    !table_has_data(kv, x))
			continue;
		/* Through the handle's own description, which holds no read
		 * lock: granted only while no process holds T(x). */
		if (lock_byte(kv->fd, F_WRLCK, x) != 0)
			continue;
		SHMKV_CRASH_POINT("give_back_locked");
		shmkv__table_punch(kv, x);
		(void)lock_byte(kv->fd, F_UNLCK, x);
	}
}

void shmkv__tables_release(struct shmkv *kv)
{
	for (uint32_t x = 0; x < SHMKV__EPOCHS; x++) {
		if (kv->table_fd[x] != 0)
			close((int)kv->table_fd[x] - 1);
		kv->table_fd[x] = 0;
	}
}
