/*
 * test_migrate_pause.c - the dangerous interleavings of the table's online
 * growth (tests/model/migration-design.md §4-§7), forced in real processes
 * with pause points (src/fault.h): a child stops at a named step of a
 * command, this process (another one) runs a growth or part of one, and
 * the child goes on from where it stopped.
 *
 *  - A writer stopped between loading a value word and its CAS while a
 *    whole growth runs (its old table given back): its write lands, in the
 *    new table, and no other write is lost (§5, §7 rule 1).
 *  - A copier stopped before its copy while the key's slot is moved by
 *    someone else and the key deleted in the new table (its slot there
 *    recycled): the key does not come back (§4, "The copy").
 *  - A reader stopped in the middle of its lookup across the growth's end:
 *    it finds the key, never answers "absent" from the given-back table
 *    (§7 rule 3).
 *  - An inserter stopped after claiming a slot across a whole growth: its
 *    key is inserted exactly once, in the new table (§4 seals, §7 rule 2).
 *
 * Pause points exist only in a FAULT=1 build; elsewhere every test here
 * is skipped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helpers/paused_child.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"
#include "lookup.h"
#include "migrate.h"

TestSuite(pausepoint_migrate, .fini = tu_teardown);

#define CLASSES 7u  /* value_max 1024: one page per class */
#define OTHERS	40u /* keys written around the interleaving */
#define BLOCK_A "a" TU_BLOCK_TEXT
#define BLOCK_C "c" TU_BLOCK_TEXT

/* A store of @slots slots that may grow (tu_kv, tu_name). */
static void make_store(uint32_t slots)
{
	struct shmkv_config cfg = tu_config(slots, TU_KEY_MAX, TU_VALUE_MAX,
					    (uint64_t)CLASSES * SHMKV_PAGE_MIN);

	tu_kv = tu_create_growing(&cfg, tu_name);
}

static uint64_t life_of(shmkv_t *kv)
{
	/* Relaxed: only this process writes while the child is stopped. */
	return shmkv__load_relaxed(
		&((struct shmkv_header_shm *)kv->base)->life);
}

/* Starts a growth and does none of it. */
static void grow_start(void)
{
	uint64_t life = life_of(tu_kv);

	cr_assert_eq(SHMKV_LIFE_GEN(life) & 1, 0, "a growth runs already");
	tu_assert_ok(shmkv__grow_start(tu_kv, life));
	cr_assert_eq(SHMKV_LIFE_GEN(life_of(tu_kv)), SHMKV_LIFE_GEN(life) + 1);
}

/* A whole growth, to its end (the old table given back). */
static void grow_whole(void)
{
	struct shmkv_stats st;
	uint64_t growths;

	tu_assert_ok(shmkv_stats(tu_kv, &st));
	growths = st.growths;
	grow_start();
	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.growths, growths + 1);
	cr_assert_eq(st.growing_from, 0);
}

/* Moves @key's old window (its slot frozen, copied and MOVED), as a
 * writer of the key would, and nothing else of the growth under way. */
static void move_window_of(const char *key)
{
	struct shmkv_tables tabs;
	struct shmkv_key k;

	cr_assert_eq(shmkv__tables(tu_kv, &tabs), SHMKV__GROWING);
	shmkv__key_init(tu_kv, tabs.old, &k, key, strlen(key));
	tu_assert_ok(shmkv__migrate_window(tu_kv, &tabs, &k));
}

static void set_others(const char *prefix, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char key[32];
		size_t kl = tu_fmt(key, sizeof(key), prefix, i);

		tu_assert_rc(shmkv_set(tu_kv, key, kl, key, kl, 0, 0, NULL), 1);
	}
}

static void assert_others(const char *prefix, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		char key[32];
		size_t kl = tu_fmt(key, sizeof(key), prefix, i);

		tu_assert_get(tu_kv, key, kl, key, kl);
	}
}

/* MEMBER slots of the table commands use now that hold @key. */
static unsigned copies_of(const char *key)
{
	const struct shmkv_table *t = shmkv__table_cmd(tu_kv);
	struct shmkv_key k;
	unsigned n = 0;

	shmkv__key_init(tu_kv, t, &k, key, strlen(key));
	for (uint32_t i = 0; i <= t->mask; i++) {
		uint64_t w;

		n += shmkv__slot_holds(i, &k, 1u << SLOT_MEMBER, &w) == 1;
	}
	return n;
}

/* Did the child go on in a table given back while it was stopped? */
enum went_on { LIVE_TABLE, GIVEN_BACK };

