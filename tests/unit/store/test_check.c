/*
 * test_check.c - shmkv_check(): a clean store passes, read-only and without
 * changing a byte; each kind of damage it promises to find is found and
 * described; garbage never crashes it; recover repairs what it reports.
 *
 * Damage is done through the test's own read-write mapping, reaching into
 * the layout with the internal headers.
 */
#include "helpers/rng.h"
#include "helpers/slot_of.h"
#include "helpers/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "lookup.h"

TestSuite(check, .init = tu_setup, .fini = tu_teardown);

/* What the callback was told. */
struct probs {
	int calls;     /* problems described */
	int leftovers; /* "leftover: " lines, which are not problems */
	char text[16384];
	size_t len;
};

static void collect(const char *problem, void *arg)
{
	struct probs *p = arg;
	int n = snprintf(p->text + p->len, sizeof(p->text) - p->len, "%s\n",
			 problem);

	if (strncmp(problem, "leftover: ", 10) == 0)
		p->leftovers++;
	else
		p->calls++;
	if (n > 0 && p->len + (size_t)n < sizeof(p->text))
		p->len += (size_t)n;
}

static int run_check(shmkv_t *kv, struct probs *p)
{
	memset(p, 0, sizeof(*p));
	return shmkv_check(kv, collect, p);
}

/* The check finds at least one problem and some report contains @what. */
#define assert_found(what)                                                     \
	do {                                                                   \
		struct probs p_;                                               \
		int n_ = run_check(tu_kv, &p_);                                \
		cr_assert_gt(n_, 0, "no problem found, expected \"%s\"",       \
			     (what));                                          \
		cr_assert_eq(n_, p_.calls, "%d problems, %d reports", n_,      \
			     p_.calls);                                        \
		cr_assert(strstr(p_.text, (what)) != NULL,                     \
			  "expected \"%s\" in:\n%s", (what), p_.text);         \
	} while (0)

/* A dead process's leftover: described, not counted as a problem. */
#define assert_leftover(what)                                                  \
	do {                                                                   \
		struct probs p_;                                               \
		tu_assert_rc(run_check(tu_kv, &p_), 0);                        \
		cr_assert(strstr(p_.text, "leftover: ") != NULL &&             \
				  strstr(p_.text, (what)) != NULL,             \
			  "expected leftover \"%s\" in:\n%s", (what),          \
			  p_.text);                                            \
	} while (0)

static void set_str(const char *k, const char *v)
{
	tu_assert_rc(shmkv_set(tu_kv, k, strlen(k), v, strlen(v), 0, 0, NULL),
		     1);
}

static struct shmkv_slot_shm *slot(uint32_t i)
{
	return shmkv__slot(shmkv__table_cmd(tu_kv), i);
}

static uint32_t home_of(const char *key)
{
	struct shmkv_key k;

	shmkv__key_init(tu_kv, shmkv__table_cmd(tu_kv), &k, key, strlen(key));
	return k.home;
}

/* The block holding @key's value (a non-integer value). */
static struct shmkv_block_shm *block_of(const char *key)
{
	uint64_t v = tu_slot_of(tu_kv, key)->value;

	cr_assert_eq(VAL_KIND(v), VAL_BLOCK, "%s is not in a block", key);
	return shmkv__block(tu_kv, v);
}

/* The last block of the page holding "text"'s value: a block of a claimed
 * page that populate() leaves free. */
static struct shmkv_block_shm *spare_block(void)
{
	uint64_t v = tu_slot_of(tu_kv, "text")->value;
	uint32_t page = VAL_BLOCK_UNIT(v) / tu_kv->geo.units_per_page, cls = 0;
	uint32_t unit;

	cr_assert_eq(VAL_KIND(v), VAL_BLOCK, "text is not in a block");
	cls = shmkv__page_class(tu_kv, page);
	cr_assert_neq(cls, SHMKV__NO_CLASS);
	unit = page * tu_kv->geo.units_per_page + tu_kv->class_blocks[cls] - 1;
	return shmkv__block_at(tu_kv, unit, &cls);
}

