/*
 * test_alloc.c - where value blocks come from (block.c): a thread's
 * freed blocks stack up in its cache and come back last in, first out;
 * the pool's sweep finds a free block wherever it is, behind the cursor
 * included, before it takes a new page; a class under steady churn keeps
 * its pages; and a cache link corrupted in shared memory costs the cache,
 * never a wrong block.
 */
#include "helpers/slot_of.h"
#include "helpers/testutil.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"

TestSuite(alloc, .init = tu_setup, .fini = tu_teardown);

static uint64_t value_of(const char *key)
{
	return shmkv__load_acquire(&tu_slot_of(tu_kv, key)->value);
}

static uint64_t tag_of(uint64_t ref)
{
	struct shmkv_block_shm *b = shmkv__block(tu_kv, ref);

	cr_assert_not_null(b);
	return shmkv__load_acquire(&b->tag);
}

/* Sets keys 0..@n-1 to block values. Return: their blocks in @refs. */
static void set_blocks(int from, int n, uint64_t *refs)
{
	char key[32];

	for (int i = from; i < from + n; i++) {
		tu_fmt(key, sizeof(key), "key:", (unsigned long)i);
		tu_assert_rc(shmkv_set(tu_kv, key, strlen(key),
				       LIT(TU_BLOCK_TEXT), 0, 0, NULL),
			     1);
		refs[i] = value_of(key);
		cr_assert_eq(VAL_KIND(refs[i]), VAL_BLOCK);
	}
}

/* Replaces keys @from..@from+@n-1's blocks with integers: frees them. */
static void free_blocks(int from, int n)
{
	char key[32];

	for (int i = from; i < from + n; i++) {
		tu_fmt(key, sizeof(key), "key:", (unsigned long)i);
		tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), LIT("7"), 0, 0,
				       NULL),
			     1);
	}
}

static uint64_t cached_tag(uint64_t ref)
{
	return BLK_TAG(VAL_BLOCK_GEN(ref) + 1, shmkv__self_tid(), 1) |
	       BLK_CACHED;
}

Test(alloc, freed_blocks_stack_up_in_the_cache_and_come_back_last_first)
{
	enum { N = SHMKV__CACHE_DEPTH + 2 };
	uint64_t refs[2 * N];

	set_blocks(0, N, refs);
	free_blocks(0, N);
	/* The first DEPTH frees are cached in our hands; the rest go to
	 * the pool, FREE. */
	for (int i = 0; i < N; i++) {
		uint64_t tag = tag_of(refs[i]);

		if (i < (int)SHMKV__CACHE_DEPTH)
			cr_assert_eq(tag, cached_tag(refs[i]), "block %d", i);
		else
			cr_assert_eq(BLK_USED(tag), 0, "block %d", i);
	}
	/* The cache gives back its stack, the last cached block first;
	 * then the pool, from the block we freed to it last. */
	set_blocks(N, N, refs);
	for (int i = 0; i < (int)SHMKV__CACHE_DEPTH; i++)
		cr_assert_eq(VAL_BLOCK_UNIT(refs[N + i]),
			     VAL_BLOCK_UNIT(refs[SHMKV__CACHE_DEPTH - 1 - i]),
			     "allocation %d", i);
	cr_assert_eq(VAL_BLOCK_UNIT(refs[N + SHMKV__CACHE_DEPTH]),
		     VAL_BLOCK_UNIT(refs[N - 1]));
	for (int i = N; i < 2 * N; i++)
		cr_assert_eq(
			tag_of(refs[i]),
			BLK_TAG(VAL_BLOCK_GEN(refs[i]), shmkv__self_tid(), 1),
			"published, it names its publisher");
}

Test(alloc, a_corrupt_cache_link_drops_the_stack_and_allocation_goes_on)
{
	uint64_t refs[6], bad = VAL_BLOCK_WORD(SHMKV_UNITS_MAX - 1, 5);
	struct shmkv_block_shm *top;
	char key[32];

	set_blocks(0, 3, refs);
	free_blocks(0, 3);
	/* The top of the stack (the last freed) links to the one below:
	 * corrupt that link. */
	top = shmkv__block(tu_kv, refs[2]);
	cr_assert_eq(tag_of(refs[2]), cached_tag(refs[2]));
	memcpy(top->data, &bad, sizeof(bad));
	set_blocks(3, 3, refs);
	cr_assert_eq(VAL_BLOCK_UNIT(refs[3]), VAL_BLOCK_UNIT(refs[2]),
		     "the top comes back");
	/* The link is refused: the blocks below wait (ours, cached) and the
	 * next allocations come from the pool. */
	cr_assert_neq(VAL_BLOCK_UNIT(refs[4]), VAL_BLOCK_UNIT(refs[1]));
	cr_assert_neq(VAL_BLOCK_UNIT(refs[5]), VAL_BLOCK_UNIT(refs[0]));
	cr_assert_eq(tag_of(refs[1]), cached_tag(refs[1]));
	for (int i = 3; i < 6; i++) {
		tu_fmt(key, sizeof(key), "key:", (unsigned long)i);
		tu_assert_get_str(tu_kv, key, TU_BLOCK_TEXT);
	}
}

/* The page and index of block @ref. */
static uint32_t page_of(uint64_t ref)
{
	return VAL_BLOCK_UNIT(ref) >> tu_kv->geo.unit_shift;
}