/* The store after the interleaving: checks clean, grows no more, and the
 * file holds what the store uses, and at most the pages a child that
 * went on in a given-back table faulted back in: two (its key's home slot
 * and the slot it worked on may be a page apart; §7 accepts them: the
 * next growth's end gives them back again). */
static void assert_sound(enum went_on went_on)
{
	uint64_t slack = went_on == GIVEN_BACK ? 2 * 4096 : 0, have;
	struct shmkv_stats st;

	tu_assert_ok(shmkv_maintain(tu_kv));
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.growing_from, 0);
	have = (uint64_t)tu_shm_allocated(tu_name);
	cr_assert(have >= st.memory_bytes && have <= st.memory_bytes + slack,
		  "%llu bytes allocated, the store uses %llu (slack %llu)",
		  (unsigned long long)have, (unsigned long long)st.memory_bytes,
		  (unsigned long long)slack);
}

/*
 * What a child does, on a handle of its own.
 */

/* SET_B's key (set before the child is forked). */
static char b_key[32];
enum call {
	SET_A_5,     /* fast path: inline integer over an integer */
	SET_A_BLOCK, /* fast path: a block over a block */
	EXPIRE_A,    /* the engine: the value copied with a TTL */
	GET_A,	     /* its value's first byte and length, folded */
	SET_N,	     /* an insert of a new key */
	SET_B,	     /* a SET of b_key, whose old window holds "a" */
};

static int child_call(void *arg)
{
	enum call call = *(const enum call *)arg;
	struct shmkv_value v = tu_value(256);
	shmkv_t *kv;
	int rc;

	if (shmkv_open(tu_name, 0, &kv) != 0)
		return -1000;
	switch (call) {
	case SET_A_5:
		rc = shmkv_set(kv, LIT("a"), LIT("5"), 0, 0, NULL);
		break;
	case SET_A_BLOCK:
		rc = shmkv_set(kv, LIT("a"), LIT(BLOCK_C), 0, 0, NULL);
		break;
	case EXPIRE_A:
		rc = shmkv_expire(kv, LIT("a"), SHMKV_EXPIRE_SEC, 0, 3600);
		break;
	case GET_A:
		rc = shmkv_get(kv, LIT("a"), &v);
		if (rc == 1)
			rc = v.len >= 1 ? (int)v.len * 1000 +
						  ((const char *)v.buf)[0]
					: -1001;
		break;
	case SET_N:
		rc = shmkv_set(kv, LIT("n"), LIT(BLOCK_C), 0, 0, NULL);
		break;
	default:
		rc = shmkv_set(kv, b_key, strlen(b_key), LIT("b"), 0, 0, NULL);
	}
	shmkv_close(kv);
	return rc;
}

static const enum call calls[] = { SET_A_5, SET_A_BLOCK, EXPIRE_A,
				   GET_A,   SET_N,	 SET_B };

static struct tu_child start(enum call call, const char *at)
{
	return tu_child_start(child_call, (void *)&calls[call], at, 1);
}

/*
 * (a) A writer stopped between its load and its CAS.
 */

/* "a" holds @before; the child's @call stops at @at; this process writes
 * other keys, runs a whole growth (or, unless @whole, moves only "a"'s
 * window: the child then meets a frozen word in a live table); the
 * child's write must land in the new table, and nothing else be lost,
 * nor the writes after it. */
static void writer_across(enum call call, const char *at, const char *before,
			  const char *want, bool whole)
{
	struct tu_child c;

	make_store(whole ? 64 : 1024);
	set_others("o", OTHERS);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("a"), before, strlen(before), 0, 0, NULL),
		1);
	c = start(call, at);
	tu_child_await(&c);
	set_others("p", OTHERS);
	if (whole) {
		grow_whole();
	} else {
		grow_start();
		move_window_of("a");
	}
	cr_assert_eq(SHMKV_LIFE_GEN(life_of(tu_kv)) & 1, whole ? 0 : 1);
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 1);
	set_others("q", OTHERS);
	tu_assert_get(tu_kv, LIT("a"), want, strlen(want));
	cr_assert_eq(copies_of("a"), 1);
	assert_others("o", OTHERS);
	assert_others("p", OTHERS);
	assert_others("q", OTHERS);
	assert_sound(whole ? GIVEN_BACK : LIVE_TABLE);
	tu_assert_get(tu_kv, LIT("a"), want, strlen(want));
}

Test(pausepoint_migrate,
     an_integer_set_stopped_before_its_cas_across_a_whole_growth_lands)
{
	NEED_PAUSE_POINTS();
	writer_across(SET_A_5, "fast_loaded", "1", "5", true);
}