/* The first EMPTY slot at or after @from. */
static uint32_t empty_slot_from(uint32_t from)
{
	for (uint32_t d = 0; d <= shmkv__table_cmd(tu_kv)->mask; d++) {
		uint32_t i = (from + d) & shmkv__table_cmd(tu_kv)->mask;

		if (SLOT_STATE(slot(i)->state) == SLOT_EMPTY)
			return i;
	}
	cr_assert_fail("no empty slot");
	return 0;
}

static uint32_t dead_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork");
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return (uint32_t)pid;
}

/* Background content: strings, integers, TTLs and deleted keys. */
static void populate(void)
{
	tu_populate(tu_kv, 200);
	set_str("int", "12345");
	set_str("text", TU_BLOCK_TEXT);
	set_str("short", "hello world"); /* inline, in its slot */
	for (int i = 0; i < 50; i++) {
		char k[16];
		size_t kl = tu_fmt(k, sizeof(k), "base", (unsigned long)i);

		tu_assert_rc(shmkv_del(tu_kv, k, kl), 1);
	}
}

Test(check, finds_nothing_in_a_populated_store)
{
	struct probs p;

	populate();
	tu_assert_rc(run_check(tu_kv, &p), 0);
	cr_assert_eq(p.calls, 0, "reported:\n%s", p.text);
}

Test(check, works_on_a_read_only_handle_and_changes_no_byte)
{
	shmkv_t *ro;
	struct probs p;
	size_t n1, n2;
	void *before, *after;

	populate();
	before = tu_shm_read_all(tu_name, &n1);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_assert_rc(run_check(ro, &p), 0);
	shmkv_close(ro);
	after = tu_shm_read_all(tu_name, &n2);
	cr_assert_eq(n1, n2);
	cr_assert(memcmp(before, after, n1) == 0, "check changed the segment");
}

Test(check, counts_problems_without_a_callback)
{
	populate();
	/* An inline integer: no block becomes unreferenced. */
	tu_slot_of(tu_kv, "int")->value = (uint64_t)0x31 << 58;
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 1);
}

Test(check, refuses_a_null_handle)
{
	tu_assert_rc(shmkv_check(NULL, collect, NULL), -EINVAL);
}

Test(check, reports_a_malformed_value_word)
{
	populate();
	tu_slot_of(tu_kv, "text")->value = (uint64_t)0x31 << 58;
	assert_found("malformed value word 0xc400000000000000");
}

Test(check, reports_an_inline_value_over_its_key)
{
	struct shmkv_slot_shm *s;

	populate();
	s = tu_slot_of(tu_kv, "short");
	cr_assert_eq(VAL_KIND(s->value), VAL_INLINE, "short is not inline");
	s->value = VAL_INLINE_WORD(VAL_INLINE_NUM_MASK & s->value,
				   tu_kv->geo.slot_size - SHMKV_SLOT_FIXED, 0);
	assert_found("overlaps its key");
}

/* The populated store, with "short"'s area claimed by a thread that is
 * gone. Return: the claim's publish number. */
static uint64_t plant_dead_area_claim(struct shmkv_slot_shm **s)
{
	uint64_t num;

	populate();
	*s = tu_slot_of(tu_kv, "short");
	num = SLOT_AREA_NUM((*s)->area);
	(*s)->area = SLOT_AREA_WORD(num, dead_pid());
	return num;
}

