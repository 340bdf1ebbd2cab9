/*
 * test_fast_races.c - the straight-line paths of the string commands
 * (strings.c) against the interleavings that would break them, forced with
 * pause points (src/fault.h): a child stops between its lookup and its load
 * ("fast_found") or between its load and its CAS ("fast_loaded") while the
 * parent, another process, changes the key. A lost race must end in the
 * right answer through the general path, never in an error, and never in
 * another key's value.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helpers/paused_child.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"
#include "helpers/value_blocks.h"

TestSuite(pausepoint_fast, .init = tu_setup, .fini = tu_teardown);

/* Values too long for "a"'s slot, in value blocks; told apart by their
 * first byte. */
#define BLOCK_HELLO "h" TU_BLOCK_TEXT
#define BLOCK_OTHER "o" TU_BLOCK_TEXT
#define BLOCK_ZZZ   "z" TU_BLOCK_TEXT
#define BLOCK_CHILD "c" TU_BLOCK_TEXT

/* What a child does on a fresh handle of tu_name. */
enum fast_call {
	GET_A,
	GET_A_TAIL,
	SET_A_5,
	INCR_A,
	SETNX_A_7,
	GETSET_A_5,
	DELIFEQ_A_1,
	SET_A_STRING,
	SET_A_LONG,
	SETNX_A_STRING,
	DEL_A,
	DELIFEQ_A_HELLO,
	DELIFEQ_A_TOKEN,
};

static int fast_call(void *arg)
{
	enum fast_call call = *(const enum fast_call *)arg;
	struct shmkv_value v = tu_value(256);
	shmkv_t *kv;
	int64_t n = 0;
	int rc;

	if (shmkv_open(tu_name, 0, &kv) != 0)
		return -1000;
	switch (call) {
	case GET_A:
	case GETSET_A_5:
		rc = call == GET_A ? shmkv_get(kv, LIT("a"), &v)
				   : shmkv_getset(kv, LIT("a"), LIT("5"), &v);
		/* Which value it read (by its first byte), folded into the
		 * result. */
		if (rc == 1)
			rc = v.len >= 1 ? 100 + ((const char *)v.buf)[0]
					: -1001;
		break;
	case GET_A_TAIL:
		/* Its length and last byte: a torn read shows in either. */
		rc = shmkv_get(kv, LIT("a"), &v);
		if (rc == 1)
			rc = v.len >= 1
				     ? (int)v.len * 1000 +
					       ((const char *)v.buf)[v.len - 1]
				     : -1001;
		break;
	case SET_A_5:
		rc = shmkv_set(kv, LIT("a"), LIT("5"), 0, 0, NULL);
		break;
	case INCR_A:
		rc = shmkv_incr(kv, LIT("a"), &n);
		rc = rc == 0 ? (int)n : rc;
		break;
	case DELIFEQ_A_1:
		rc = shmkv_delifeq(kv, LIT("a"), LIT("1"));
		break;
	case SET_A_STRING:
		rc = shmkv_set(kv, LIT("a"), LIT("child-16-bytes!!"), 0, 0,
			       NULL);
		break;
	case SET_A_LONG:
		rc = shmkv_set(kv, LIT("a"), LIT(BLOCK_CHILD), 0, 0, NULL);
		break;
	case SETNX_A_STRING:
		rc = shmkv_setnx(kv, LIT("a"), LIT("child-16-bytes!!"));
		break;
	case DEL_A:
		rc = shmkv_del(kv, LIT("a"));
		break;
	case DELIFEQ_A_HELLO:
		rc = shmkv_delifeq(kv, LIT("a"), LIT(BLOCK_HELLO));
		break;
	case DELIFEQ_A_TOKEN:
		rc = shmkv_delifeq(kv, LIT("a"), LIT("token-in-a-slot"));
		break;
	default:
		rc = shmkv_setnx(kv, LIT("a"), LIT("7"));
	}
	shmkv_close(kv);
	return rc;
}

