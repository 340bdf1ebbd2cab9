/*
 * remove.c - removing a store: marked in the segment, then unnamed.
 *
 * A process that has a store open keeps its mapping when the name goes, so
 * an unlink alone would let it write on, into memory nobody can open again
 * (and, once a store is created under the name, beside the one everybody
 * else uses). So a removal first sets the header's life word to REMOVED,
 * which every command reads (shmkv__live: -ESTALE), and only then unlinks
 * the name. A remover killed between the two leaves a removed store under
 * the name: open treats it as absent, and create finishes the removal.
 *
 * The unlink must take the file that was marked, never one created under
 * the name since (a link into place never replaces: the name only moves
 * on when it is unlinked). Removers of one file take turns by flock() on
 * it, which the kernel drops when a holder dies, and each checks, holding
 * it, that the name still names that file: whoever unlinks it holds the
 * lock, so the check cannot go stale before the unlink. Only a removal by
 * other means (rm in /dev/shm) can come between; such a store is not
 * marked, and its users are not told (README: Removing a store).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "fault.h"
#include "internal.h"
#include "segment.h"
#include "wait.h"

/* The first layout whose header has the life word. */
#define LIFE_SINCE_LAYOUT 6u

/* Wakes every process asleep on the header's lock words (pattern locks),
 * so that their next round reads -ESTALE now rather than after a nap. The
 * safe locks' waiters sleep on slot words: at most a nap. */
static void wake_waiters(struct shmkv_header_shm *h)
{
	for (uint32_t i = 0; i < SHMKV_LOCK_WAIT_WORDS; i++)
		if (shmkv__wait_marked(&h->lock_wait[i]))
			shmkv__wake(&h->lock_wait[i]);
}

/* The header of the file open at @fd, read (not mapped: a live store
 * stays untouched), into *@h; what the file lacks reads as 0. Return:
 * false if it cannot be read. */
static bool read_header(int fd, struct shmkv_header_shm *h)
{
	memset(h, 0, sizeof(*h));
	return pread(fd, h, sizeof(*h), 0) >= 0;
}

/*
 * Marks the store open at @fd, of header @h and size @st, removed (a
 * store of an older layout has no life word, and its users' library would
 * not look: nothing to mark). Return: 0, or -EPROTO (not a store),
 * -EPROTONOSUPPORT (a newer layout: its life word may be elsewhere),
 * -errno.
 */
static int mark_removed(int fd, const struct shmkv_header_shm *hdr,
			const struct stat *st)
{
	struct shmkv_header_shm *h;
	uint64_t w;

	if (hdr->magic != SHMKV_MAGIC)
		return -EPROTO;
	if (hdr->layout_version > SHMKV_LAYOUT_VERSION)
		return -EPROTONOSUPPORT;
	/* A header cut short cannot be mapped by anyone: nobody to tell. */
	if (hdr->layout_version < LIFE_SINCE_LAYOUT ||
	    st->st_size < SHMKV_HEADER_SIZE)
		return 0;
	h = mmap(NULL, SHMKV_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (h == MAP_FAILED)
		return shmkv__errno();
	/* Relaxed: the CAS below decides on it. */
	w = shmkv__load_relaxed(&h->life);
	/* Full barrier: set before the unlink, so that a command that starts
	 * after shmkv_unlink returned reads it (shmkv__live). Each failure
	 * means the word moved on: no one sets other bits today, so this
	 * loops at most once more. */
	while (!(w & SHMKV_LIFE_REMOVED)) {
		uint64_t seen = shmkv__cas_full(&h->life, w,
						w | SHMKV_LIFE_REMOVED);

		if (seen == w)
			break;
		w = seen;
	}
	wake_waiters(h);
	munmap(h, SHMKV_HEADER_SIZE);
	return 0;
}

/*
 * Removes the file open at @fd if @path still names it; @only_removed:
 * only if it was marked removed already (a create finishing a dead
 * remover's work). Holds the file's flock throughout.
 * Return: 0 (removed), 1 (@path names another file now, or none: look
 * again), 2 (@only_removed and it is a live store), or -errno.
 */
static int remove_open(int fd, const char *path, bool only_removed)
{
	struct shmkv_header_shm h;
	struct stat st, named;

	/* Blocks only while another remover of this file runs (two
	 * syscalls); the kernel releases a dead holder's lock. */
	while (flock(fd, LOCK_EX) != 0)
		if (errno != EINTR)
			return shmkv__errno();
	if (fstat(fd, &st) != 0)
		return shmkv__errno();
	if (lstat(path, &named) != 0)
		return errno == ENOENT ? 1 : shmkv__errno();
	if (named.st_ino != st.st_ino || named.st_dev != st.st_dev)
		return 1;
	if (!read_header(fd, &h))
		return shmkv__errno();
	if (only_removed) {
		if (h.layout_version != SHMKV_LAYOUT_VERSION ||
		    !(h.life & SHMKV_LIFE_REMOVED))
			return 2;
	} else {
		int err = mark_removed(fd, &h, &st);

		if (err < 0)
			return err;
		SHMKV_CRASH_POINT("remove_marked");
	}
	SHMKV_PAUSE_POINT("remove_checked");
	return unlink(path) == 0 ? 0 : shmkv__errno();
}

/* remove_open on whatever @path names, until it names the same file
 * across the check. Return: as remove_open, -ENOENT if nothing is there. */
static int remove_named(const char *path, bool only_removed)
{
	for (;;) {
		/* Each new round means the name moved on meanwhile: another
		 * process made progress, so this ends. */
		int err, fd = shmkv__store_file_open(path, O_RDWR);

		if (fd < 0)
			return fd;
		err = remove_open(fd, path, only_removed);
		close(fd); /* and its flock */
		if (err != 1)
			return err;
	}
}

int shmkv__store_remove(const char *path)
{
	return remove_named(path, false);
}

int shmkv__store_clear_removed(const char *path)
{
	int err = remove_named(path, true);

	if (err == 0)
		return 1;
	if (err == 2)
		return 0;
	/* Gone meanwhile: the name is free, try again. */
	return err == -ENOENT ? 1 : err;
}
