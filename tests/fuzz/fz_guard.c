/*
 * fz_guard.c - guard zones around every segment the library maps.
 *
 * AddressSanitizer checks heap, stack and globals, not a MAP_SHARED file
 * mapping: an access just past the segment would land in whatever mapping
 * follows it, unseen. The harnesses are linked with
 * -Wl,--wrap=mmap,--wrap=munmap, so the library's mmap() of a segment
 * comes here: we reserve FZ_GUARD bytes of PROT_NONE on each side and map
 * the file in between. Any read or write within FZ_GUARD of either end of
 * the segment then faults (SEGV: libFuzzer saves the input as a crash).
 *
 * What this cannot see: an access farther than FZ_GUARD from the segment.
 * It lands in unmapped memory (a fault: also caught) or in another mapping
 * (heap, libraries: caught by ASan only if it hits a redzone or freed
 * memory). Checking that no byte outside the segment changed is not
 * possible in general; these guards plus ASan are the approximation.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

/* 64 MiB each side: a hundred times the tiny segments the harnesses use,
 * so an index off by a slot, a block, a page or a whole segment still
 * faults; and free (address space only: PROT_NONE costs no memory). */
#define FZ_GUARD ((size_t)64 << 20)
#define FZ_MAPS	 64
#define FZ_PAGE	 4096u

void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off);
int __real_munmap(void *addr, size_t len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off);
int __wrap_munmap(void *addr, size_t len);

/* Segments mapped with guards: where the file is, and the reservation. */
static struct {
	unsigned char *seg;
	size_t span; /* reservation: guard + segment (page-rounded) + guard */
} maps[FZ_MAPS];

static size_t round_page(size_t len)
{
	return (len + FZ_PAGE - 1) / FZ_PAGE * FZ_PAGE;
}

static int free_entry(void)
{
	for (int i = 0; i < FZ_MAPS; i++)
		if (maps[i].seg == NULL)
			return i;
	return -1;
}

void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	int i = free_entry();
	unsigned char *res, *seg;
	size_t span;

	/* Only a file mapped shared at an address of the kernel's choice is
	 * a segment; anything else (or a full table) maps as usual. */
	if (addr != NULL || fd < 0 || !(flags & MAP_SHARED) || i < 0 ||
	    len == 0 || len > SIZE_MAX / 2)
		return __real_mmap(addr, len, prot, flags, fd, off);
	span = FZ_GUARD + round_page(len) + FZ_GUARD;
	res = __real_mmap(NULL, span, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (res == MAP_FAILED)
		return MAP_FAILED;
	seg = __real_mmap(res + FZ_GUARD, len, prot, flags | MAP_FIXED, fd,
			  off);
	if (seg == MAP_FAILED) {
		int err = errno;

		__real_munmap(res, span);
		errno = err;
		return MAP_FAILED;
	}
	maps[i].seg = seg;
	maps[i].span = span;
	return seg;
}

int __wrap_munmap(void *addr, size_t len)
{
	for (int i = 0; i < FZ_MAPS; i++) {
		if (maps[i].seg == NULL || maps[i].seg != addr)
			continue;
		maps[i].seg = NULL;
		return __real_munmap((unsigned char *)addr - FZ_GUARD,
				     maps[i].span);
	}
	return __real_munmap(addr, len);
}
