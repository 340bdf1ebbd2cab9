/*
 * hugemem.c - memory on huge pages for the floors, and what the kernel
 * actually gave: a figure "on huge pages" is only printed as such when
 * /proc/self/smaps says so.
 */
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE (2ul << 20)

void *bench_huge_alloc(size_t len)
{
	size_t span = len + HUGE;
	unsigned char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *a;

	if (p == MAP_FAILED)
		return NULL;
	/* A huge page needs a 2 MiB-aligned virtual address: cut the slack
	 * off both ends so the mapping is exactly [a, a + len). */
	a = (unsigned char *)(((uintptr_t)p + HUGE - 1) &
			      ~(uintptr_t)(HUGE - 1));
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + span > a + len)
		munmap(a + len, (size_t)(p + span - (a + len)));
	(void)madvise(a, len, MADV_HUGEPAGE); /* EINVAL: no THP, 4 KiB */
	return a;
}

uint64_t bench_huge_bytes(const void *base)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	unsigned long start, end;
	unsigned long long kb;
	uint64_t bytes = 0;
	char line[512];
	int inside = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			if (inside)
				break;
			inside = start == (unsigned long)(uintptr_t)base;
		} else if (inside &&
			   (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1 ||
			    sscanf(line, "ShmemPmdMapped: %llu kB", &kb) == 1 ||
			    sscanf(line, "FilePmdMapped: %llu kB", &kb) == 1)) {
			bytes += (uint64_t)kb << 10;
		}
	}
	fclose(f);
	return bytes;
}

void bench_thp_setting(const char *file, char *buf, size_t cap)
{
	char path[128], line[256], *open, *close;
	FILE *f;

	snprintf(buf, cap, "?");
	snprintf(path, sizeof(path), "/sys/kernel/mm/transparent_hugepage/%s",
		 file);
	f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fgets(line, sizeof(line), f) != NULL &&
	    (open = strchr(line, '[')) != NULL &&
	    (close = strchr(open, ']')) != NULL) {
		*close = '\0';
		snprintf(buf, cap, "%s", open + 1);
	}
	fclose(f);
}