Test(check, describes_an_area_claim_of_a_gone_thread_as_a_leftover)
{
	struct shmkv_slot_shm *s;
	uint64_t num = plant_dead_area_claim(&s);

	assert_leftover("inline area is claimed by thread");
	/* A writer that finds the claim stores a block; found again, the
	 * claim is judged and taken over, its number bumped past whatever
	 * the dead holder may have published. */
	set_str("short", "hello again");
	cr_assert_eq(VAL_KIND(s->value), VAL_BLOCK);
	set_str("short", "hello twice");
	cr_assert_eq(VAL_KIND(s->value), VAL_INLINE);
	cr_assert_eq(s->area, SLOT_AREA_WORD(num + 2, 0));
	cr_assert_eq(s->value & VAL_INLINE_NUM_MASK, num + 2);
	tu_assert_get_str(tu_kv, "short", "hello twice");
}

Test(check, recover_frees_an_area_claim_of_a_gone_thread)
{
	struct shmkv_recover_report rep;
	struct shmkv_slot_shm *s;
	uint64_t num = plant_dead_area_claim(&s);

	cr_assert_geq(shmkv_recover(tu_kv, &rep), 1);
	cr_assert_eq(rep.stale_claims, 1);
	cr_assert_eq(s->area, SLOT_AREA_WORD(num + 1, 0));
	tu_assert_get_str(tu_kv, "short", "hello world");
}

Test(check, reports_a_value_naming_a_block_that_does_not_exist)
{
	populate();
	/* One past the last page: no such block. */
	tu_slot_of(tu_kv, "text")->value = VAL_BLOCK_WORD(
		tu_kv->geo.page_count * tu_kv->geo.units_per_page, 0);
	assert_found("which does not exist");
}

Test(check, reports_a_value_whose_block_was_freed)
{
	struct shmkv_block_shm *b;

	populate();
	b = block_of("text");
	b->tag = BLK_TAG(BLK_GEN(b->tag) + 1, 0, 0);
	assert_found("but the block is free");
}

Test(check, reports_a_block_pointing_back_at_another_slot)
{
	populate();
	block_of("text")->slot = tu_slot_ref(tu_kv, "text").index ^ 1;
	assert_found("points back at slot");
}

Test(check, reports_a_block_length_beyond_its_capacity)
{
	populate();
	block_of("text")->len = 100000;
	assert_found("holds 100000 bytes");
}

Test(check, reports_one_block_shared_by_two_keys)
{
	struct shmkv_block_shm *lost;

	populate();
	set_str("other", "another " TU_BLOCK_TEXT);
	lost = block_of("other");
	tu_slot_of(tu_kv, "other")->value = tu_slot_of(tu_kv, "text")->value;
	block_of("text")->slot = tu_slot_ref(tu_kv, "text").index;
	assert_found("is also the value of another slot");
	/* The block "other" held is now referenced by nobody, and, settled,
	 * in no live thread's hands. */
	lost->tag = BLK_TAG(BLK_GEN(lost->tag), 0, 1);
	assert_found("leftover: block");
}

Test(check, describes_a_block_referenced_by_no_key_as_a_leftover)
{
	struct shmkv_block_shm *b;

	populate();
	b = spare_block();
	cr_assert_eq(BLK_USED(b->tag), 0, "spare block in use");
	b->tag = BLK_TAG(7, 0, 1);
	assert_leftover("used but the value of no key");
	assert_leftover("reclamation step within 32 turns of its cursor");
}

Test(check, describes_a_gone_threads_cached_block_as_a_leftover)
{
	struct shmkv_block_shm *b;

	populate();
	b = spare_block();
	b->tag = BLK_TAG(3, dead_pid(), 1) | BLK_CACHED;
	assert_leftover("free in the cache of thread");
	assert_leftover("which is gone");
}

Test(check, describes_a_block_a_dead_process_allocated_as_a_leftover)
{
	struct shmkv_block_shm *b;

	populate();
	b = spare_block();
	b->tag = BLK_TAG(0, dead_pid(), 1);
	assert_leftover("died before publishing it");
	assert_leftover("reclaimed by the next reclamation step over it");
}

Test(check, describes_a_dead_owners_block_half_freed_as_a_leftover)
{
	struct shmkv_block_shm *b;

	populate();
	b = spare_block();
	b->tag = BLK_TAG(0, dead_pid(), 1) | BLK_DOOM;
	assert_leftover("half freed by a process that died (reclaimed by the "
			"next reclamation step over it)");
}