static uint32_t index_of(uint64_t ref)
{
	return VAL_BLOCK_UNIT(ref) & (tu_kv->geo.units_per_page - 1);
}

static uint32_t class_pages(uint32_t cls)
{
	uint32_t n = 0;

	for (uint32_t p = 0; p < tu_kv->geo.page_count; p++)
		n += shmkv__page_class(tu_kv, p) == cls;
	return n;
}

/*
 * The sweep goes round the class's pages from its cursor: a free block
 * behind the cursor, in the cursor's own page, is found before a new
 * page is taken; with none left, a page is.
 */
Test(alloc, the_sweep_finds_a_block_behind_its_cursor_before_taking_a_page)
{
	uint64_t first, ref, behind = 0;
	uint32_t cls, count;
	/* Few classes, many pages: a class may take a page (block.c keeps
	 * pages for classes without one). */
	struct shmkv_config cfg = tu_config(1024, 16, 100, 4u << 20);
	char name[TU_NAME_CAP];

	shmkv_close(tu_kv);
	tu_kv = tu_create(&cfg, name);
	tu_assert_ok(shmkv__block_alloc(tu_kv, 100, &first));
	cr_assert_not_null(shmkv__block_at(tu_kv, VAL_BLOCK_UNIT(first), &cls));
	count = tu_kv->class_blocks[cls];
	cr_assert_eq(class_pages(cls), 1);
	/* Fill the page; remember a block near its start. */
	for (uint32_t i = 1; i < count; i++) {
		tu_assert_ok(shmkv__block_alloc(tu_kv, 100, &ref));
		cr_assert_eq(page_of(ref), page_of(first), "block %u", i);
		if (i == 3)
			behind = ref;
	}
	cr_assert_eq(tu_kv->alloc_index[cls], count, "the cursor at the end");
	/* Free it, and forget the free (as another process's free would
	 * be): only the sweep can find it. */
	shmkv__block_free(tu_kv, behind);
	tu_kv->freed_unit[cls] = 0;
	tu_assert_ok(shmkv__block_alloc(tu_kv, 100, &ref));
	cr_assert_eq(VAL_BLOCK_UNIT(ref), VAL_BLOCK_UNIT(behind));
	cr_assert_eq(VAL_BLOCK_GEN(ref), VAL_BLOCK_GEN(behind) + 1);
	cr_assert_eq(class_pages(cls), 1, "no page taken while one was free");
	cr_assert_eq(index_of(ref), 3);
	/* Nothing free: a new page. */
	tu_assert_ok(shmkv__block_alloc(tu_kv, 100, &ref));
	cr_assert_neq(page_of(ref), page_of(first));
	cr_assert_eq(class_pages(cls), 2, "%u pages", class_pages(cls));
}

/*
 * Keys replaced in turn by values that live in the slot and in blocks,
 * as long as the program runs: the class's pages stay what its peak of
 * blocks needs, plus one.
 */
Test(alloc, a_class_under_steady_churn_keeps_its_pages)
{
	enum { KEYS = 8192, ROUNDS = 6 };
	char key[32];
	uint64_t seed = 0x9e3779b97f4a7c15ull, most = 0;
	uint32_t cls = SHMKV__NO_CLASS, per_page, pages0 = 0;
	struct shmkv_config cfg = tu_config(2 * KEYS, 16, 64, 4u << 20);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name);
	static unsigned char in_block[KEYS];

	for (int i = 0; i < KEYS; i++) {
		tu_fmt(key, sizeof(key), "key:", (unsigned long)i);
		tu_assert_rc(shmkv_set(kv, key, strlen(key),
				       LIT("0123456789abcdef"), 0, 0, NULL),
			     1);
	}
	for (int r = 0; r < ROUNDS; r++) {
		struct shmkv_stats st;
		uint64_t used = 0;

		for (int n = 0; n < 4 * KEYS; n++) {
			int i;

			seed ^= seed << 13, seed ^= seed >> 7,
				seed ^= seed << 17;
			i = (int)(seed % KEYS);
			tu_fmt(key, sizeof(key), "key:", (unsigned long)i);
			/* 16 bytes: one fits beside the key, so a replacement
			 * alternates between the slot and a block. */
			tu_assert_rc(shmkv_set(kv, key, strlen(key),
					       in_block[i] ? "0123456789abcdef"
							   : "fedcba9876543210",
					       16, 0, 0, NULL),
				     1);
			in_block[i] ^= 1;
		}
		tu_assert_ok(shmkv_stats(kv, &st));
		for (uint32_t c = 0; c < st.classes; c++)
			if (st.cls[c].pages > 0) {
				cls = c;
				used = st.cls[c].used;
				per_page = st.cls[c].blocks / st.cls[c].pages;
				if (r == 0)
					pages0 = st.cls[c].pages;
				cr_assert_leq(
					st.cls[c].pages,
					(most > used ? most : used) / per_page +
						2,
					"round %d: %u pages for %llu blocks", r,
					st.cls[c].pages,
					(unsigned long long)used);
			}
		most = used > most ? used : most;
	}
	cr_assert_neq(cls, SHMKV__NO_CLASS, "some values went to blocks");
	cr_assert_gt(pages0, 0);
	shmkv_close(kv);
}
