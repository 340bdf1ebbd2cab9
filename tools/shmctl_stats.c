/*
 * shmctl_stats.c - what "shmctl info" and "shmctl watch" both show of a
 * store: one config and stats pass, the table's load, value storage in
 * use, the warnings and the per-class table. A utility: it calls no
 * command.
 */
#include <inttypes.h>
#include <stdio.h>

#include "shmctl.h"

/* Thresholds of the warnings (documented in shmctl.1). */
#define WARN_TABLE_LOAD 0.75
#define WARN_CLASS_USED 0.90

int ctl_info_take(shmkv_t *kv, struct ctl_info *in)
{
	int err = shmkv_get_config(kv, &in->cfg);

	in->huge_known = false;
	in->huge_bytes = 0;
	in->users_known = false;
	return err ? err : shmkv_stats(kv, &in->st);
}

int ctl_info_huge(const char *name, struct ctl_info *in)
{
	shmkv_t *kv;
	int err;

	if (!(in->cfg.flags & SHMKV_CONFIG_HUGE_PAGES))
		return 0;
	err = shmkv_open(name, SHMKV_OPEN_READONLY | SHMKV_OPEN_POPULATE, &kv);
	if (err)
		return err;
	err = shmkv_huge_mapped(kv, &in->huge_bytes);
	in->huge_known = err == 0;
	shmkv_close(kv);
	return err;
}

void ctl_info_pages_line(const struct ctl_info *in, char *buf, size_t cap)
{
	char got[32], all[32];

	if (!(in->cfg.flags & SHMKV_CONFIG_HUGE_PAGES))
		snprintf(buf, cap, "4 KiB pages (huge pages not asked for)");
	else if (!in->huge_known)
		snprintf(buf, cap, "huge pages asked for (not measured)");
	else
		snprintf(
			buf, cap,
			"huge pages asked for: %s of %s in huge "
			"pages",
			ctl_human_bytes(in->huge_bytes, got, sizeof(got)),
			ctl_human_bytes(in->st.memory_bytes, all, sizeof(all)));
}

double ctl_info_load(const struct shmkv_stats *st)
{
	return st->slots ? (double)(st->live_keys + st->pending) /
				   (double)st->slots
			 : 0;
}

uint64_t ctl_info_moved(const struct shmkv_stats *st)
{
	/* The library bounds it; bounded again, as anything of the
	 * segment: a percent over 100 would only confuse. */
	return st->growing_moved < st->growing_from ? st->growing_moved
						    : st->growing_from;
}

double ctl_info_progress(const struct shmkv_stats *st)
{
	return st->growing_from
		       ? (double)ctl_info_moved(st) / (double)st->growing_from
		       : 0;
}

void ctl_info_table_line(const struct ctl_info *in, char *buf, size_t cap)
{
	const struct shmkv_stats *st = &in->st;

	char more[48] = ", may not double within max_memory";

	if (st->slots_max > st->slots)
		snprintf(more, sizeof(more), ", may double to %" PRIu64,
			 st->slots_max);
	snprintf(buf, cap,
		 "%" PRIu64 " slots (%" PRIu32 " at creation, doubled %" PRIu64
		 " time%s%s)",
		 st->slots, in->cfg.slots, st->growths,
		 st->growths == 1 ? "" : "s", more);
}

bool ctl_info_growth_line(const struct shmkv_stats *st, char *buf, size_t cap)
{
	if (st->growing_from == 0)
		return false;
	snprintf(buf, cap,
		 "from %" PRIu64 " to %" PRIu64 " slots: %" PRIu64
		 " of %" PRIu64 " old slots moved (%.1f%%)",
		 st->growing_from, 2 * st->growing_from, ctl_info_moved(st),
		 st->growing_from, 100 * ctl_info_progress(st));
	return true;
}

uint64_t ctl_info_used_bytes(const struct shmkv_stats *st)
{
	uint64_t n = 0;

	for (uint32_t c = 0; c < ctl_classes(st); c++)
		n += (uint64_t)st->cls[c].used * st->cls[c].block_size;
	return n;
}

static double class_used(const struct shmkv_stats *st, uint32_t c)
{
	return st->cls[c].blocks
		       ? (double)st->cls[c].used / (double)st->cls[c].blocks
		       : 0;
}

/* Free pages the library keeps, one for each class that has no page. */
uint32_t ctl_info_pages_kept(const struct shmkv_stats *st)
{
	uint32_t n = 0;

	for (uint32_t c = 0; c < ctl_classes(st); c++)
		n += st->cls[c].pages == 0;
	return n;
}

/* Free pages now, and those growth within max_memory may still add
 * (bounded: the counts come from the segment). */
static uint64_t pages_free_all(const struct shmkv_stats *st)
{
	uint64_t n = st->pages_free < st->pages ? st->pages_free : st->pages;

	return n + (st->pages_max > st->pages ? st->pages_max - st->pages : 0);
}

