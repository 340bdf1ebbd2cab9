/*
 * test_hugepages.c - the store's mapping options: SHMKV_CONFIG_HUGE_PAGES
 * (recorded in the header, followed by every opener), SHMKV_OPEN_POPULATE
 * and SHMKV_CONFIG_POPULATE (pre-faulting), shmkv_huge_mapped(), and the
 * errors for options this library does not know.
 *
 * Whether the kernel gives huge pages depends on how /dev/shm is mounted,
 * so the tests that need them run in a child with a private mount
 * namespace and its own tmpfs mounted huge=advise on /dev/shm (root only;
 * skipped, and said so, otherwise). Everywhere else they check what must
 * hold whatever the kernel does: the store works, and it never reports
 * huge pages it was not given.
 */
#include "helpers/testutil.h"
#include "internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(hugepages, .fini = tu_teardown);

#define HUGE (2u << 20)

/* The memory a store uses: what populating maps, and what is huge when
 * huge pages are given (the rest of its file is reserved, not allocated). */
static uint64_t memory_of(shmkv_t *kv)
{
	struct shmkv_stats st;

	tu_assert_ok(shmkv_stats(kv, &st));
	return st.memory_bytes;
}

/* The "Rss:" of the mapping starting at @base in /proc/self/smaps, in
 * bytes; -1 if it is not there. */
static long long mapping_rss(const void *base)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	unsigned long start, end;
	long long kb, rss = -1;
	int inside = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			if (inside)
				break;
			inside = start == (unsigned long)(uintptr_t)base;
		} else if (inside && sscanf(line, "Rss: %lld kB", &kb) == 1) {
			rss = kb << 10;
		}
	}
	fclose(f);
	return rss;
}

static struct shmkv_config huge_config(uint32_t slots)
{
	struct shmkv_config cfg = tu_config(slots, 16, 64, 0);

	cfg.flags = SHMKV_CONFIG_HUGE_PAGES;
	return cfg;
}

/*
 * Options this library does not know
 */

Test(hugepages, create_refuses_every_unknown_config_flag_and_leaves_nothing)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL;

	tu_make_name(name, "flags");
	for (unsigned bit = 2; bit < 32; bit++) {
		struct shmkv_config cfg = tu_config(1024, 0, 0, 0);

		cfg.flags = SHMKV_CONFIG_HUGE_PAGES | (1u << bit);
		tu_assert_rc(shmkv_create(name, &cfg, &kv), -EINVAL);
		tu_assert_rc(shmkv_open_or_create(name, &cfg, &kv), -EINVAL);
		cr_assert_null(kv);
		tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
	}
}

Test(hugepages, open_or_create_refuses_an_unknown_flag_even_if_the_store_exists)
{
	struct shmkv_config cfg = tu_config(1024, 0, 0, 0);
	shmkv_t *kv = NULL;

	tu_kv = tu_create(NULL, tu_name);
	cfg.flags = 1u << 7;
	tu_assert_rc(shmkv_open_or_create(tu_name, &cfg, &kv), -EINVAL);
	cr_assert_null(kv);
}

Test(hugepages, open_refuses_every_unknown_open_flag)
{
	shmkv_t *kv = NULL;

	tu_kv = tu_create(NULL, tu_name);
	for (unsigned bit = 2; bit < 32; bit++) {
		tu_assert_rc(shmkv_open(tu_name,
					SHMKV_OPEN_POPULATE | 1u << bit, &kv),
			     -EINVAL);
		cr_assert_null(kv);
	}
}

/* A header flag of a later version: the store is refused, not half
 * followed. Setting the huge-page bit on a store built without it is
 * caught too: its size is not the geometry's. */
Test(hugepages, open_refuses_a_header_with_flags_it_does_not_know)
{
	uint32_t flags = 1u << 1;
	shmkv_t *kv = NULL;

	tu_kv = tu_create(NULL, tu_name);
	tu_shm_pwrite(tu_name, &flags, sizeof(flags),
		      offsetof(struct shmkv_header_shm, flags));
	tu_assert_rc(shmkv_open(tu_name, 0, &kv), -EBADMSG);
	flags = SHMKV_HDR_HUGE_PAGES;
	tu_shm_pwrite(tu_name, &flags, sizeof(flags),
		      offsetof(struct shmkv_header_shm, flags));
	tu_assert_rc(shmkv_open(tu_name, 0, &kv), -EBADMSG);
	flags = 0;
	tu_shm_pwrite(tu_name, &flags, sizeof(flags),
		      offsetof(struct shmkv_header_shm, flags));
	kv = tu_open(tu_name, 0);
	shmkv_close(kv);
}

/*
 * Huge pages, whatever the kernel gives
 */

Test(hugepages, a_huge_page_store_is_whole_huge_pages_and_says_so)
{
	struct shmkv_config cfg = huge_config(1024), got;
	shmkv_t *b;

	tu_kv = tu_create(&cfg, tu_name);
	cr_assert_eq(tu_shm_size(tu_name) % HUGE, 0, "size %lld",
		     (long long)tu_shm_size(tu_name));
	got = tu_get_config(tu_kv);
	cr_assert_eq(got.flags, SHMKV_CONFIG_HUGE_PAGES);
	/* Another opener follows the header, whatever it asked for. */
	b = tu_open(tu_name, SHMKV_OPEN_READONLY);
	cr_assert_eq(tu_get_config(b).flags, SHMKV_CONFIG_HUGE_PAGES);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_get_str(b, "k", "v");
	shmkv_close(b);
}

Test(hugepages, a_plain_store_has_no_flags_and_no_huge_pages)
{
	uint64_t bytes = 1;

	tu_kv = tu_create(NULL, tu_name);
	cr_assert_eq(tu_get_config(tu_kv).flags, 0);
	tu_assert_ok(shmkv_huge_mapped(tu_kv, &bytes));
	cr_assert_eq(bytes, 0);
}

