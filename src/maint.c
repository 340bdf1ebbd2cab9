/*
 * maint.c - walking the whole store: active expiry, recovery after killed
 * processes, statistics and SCAN. Each works slot by slot with the same
 * CAS protocol as the commands, so all of them are safe while other
 * processes keep working.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "area.h"
#include "atomic.h"
#include "evict.h"
#include "expire.h"
#include "fault.h"
#include "internal.h"
#include "migrate.h"
#include "owned.h"
#include "redis_typed.h"
#include "tables.h"

/* The live value word of MEMBER slot @s (state @w), or 0 if none. For a
 * block, *@deadline gets its deadline (0: none). */
static uint64_t member_value(const struct shmkv *kv,
			     const struct shmkv_slot_shm *s, uint64_t w,
			     int64_t *deadline, uint32_t *owner)
{
	/* Acquire: pairs with the CAS that stored the value. */
	uint64_t v = shmkv__load_acquire(&s->value);
	struct shmkv_block_view view;

	*deadline = 0;
	if (shmkv__load_acquire(&s->state) != w)
		return 0;
	if (VAL_KIND(v) == VAL_INT)
		return VAL_INT_TAG(v) == VAL_INT_TAG_OF(SLOT_VERSION(w)) ? v
									 : 0;
	if (VAL_KIND(v) == VAL_INLINE) /* never has a TTL */
		return v;
	if (VAL_KIND(v) != VAL_BLOCK ||
	    shmkv__block_read(kv, v, NULL, 0, &view) != 0)
		return 0;
	*deadline = view.deadline_ms;
	*owner = view.owner;
	return v;
}

int shmkv_sweep(shmkv_t *kv, uint64_t *cursor, uint32_t max_slots)
{
	const struct shmkv_table *t;
	uint64_t slots, i;
	int64_t now, deadline;
	uint32_t owner;
	int expired = 0;

	if (kv == NULL || cursor == NULL)
		return -EINVAL;
	/* A Redis server expires its keys itself: nothing of ours to do. */
	if (shmkv__is_remote(kv))
		return -ENOTSUP;
	if (kv->readonly)
		return -EROFS;
	/* The table commands write in: a migrating one's keys are copied
	 * as absent once expired (migrate.c). */
	t = shmkv__table_cmd(kv);
	slots = t->mask + 1ull;
	now = shmkv__now_ms();
	for (i = *cursor % slots; max_slots > 0 && i < slots;
	     i++, max_slots--) {
		struct shmkv_slot_shm *s = shmkv__slot(t, (uint32_t)i);
		uint64_t w = shmkv__load_acquire(&s->state);
		uint64_t v;

		if (SLOT_STATE(w) != SLOT_MEMBER)
			continue;
		v = member_value(kv, s, w, &deadline, &owner);
		/* A frozen value is being copied: its copy expires instead. */
		if (v == 0 || VAL_IS_FROZEN(v) ||
		    !shmkv__expired(deadline, now))
			continue;
		if (VAL_KIND(v) == VAL_BLOCK)
			shmkv__value_settle(kv, v, owner);
		/* Full barrier: the same CAS a lazy expiry does. */
		if (shmkv__cas_full(&s->value, v,
				    VAL_NONE_WORD(SLOT_VERSION(w), 0)) == v) {
			SHMKV_CRASH_POINT("swept_unfreed");
			shmkv__block_free(kv, v);
			expired++;
		}
	}
	*cursor = i < slots ? i : 0;
	return expired;
}

/* Slots: stale claims, stuck inserts, lost duplicates, half-given-back. */
static int recover_slots(struct shmkv *kv, struct shmkv_recover_report *rep)
{
	/* The table commands write in (a migrating one's slots are decided
	 * by the migration). */
	const struct shmkv_table *t = shmkv__table_cmd(kv);
	int fixed = 0;

	for (uint64_t i = 0; i <= t->mask; i++) {
		struct shmkv_slot_shm *s = shmkv__slot(t, (uint32_t)i);
		/* Acquire: pairs with the CAS that set the state. */
		uint64_t w = shmkv__load_acquire(&s->state);
		unsigned st = SLOT_STATE(w);

		/* A dead thread's claim of the slot's area (area.h). */
		if (shmkv__area_reclaim(s)) {
			fixed++;
			rep->stale_claims++;
		}
		if (st == SLOT_EMPTY ||
		    !shmkv__slot_reclaim(kv, t, (uint32_t)i, w, true))
			continue;
		fixed++;
		if (st == SLOT_BUSY)
			rep->stale_claims++;
		else if (st == SLOT_INSERTING)
			rep->stuck_inserts++;
		else if (st == SLOT_COLLIDED)
			rep->collided++;
		else
			rep->dead_slots++;
	}
	return fixed;
}

