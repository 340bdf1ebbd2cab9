/*
 * test_blocks.c - the geometry of value blocks: units per page are a
 * power of two (block.c splits a unit number with a shift and a mask),
 * pages waste no more than before, every size class keeps its blocks within as few cache lines as
 * their size allows, and one read both copies and compares a block.
 */
#include "helpers/slot_of.h"
#include "helpers/testutil.h"

#include <stdio.h>
#include <string.h>

#include "internal.h"

TestSuite(blocks, .fini = tu_teardown);

static bool is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* Cache lines a block of @size bytes at byte offset @at touches. */
static uint64_t lines_touched(uint64_t at, uint64_t size)
{
	return (at + size - 1) / SHMKV_CACHE_LINE - at / SHMKV_CACHE_LINE + 1;
}

static void assert_geometry_sound(uint32_t value_max)
{
	struct shmkv_config cfg = tu_config(1024, 16, value_max, 0);
	struct shmkv_geometry g;
	uint32_t top;

	cr_assert_eq(shmkv__geometry_from_config(&cfg, 0, &g), 0, "value_max %u",
		     value_max);
	cr_assert(is_pow2(g.units_per_page));
	cr_assert_geq(g.units_per_page, g.page_size / SHMKV_BLOCK_MIN);
	cr_assert_lt(g.units_per_page / 2, g.page_size / SHMKV_BLOCK_MIN);
	cr_assert_eq(1ull << g.unit_shift, g.units_per_page);
	cr_assert_eq(g.page_size % 4096, 0);
	cr_assert_eq(g.pages_offset % 4096, 0);
	top = g.class_size[g.class_count - 1];
	cr_assert_geq(top, value_max + sizeof(struct shmkv_block_shm));
	cr_assert_lt(top, value_max + sizeof(struct shmkv_block_shm) +
				  SHMKV_CACHE_LINE);
	/* The largest values keep pages of one block and under a page of
	 * slack, as 64 KiB pages do for the smaller ones. */
	cr_assert_leq(top, g.page_size);
	cr_assert(g.page_size == SHMKV_PAGE_MIN || g.page_size - top < 4096,
		  "value_max %u: page %u for blocks of %u", value_max,
		  g.page_size, top);
	for (uint32_t c = 0; c < g.class_count; c++) {
		uint32_t size = g.class_size[c];
		uint32_t blocks = g.page_size / size;

		cr_assert(size == SHMKV_BLOCK_MIN ||
				  size % SHMKV_CACHE_LINE == 0,
			  "value_max %u: class %u is %u bytes", value_max, c,
			  size);
		/* Every block of every page: no more lines than its size
		 * needs (one for blocks of up to a line). */
		for (uint32_t i = 0; i < blocks; i += 1 + blocks / 64) {
			uint64_t at = g.pages_offset + (uint64_t)i * size;
			uint64_t need = (size + SHMKV_CACHE_LINE - 1) /
					SHMKV_CACHE_LINE;

			cr_assert_eq(lines_touched(at, size), need,
				     "value_max %u: class %u block %u",
				     value_max, c, i);
		}
	}
}

Test(blocks, pages_are_powers_of_two_and_blocks_keep_to_their_lines)
{
	uint32_t sizes[] = { 1,
			     8,
			     9,
			     16,
			     40,
			     41,
			     100,
			     1000,
			     1024,
			     4000,
			     65512,
			     65513,
			     65536,
			     100000,
			     300000,
			     524288,
			     SHMKV_VALUE_MAX_LIMIT };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		assert_geometry_sound(sizes[i]);
}

/* The block a value of @len bytes lands in, in the default store. */
static uint32_t class_of_value(size_t len, uint64_t *ref)
{
	char val[64], key[16];
	uint32_t cls = SHMKV__NO_CLASS;
	struct shmkv_block_shm *b;

	memset(val, 'v', sizeof(val));
	snprintf(key, sizeof(key), "k%zu", len);
	tu_assert_rc(shmkv_set(tu_kv, key, strlen(key), val, len, SHMKV_SET_PX,
			       100000, NULL),
		     1);
	*ref = shmkv__load_acquire(&tu_slot_of(tu_kv, key)->value);
	cr_assert_eq(VAL_KIND(*ref), VAL_BLOCK);
	b = shmkv__block_at(tu_kv, VAL_BLOCK_UNIT(*ref), &cls);
	cr_assert_not_null(b);
	cr_assert_eq(lines_touched((uint64_t)((unsigned char *)b - tu_kv->base),
				   sizeof(*b) + len),
		     1, "a %zu-byte value spans more than one line", len);
	return cls;
}

Test(blocks, values_of_16_to_40_bytes_take_one_line, .init = tu_setup)
{
	uint64_t ref;

	for (size_t len = 16; len <= 40; len++)
		cr_assert_eq(tu_kv->geo.class_size[class_of_value(len, &ref)],
			     64, "a %zu-byte value", len);
	cr_assert_eq(tu_kv->geo.class_size[class_of_value(8, &ref)],
		     SHMKV_BLOCK_MIN);
}

Test(blocks, one_read_copies_and_compares, .init = tu_setup)
{
	struct shmkv_block_view view;
	char buf[64];
	uint64_t ref;

	class_of_value(20, &ref);
	memset(buf, 0, sizeof(buf));
	tu_assert_rc(shmkv__block_read_cmp(tu_kv, ref, buf, sizeof(buf),
					   "vvvvvvvvvvvvvvvvvvvv", 20, &view),
		     0);
	cr_assert_eq(view.len, 20);
	cr_assert(view.equal);
	cr_assert_gt(view.deadline_ms, 0);
	cr_assert_eq(memcmp(buf, "vvvvvvvvvvvvvvvvvvvv", 20), 0);
	/* Unequal in length, in bytes; no compare asked; a short buffer. */
	tu_assert_rc(shmkv__block_read_cmp(tu_kv, ref, buf, 4,
					   "vvvvvvvvvvvvvvvvvvv", 19, &view),
		     0);
	cr_assert_not(view.equal);
	cr_assert_eq(view.len, 20);
	tu_assert_rc(shmkv__block_read_cmp(tu_kv, ref, NULL, 0,
					   "vvvvvvvvvvvvvvvvvvvw", 20, &view),
		     0);
	cr_assert_not(view.equal);
	tu_assert_rc(shmkv__block_read(tu_kv, ref, buf, sizeof(buf), &view), 0);
	cr_assert_not(view.equal);
	/* Another generation of the block: stale; a unit out of range. */
	tu_assert_rc(shmkv__block_read_cmp(tu_kv, ref + 1, buf, sizeof(buf),
					   NULL, 0, &view),
		     SHMKV__STALE);
	tu_assert_rc(shmkv__block_read_cmp(tu_kv,
					   VAL_BLOCK_WORD(SHMKV_UNITS_MAX - 1,
							  VAL_BLOCK_GEN(ref)),
					   buf, sizeof(buf), NULL, 0, &view),
		     -EBADMSG);
}
