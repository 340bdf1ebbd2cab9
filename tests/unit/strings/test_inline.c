/*
 * test_inline.c - where a string lives (README "Strings in the slot"):
 * in its slot when it fits beside its key and has no TTL, else in a value
 * block; and what a rewrite does in slots of one and of two lines. Each
 * answer is read back, and the value word's kind and region are asserted
 * (white box), since that is the claim under test.
 */
#include "helpers/slot_of.h"
#include "helpers/testutil.h"
#include "helpers/value_blocks.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

TestSuite(inline_strings, .init = tu_setup, .fini = tu_teardown);

#define KEY "key-12-bytes" /* 12 bytes, as the benchmarks' keys */

static void set_on(shmkv_t *kv, const char *val, size_t len)
{
	tu_assert_rc(shmkv_set(kv, LIT(KEY), val, len, 0, 0, NULL), 1);
	tu_assert_get(kv, LIT(KEY), val, len);
}

static uint64_t word_of(shmkv_t *kv)
{
	return tu_slot_of(kv, KEY)->value;
}

static uint64_t blocks_used(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return mp_blocks_used(&st);
}

/* A store of 64-byte slots: key_max 16. */
static shmkv_t *one_line_store(void)
{
	struct shmkv_config cfg = tu_config(1024, 16, 0, 0);
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(&cfg, name);

	cr_assert_eq(kv->geo.slot_size, 64);
	return kv;
}

Test(inline_strings, a_rewrite_in_a_one_line_slot_alternates_with_a_block)
{
	shmkv_t *kv = one_line_store();

	/* 64 - 36 - 12: room for one 16-byte string. */
	set_on(kv, LIT("value-one-16byte"));
	cr_assert_eq(VAL_KIND(word_of(kv)), VAL_INLINE);
	set_on(kv, LIT("value-two-16byte"));
	cr_assert_eq(VAL_KIND(word_of(kv)), VAL_BLOCK, "over its own bytes");
	set_on(kv, LIT("value-3ee-16byte"));
	cr_assert_eq(VAL_KIND(word_of(kv)), VAL_INLINE);
	cr_assert_eq(blocks_used(kv), 0, "the block was not freed");
	shmkv_close(kv);
}

/* SETNX of a string: a key whose value lives in its slot or its word
 * exists (neither has a TTL); an absent key takes the string into its
 * slot; an expired block value is absent (the general path decides). */
Test(inline_strings, setnx_of_a_string_answers_from_the_word_and_lands_inline)
{
	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("first-string")), 1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("second-string")), 0);
	tu_assert_get_str(tu_kv, KEY, "first-string");
	set_on(tu_kv, LIT("42"));
	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("second-string")), 0);
	tu_assert_get_str(tu_kv, KEY, "42");
	tu_assert_rc(shmkv_del(tu_kv, LIT(KEY)), 1);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("third-string")), 1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	tu_assert_get_str(tu_kv, KEY, "third-string");
	/* A short string with a TTL is a block: expired, it is absent. */
	tu_assert_rc(
		shmkv_set(tu_kv, LIT(KEY), LIT("short"), SHMKV_SET_PX, 1, NULL),
		1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_BLOCK);
	usleep(5000);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("fourth-string")), 1);
	tu_assert_get_str(tu_kv, KEY, "fourth-string");
	/* And a live one exists. */
	tu_assert_rc(shmkv_set(tu_kv, LIT(KEY), LIT("short"), SHMKV_SET_PX,
			       100000, NULL),
		     1);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("fifth-string")), 0);
	tu_assert_get_str(tu_kv, KEY, "short");
}

Test(inline_strings, rewrites_in_a_two_line_slot_alternate_ends)
{
	uint64_t w;

	/* tu_kv: key_max 64, 128-byte slots: 80 bytes of room. */
	cr_assert_eq(tu_kv->geo.slot_size, 128);
	for (int i = 0; i < 4; i++) {
		char v[17];

		snprintf(v, sizeof(v), "value-%d-16-bytes", i);
		set_on(tu_kv, v, 16);
		w = word_of(tu_kv);
		cr_assert_eq(VAL_KIND(w), VAL_INLINE, "write %d", i);
		cr_assert_eq(VAL_INLINE_OFF(w), i % 2 ? 16u : 0u, "write %d",
			     i);
	}
	cr_assert_eq(blocks_used(tu_kv), 0);
}

Test(inline_strings, a_string_fills_the_room_and_one_byte_more_is_a_block)
{
	uint32_t room = tu_kv->geo.slot_size - SHMKV_SLOT_FIXED - strlen(KEY);
	char v[128];

	memset(v, 'x', sizeof(v));
	set_on(tu_kv, v, room + 1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_BLOCK);
	set_on(tu_kv, v, room);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	cr_assert_eq(VAL_INLINE_LEN(word_of(tu_kv)), room);
	set_on(tu_kv, "", 0);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE, "the empty string");
	cr_assert_eq(blocks_used(tu_kv), 0);
}

Test(inline_strings, a_ttl_moves_a_string_to_a_block_and_persist_back)
{
	int64_t ms = 0;

	set_on(tu_kv, LIT("short string"));
	tu_assert_rc(shmkv_expire(tu_kv, LIT(KEY), SHMKV_EXPIRE_SEC, 0, 3600),
		     1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_BLOCK, "a TTL needs one");
	tu_assert_ok(shmkv_pttl(tu_kv, LIT(KEY), &ms));
	cr_assert_gt(ms, 0);
	tu_assert_rc(shmkv_persist(tu_kv, LIT(KEY)), 1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	tu_assert_get(tu_kv, LIT(KEY), LIT("short string"));
	cr_assert_eq(blocks_used(tu_kv), 0);
}

/* The engine's writes (options, GETSET, SETNX) store inline as SET does,
 * and read what they replace from the slot. */
Test(inline_strings, the_engines_writes_store_in_the_slot_too)
{
	struct shmkv_value old = tu_value(64);

	tu_assert_rc(shmkv_setnx(tu_kv, LIT(KEY), LIT("first")), 1);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	tu_assert_rc(shmkv_getset(tu_kv, LIT(KEY), LIT("second"), &old), 1);
	tu_assert_value(old, "first", 5);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	tu_assert_rc(shmkv_set(tu_kv, LIT(KEY), LIT("third"), SHMKV_SET_GET, 0,
			       &old),
		     1);
	tu_assert_value(old, "second", 6);
	cr_assert_eq(VAL_KIND(word_of(tu_kv)), VAL_INLINE);
	tu_assert_get(tu_kv, LIT(KEY), LIT("third"));
	tu_assert_rc(shmkv_del(tu_kv, LIT(KEY)), 1);
	tu_assert_missing(tu_kv, LIT(KEY));
}