Test(pausepoint_migrate,
     an_integer_set_stopped_before_its_cas_on_a_frozen_word_lands)
{
	NEED_PAUSE_POINTS();
	writer_across(SET_A_5, "fast_loaded", "1", "5", false);
}

Test(pausepoint_migrate,
     a_block_set_stopped_before_its_cas_across_a_whole_growth_lands)
{
	NEED_PAUSE_POINTS();
	writer_across(SET_A_BLOCK, "fast_loaded", BLOCK_A, BLOCK_C, true);
}

Test(pausepoint_migrate,
     a_block_set_stopped_before_its_cas_on_a_frozen_word_lands)
{
	NEED_PAUSE_POINTS();
	writer_across(SET_A_BLOCK, "fast_loaded", BLOCK_A, BLOCK_C, false);
}

/* The engine's way (EXPIRE copies the value into a block with the
 * deadline): its new block was sealed naming the old slot; the retry in
 * the new table must name the new one (check verifies every block's
 * back-pointer). */
Test(pausepoint_migrate,
     an_engine_set_stopped_with_its_block_built_across_a_whole_growth_lands)
{
	NEED_PAUSE_POINTS();
	writer_across(EXPIRE_A, "engine_built", BLOCK_A, BLOCK_A, true);
}

Test(pausepoint_migrate,
     an_engine_set_stopped_with_its_block_built_on_a_frozen_word_lands)
{
	NEED_PAUSE_POINTS();
	writer_across(EXPIRE_A, "engine_built", BLOCK_A, BLOCK_A, false);
}

/*
 * (b) A copier stopped before its copy (after checking that the old slot
 * is still unmoved, before finding the key's slot in the new table).
 */

/* The slot "a" is in, in the table commands use now, given to another
 * key: an insert homed there recycles the deleted key's slot. */
static void recycle_slot_of_deleted_a(uint32_t idx)
{
	char other[32];

	tu_key_homed_at(tu_kv, idx, 0, other);
	tu_assert_rc(
		shmkv_set(tu_kv, other, strlen(other), LIT("x"), 0, 0, NULL),
		1);
	cr_assert_eq(copies_of("a"), 0);
}

/* "a" holds @value, the only key with a value, in its home slot; the
 * growth has started, and the child, a SET of another key homed there,
 * stops in its copy of "a" (the first slot of its key's old window). This
 * process
 * moves "a"'s slot (a DEL of "a": the writer moves its key's window),
 * deletes the key in the new table, recycles its slot there and, if
 * @whole, ends the growth. The child's copy must not bring "a" back. */
static void copier_across(const char *value, bool whole)
{
	struct tu_child c;
	uint32_t idx, home;

	/* 1024 slots: each write here moves 2 chunks of 64 besides its
	 * key's window: the growth stays under way. */
	make_store(1024);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("a"), value, strlen(value), 0, 0, NULL),
		1);
	home = tu_slot_ref(tu_kv, "a").index;
	tu_key_homed_at(tu_kv, home, 0, b_key);
	grow_start();
	c = start(SET_B, "copy_checked");
	tu_child_await(&c);
	tu_assert_rc(shmkv_del(tu_kv, LIT("a")), 1);
	cr_assert_neq(SHMKV_LIFE_GEN(life_of(tu_kv)) & 1, 0,
		      "the growth ended too soon for this test");
	/* "a"'s slot in the new table: a MEMBER without a value now. */
	{
		struct shmkv_key k;
		struct shmkv_slot_ref ref;

		shmkv__key_init(tu_kv, shmkv__table_cmd(tu_kv), &k, "a", 1);
		cr_assert_eq(shmkv__lookup(tu_kv, &k, &ref), 1);
		idx = ref.index;
	}
	recycle_slot_of_deleted_a(idx);
	if (whole)
		tu_assert_ok(shmkv_maintain(tu_kv));
	cr_assert_eq(SHMKV_LIFE_GEN(life_of(tu_kv)) & 1, whole ? 0 : 1);
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 1);
	tu_assert_get(tu_kv, b_key, strlen(b_key), LIT("b"));
	set_others("p", OTHERS);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("a")), 0);
	cr_assert_eq(copies_of("a"), 0);
	assert_others("p", OTHERS);
	assert_sound(whole ? GIVEN_BACK : LIVE_TABLE);
	tu_assert_rc(shmkv_exists(tu_kv, LIT("a")), 0);
}

Test(pausepoint_migrate, a_late_copy_of_a_block_never_brings_a_deleted_key_back)
{
	NEED_PAUSE_POINTS();
	copier_across(BLOCK_A, false);
}