static const enum fast_call calls[] = {
	GET_A,		 GET_A_TAIL,	 SET_A_5,     INCR_A,
	SETNX_A_7,	 GETSET_A_5,	 DELIFEQ_A_1, SET_A_STRING,
	SET_A_LONG,	 SETNX_A_STRING, DEL_A,	      DELIFEQ_A_HELLO,
	DELIFEQ_A_TOKEN,
};

static struct tu_child start(enum fast_call call, const char *at, int pauses)
{
	return tu_child_start(fast_call, (void *)&calls[call], at, pauses);
}

/* "a" holds @before; @call stops between its load and its CAS while the
 * parent SETs "a" to @during. Return: the child's result. */
static int lose_one_cas(enum fast_call call, const char *before,
			const char *during)
{
	struct tu_child c;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("a"), before, strlen(before), 0, 0, NULL),
		1);
	c = start(call, "fast_loaded", 1);
	tu_child_await(&c);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("a"), during, strlen(during), 0, 0, NULL),
		1);
	tu_child_let_go(&c);
	return tu_child_finish(&c);
}

Test(pausepoint_fast,
     a_get_whose_slot_comes_back_with_the_same_tag_bits_reads_absent)
{
	struct shmkv_slot_ref a;
	struct tu_child c;
	char b[2][32];
	uint32_t slot;
	uint64_t w;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("1"), 0, 0, NULL), 1);
	a = tu_slot_ref(tu_kv, "a");
	slot = a.index;
	c = start(GET_A, "fast_found", 1);
	tu_child_await(&c);
	/* The child found "a" in @slot. Give the slot to other keys until its
	 * version has the same low 14 bits (all an inline integer's value
	 * word carries) and it holds the integer 2 for another key: only the
	 * state word's full version tells the child it is not "a" any more. */
	tu_key_homed_at(tu_kv, slot, 0, b[0]);
	tu_key_homed_at(tu_kv, slot, 1, b[1]);
	tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
	for (int i = 0;; i++) {
		const char *k = b[i & 1];

		tu_assert_rc(
			shmkv_set(tu_kv, k, strlen(k), LIT("2"), 0, 0, NULL),
			1);
		w = shmkv__load_acquire(&shmkv__slot(shmkv__table_cmd(tu_kv), slot)->state);
		if (SLOT_STATE(w) == SLOT_MEMBER &&
		    SLOT_VERSION(w) != SLOT_VERSION(a.state) &&
		    ((SLOT_VERSION(w) ^ SLOT_VERSION(a.state)) & VAL_INT_TAG_MASK) == 0)
			break;
		tu_assert_rc(shmkv_del(tu_kv, k, strlen(k)), 1);
		cr_assert_lt(i, 1 << 20, "the slot never came back");
	}
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 0);
}

Test(pausepoint_fast, a_get_whose_block_is_freed_under_it_never_reads_another)
{
	struct shmkv_block_shm *hello;
	struct tu_child c;
	uint64_t w, tag;
	int rc;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT(BLOCK_HELLO), 0, 0, NULL),
		     1);
	w = shmkv__load_acquire(&tu_slot_of(tu_kv, "a")->value);
	hello = shmkv__block(tu_kv, w);
	cr_assert_not_null(hello);
	c = start(GET_A, "fast_loaded", 1);
	tu_child_await(&c);
	/* The child holds the value word naming "hello"'s block. That block is
	 * freed, then "b"'s values go round the page until one lands in it. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT(BLOCK_OTHER), 0, 0, NULL),
		     1);
	for (int i = 0;; i++) {
		tu_assert_rc(
			shmkv_set(tu_kv, LIT("b"), LIT(BLOCK_ZZZ), 0, 0, NULL),
			1);
		tag = shmkv__load_acquire(&hello->tag);
		if (BLK_USED(tag) && BLK_GEN(tag) != VAL_BLOCK_GEN(w))
			break;
		cr_assert_lt(i, 1 << 20, "the block was never reused");
	}
	tu_child_let_go(&c);
	rc = tu_child_finish(&c);
	/* Either value "a" had during the GET is linearizable; b's never. */
	cr_assert(rc == 100 + 'h' || rc == 100 + 'o', "GET read %d", rc);
}

