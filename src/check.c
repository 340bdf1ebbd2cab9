/*
 * check.c - shmkv_check(): verifies a whole store without writing to it.
 *
 * Three passes over the mapping:
 *  - the header is re-validated as attach validated it, and compared with
 *    the handle's copy (a changed hash seed makes every key unfindable);
 *  - every slot: its state word means something, a claim names a live
 *    process, nothing is left INSERTING, its probe bound is within the
 *    limit, and a MEMBER slot's key is findable from its home (stored hash,
 *    distance below the home's bound), not present in a second MEMBER slot,
 *    and holds a well-formed value word whose block (if any) is USED, of the
 *    right generation, points back at the slot and is referenced once;
 *  - every block: a USED block that no slot references must belong to a
 *    live process (one that has allocated it and is about to publish it).
 *
 * What dead processes left (slots claimed or inserts half done, blocks
 * never published, owned, half freed or unpublished) is no problem: the
 * store reclaims it by itself (owned.c), at the latest before it would
 * answer -ENOMEM or -ENOSPC. Such leftovers are described to the callback
 * in lines that start with "leftover: " and say what will reclaim them,
 * but are not counted: a store full of them checks clean.
 *
 * The segment may be corrupted or changing under us, so nothing read from
 * it is trusted: every index and length is checked against the handle's
 * validated geometry before it is used, and key bytes are copied with the
 * state word read before and after (as table.c does) so that a slot being
 * recycled is skipped instead of misreported. Racing writers can still make
 * transient reports; the verdict is meant for a quiet store.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic.h"
#include "evict.h"
#include "internal.h"
#include "lookup.h"
#include "owned.h"
#include "redis_typed.h"
#include "tables.h"

/* Re-reads of a slot whose state keeps changing before we give up on it. */
#define READ_RETRIES 64
/* Bytes of a key shown in a report; longer keys end in "...". */
#define SHOW_KEY_BYTES 40

struct check {
	struct shmkv *kv;
	const struct shmkv_table *t; /* the table being walked */
	/* t migrates into the next table: its slots may be MOVED and its
	 * values frozen (migrate.c). */
	bool migrating;
	/* t is the table another migrates into: a block a copy has handed
	 * over may still point back at the old table (the copier moves the
	 * back-pointer after its copy lands, before the old slot is MOVED). */
	bool migrated_into;
	shmkv_check_fn fn;
	void *arg;
	int problems;
	/* Per class, one bit per block: referenced by a MEMBER slot. */
	/* Units of the pages ready when the check began: pages readied
	 * since hold blocks too new to check (growth does not stop us). */
	uint64_t units;
	unsigned char *refs; /* one bit per block unit: referenced by a key */
	/* One bit per unit named by a pin integer, or by a frozen block
	 * word (its copy names it too): kept, but no reference (a plain SET
	 * may write any integer, pins included). */
	unsigned char *pins;
};

/* A consistent copy of one slot: everything read under one state word. */
struct slot_view {
	uint32_t index;
	uint64_t state;
	uint64_t value;
	uint32_t hash16;  /* the fingerprint: top 16 bits of the key's hash32 */
	uint32_t key_len; /* as stored: may exceed key_max if corrupt */
	unsigned char key[SHMKV_KEY_MAX_LIMIT];
};

static void describe(struct check *c, const char *prefix, const char *fmt,
		     va_list ap)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%s", prefix);

	if (c->fn == NULL)
		return;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	c->fn(line, c->arg);
}

