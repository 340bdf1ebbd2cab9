/*
 * storeinfo.c - what a bench reads of a store without walking it (see
 * bench.h): the table's generation from the header's life word, and the
 * bytes the segment's file has allocated. shmkv_stats() answers both, but
 * walks every slot: too slow to ask once per command.
 */
#include "bench.h"

#include <errno.h>
#include <sys/stat.h>

#include "../../src/internal.h"

uint64_t bench_store_generation(shmkv_t *kv)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;

	/* Relaxed: the word only tags a sample (growing or not); nothing is
	 * read through it, so no ordering with the store's other words is
	 * needed, and a stale value misfiles at most the sample beside a
	 * flip. Pairs with nothing. */
	return SHMKV_LIFE_GEN(shmkv__load_relaxed(&h->life));
}

uint64_t bench_store_allocated(shmkv_t *kv)
{
	struct stat st;

	return fstat(kv->fd, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}