/* The same for a string in the slot: its bytes are rewritten (by a value
 * of another length, at the end the first one started from) between the
 * child's load of the word and its copy. */
Test(pausepoint_fast, a_get_whose_inline_bytes_are_rewritten_never_reads_them)
{
	struct shmkv_slot_shm *s;
	struct tu_child c;
	int rc;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("hello"), 0, 0, NULL), 1);
	s = tu_slot_of(tu_kv, "a");
	cr_assert_eq(VAL_KIND(s->value), VAL_INLINE);
	c = start(GET_A_TAIL, "fast_loaded", 1);
	tu_child_await(&c);
	/* "other" goes beside "hello"; "zz" over hello's last two bytes. */
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("other"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("zz"), 0, 0, NULL), 1);
	cr_assert_eq(VAL_KIND(s->value), VAL_INLINE);
	cr_assert_eq(VAL_INLINE_OFF(s->value), 0, "zz is not over hello");
	tu_child_let_go(&c);
	rc = tu_child_finish(&c);
	/* hello, other or zz; never "helzz", the bytes the child's word
	 * named when it copied them. */
	cr_assert(rc == 5000 + 'o' || rc == 5000 + 'r' || rc == 2000 + 'z',
		  "GET read %d bytes ending in '%c'", rc / 1000, rc % 1000);
}

/* "a" holds a block; a child SETs it to a 16-byte string and stops with
 * the slot's area claimed and the string staged, before its CAS. */
static struct tu_child pause_inline_writer(void)
{
	struct tu_child c;

	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT(BLOCK_HELLO), 0, 0, NULL),
		     1);
	c = start(SET_A_STRING, "fast_loaded", 1);
	tu_child_await(&c);
	cr_assert_neq(SLOT_AREA_TID(tu_slot_of(tu_kv, "a")->area), 0,
		      "the child holds no claim");
	return c;
}

/* A writer that holds the area's claim makes nobody wait: another SET
 * stores a block meanwhile, and the paused writer, losing its CAS, tries
 * again and lands in the slot. Nothing leaks. */
Test(pausepoint_fast, a_paused_inline_writer_sends_other_writers_to_a_block)
{
	struct shmkv_slot_shm *s;
	struct shmkv_stats st;
	struct tu_child c;

	NEED_PAUSE_POINTS();
	c = pause_inline_writer();
	s = tu_slot_of(tu_kv, "a");
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("a"), LIT("parent-inline"), 0, 0, NULL),
		1);
	cr_assert_eq(VAL_KIND(s->value), VAL_BLOCK);
	tu_assert_get_str(tu_kv, "a", "parent-inline");
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 1);
	tu_assert_get_str(tu_kv, "a", "child-16-bytes!!");
	cr_assert_eq(VAL_KIND(s->value), VAL_INLINE);
	cr_assert_eq(SLOT_AREA_TID(s->area), 0);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 0, "%llu blocks in use",
		     (unsigned long long)mp_blocks_used(&st));
}

/* A writer paused with its bytes staged, while its key is deleted and
 * another key homed on the same slot is inserted: the insert may not
 * write its key where the writer is about to write (the slot is skipped,
 * as a live process's claimed one), and the writer, losing its CAS, sets
 * its key afresh. Both keys read back whole. */
