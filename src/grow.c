/*
 * grow.c - value memory that grows online.
 *
 * The segment is a sparse file as long as the whole reservation
 * (reserve_memory's pages), and every process maps all of it at attach, so
 * growing never remaps and never moves anything. What is allocated is a
 * prefix: the header and the slots, the page-table words of the ready
 * pages, and the ready pages (the header's pages_ready). A process that
 * finds no free page allocates the next run of pages in the file and then
 * publishes it:
 *
 *   posix_fallocate(page-table words and pages [seen, next))
 *   CAS pages_ready: seen -> next
 *
 * Allocating first means that running out of memory is a clean -ENOMEM
 * here, never a SIGBUS when a later write touches a page tmpfs could not
 * give. Every step is idempotent and nobody waits: a process killed
 * between the two leaves allocated pages that nobody names, and the next
 * grower, which computes the same run from the same seen, allocates them
 * again (a no-op) and publishes them. Two growers racing allocate the
 * same run; the CAS publishes it once and the loser finds it ready.
 *
 * A page is claimed (block.c) only below pages_ready, so a page that a
 * page-table word names was allocated before anyone could use it. Readers
 * bound every page number by their own copy of pages_ready and look at
 * the shared word again only for a page beyond that copy: nothing on the
 * hot path reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "atomic.h"
#include "fault.h"
#include "internal.h"
#include "tables.h"

/* posix_fallocate, again while a signal interrupts it: tmpfs stops a long
 * allocation for a pending signal (EINTR), which is no reason to fail. */
static int allocate(int fd, uint64_t from, uint64_t to)
{
	int err;

	if (to <= from)
		return 0;
	do
		err = posix_fallocate(fd, (off_t)from, (off_t)(to - from));
	while (err == EINTR);
	return -err;
}

/* Faults [@from, @to) of mapping @base in through it (huge pages under
 * huge=advise come only that way; both ends are whole allocation units,
 * geometry.c); failures leave it to the allocation. */
static void fault_in(unsigned char *base, uint64_t from, uint64_t to)
{
	if (to > from)
		(void)madvise(base + from, to - from, MADV_POPULATE_WRITE);
}

int shmkv__memory_allocate(int fd, unsigned char *base,
			   const struct shmkv_geometry *g, uint32_t from,
			   uint32_t to)
{
	/* The header and T(0) when from is 0 (they come with the first
	 * pages), the page-table words of pages [from, to), then the pages
	 * themselves, in whole allocation units (geometry.c): the parts a
	 * previous growth allocated again, which is a no-op. */
	uint64_t head_to = from == 0 ? shmkv__table0_end(g) : 0;
	uint64_t table_from = from == 0 ? g->page_table_offset
					: shmkv__head_end(g, from);
	uint64_t table_to = shmkv__head_end(g, to);
	uint64_t pages_from = shmkv__pages_end(g, from);
	uint64_t pages_to = shmkv__pages_end(g, to);
	int err;

	if (g->flags & SHMKV_HDR_HUGE_PAGES && base != NULL) {
		fault_in(base, 0, head_to);
		fault_in(base, table_from, table_to);
		fault_in(base, pages_from, pages_to);
	}
	err = allocate(fd, 0, head_to);
	if (err == 0)
		err = allocate(fd, table_from, table_to);
	if (err == 0)
		err = allocate(fd, pages_from, pages_to);
	if (err == 0 && base != NULL) {
		/* Up to date: the file's SEEK_HOLE then tells allocated
		 * memory from holes (tables.h, shmkv__file_holds). */
		fault_in(base, 0, head_to);
		fault_in(base, table_from, table_to);
		fault_in(base, pages_from, pages_to);
	}
	return err;
}

int shmkv__table_allocate(const struct shmkv *kv, uint32_t e)
{
	uint64_t from = shmkv__table_start(&kv->geo, e);
	uint64_t to = shmkv__table_end(&kv->geo, e);

	int err;

	if (kv->geo.flags & SHMKV_HDR_HUGE_PAGES)
		fault_in(kv->base, from, to);
	err = allocate(kv->fd, from, to);
	/* Up to date, as shmkv__memory_allocate's. */
	if (err == 0)
		fault_in(kv->base, from, to);
	return err;
}

void shmkv__table_punch(const struct shmkv *kv, uint32_t e)
{
	uint64_t from = shmkv__table_start(&kv->geo, e);
	uint64_t to = shmkv__table_end(&kv->geo, e);
	int r;

	/* Failing leaves memory in use, never a wrong answer: nothing reads
	 * a table below the live ones (tests/model/migration-design.md §7). */
	do
		r = fallocate(kv->fd,
			      FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)from, (off_t)(to - from));
	while (r != 0 && errno == EINTR);
}

/* The shared pages_ready word. */
static uint32_t *ready_word(const struct shmkv *kv)
{
	return &((struct shmkv_header_shm *)kv->base)->pages_ready;
}

/* Does the file hold the memory of pages [@mine, @ready) and of the
 * page-table words of [0, @ready), without a hole? Asked of the kernel,
 * range by range (growers allocate before they publish; a killed one may
 * leave more, never less): a count of the file's blocks would believe a
 * word raised by as much as an old table not yet given back holds. */