int shmkv_recover(shmkv_t *kv, struct shmkv_recover_report *report)
{
	struct shmkv_recover_report rep;
	struct shmkv_reclaimed r = { 0 };
	int fixed;

	if (kv == NULL)
		return -EINVAL;
	/* What dead processes leave is in shared memory: a server has none. */
	if (shmkv__is_remote(kv))
		return -ENOTSUP;
	if (kv->readonly)
		return -EROFS;
	memset(&rep, 0, sizeof(rep));
	/* Slots first: deciding stuck inserts and finishing deletes can only
	 * unpublish blocks, which the block pass then frees. */
	fixed = recover_slots(kv, &rep);
	rep.leaked_blocks = shmkv__reap_blocks(kv, &r);
	fixed += (int)rep.leaked_blocks;
	if (report)
		*report = rep;
	return fixed;
}

static void stats_slot(const struct shmkv *kv, const struct shmkv_table *t,
		       uint32_t i, int64_t now, struct shmkv_stats *st)
{
	struct shmkv_slot_shm *s = shmkv__slot(t, i);
	/* Acquire: pairs with the CAS that set the state. */
	uint64_t w = shmkv__load_acquire(&s->state), v;
	uint32_t bound = shmkv__load16_relaxed(&s->probe_bound), owner;
	int64_t deadline;

	if (bound > st->longest_probe)
		st->longest_probe = bound;
	switch (SLOT_STATE(w)) {
	case SLOT_EMPTY:
	case SLOT_MOVED: /* a growth's old table: its key is in the new one */
		return;
	case SLOT_BUSY:
	case SLOT_INSERTING:
	case SLOT_COLLIDED:
		st->pending++;
		return;
	case SLOT_MEMBER:
		v = member_value(kv, s, w, &deadline, &owner);
		if (v != 0 && VAL_KIND(v) == VAL_INLINE)
			st->inline_values++;
		else if (v != 0 && VAL_KIND(v) == VAL_BLOCK)
			st->block_values++;
		if (v == 0)
			st->tombstones++;
		else if (shmkv__expired(deadline, now))
			st->expired++;
		else if (deadline != 0)
			st->live_keys++, st->volatile_keys++;
		else
			st->live_keys++;
		return;
	default:
		st->corrupt++;
	}
}

_Static_assert(SHMKV_STATS_CLASSES == SHMKV_CLASSES_MAX,
	       "shmkv_stats has one cls[] entry per possible size class");

/* A block in a thread's cache is free for the purpose of counting. */
static unsigned block_in_use(uint64_t tag)
{
	return BLK_USED(tag) && !(tag & BLK_CACHED);
}

static void stats_values(const struct shmkv *kv, struct shmkv_stats *st)
{
	st->page_size = kv->geo.page_size;
	st->pages = shmkv__pages_ready_refresh(kv);
	st->pages_max = shmkv__pages_max(kv);
	/* Relaxed: a setting, read as it is now. */
	st->max_memory = shmkv__load_relaxed(
		&((const struct shmkv_header_shm *)kv->base)->max_memory);
	st->tables_kept_bytes = shmkv__tables_kept(kv);
	/* Relaxed: the table's size as it is now. */
	st->memory_bytes =
		shmkv__footprint(&kv->geo, st->pages) +
		shmkv__tables_extra(
			&kv->geo,
			shmkv__load_relaxed(
				&((const struct shmkv_header_shm *)kv->base)
					 ->life)) +
		st->tables_kept_bytes;
	st->evict_policy = (uint32_t)shmkv__evict_policy(kv);
	/* Relaxed: a count, read as it is now. */
	st->evicted = shmkv__load_relaxed(
		&((const struct shmkv_header_shm *)kv->base)->evicted);
	st->classes = kv->geo.class_count;
	for (uint32_t c = 0; c < kv->geo.class_count; c++)
		st->cls[c].block_size = kv->geo.class_size[c];
	for (uint32_t page = 0; page < st->pages; page++) {
		uint32_t c = shmkv__page_class(kv, page);
		unsigned char *base = kv->pages +
				      (size_t)page * kv->geo.page_size;

		if (c == SHMKV__NO_CLASS) {
			st->pages_free++;
			continue;
		}
		st->cls[c].pages++;
		st->cls[c].blocks += kv->class_blocks[c];
		for (uint32_t i = 0; i < kv->class_blocks[c]; i++)
			/* Relaxed: a count, not a snapshot. */
			st->cls[c].used += block_in_use(shmkv__load_relaxed(
				(uint64_t *)(base +
					     (size_t)i *
						     kv->geo.class_size[c])));
	}
}