Test(pausepoint_migrate,
     a_late_copy_of_an_inline_string_never_brings_a_deleted_key_back)
{
	NEED_PAUSE_POINTS();
	copier_across("inline-a", false);
}

Test(pausepoint_migrate,
     a_late_copy_of_an_integer_never_brings_a_deleted_key_back)
{
	NEED_PAUSE_POINTS();
	copier_across("12345", false);
}

Test(pausepoint_migrate,
     a_copy_stopped_across_the_growths_end_never_brings_a_deleted_key_back)
{
	NEED_PAUSE_POINTS();
	copier_across(BLOCK_A, true);
}

Test(pausepoint_migrate,
     an_inline_copy_stopped_across_the_growths_end_never_brings_a_key_back)
{
	NEED_PAUSE_POINTS();
	copier_across("inline-a", true);
}

/*
 * (c) A reader stopped in the middle of its lookup: it has read the probe
 * bound and the first slot of the window (another key), not yet "a"'s.
 */

/* "a" one slot past its home, behind a key homed there. */
static void a_behind_a_neighbour(uint32_t slots)
{
	struct shmkv_key k;
	char other[32];

	make_store(slots);
	shmkv__key_init(tu_kv, shmkv__table_cmd(tu_kv), &k, "a", 1);
	tu_key_homed_at(tu_kv, k.home, 0, other);
	tu_assert_rc(
		shmkv_set(tu_kv, other, strlen(other), LIT("x"), 0, 0, NULL),
		1);
	tu_assert_rc(shmkv_set(tu_kv, LIT("a"), LIT(BLOCK_A), 0, 0, NULL), 1);
	cr_assert_neq(tu_slot_ref(tu_kv, "a").index, k.home);
}

static int reader_result(void)
{
	return (int)(sizeof(BLOCK_A) - 1) * 1000 + 'a';
}

/* The child's GET stops after the first slot of its window; this
 * process runs @growths whole growths (and, with @started, the child
 * began while one was under way: it reads the old table). */
static void reader_across(unsigned growths, bool started)
{
	struct tu_child c;

	a_behind_a_neighbour(64);
	if (started)
		grow_start();
	c = start(GET_A, "lookup_probed");
	tu_child_await(&c);
	if (started)
		tu_assert_ok(shmkv_maintain(tu_kv));
	for (unsigned g = 0; g < growths; g++)
		grow_whole();
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), reader_result());
	assert_sound(GIVEN_BACK);
}

Test(pausepoint_migrate, a_reader_stopped_across_the_growths_end_finds_the_key)
{
	NEED_PAUSE_POINTS();
	reader_across(1, false);
}

Test(pausepoint_migrate, a_reader_stopped_across_two_growths_finds_the_key)
{
	NEED_PAUSE_POINTS();
	reader_across(2, false);
}

Test(pausepoint_migrate,
     a_reader_of_the_old_table_stopped_across_the_growths_end_finds_the_key)
{
	NEED_PAUSE_POINTS();
	reader_across(0, true);
}

/*
 * (d) An inserter stopped after claiming a slot (BUSY, before it writes
 * the key).
 */

static void inserter_across(bool whole)
{
	struct tu_child c;

	make_store(whole ? 64 : 1024);
	set_others("o", OTHERS);
	c = start(SET_N, "slot_claimed");
	tu_child_await(&c);
	if (whole) {
		grow_whole();
	} else {
		grow_start();
		move_window_of("n"); /* seals the claimed slot */
	}
	cr_assert_eq(SHMKV_LIFE_GEN(life_of(tu_kv)) & 1, whole ? 0 : 1);
	tu_child_let_go(&c);
	tu_assert_rc(tu_child_finish(&c), 1);
	set_others("p", OTHERS);
	cr_assert_eq(copies_of("n"), 1);
	tu_assert_get(tu_kv, LIT("n"), LIT(BLOCK_C));
	assert_others("o", OTHERS);
	assert_others("p", OTHERS);
	assert_sound(whole ? GIVEN_BACK : LIVE_TABLE);
	cr_assert_eq(copies_of("n"), 1);
	tu_assert_get(tu_kv, LIT("n"), LIT(BLOCK_C));
}

Test(pausepoint_migrate,
     an_insert_stopped_after_its_claim_across_a_whole_growth_lands_once)
{
	NEED_PAUSE_POINTS();
	inserter_across(true);
}

Test(pausepoint_migrate,
     an_insert_stopped_after_its_claim_sealed_by_a_growth_lands_once)
{
	NEED_PAUSE_POINTS();
	inserter_across(false);
}