static void report(struct check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void report(struct check *c, const char *fmt, ...)
{
	va_list ap;

	if (c->problems < INT_MAX)
		c->problems++;
	va_start(ap, fmt);
	describe(c, "", fmt, ap);
	va_end(ap);
}

/* What a dead process left: described, not counted (see the top). */
static void leftover(struct check *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void leftover(struct check *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	describe(c, "leftover: ", fmt, ap);
	va_end(ap);
}

/* Who finishes a slot a dead process left: owned.c's reclamation step,
 * or table.c's second insert pass (only an insert that found no free
 * slot in its window takes it). */
#define BY_STEP_OR_INSERT                                                      \
	"finished by the next reclamation step over it, or an insert that "    \
	"finds no other room there"

/* Who frees a block of a dead owner (owned.c): every reclamation step. */
#define BY_STEP "reclaimed by the next reclamation step over it"

/* The key of @sv, quoted and escaped for a report, into @buf. */
static const char *show_key(const struct slot_view *sv, char *buf, size_t cap)
{
	size_t n = 0, len = sv->key_len < SHOW_KEY_BYTES ? sv->key_len
							 : SHOW_KEY_BYTES;

	buf[n++] = '"';
	for (size_t i = 0; i < len && n + 8 < cap; i++) {
		unsigned char ch = sv->key[i];

		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			buf[n++] = (char)ch;
		else
			n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", ch);
	}
	buf[n++] = '"';
	buf[n] = '\0';
	if (sv->key_len > len)
		snprintf(buf + n, cap - n, "...");
	return buf;
}

/*
 * Copies slot @idx into @sv. The key bytes of a slot are only rewritten
 * after its state word changes (version bump), so a copy taken between two
 * equal reads of the state is the key of that incarnation.
 * Return: true, or false if the slot kept changing (a busy slot: skipped).
 */
static bool slot_read(const struct shmkv *kv, const struct shmkv_table *t,
		      uint32_t idx, struct slot_view *sv)
{
	struct shmkv_slot_shm *s = shmkv__slot(t, idx);

	sv->index = idx;
	for (int n = 0; n < READ_RETRIES; n++) {
		/* Acquire: pairs with the CAS that set this state, so the key
		 * and value read next are at least as new as it. */
		uint64_t w = shmkv__load_acquire(&s->state);

		/* Acquire: pairs with the CAS that stored the value. */
		sv->value = shmkv__load_acquire(&s->value);
		uint32_t meta = shmkv__load32_relaxed(&s->keymeta);

		sv->hash16 = meta >> 16;
		sv->key_len = SLOT_KEYMETA_LEN(meta);
		if (sv->key_len <= kv->geo.key_max)
			memcpy(sv->key, s->key, sv->key_len);
		/* Acquire fence: the copies complete before the re-read. */
		shmkv__fence_acquire();
		if (shmkv__load_relaxed(&s->state) == w) {
			sv->state = w;
			return true;
		}
	}
	return false;
}

/* Does slot @j hold a MEMBER copy of the key in @sv? */
static bool holds_same_key(const struct shmkv_table *t, uint32_t j,
			   const struct slot_view *sv)
{
	struct shmkv_slot_shm *s = shmkv__slot(t, j);
	/* Acquire: as in slot_read(). */
	uint64_t w = shmkv__load_acquire(&s->state);
	bool eq;

	if (SLOT_STATE(w) != SLOT_MEMBER ||
	    shmkv__load32_relaxed(&s->keymeta) !=
		    SLOT_KEYMETA(sv->hash16 << 16, sv->key_len))
		return false;
	/* sv->key_len <= key_max (checked by the caller): inside the slot. */
	eq = memcmp(s->key, sv->key, sv->key_len) == 0;
	/* Acquire fence: the compare completes before the re-read. */
	shmkv__fence_acquire();
	return eq && shmkv__load_relaxed(&s->state) == w;
}

/* The home's probe bound as stored (table.c clamps it; we report it). */
static uint32_t raw_bound(const struct shmkv_table *t, uint32_t home)
{
	/* Relaxed: a single read; bounds only grow. */
	return shmkv__load16_relaxed(&shmkv__slot(t, home)->probe_bound);
}

/* Findable: stored hash matches, distance from home below its bound, and
 * no other MEMBER slot of the probe window holds the same key. */
static void check_key(struct check *c, const struct slot_view *sv)
{
	const struct shmkv *kv = c->kv;
	uint32_t bound, dist;
	struct shmkv_key k;
	char show[SHOW_KEY_BYTES * 4 + 8];

	shmkv__key_init(kv, c->t, &k, sv->key, sv->key_len);
	show_key(sv, show, sizeof(show));
	if (k.hash32 >> 16 != sv->hash16)
		report(c,
		       "slot %u: key %s: stored fingerprint 0x%04x, the key "
		       "hashes to 0x%04x (lookups cannot find it)",
		       sv->index, show, sv->hash16, k.hash32 >> 16);
	bound = raw_bound(c->t, k.home);
	if (bound > kv->geo.probe_limit)
		bound = kv->geo.probe_limit;
	dist = (sv->index - k.home) & c->t->mask;
	if (dist >= bound)
		report(c,
		       "slot %u: key %s is %u probes from its home slot %u, "
		       "whose probe bound is %u (lookups cannot find it)",
		       sv->index, show, dist, k.home, bound);
	/* Both copies share a home, so each pair is met twice: report the
	 * pair from its lower slot only. */
	for (uint32_t d = 0; d < bound; d++) {
		uint32_t j = (k.home + d) & c->t->mask;

		if (j > sv->index && holds_same_key(c->t, j, sv))
			report(c, "slots %u and %u: both hold key %s",
			       sv->index, j, show);
	}
}

static bool ref_test_and_set(struct check *c, uint32_t unit)
{
	unsigned char *byte = &c->refs[unit / 8];
	unsigned char bit = (unsigned char)(1u << (unit % 8));
	bool was;

	if (unit >= c->units)
		return false;
	was = *byte & bit;
	*byte |= bit;
	return was;
}

/* Re-reads the slot's value word: a report about a block is only made if
 * the word did not move meanwhile (a replace frees the old block). */
static bool value_unchanged(const struct check *c, const struct slot_view *sv)
{
	/* Relaxed: only asks whether the word moved. */
	return shmkv__load_relaxed(&shmkv__slot(c->t, sv->index)->value) ==
	       sv->value;
}

/* The block @b (unit @unit, class @cls) named by @sv's value word: USED
 * at the word's generation, pointing back at the slot, of a length that
 * fits. */
static void check_block_content(struct check *c, const struct slot_view *sv,
				const struct shmkv_block_shm *b, uint32_t unit,
				uint32_t cls)
{
	uint32_t gen = VAL_BLOCK_GEN(sv->value);
	/* Acquire: the block's fields read next are the published ones. */
	uint64_t tag = shmkv__load_acquire(&b->tag);
	uint32_t len = shmkv__load32_relaxed(&b->len);
	uint32_t back = shmkv__load32_relaxed(&b->slot);

	if (!value_unchanged(c, sv))
		return;
	if (!BLK_USED(tag) || BLK_GEN(tag) != gen)
		report(c,
		       "slot %u: value names block %u (class %u) generation "
		       "%u, but the block is %s generation %u",
		       sv->index, unit, cls, gen,
		       BLK_USED(tag) ? "used at" : "free at", BLK_GEN(tag));
	else if (back != BLK_BACK_WORD(sv->index, c->t->epoch) &&
		 !(c->migrated_into &&
		   BLK_BACK_EPOCH(back) == ((c->t->epoch - 1) & 15u)))
		report(c,
		       "slot %u: block %u of class %u points back at slot %u "
		       "of a table of epoch %u (mod 16), not at this slot of "
		       "epoch %u",
		       sv->index, unit, cls, BLK_BACK_INDEX(back),
		       BLK_BACK_EPOCH(back), c->t->epoch);
	else if (len > c->kv->geo.value_max ||
		 len > shmkv__block_capacity(c->kv, sv->value))
		report(c,
		       "slot %u: block %u of class %u holds %u bytes, more "
		       "than it can (value_max %u)",
		       sv->index, unit, cls, len, c->kv->geo.value_max);
}

/* A BLOCK value word: the block exists and no other slot names it. */
static void check_block_ref(struct check *c, const struct slot_view *sv)
{
	uint32_t unit = VAL_BLOCK_UNIT(sv->value), cls = 0;
	struct shmkv_block_shm *b = shmkv__block_at(c->kv, unit, &cls);

	if (b == NULL)
		report(c,
		       "slot %u: value names block %u, which does not exist "
		       "(page out of range, given to no class, or index past "
		       "its class's blocks)",
		       sv->index, unit);
	else if (ref_test_and_set(c, unit))
		report(c,
		       "slot %u: block %u of class %u is also the value of "
		       "another slot",
		       sv->index, unit, cls);
	else
		check_block_content(c, sv, b, unit, cls);
}

/* A frozen BLOCK word of a migrating table: its copy in the next table,
 * once it lands, names the same block, whose back-pointer then moves to
 * the copy (migrate.c). The block must exist; it is kept, as a pin's is,
 * and checked as a reference where its copy names it, or not at all. */
static void check_frozen_block(struct check *c, const struct slot_view *sv)
{
	uint32_t unit = VAL_BLOCK_UNIT(sv->value), cls = 0;

	if (shmkv__block_at(c->kv, unit, &cls) == NULL)
		report(c,
		       "slot %u: value names block %u, which does not exist "
		       "(page out of range, given to no class, or index past "
		       "its class's blocks)",
		       sv->index, unit);
	else if (unit < c->units)
		c->pins[unit / 8] |= (unsigned char)(1u << (unit % 8));
}

/* An INLINE value word: its bytes lie between the key and the slot's end
 * (the caller checked key_len <= key_max). */
static void check_inline(struct check *c, const struct slot_view *sv)
{
	uint32_t off = VAL_INLINE_OFF(sv->value),
		 len = VAL_INLINE_LEN(sv->value);
	uint32_t room = c->kv->geo.slot_size - SHMKV_SLOT_FIXED - sv->key_len;

	if (VAL_INLINE_RESERVED(sv->value) != 0)
		report(c, "slot %u: malformed value word 0x%016llx", sv->index,
		       (unsigned long long)sv->value);
	else if (off + len > room)
		report(c,
		       "slot %u: inline value of %u bytes at %u from the "
		       "slot's end overlaps its key (%u bytes of room)",
		       sv->index, len, off, room);
}

static void check_value(struct check *c, const struct slot_view *sv)
{
	uint32_t ver = SLOT_VERSION(sv->state);

	/* Only a migrating table has frozen words, and every NONE word has
	 * its mark. */
	if ((VAL_IS_FROZEN(sv->value) && !c->migrating) ||
	    (VAL_KIND(sv->value) == VAL_NONE && !(sv->value & VAL_NONE_MARK))) {
		report(c, "slot %u: malformed value word 0x%016llx", sv->index,
		       (unsigned long long)sv->value);
		return;
	}
	switch (VAL_KIND(sv->value)) {
	case VAL_NONE: /* a deleted key, possibly half given back (DEAD) */
		if (VAL_NONE_VERSION(sv->value) != ver)
			report(c,
			       "slot %u: empty value word of version %u in a "
			       "slot of version %u",
			       sv->index, VAL_NONE_VERSION(sv->value), ver);
		else if (VAL_IS_FRESH(sv->value) &&
			 !shmkv__pid_alive(VAL_FRESH_PID(sv->value)) &&
			 value_unchanged(c, sv))
			leftover(c,
				 "slot %u: a key whose inserter, process %u, "
				 "died before its first value landed "
				 "(" BY_STEP_OR_INSERT ")",
				 sv->index, VAL_FRESH_PID(sv->value));
		else if (VAL_IS_DEAD(sv->value) && value_unchanged(c, sv))
			report(c,
			       "slot %u: half given back (value DEAD): a "
			       "process stopped while recycling it (the next "
			       "write to the key or recover finishes it)",
			       sv->index);
		return;
	case VAL_INT:
		if (VAL_INT_TAG(sv->value) != VAL_INT_TAG_OF(ver))
			report(c,
			       "slot %u: integer value tagged %u in a slot of "
			       "version %u",
			       sv->index, VAL_INT_TAG(sv->value), ver);
		return;
	case VAL_BLOCK:
		if (VAL_IS_FROZEN(sv->value))
			check_frozen_block(c, sv);
		else
			check_block_ref(c, sv);
		return;
	default:
		check_inline(c, sv);
	}
}

/* A pin integer may name an owned block (owned.h), which it keeps; it is
 * no reference in the sense of a block word: any integer can be SET. */
static void mark_pinned(struct check *c, uint64_t w)
{
	uint32_t unit, tag, cls;

	if (VAL_KIND(w) == VAL_INT &&
	    val_pin_decode(VAL_INT_VALUE(w), &unit, &tag) &&
	    shmkv__block_at(c->kv, unit, &cls) != NULL && unit < c->units)
		c->pins[unit / 8] |= (unsigned char)(1u << (unit % 8));
}

static void check_member(struct check *c, const struct slot_view *sv)
{
	if (sv->key_len > c->kv->geo.key_max) {
		report(c, "slot %u: key length %u exceeds key_max %u",
		       sv->index, sv->key_len, c->kv->geo.key_max);
		return;
	}
	if (SLOT_EPOCH(sv->state) != c->t->epoch) {
		report(c,
		       "slot %u: state word 0x%016llx names the table of "
		       "epoch %u, in the table of epoch %u",
		       sv->index, (unsigned long long)sv->state,
		       SLOT_EPOCH(sv->state), c->t->epoch);
		return;
	}
	check_key(c, sv);
	check_value(c, sv);
	mark_pinned(c, sv->value);
}

/* An INSERTING slot: its inserter (named by the FRESH value it wrote
 * first) is either still at it, or dead and the slot a leftover. */
static void check_pending(struct check *c, struct slot_view *sv)
{
	char show[SHOW_KEY_BYTES * 4 + 8];

	if (sv->key_len > c->kv->geo.key_max)
		sv->key_len = 0;
	show_key(sv, show, sizeof(show));
	if (!VAL_IS_FRESH(sv->value))
		leftover(c,
			 "slot %u: insert of key %s pending, by an unknown "
			 "process (decided by an insert that finds no other "
			 "room there, or shmkv_recover)",
			 sv->index, show);
	else if (!shmkv__pid_alive(VAL_FRESH_PID(sv->value)))
		leftover(c,
			 "slot %u: insert of key %s pending, by process %u, "
			 "which is dead (" BY_STEP_OR_INSERT ")",
			 sv->index, show, VAL_FRESH_PID(sv->value));
}

/* A claim of the slot's area (area.h) held by a thread that is gone. */
static void check_area_claim(struct check *c, uint32_t idx)
{
	/* Relaxed: one word, judged alone. */
	uint64_t a = shmkv__load_relaxed(&shmkv__slot(c->t, idx)->area);
	uint32_t tid = SLOT_AREA_TID(a);

	if (tid != 0 && !shmkv__pid_alive(tid) &&
	    shmkv__load_relaxed(&shmkv__slot(c->t, idx)->area) == a)
		leftover(c,
			 "slot %u: its inline area is claimed by thread %u, "
			 "which is gone (taken over by the next writer or "
			 "insert that needs it, a reclamation step, or "
			 "shmkv_recover)",
			 idx, tid);
}

static void check_slot(struct check *c, uint32_t idx)
{
	struct slot_view sv;
	uint32_t bound = raw_bound(c->t, idx);

	if (bound > c->kv->geo.probe_limit)
		report(c, "slot %u: probe bound %u exceeds the probe limit %u",
		       idx, bound, c->kv->geo.probe_limit);
	check_area_claim(c, idx);
	if (!slot_read(c->kv, c->t, idx, &sv))
		return; /* changing under us: a busy slot, not a broken one */
	switch (SLOT_STATE(sv.state)) {
	case SLOT_EMPTY:
	case SLOT_COLLIDED: /* a lost duplicate: any insert may reuse it */
		return;
	case SLOT_BUSY:
		if (!shmkv__pid_alive(SLOT_PID(sv.state)))
			leftover(c,
				 "slot %u: claimed by process %u, which is "
				 "dead (" BY_STEP_OR_INSERT ")",
				 idx, SLOT_PID(sv.state));
		return;
	case SLOT_INSERTING:
		check_pending(c, &sv);
		return;
	case SLOT_MEMBER:
		check_member(c, &sv);
		return;
	case SLOT_MOVED: /* done, in a table that migrates */
		if (c->migrating)
			return;
		/* fall through */
	default:
		report(c, "slot %u: state word 0x%016llx has no meaning", idx,
		       (unsigned long long)sv.state);
	}
}

/* Unreferenced USED blocks: fine while a live thread or process holds
 * them (it is about to publish one, has just unpublished and is freeing
 * it, or keeps it free in its cache). */
static void check_block(struct check *c, uint32_t unit)
{
	uint32_t cls = 0;
	struct shmkv_block_shm *b = shmkv__block_at(c->kv, unit, &cls);
	/* Relaxed: a tag compared with nothing else. */
	uint64_t tag = b ? shmkv__load_relaxed(&b->tag) : 0;
	uint32_t pid = BLK_PID(tag);

	if (!BLK_USED(tag) || (c->refs[unit / 8] & (1u << (unit % 8))) ||
	    (c->pins[unit / 8] & (1u << (unit % 8))))
		return;
	if (pid != 0 && shmkv__pid_alive(pid))
		return;
	if (pid != 0 && (tag & BLK_DOOM))
		leftover(c,
			 "block %u of class %u (%u bytes): owned by process "
			 "%u, which is dead, and half freed by a process that "
			 "died (" BY_STEP ")",
			 unit, cls, c->kv->geo.class_size[cls], pid);
	else if (pid != 0 && (tag & BLK_CACHED))
		leftover(c,
			 "block %u of class %u (%u bytes): free in the cache "
			 "of thread %u, which is gone (" BY_STEP ")",
			 unit, cls, c->kv->geo.class_size[cls], pid);
	else if (pid != 0)
		leftover(c,
			 "block %u of class %u (%u bytes): allocated by "
			 "thread or process %u, which died before publishing "
			 "it or between unpublishing and freeing it, or owned "
			 "by it and named by no key (" BY_STEP ")",
			 unit, cls, c->kv->geo.class_size[cls], pid);
	else
		leftover(c,
			 "block %u of class %u (%u bytes): used but the "
			 "value of no key (a process died between replacing "
			 "and freeing it; reclaimed by a reclamation step "
			 "within %u turns of its cursor, or at once by a full "
			 "pass: an allocation about to fail, shmkv_recover)",
			 unit, cls, c->kv->geo.class_size[cls],
			 SHMKV_REAP_ORPHAN_TURNS);
}

static void check_blocks(struct check *c)
{
	uint64_t pages = c->units / c->kv->geo.units_per_page;

	for (uint32_t page = 0; page < pages; page++) {
		uint32_t cls = shmkv__page_class(c->kv, page);
		uint32_t table = shmkv__load32_relaxed(
			&c->kv->page_table[page]);

		if (cls == SHMKV__NO_CLASS) {
			if (table != 0)
				report(c,
				       "page %u: given to class %u, which "
				       "does not exist",
				       page, table - 1);
			continue;
		}
		for (uint32_t i = 0; i < c->kv->class_blocks[cls]; i++)
			check_block(c, page * c->kv->geo.units_per_page + i);
	}
}

/* The life word's tables, against the file: held and checked as any
 * command's slow path does (giveback.c). */
static void check_life(struct check *c, const struct shmkv_header_shm *h)
{
	struct shmkv_tables tabs;
	int err = shmkv__tables(c->kv, &tabs);

	if (err == -EBADMSG)
		report(c,
		       "header: life word 0x%llx names table generation %llu, "
		       "whose tables the store does not reserve (at most "
		       "T(%u)) or the file does not hold: every command "
		       "fails with -EBADMSG",
		       (unsigned long long)h->life,
		       (unsigned long long)SHMKV_LIFE_GEN(h->life),
		       c->kv->geo.epoch_max);
}

/* The header as attach validated it: still valid and still the same. */
static void check_header(struct check *c)
{
	struct shmkv_header_shm h;
	struct shmkv_geometry g;
	uint32_t ready;
	int err;

	/* A private copy, so it cannot change while it is checked. Read from
	 * the file, not the mapping: other processes update the lock words and
	 * the clock offset at its end with atomics all the time, and a plain
	 * copy of those would be a data race. */
	if (pread(c->kv->fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		report(c, "header: cannot be read: %s", strerror(errno));
		return;
	}
	err = shmkv__header_validate(&h, c->kv->geo.segment_size, &g);
	if (err) {
		report(c, "header: %s", shmkv_strerror(err));
		return;
	}
	/* The five inputs: the rest derives from them (geometry.c). */
	if (g.slot_count != c->kv->geo.slot_count ||
	    g.key_max != c->kv->geo.key_max ||
	    g.value_max != c->kv->geo.value_max ||
	    g.probe_limit != c->kv->geo.probe_limit ||
	    g.value_memory != c->kv->geo.value_memory)
		report(c,
		       "header: geometry changed since the store was opened");
	/* Read after the copy: the word only grows, and a grower allocates
	 * before it publishes, so what we find allocated now covers any
	 * true word the copy holds. */
	ready = shmkv__pages_ready_refresh(c->kv);
	if (h.pages_ready < g.pages_initial || h.pages_ready > ready)
		report(c,
		       "header: %u value pages ready, but the store started "
		       "with %u and the file holds the memory of %u (the word "
		       "is not believed)",
		       h.pages_ready, g.pages_initial, ready);
	check_life(c, &h);
	if (h.hash_seed != c->kv->hash_seed)
		report(c, "header: hash seed changed since the store was "
			  "opened (no key can be found)");
	if (!shmkv__evict_policy_word_valid(h.evict_policy))
		report(c,
		       "header: eviction policy word 0x%08x names no policy "
		       "(the store evicts nothing)",
		       h.evict_policy);
}

static int refs_alloc(struct check *c)
{
	c->units = (uint64_t)shmkv__pages_ready_refresh(c->kv) *
		   c->kv->geo.units_per_page;
	c->refs = calloc(c->units / 8 + 1, 1);
	c->pins = calloc(c->units / 8 + 1, 1);
	return c->refs && c->pins ? 0 : -ENOMEM;
}

int shmkv_check(shmkv_t *kv, shmkv_check_fn fn, void *arg)
{
	struct check c = { .kv = kv, .fn = fn, .arg = arg };
	int err;

	if (kv == NULL)
		return -EINVAL;
	/* A Redis server's memory is not ours to verify. */
	if (shmkv__is_remote(kv))
		return -ENOTSUP;
	err = refs_alloc(&c);
	if (err == 0) {
		check_header(&c);
		const struct shmkv_table *ts[2];
		uint32_t n = shmkv__tables_walk(kv, ts);

		for (uint32_t j = 0; j < n; j++) {
			c.t = ts[j];
			c.migrating = j + 1 < n;
			c.migrated_into = j > 0;
			for (uint64_t i = 0; i <= c.t->mask; i++)
				check_slot(&c, (uint32_t)i);
		}
		check_blocks(&c);
	}
	free(c.refs);
	free(c.pins);
	return err ? err : c.problems;
}