/* Never more than the mapping, in whole huge pages: whether it is 0 is
 * this machine's /dev/shm's choice. */
Test(hugepages, huge_mapped_reports_at_most_the_mapping_in_whole_pages)
{
	struct shmkv_config cfg = huge_config(1u << 14);
	uint64_t bytes = 1;

	cfg.flags |= SHMKV_CONFIG_POPULATE;
	tu_kv = tu_create(&cfg, tu_name);
	tu_assert_ok(shmkv_huge_mapped(tu_kv, &bytes));
	cr_assert_leq(bytes, (uint64_t)tu_shm_size(tu_name));
	cr_assert_eq(bytes % HUGE, 0, "%llu", (unsigned long long)bytes);
	tu_assert_rc(shmkv_huge_mapped(NULL, &bytes), -EINVAL);
	tu_assert_rc(shmkv_huge_mapped(tu_kv, NULL), -EINVAL);
}

/*
 * Pre-faulting
 */

Test(hugepages, open_populate_maps_every_page_and_a_plain_open_none)
{
	shmkv_t *plain, *pop, *ro;
	long long size;

	tu_kv = tu_create_growing(&(struct shmkv_config){ .slots = 1u << 12 },
				  tu_name);
	size = (long long)memory_of(tu_kv);
	plain = tu_open(tu_name, 0);
	pop = tu_open(tu_name, SHMKV_OPEN_POPULATE);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY | SHMKV_OPEN_POPULATE);
	/* A plain open reads the header's life word through the mapping
	 * (the tables it holds): the kernel maps its page and at most the
	 * fault-around window's (64 KiB) with it, nothing more. */
	cr_assert_leq(mapping_rss(plain->base), 64 << 10);
	cr_assert_eq(mapping_rss(pop->base), size, "rss %lld of %lld",
		     mapping_rss(pop->base), size);
	cr_assert_eq(mapping_rss(ro->base), size);
	tu_assert_rc(shmkv_set(pop, LIT("k"), LIT("1"), 0, 0, NULL), 1);
	tu_assert_get_str(ro, "k", "1");
	shmkv_close(plain);
	shmkv_close(pop);
	shmkv_close(ro);
}

Test(hugepages, config_populate_prefaults_on_create_and_on_open_or_create)
{
	struct shmkv_config cfg = { .slots = 1u << 12 };
	shmkv_t *again = NULL;
	long long size;

	cfg.flags = SHMKV_CONFIG_POPULATE;
	tu_make_name(tu_name, NULL);
	tu_assert_ok(shmkv_open_or_create(tu_name, &cfg, &tu_kv));
	size = (long long)memory_of(tu_kv);
	cr_assert_eq(mapping_rss(tu_kv->base), size);
	/* Not recorded: the store is a plain one. */
	cr_assert_eq(tu_get_config(tu_kv).flags, 0);
	tu_assert_ok(shmkv_open_or_create(tu_name, &cfg, &again));
	cr_assert_eq(mapping_rss(again->base), size);
	shmkv_close(again);
}

/*
 * Huge pages given: a private /dev/shm mounted huge=advise
 */

enum huge_step {
	HS_OK,
	HS_CREATE = 10,
	HS_CREATOR_SMALL, /* the creator's mapping is not all huge */
	HS_OPEN,
	HS_OPENER_SMALL, /* a populating opener's is not */
	HS_TOUCH_SMALL,	 /* a plain opener's first GET maps no huge page */
	HS_PLAIN_HUGE,	 /* a store without the flag got huge pages */
	HS_DATA,
};

static uint64_t huge_of(const shmkv_t *kv)
{
	uint64_t bytes = 0;

	return shmkv_huge_mapped(kv, &bytes) == 0 ? bytes : 0;
}

static int huge_child(const char *name)
{
	struct shmkv_config cfg = huge_config(1u << 16), plain = cfg;
	char pname[TU_NAME_CAP];
	shmkv_t *kv, *b, *c;
	char buf[8];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	uint64_t size;

	if (shmkv_create(name, &cfg, &kv) != 0)
		return HS_CREATE;
	size = memory_of(kv);
	if (huge_of(kv) != size)
		return HS_CREATOR_SMALL;
	if (shmkv_set(kv, LIT("k"), LIT("v"), 0, 0, NULL) != 1)
		return HS_DATA;
	if (shmkv_open(name, SHMKV_OPEN_POPULATE, &b) != 0 ||
	    shmkv_open(name, SHMKV_OPEN_READONLY, &c) != 0)
		return HS_OPEN;
	if (huge_of(b) != size)
		return HS_OPENER_SMALL;
	if (shmkv_get(c, LIT("k"), &v) != 1 || v.len != 1 || buf[0] != 'v')
		return HS_DATA;
	if (huge_of(c) < HUGE)
		return HS_TOUCH_SMALL;
	plain.flags = SHMKV_CONFIG_POPULATE;
	snprintf(pname, sizeof(pname), "%.*s-p", SHMKV_NAME_MAX - 2, name);
	if (shmkv_create(pname, &plain, &b) != 0)
		return HS_CREATE;
	if (huge_of(b) != 0)
		return HS_PLAIN_HUGE;
	return HS_OK;
}

Test(hugepages, with_huge_advise_every_mapping_of_the_store_is_huge)
{
	int st;

	tu_make_name(tu_name, NULL);
	st = tu_in_private_shm("huge=advise,size=256m", huge_child, tu_name,
			       "huge pages");
	cr_assert_eq(st, HS_OK, "child failed at step %d", st);
}
