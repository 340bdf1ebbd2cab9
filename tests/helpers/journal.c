/*
 * journal.c - shared memory for exec'd test workers (see journal.h).
 */
#include "journal.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers/args.h"

void *journal_map(const char *tag, size_t len, int *fd)
{
	void *p;

	*fd = memfd_create(tag, 0);
	if (*fd < 0)
		return NULL;
	if (ftruncate(*fd, (off_t)len) != 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	return p == MAP_FAILED ? NULL : p;
}

void *journal_attach(const char *fd_arg, size_t len)
{
	struct stat st;
	uint64_t fd;
	void *p;

	if (arg_u64(fd_arg, INT_MAX, &fd)) {
		errno = EINVAL;
		return NULL;
	}
	if (fstat((int)fd, &st) != 0)
		return NULL;
	if ((uint64_t)st.st_size < len) {
		errno = EOVERFLOW;
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
	return p == MAP_FAILED ? NULL : p;
}