Test(pausepoint_fast, an_insert_skips_the_slot_of_a_paused_inline_writer)
{
	struct shmkv_slot_ref a;
	struct tu_child c;
	char other[32];
	uint64_t w;

	NEED_PAUSE_POINTS();
	c = pause_inline_writer();
	a = tu_slot_ref(tu_kv, "a");
	tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
	tu_key_homed_at(tu_kv, a.index, 0, other);
	tu_assert_rc(shmkv_set(tu_kv, other, strlen(other),
			       LIT("a value for the other key"), 0, 0, NULL),
		     1);
	cr_assert_neq(tu_slot_ref(tu_kv, other).index, a.index,
		      "the insert took the slot the writer is writing");
	w = shmkv__load_acquire(&shmkv__slot(shmkv__table_cmd(tu_kv), a.index)->state);
	cr_assert_neq(SLOT_STATE(w), SLOT_MEMBER);
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 1);
	tu_assert_get_str(tu_kv, "a", "child-16-bytes!!");
	tu_assert_get(tu_kv, other, strlen(other),
		      LIT("a value for the other key"));
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(pausepoint_fast, a_set_whose_integer_became_a_block_stores_and_frees_it)
{
	struct shmkv_stats st;

	NEED_PAUSE_POINTS();
	tu_assert_rc(lose_one_cas(SET_A_5, "1", BLOCK_HELLO), 1);
	tu_assert_get(tu_kv, LIT("a"), "5", 1);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 0, "the replaced block leaked");
}

/* DEL of a block, paused between reading the block's header and its CAS
 * while the parent replaces the value with another block: the DEL
 * deletes the new value (it comes after the SET), and neither block leaks
 * nor is freed twice. */
Test(pausepoint_fast, a_del_whose_block_is_replaced_deletes_the_new_one)
{
	struct shmkv_stats st;

	NEED_PAUSE_POINTS();
	tu_assert_rc(lose_one_cas(DEL_A, BLOCK_HELLO, BLOCK_OTHER), 1);
	tu_assert_missing_str(tu_kv, "a");
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 0, "a block leaked");
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

/* The same, the parent deleting the key meanwhile: one DEL answers 1,
 * the other 0. */
Test(pausepoint_fast, a_del_that_loses_to_another_del_says_zero)
{
	struct tu_child c;
	struct shmkv_stats st;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT(BLOCK_HELLO), 0, 0, NULL),
		     1);
	c = start(DEL_A, "fast_loaded", 1);
	tu_child_await(&c);
	tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 0);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 0, "a block leaked");
}

/* A token-based release (DELIFEQ of a string), paused between its compare
 * and its CAS while the value is replaced: by another token, it keeps the
 * key (the lock was taken over); by the same bytes in a new block, it
 * deletes it. In a block or in the slot; no block leaks. */
Test(pausepoint_fast, a_string_delifeq_decides_on_the_value_its_cas_replaces)
{
	struct shmkv_stats st;

	NEED_PAUSE_POINTS();
	tu_assert_rc(lose_one_cas(DELIFEQ_A_HELLO, BLOCK_HELLO, BLOCK_OTHER),
		     0);
	tu_assert_get_str(tu_kv, "a", BLOCK_OTHER);
	tu_assert_rc(lose_one_cas(DELIFEQ_A_HELLO, BLOCK_HELLO, BLOCK_HELLO),
		     1);
	tu_assert_missing_str(tu_kv, "a");
	tu_assert_rc(lose_one_cas(DELIFEQ_A_TOKEN, "token-in-a-slot",
				  "token-in-a-sloT"),
		     0);
	tu_assert_get_str(tu_kv, "a", "token-in-a-sloT");
	tu_assert_rc(lose_one_cas(DELIFEQ_A_TOKEN, "token-in-a-slot",
				  "token-in-a-slot"),
		     1);
	tu_assert_missing_str(tu_kv, "a");
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 0, "a block leaked");
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}

Test(pausepoint_fast, an_incr_that_loses_every_fast_cas_still_counts_once)
{
	enum { PAUSES = 64 }; /* more than the fast path ever tries */
	struct tu_child c;
	char want[8];
	int lost = 0;
	int64_t n;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("10"), 0, 0, NULL), 1);
	c = start(INCR_A, "fast_loaded", PAUSES);
	/* Each parent INCR lands between the child's load and its CAS, until
	 * the child gives up the fast path (it stops pausing there). */
	while (lost < PAUSES && tu_child_paused(&c)) {
		tu_assert_ok(shmkv_incr(tu_kv, LIT("a"), &n));
		tu_child_let_go(&c);
		lost++;
	}
	cr_assert(lost > 0 && lost < PAUSES, "%d fast CASes lost", lost);
	/* The child's own increment came last, through the general path. */
	tu_assert_rc(tu_child_finish(&c), 10 + lost + 1);
	snprintf(want, sizeof(want), "%d", 10 + lost + 1);
	tu_assert_get_str(tu_kv, "a", want);
}