Test(check, ignores_a_block_allocated_by_a_live_process)
{
	struct shmkv_block_shm *b;
	struct probs p;

	populate();
	b = spare_block();
	b->tag = BLK_TAG(0, getppid(), 1);
	tu_assert_rc(run_check(tu_kv, &p), 0);
}

Test(check, reports_a_key_beyond_its_home_probe_bound)
{
	populate();
	slot(home_of("text"))->probe_bound = 0;
	assert_found("whose probe bound is 0 (lookups cannot find it)");
}

Test(check, reports_a_stored_fingerprint_that_does_not_match_the_key)
{
	populate();
	tu_slot_of(tu_kv, "text")->keymeta ^= 1u << 16;
	assert_found("key \"text\": stored fingerprint");
}

Test(check, reports_a_key_present_in_two_slots)
{
	uint32_t home, i, j;

	populate();
	set_str("dup", "77"); /* an inline integer: no block to share */
	i = tu_slot_ref(tu_kv, "dup").index;
	home = home_of("dup");
	j = empty_slot_from(i);
	memcpy(slot(j), slot(i), tu_kv->geo.slot_size);
	slot(home)->probe_bound = ((j - home) & shmkv__table_cmd(tu_kv)->mask) + 1;
	assert_found("both hold key \"dup\"");
}

Test(check, describes_a_slot_claimed_by_a_dead_process_as_a_leftover)
{
	uint32_t j;

	populate();
	j = empty_slot_from(0);
	slot(j)->state = SLOT_WORD(SLOT_BUSY, dead_pid(), 0);
	assert_leftover("which is dead");
}

Test(check, ignores_a_slot_claimed_by_a_live_process)
{
	struct probs p;
	uint32_t j;

	populate();
	j = empty_slot_from(0);
	slot(j)->state = SLOT_WORD(SLOT_BUSY, getppid(), 0);
	tu_assert_rc(run_check(tu_kv, &p), 0);
}

Test(check, describes_an_insert_left_pending_as_a_leftover)
{
	uint32_t i;

	populate();
	i = tu_slot_ref(tu_kv, "text").index;
	slot(i)->state = SLOT_WORD(SLOT_INSERTING, 0,
				   SLOT_VERSION(slot(i)->state));
	assert_leftover("insert of key \"text\" pending");
	assert_leftover("shmkv_recover");
}

/* "int" (inline: no block) left INSERTING by process @pid, as its FRESH
 * value says. */
static void pending_insert_by(uint32_t pid)
{
	uint32_t i = tu_slot_ref(tu_kv, "int").index, ver;

	ver = SLOT_VERSION(slot(i)->state);
	slot(i)->value = VAL_FRESH_WORD(ver, pid);
	slot(i)->state = SLOT_WORD(SLOT_INSERTING, 0, ver);
}

Test(check, describes_a_dead_processs_pending_insert_as_a_steps_leftover)
{
	populate();
	pending_insert_by(dead_pid());
	assert_leftover("insert of key \"int\" pending, by process");
	assert_leftover("which is dead (finished by the next reclamation "
			"step over it");
}

Test(check, ignores_a_pending_insert_of_a_live_process)
{
	struct probs p;

	populate();
	pending_insert_by((uint32_t)getppid());
	tu_assert_rc(run_check(tu_kv, &p), 0);
	cr_assert_eq(p.leftovers, 0, "%s", p.text);
}

Test(check, describes_a_key_whose_dead_inserter_never_stored_a_value)
{
	uint32_t i;

	populate();
	i = tu_slot_ref(tu_kv, "int").index;
	slot(i)->value = VAL_FRESH_WORD(SLOT_VERSION(slot(i)->state),
					dead_pid());
	assert_leftover("died before its first value landed");
}

