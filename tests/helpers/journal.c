/*
 * journal.c - shared memory for exec'd test workers (see journal.h).
 */
#include "journal.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

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