static bool allocated(const struct shmkv *kv, uint32_t mine, uint32_t ready)
{
	return shmkv__file_holds(kv, kv->geo.page_table_offset,
				 shmkv__head_end(&kv->geo, ready)) &&
	       shmkv__file_holds(kv, shmkv__pages_end(&kv->geo, mine),
				 shmkv__pages_end(&kv->geo, ready));
}

uint32_t shmkv__pages_ready_refresh(const struct shmkv *kv)
{
	/* The copy is a cache that readers holding a const handle refresh
	 * too: the one field of the handle written through it. */
	uint32_t *copy = (uint32_t *)&kv->pages_ready;
	uint32_t mine = shmkv__pages_ready(kv);
	/* Acquire: pairs with the grower's publishing CAS, after its
	 * allocation (a system call, so ordered anyway on any CPU we run
	 * on; the pairing states the intent). */
	uint32_t ready = shmkv__load32_acquire(ready_word(kv));

	/* Trusted only as far as the file has memory: a corrupt word must
	 * not send anyone into the hole past the allocated pages, where a
	 * fault would allocate, or raise SIGBUS on a full tmpfs. Asked once
	 * per growth seen, a system call. Below our copy: stale or corrupt,
	 * and what we have is allocated anyway. */
	if (ready <= mine || ready > kv->geo.page_count ||
	    !allocated(kv, mine, ready))
		return mine;
	/* Relaxed: a process-local bound that only grows; a thread that
	 * stores an older one makes its next refresh come sooner. */
	shmkv__store32_relaxed(copy, ready);
	return ready;
}

/* The live limit, in pages: max_memory's worth, within the reservation,
 * less what the table has grown by. */
static uint32_t pages_limit(const struct shmkv *kv)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;
	/* Relaxed: a limit read when deciding to grow; a change of it made
	 * concurrently may or may not apply to this growth. */
	uint64_t max = shmkv__load_relaxed(&h->max_memory);
	/* Relaxed: the table's size now, as for the limit. */
	uint64_t extra = shmkv__tables_extra(&kv->geo,
					     shmkv__load_relaxed(&h->life)) +
			 shmkv__tables_kept(kv);

	return shmkv__pages_within(&kv->geo, max > extra ? max - extra : 0);
}

uint32_t shmkv__pages_max(const struct shmkv *kv)
{
	uint32_t limit = pages_limit(kv);

	return limit > kv->geo.pages_initial ? limit : kv->geo.pages_initial;
}

/* The most one growth allocates. The writer that grows pays for the
 * allocation (tmpfs zeroes the pages: about 0.5 ms a MiB here), so a step
 * of a quarter of a big store would stall one SET for a tenth of a second
 * or more; 8 MiB keeps it to a few ms, and a store growing to 8 GiB takes
 * a thousand steps (one system call and one CAS each). */
#define GROW_STEP_MAX (8u << 20)

/* The run the next growth from @seen ready pages adds: a quarter of what
 * is there (at least a page, at most GROW_STEP_MAX), so a small store
 * grows in few steps and leaves at most a quarter unused; with huge pages
 * it ends on a huge-page boundary of the file where the limit allows, so
 * no huge page is cut. */
static uint32_t next_ready(const struct shmkv *kv, uint32_t seen,
			   uint32_t limit)
{
	uint64_t step = seen / 4, most = GROW_STEP_MAX / kv->geo.page_size;
	uint64_t next;

	if (step > most)
		step = most;
	next = seen + (step > 0 ? step : 1);
	/* The pages the allocation holds anyway: it is in whole units. */
	next = (shmkv__pages_end(&kv->geo, (uint32_t)next) -
		kv->geo.pages_offset) /
	       kv->geo.page_size;
	return next < limit ? (uint32_t)next : limit;
}

int shmkv__pages_grow(struct shmkv *kv, uint32_t seen)
{
	uint32_t limit = pages_limit(kv), next;
	int err;

	if (kv->readonly)
		return -EROFS;
	if (shmkv__pages_ready_refresh(kv) > seen)
		return 0; /* someone grew since we looked */
	if (limit <= seen)
		return -ENOMEM;
	next = next_ready(kv, seen, limit);
	err = shmkv__memory_allocate(kv->fd, kv->base, &kv->geo, seen, next);
	if (err)
		return err == -ENOSPC ? -ENOMEM : err;
	SHMKV_CRASH_POINT("grow_allocated");
	/* Full barrier: publishes the allocation; pairs with the acquire
	 * in shmkv__pages_ready_refresh. Failing means another grower
	 * published first (the word only grows): our run is theirs. */
	(void)shmkv__cas32_full(ready_word(kv), seen, next);
	/* Ready is beyond seen now, ours or theirs, unless the word went
	 * backwards, which no grower does. */
	return shmkv__pages_ready_refresh(kv) > seen ? 0 : -EBADMSG;
}

int shmkv_set_max_memory(shmkv_t *kv, uint64_t bytes)
{
	int err = shmkv__settable(kv);

	if (err)
		return err;
	if (bytes == 0)
		bytes = kv->geo.reserve_memory;
	if (bytes > kv->geo.reserve_memory ||
	    bytes < shmkv__footprint(&kv->geo, kv->geo.pages_initial))
		return -EINVAL;
	/* Relaxed: a setting on a line of its own, read (relaxed) by each
	 * growth as it decides; nothing else is published with it. */
	shmkv__store_relaxed(&((struct shmkv_header_shm *)kv->base)->max_memory,
			     bytes);
	return 0;
}