Test(check, reports_a_meaningless_state_word)
{
	populate();
	slot(empty_slot_from(0))->state = 7;
	assert_found("has no meaning");
}

Test(check, reports_a_probe_bound_beyond_the_limit)
{
	populate();
	slot(empty_slot_from(0))->probe_bound = tu_kv->geo.probe_limit + 1;
	assert_found("exceeds the probe limit");
}

Test(check, reports_a_key_length_beyond_key_max)
{
	populate();
	struct shmkv_slot_shm *s = tu_slot_of(tu_kv, "text");

	s->keymeta = SLOT_KEYMETA(s->keymeta, TU_KEY_MAX + 1);
	assert_found("exceeds key_max");
}

Test(check, reports_an_integer_of_another_slot_version)
{
	uint32_t i;

	populate();
	i = tu_slot_ref(tu_kv, "int").index;
	slot(i)->value = VAL_INT_WORD(SLOT_VERSION(slot(i)->state) + 1, 5);
	assert_found("integer value tagged");
}

/* Layout 9's marks: a NONE word always has NONE_MARK, and no word is
 * FROZEN outside a growth. */
Test(check, reports_a_none_word_without_its_mark_and_a_frozen_word)
{
	uint32_t i;

	populate();
	i = tu_slot_ref(tu_kv, "text").index;
	slot(i)->value = VAL_NONE_WORD(SLOT_VERSION(slot(i)->state), 0) &
			 ~VAL_NONE_MARK;
	assert_found("malformed value word 0x0");
	slot(i)->value = VAL_NONE_WORD(SLOT_VERSION(slot(i)->state), 0) |
			 VAL_FROZEN_BIT;
	assert_found("malformed value word 0x3");
}

Test(check, reports_an_empty_value_word_of_another_version)
{
	uint32_t i;

	populate();
	i = tu_slot_ref(tu_kv, "text").index;
	tu_assert_rc(shmkv_del(tu_kv, LIT("text")), 1);
	slot(i)->value = VAL_NONE_WORD(SLOT_VERSION(slot(i)->state) + 3, 0);
	assert_found("empty value word of version");
}

Test(check, reports_a_changed_hash_seed)
{
	struct shmkv_header_shm *h = (void *)tu_kv->base;

	populate();
	h->hash_seed ^= 1;
	assert_found("hash seed changed");
}

Test(check, reports_a_header_that_lost_its_magic)
{
	struct shmkv_header_shm *h = (void *)tu_kv->base;

	h->magic = 0;
	assert_found("header: not a shmkv store");
}

/* Every byte after the header random: many reports, no crash, and the
 * count returned is the number of reports made. */
Test(check, survives_a_segment_full_of_garbage)
{
	struct probs p;
	uint64_t rng = 1;
	int n;

	rng_fill(&rng, tu_kv->base + SHMKV_HEADER_SIZE,
		 tu_kv->geo.segment_size - SHMKV_HEADER_SIZE);
	n = run_check(tu_kv, &p);
	cr_assert_gt(n, 100, "only %d problems in garbage", n);
	cr_assert_eq(n, p.calls);
}

Test(check, describes_no_leftover_after_recover_reclaimed_them)
{
	struct shmkv_recover_report rep;
	struct shmkv_block_shm *b;
	struct probs p;

	populate();
	slot(empty_slot_from(0))->state = SLOT_WORD(SLOT_BUSY, dead_pid(), 0);
	b = spare_block();
	b->tag = BLK_TAG(3, 0, 1);
	tu_assert_rc(run_check(tu_kv, &p), 0);
	cr_assert_eq(p.leftovers, 2, "%d lines:\n%s", p.leftovers, p.text);
	tu_assert_rc(shmkv_recover(tu_kv, &rep), 2);
	tu_assert_rc(run_check(tu_kv, &p), 0);
	cr_assert_eq(p.leftovers, 0, "%d lines:\n%s", p.leftovers, p.text);
}
