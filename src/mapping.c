/*
 * mapping.c - mapping a segment into this process: huge-page advice,
 * pre-faulting, and reading back what the kernel gave.
 *
 * Huge pages of a tmpfs file (POSIX shm) are transparent huge pages: the
 * kernel backs a 2 MiB-aligned run of the file with one huge page when the
 * file system's policy allows it (the huge= mount option of /dev/shm, or
 * shmem_enabled=force) and, under huge=advise, only when the page is
 * faulted through a mapping advised MADV_HUGEPAGE. Nothing reports a
 * refusal, so whether it worked is read from /proc/self/smaps.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"
#include "mapping.h"

#define SMALL_PAGE 4096u

void *shmkv__map(int fd, uint64_t len, unsigned how)
{
	int prot = PROT_READ | (how & SHMKV_MAP_WRITE ? PROT_WRITE : 0);
	void *p = mmap(NULL, len, prot, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* Before any fault: a page already faulted in 4 KiB stays so until
	 * khugepaged collapses it. EINVAL (a kernel without THP) leaves
	 * small pages, which work the same. Never MAP_POPULATE: it would
	 * fault before this advice, and allocate the whole reservation. */
	if (how & SHMKV_MAP_HUGE)
		(void)madvise(p, len, MADV_HUGEPAGE);
	return p;
}

int shmkv__map_populate(void *p, uint64_t len, bool write)
{
	const volatile unsigned char *b = p;
	unsigned char sink = 0;

	if (madvise(p, len, write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) ==
	    0)
		return 0;
	if (errno != EINVAL) /* EFAULT: beyond the file or tmpfs full */
		return shmkv__errno();
	/* A kernel before 5.14: touch every page. A shared tmpfs page is
	 * allocated by a read fault too, mapped writable where allowed. */
	for (uint64_t off = 0; off < len; off += SMALL_PAGE)
		sink ^= b[off];
	(void)sink;
	return 0;
}

/* "ShmemPmdMapped:  2048 kB" and "FilePmdMapped:" count huge pages of a
 * shared file mapping; the first is tmpfs's. Return: the bytes, or 0. */
static uint64_t pmd_line_bytes(const char *line)
{
	static const char *const names[] = { "ShmemPmdMapped:",
					     "FilePmdMapped:" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);

		if (strncmp(line, names[i], n) == 0)
			return (uint64_t)strtoull(line + n, NULL, 10) << 10;
	}
	return 0;
}

/* A mapping's first line, "start-end perms offset ...", gives its start;
 * field lines ("Rss:   4 kB") are not. Return: true for a first line. */
static bool mapping_start(const char *line, unsigned long *start)
{
	char *end;

	*start = strtoul(line, &end, 16);
	if (end == line || *end != '-')
		return false;
	line = end + 1;
	(void)strtoul(line, &end, 16);
	return end != line && *end == ' ';
}

int shmkv__map_huge_bytes(const void *base, uint64_t *bytes)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	unsigned long start;
	char *line = NULL;
	size_t cap = 0;
	int inside = -1; /* -1: not met yet, 1: in it, 0: past it */

	if (f == NULL)
		return shmkv__errno();
	*bytes = 0;
	while (inside != 0 && getline(&line, &cap, f) > 0) {
		if (mapping_start(line, &start)) {
			if (inside == 1)
				inside = 0;
			else if (start == (unsigned long)(uintptr_t)base)
				inside = 1;
			continue;
		}
		if (inside == 1)
			*bytes += pmd_line_bytes(line);
	}
	free(line);
	fclose(f);
	return inside == -1 ? -ENOENT : 0;
}