int shmkv_stats(shmkv_t *kv, struct shmkv_stats *st)
{
	const struct shmkv_table *ts[2];
	uint32_t n;
	int64_t now;

	if (kv == NULL || st == NULL)
		return -EINVAL;
	if (shmkv__is_remote(kv))
		return shmkv__redis_stats(kv, st);
	memset(st, 0, sizeof(*st));
	n = shmkv__tables_walk(kv, ts);
	st->slots = ts[n - 1]->mask + 1ull;
	st->segment_bytes = kv->geo.segment_size;
	now = shmkv__now_ms();
	for (uint32_t j = 0; j < n; j++)
		for (uint64_t i = 0; i <= ts[j]->mask; i++)
			stats_slot(kv, ts[j], (uint32_t)i, now, st);
	stats_values(kv, st);
	shmkv__growth_stats(kv, st);
	/* Written once at creation, before the magic: plain reads. */
	st->created_unix_ms =
		((const struct shmkv_header_shm *)kv->base)->created_unix_ms;
	st->creator_pid =
		((const struct shmkv_header_shm *)kv->base)->creator_pid;
	return 0;
}

/* Copies the key of live MEMBER slot @i into @key; returns its length, or
 * -1 if the slot holds no live key. */
static int live_key(const struct shmkv *kv, const struct shmkv_table *t,
		    uint32_t i, int64_t now, unsigned char *key)
{
	struct shmkv_slot_shm *s = shmkv__slot(t, i);
	uint64_t w = shmkv__load_acquire(&s->state);
	int64_t deadline;
	uint32_t len, owner;

	if (SLOT_STATE(w) != SLOT_MEMBER)
		return -1;
	if (member_value(kv, s, w, &deadline, &owner) == 0 ||
	    shmkv__expired(deadline, now))
		return -1;
	/* Relaxed: after the state's acquire; re-checked after the copy. */
	len = SLOT_KEYMETA_LEN(shmkv__load32_relaxed(&s->keymeta));
	if (len > kv->geo.key_max)
		return -1;
	memcpy(key, s->key, len);
	/* Acquire fence: the copy completes before the state re-check. */
	shmkv__fence_acquire();
	return shmkv__load_relaxed(&s->state) == w ? (int)len : -1;
}

int shmkv_scan(shmkv_t *kv, uint64_t cursor, uint32_t count, shmkv_scan_fn fn,
	       void *arg, uint64_t *next)
{
	unsigned char key[SHMKV_KEY_MAX_LIMIT];
	const struct shmkv_table *ts[2];
	uint64_t gen, total, i;
	uint32_t n;
	int64_t now;
	int err;

	if (kv == NULL || fn == NULL || next == NULL)
		return -EINVAL;
	err = shmkv__live(kv);
	if (err == SHMKV__REMOTE)
		return shmkv__redis_scan(kv, cursor, count, fn, arg, next);
	if (err)
		return err;
	/* The cursor is (generation << 32) | position, the position in the
	 * live tables one after the other: the old table of a growth, then
	 * the new one. Keys never move within a table while present, and a
	 * key leaves the old table only for the new one, walked after it:
	 * every key present for the whole scan is visited at least once. A
	 * cursor of another generation starts again, unless only the growth
	 * it was in has ended and it was in the new table, which is the
	 * table now. */
	gen = SHMKV_LIFE_GEN(shmkv__load_relaxed(
		&((const struct shmkv_header_shm *)kv->base)->life));
	n = shmkv__tables_walk(kv, ts);
	i = (uint32_t)cursor;
	if (cursor >> 32 != gen) {
		/* The new table of the growth the cursor was in, now alone:
		 * the old table was the first half of the positions. */
		uint64_t was = cursor >> 32, half = ts[0]->mask / 2 + 1ull;

		i = (was & 1) && was + 1 == gen && (uint32_t)cursor >= half
			    ? (uint32_t)cursor - half
			    : 0;
	}
	total = 0;
	for (uint32_t j = 0; j < n; j++)
		total += ts[j]->mask + 1ull;
	now = shmkv__now_ms();
	if (count == 0)
		count = 10;
	for (; i < total && count > 0; i++, count--) {
		const struct shmkv_table *t = ts[0];
		uint64_t at = i;
		int len, stop;

		if (n == 2 && at > ts[0]->mask) {
			at -= ts[0]->mask + 1ull;
			t = ts[1];
		}
		/* The old table's moved keys are in the new one. */
		len = live_key(kv, t, (uint32_t)at, now, key);
		if (len < 0)
			continue;
		stop = fn(key, (size_t)len, arg);
		if (stop) {
			*next = i + 1 < total ? gen << 32 | (i + 1) : 0;
			return stop;
		}
	}
	*next = i < total ? gen << 32 | i : 0;
	return 0;
}