Test(pausepoint_fast, a_setnx_that_loses_to_another_setnx_reports_exists)
{
	struct tu_child c;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("1"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
	/* Both see "a" absent; the parent's SETNX lands first. Two winners
	 * would be two holders of a lock. */
	c = start(SETNX_A_7, "fast_loaded", 1);
	tu_child_await(&c);
	tu_assert_rc(shmkv_setnx(tu_kv, LIT("a"), LIT("9")), 1);
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 0);
	tu_assert_get(tu_kv, LIT("a"), "9", 1);
}

/* The same with strings, which go into the slot: the loser's bytes never
 * show, whether the winner's value is a string in the slot or a block. */
Test(pausepoint_fast, a_string_setnx_that_loses_its_cas_reports_exists)
{
	static const char *const winners[] = { "parent-string", BLOCK_HELLO };

	NEED_PAUSE_POINTS();
	for (int i = 0; i < 2; i++) {
		struct tu_child c;

		tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT("1"), 0, 0, NULL),
			     1);
		tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
		c = start(SETNX_A_STRING, "fast_loaded", 1);
		tu_child_await(&c);
		tu_assert_rc(shmkv_setnx(tu_kv, LIT("a"), winners[i],
					 strlen(winners[i])),
			     1);
		tu_child_let_go(&c);
		cr_assert_eq(tu_child_finish(&c), 0, "winner %d", i);
		tu_assert_get_str(tu_kv, "a", winners[i]);
	}
}

Test(pausepoint_fast, a_getset_that_loses_its_cas_replies_the_value_it_replaced)
{
	NEED_PAUSE_POINTS();
	/* Not the 1 it loaded first: the 8 its CAS replaced. */
	tu_assert_rc(lose_one_cas(GETSET_A_5, "1", "8"), 100 + '8');
	tu_assert_get_str(tu_kv, "a", "5");
}

Test(pausepoint_fast,
     a_delifeq_whose_value_changed_before_its_cas_keeps_the_key)
{
	NEED_PAUSE_POINTS();
	/* A lock released by its holder (1) after it was taken over (2). */
	tu_assert_rc(lose_one_cas(DELIFEQ_A_1, "1", "2"), 0);
	tu_assert_get_str(tu_kv, "a", "2");
}

Test(pausepoint_fast,
     a_string_set_that_loses_its_cas_stores_once_and_leaks_nothing)
{
	enum { PAUSES = 64 };
	struct shmkv_stats st;
	struct tu_child c;
	int lost = 0;

	NEED_PAUSE_POINTS();
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT(BLOCK_HELLO), 0, 0, NULL),
		     1);
	/* Each time the child has its block built and is about to publish
	 * it, the parent replaces the block it would replace. */
	c = start(SET_A_LONG, "fast_loaded", PAUSES);
	while (lost < PAUSES && tu_child_paused(&c)) {
		tu_assert_rc(shmkv_set(tu_kv, LIT("a"),
				       lost & 1 ? BLOCK_OTHER : BLOCK_ZZZ,
				       strlen(BLOCK_ZZZ), 0, 0, NULL),
			     1);
		tu_child_let_go(&c);
		lost++;
	}
	cr_assert(lost > 0 && lost < PAUSES, "%d CASes lost", lost);
	tu_assert_rc(tu_child_finish(&c), 1);
	tu_assert_get_str(tu_kv, "a", BLOCK_CHILD);
	/* One value, one block: neither the child's unpublished blocks nor
	 * the replaced ones stay allocated (a cached free block is free). */
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(mp_blocks_used(&st), 1, "%llu blocks in use",
		     (unsigned long long)mp_blocks_used(&st));
}
