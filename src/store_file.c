/*
 * store_file.c - a store's file opened, or opened again, as nothing but a
 * regular file of ours: a name in /dev/shm is anyone's to replace with a
 * FIFO, a link or a directory, and an open must neither wait on one nor
 * follow one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "segment.h"

int shmkv__store_file_open(const char *path, int access)
{
	struct stat st;
	/* O_NONBLOCK: a FIFO opened for reading would wait for a writer;
	 * on a regular file it changes nothing. O_NOFOLLOW: a symbolic link
	 * fails with ELOOP. */
	int fd = open(path, access | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		int err = shmkv__errno();

		/* What open says of a link (ELOOP), a directory opened for
		 * writing (EISDIR), a socket (ENXIO) or a device on a nodev
		 * mount (EACCES): the name is no file of ours. */
		if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
			return -EPROTO;
		return err;
	}
	if (fstat(fd, &st) != 0) {
		int err = shmkv__errno();

		close(fd);
		return err;
	}
	/* A FIFO, a directory opened read-only, or a name that changed to
	 * one since: no store either. */
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

int shmkv__store_file_reopen(const struct shmkv *kv, int access)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 32];
	struct stat mine, named;
	int fd;

	/* The descriptor's own file, even once its name is gone (a store
	 * removed while open: its users still hold and give back tables). */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", kv->fd);
	fd = open(path, access | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	/* No /proc: the name, if it still names the same file. */
	snprintf(path, sizeof(path), "%s%s", SHMKV_SHM_DIR, kv->name);
	fd = shmkv__store_file_open(path, access);
	if (fd < 0)
		return fd == -ENOENT || fd == -EPROTO ? -ESTALE : fd;
	if (fstat(kv->fd, &mine) != 0 || fstat(fd, &named) != 0 ||
	    mine.st_ino != named.st_ino || mine.st_dev != named.st_dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}