uint64_t ctl_info_class_pages_left(const struct shmkv_stats *st, uint32_t c)
{
	uint64_t free_pages = pages_free_all(st);
	uint32_t kept = ctl_info_pages_kept(st);

	/* block.c's may_claim(): a class may take a free page while one
	 * stays for every other class that has none (a class without a
	 * page is one of those kept itself: it may take its own). */
	if (st->cls[c].pages == 0 && kept > 0)
		kept--;
	return free_pages > kept ? free_pages - kept : 0;
}

uint64_t ctl_info_class_room(const struct shmkv_stats *st, uint32_t c)
{
	uint32_t size = st->cls[c].block_size;
	uint64_t free_blocks = st->cls[c].blocks > st->cls[c].used
				       ? st->cls[c].blocks - st->cls[c].used
				       : 0;

	if (size == 0)
		return free_blocks;
	return free_blocks +
	       ctl_info_class_pages_left(st, c) * (st->page_size / size);
}

/* What a new key does in a full probe window, by the policy. */
static const char *full_table_fate(const struct shmkv_stats *st)
{
	switch (st->evict_policy) {
	case SHMKV_EVICT_ALLKEYS_LRU:
	case SHMKV_EVICT_ALLKEYS_LFU:
	case SHMKV_EVICT_ALLKEYS_RANDOM:
		return "new keys evict others";
	case SHMKV_EVICT_VOLATILE_LRU:
	case SHMKV_EVICT_VOLATILE_LFU:
	case SHMKV_EVICT_VOLATILE_RANDOM:
	case SHMKV_EVICT_VOLATILE_TTL:
		return "new keys evict keys with a TTL, or fail with 'table "
		       "full' where none is near";
	default:
		return "new keys may fail with 'table full'";
	}
}

int ctl_info_warnings(const struct ctl_info *in, char (*w)[CTL_WARN_LEN],
		      int max)
{
	const struct shmkv_stats *st = &in->st;
	int n = 0;

	/* A table that may still double does so at 7/8 full: a load past
	 * 75% is news only where it may not. */
	if (n < max && ctl_info_load(st) > WARN_TABLE_LOAD &&
	    st->slots_max <= st->slots)
		snprintf(w[n++], CTL_WARN_LEN,
			 "table %.0f%% full (over 75%%) and may not double "
			 "within max_memory: %s (maxmemory-policy %s)",
			 100 * ctl_info_load(st), full_table_fate(st),
			 ctl_policy_name(st->evict_policy));
	/* A class grows into free pages, except the ones kept for classes
	 * that have none yet: only a full class that cannot grow is a
	 * problem. */
	for (uint32_t c = 0; c < ctl_classes(st); c++)
		if (n < max && ctl_info_class_pages_left(st, c) == 0 &&
		    class_used(st, c) > WARN_CLASS_USED)
			snprintf(w[n++], CTL_WARN_LEN,
				 "size class %u (%u-byte blocks) %.0f%% used "
				 "(over 90%%) and no free page left to it",
				 c, st->cls[c].block_size,
				 100 * class_used(st, c));
	if (n < max && st->corrupt > 0)
		snprintf(w[n++], CTL_WARN_LEN,
			 "%" PRIu64 " corrupt slots: run shmctl check",
			 st->corrupt);
	if (n < max && st->pending > 0)
		snprintf(w[n++], CTL_WARN_LEN,
			 "%" PRIu64 " slots pending (claimed or mid-insert): "
			 "if no writer is running, run shmctl recover",
			 st->pending);
	if (n < max && in->huge_known &&
	    in->huge_bytes + (2u << 20) <= in->st.memory_bytes)
		snprintf(w[n++], CTL_WARN_LEN,
			 "huge pages asked for, %s: mount /dev/shm with "
			 "huge=advise (see README, Huge pages)",
			 in->huge_bytes ? "not all given" : "none given");
	if (n < max && in->cfg.probe_limit > 0 &&
	    st->longest_probe >= in->cfg.probe_limit)
		snprintf(w[n++], CTL_WARN_LEN,
			 "a probe run reached the probe limit (%" PRIu32 ")",
			 in->cfg.probe_limit);
	return n;
}

/*
 * ROOM: the blocks the class can still hand out, its free ones and those
 * of the pages it may still take; USABLE: their bytes. A class's room is
 * not the others': free pages kept for classes that have none are not
 * its own.
 */
void ctl_info_classes(const struct shmkv_stats *st, const char *indent,
		      const char *eol)
{
	char usable[32];

	printf("%s%5s %7s %6s %10s %10s %10s %6s %10s %10s%s", indent, "CLASS",
	       "BLOCK", "PAGES", "BLOCKS", "USED", "FREE", "USED%", "ROOM",
	       "USABLE", eol);
	for (uint32_t c = 0; c < ctl_classes(st); c++) {
		uint64_t room = ctl_info_class_room(st, c);

		printf("%s%5u %7u %6u %10u %10u %10u %5.1f%% %10" PRIu64
		       " %10s%s",
		       indent, c, st->cls[c].block_size, st->cls[c].pages,
		       st->cls[c].blocks, st->cls[c].used,
		       st->cls[c].blocks - st->cls[c].used,
		       100 * class_used(st, c), room,
		       ctl_human_bytes(room * st->cls[c].block_size, usable,
				       sizeof(usable)),
		       eol);
	}
}
