/*
 * proc_mark.c - a process's mark in a store's file, which the kernel drops
 * when the process dies: what tells a dead lock holder from a new process
 * that was handed its pid at once.
 *
 * A holder is named by (pid, start time), and /proc gives the start time
 * in clock ticks (1/100 s): a pid handed out again within the tick of the
 * holder's start names the new process with the same pair, and the dead
 * holder would keep its lock for its whole lease. No finer start time of
 * another process is readable, so each process marks itself in the store:
 * before it first takes a lock through a handle, it takes an OFD read
 * lock (fcntl F_OFD_SETLK) on byte SHMKV_MARK_LOCK_BASE + pid (layout.h)
 * of the segment file, through the handle's own open file description, held as long as the
 * handle is open. The kernel drops it when the last descriptor of that
 * description closes: at shmkv_close, or when the process dies. A judge
 * that finds a holder's pid and start time alive asks (F_OFD_GETLK) whether
 * any description holds that byte: none means that no live process with
 * that pid has the store open through a marked handle, so the holder, who
 * marked before it took the lock, is dead (or has closed the handle it
 * took the lock through, which gives the lock up as surely).
 *
 * A fork child shares its parent's descriptions, and a lock taken on one
 * belongs to the description, not the process: so a child marks through
 * a description of its own (it reopens the file and puts it in place of
 * the inherited one with dup3) before it takes a lock or judges a holder
 * through an inherited handle (a judge through its parent's description
 * would not see its parent's mark). Until it does, its copy keeps the
 * parent's description, and with it the parent's mark, alive.
 *
 * What remains: a dead holder is still taken for alive (until its lease
 * ends, as before) if its pid went, within the tick of the holder's start,
 * to a process that has the store open through a marked handle (it took a
 * lock there itself), or to a fork child of the holder's that still holds
 * the holder's description unmarked. Ownership without pids (the next
 * liveness design) removes both. Stores are used from one pid namespace
 * (-EXDEV for writers from another), so bytes of one pid never collide.
 *
 * Every process of a store's layout version marks itself (a build before
 * marks has an older layout version, and is refused the store), so no
 * holder went unmarked.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "internal.h"
#include "segment.h"

static struct flock mark_range(short type, uint32_t pid)
{
	struct flock fl = { .l_type = type,
			    .l_whence = SEEK_SET,
			    .l_start = (off_t)(SHMKV_MARK_LOCK_BASE + pid),
			    .l_len = 1 };

	return fl;
}

int shmkv__proc_mark_slow(struct shmkv *kv)
{
	uint32_t pid = shmkv__self_pid();
	struct flock fl = mark_range(F_RDLCK, pid);
	/* Relaxed: our own process's word; a fork child sees its parent's
	 * pid there, and marks through a description of its own. */
	bool inherited = shmkv__load32_relaxed(&kv->fd_pid) != pid;
	int fd = inherited ? shmkv__store_file_reopen(
				     kv, kv->readonly ? O_RDONLY : O_RDWR)
			   : kv->fd;

	if (fd < 0)
		return fd;
	if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
		int err = shmkv__errno();

		if (inherited)
			close(fd);
		return err;
	}
	/* Our description, marked, in place of the parent's in one step: a
	 * thread using kv->fd meanwhile sees one or the other. */
	if (inherited) {
		int err = dup3(fd, kv->fd, O_CLOEXEC) < 0 ? shmkv__errno() : 0;

		close(fd);
		if (err)
			return err;
		shmkv__store32_relaxed(&kv->fd_pid, pid);
	}
	/* Release: pairs with the acquire in shmkv__proc_mark(); a thread
	 * that sees the pid skips the slow path only after the mark. */
	shmkv__store32_release(&kv->marked_pid, pid);
	return 0;
}

bool shmkv__proc_unmarked(struct shmkv *kv, uint32_t pid)
{
	struct flock fl = mark_range(F_WRLCK, pid);

	/* Ours is on our own description, which the query does not see. */
	if (pid == shmkv__self_pid())
		return false;
	/* Our own description first: one shared with the holder (a fork
	 * child's inherited handle) would hide its mark. */
	if (shmkv__proc_mark(kv) != 0)
		return false;
	if (fcntl(kv->fd, F_OFD_GETLK, &fl) != 0)
		return false;
	return fl.l_type == F_UNLCK;
}
