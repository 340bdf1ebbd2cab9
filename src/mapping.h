/*
 * mapping.h - mapping a segment into this process (mapping.c): huge-page
 * advice, pre-faulting, and what the kernel actually gave.
 */
#ifndef SHMKV_MAPPING_H
#define SHMKV_MAPPING_H

#include <stdbool.h>
#include <stdint.h>

enum shmkv_map_how {
	SHMKV_MAP_WRITE = 1 << 0, /* PROT_WRITE too */
	SHMKV_MAP_HUGE = 1 << 1,  /* madvise(MADV_HUGEPAGE) the mapping */
};

/*
 * Maps @len bytes of @fd from offset 0, shared, as @how says, faulting
 * nothing in (the file is sparse past what the store allocated). Advice is
 * best effort: a kernel that refuses it leaves a mapping that works on
 * 4 KiB pages.
 * Return: the base, or NULL with errno set (mmap's).
 */
void *shmkv__map(int fd, uint64_t len, unsigned how);

/* Pre-faults [@p, @p + @len) for reading, or for writing if @write
 * (MADV_POPULATE_*; without it, one read per 4 KiB page). Return: 0, or a
 * negative errno (-EFAULT: some page is beyond the file, or tmpfs is full). */
int shmkv__map_populate(void *p, uint64_t len, bool write);

/* Bytes of the mapping that starts at @base mapped by huge (PMD) pages,
 * from /proc/self/smaps. Return: 0 or a negative errno (-ENOENT: no such
 * mapping, or no /proc). */
int shmkv__map_huge_bytes(const void *base, uint64_t *bytes);

#endif /* SHMKV_MAPPING_H */
