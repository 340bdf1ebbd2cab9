/*
 * test_foreign.c - refusing what is not a sound store (foreign files,
 * truncated or altered headers), and surviving a store whose content was
 * scribbled over.
 */
#include "helpers/rng.h"
#include "helpers/testutil.h"

#include <stddef.h>
#include <stdlib.h>

#include "../src/layout.h"

TestSuite(foreign, .fini = tu_teardown);
/* The timeout only turns a hang into a failure: on noise, commands run
 * their retry bounds out, and under ASan+UBSan on a loaded 2-core machine
 * one test of this suite has taken over two minutes. */
TestSuite(corrupt, .fini = tu_teardown, .timeout = 600);

/*
 * Foreign and damaged segments
 */

static void assert_open_fails(const char *name, int want)
{
	shmkv_t *kv = NULL;
	struct shmkv_config cfg = tu_config(64, 0, 0, 0);

	tu_assert_rc(shmkv_open(name, 0, &kv), want);
	tu_assert_rc(shmkv_open(name, SHMKV_OPEN_READONLY, &kv), want);
	/* Never "repaired" by creating over it. */
	tu_assert_rc(shmkv_open_or_create(name, &cfg, &kv), want);
	cr_assert_null(kv);
}

Test(foreign, a_file_of_random_bytes_is_eproto)
{
	unsigned char junk[16384];
	uint64_t rng = 12345;

	rng_fill(&rng, junk, sizeof(junk));
	tu_make_name(tu_name, NULL);
	tu_shm_write_new(tu_name, junk, sizeof(junk));
	assert_open_fails(tu_name, -EPROTO);
	cr_assert_eq(tu_shm_size(tu_name), (off_t)sizeof(junk));
}

Test(foreign, files_of_zeros_are_eproto)
{
	static const size_t sizes[] = { 4, 4096, 1u << 20 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *zeros = tu_fill(sizes[i], 0);
		char name[TU_NAME_CAP];

		tu_make_name(name, NULL);
		tu_shm_write_new(name, zeros, sizes[i]);
		assert_open_fails(name, -EPROTO);
	}
}

Test(foreign, an_empty_file_is_eproto)
{
	tu_make_name(tu_name, NULL);
	tu_shm_write_new(tu_name, "", 0);
	assert_open_fails(tu_name, -EPROTO);
}

/* A closed store of the test's standard geometry, holding a few keys. */
static void make_closed_store(void)
{
	struct shmkv_config cfg = tu_config(256, 32, 512, 0);
	shmkv_t *kv = tu_create(&cfg, tu_name);

	tu_populate(kv, 20);
	shmkv_close(kv);
}

Test(foreign, a_truncated_store_is_ebadmsg)
{
	off_t size;

	make_closed_store();
	size = tu_shm_size(tu_name);
	tu_shm_truncate(tu_name, size / 2);
	assert_open_fails(tu_name, -EBADMSG);
	tu_shm_truncate(tu_name, size - 4096);
	assert_open_fails(tu_name, -EBADMSG);
	tu_shm_truncate(tu_name, SHMKV_HEADER_SIZE);
	assert_open_fails(tu_name, -EBADMSG);
}

Test(foreign, a_store_grown_beyond_its_size_is_ebadmsg)
{
	make_closed_store();
	tu_shm_truncate(tu_name, tu_shm_size(tu_name) + 4096);
	assert_open_fails(tu_name, -EBADMSG);
}

Test(foreign, a_store_with_another_magic_is_eproto)
{
	uint64_t magic = SHMKV_MAGIC ^ 1;

	make_closed_store();
	tu_shm_pwrite(tu_name, &magic, sizeof(magic),
		      offsetof(struct shmkv_header_shm, magic));
	assert_open_fails(tu_name, -EPROTO);
	tu_assert_rc(shmkv_unlink(tu_name), -EPROTO);
}

/* Overwrites a header field, asserts the open error, restores the field
 * and asserts the store opens again: the field alone made the difference. */
static void assert_field_refused(size_t off, const void *val, size_t len,
				 int want)
{
	unsigned char saved[16];
	shmkv_t *kv;

	cr_assert_leq(len, sizeof(saved));
	tu_shm_pread(tu_name, saved, len, (off_t)off);
	tu_shm_pwrite(tu_name, val, len, (off_t)off);
	assert_open_fails(tu_name, want);
	tu_shm_pwrite(tu_name, saved, len, (off_t)off);
	kv = tu_open(tu_name, 0);
	tu_assert_get_str(kv, "base1", "value1");
	shmkv_close(kv);
}

#define HDR_OFF(field) offsetof(struct shmkv_header_shm, field)

static void assert_u32_refused(size_t off, uint32_t v, int want)
{
	cr_log_info("u32 at %zu := %u", off, v);
	assert_field_refused(off, &v, sizeof(v), want);
}

static void assert_u64_refused(size_t off, uint64_t v, int want)
{
	cr_log_info("u64 at %zu := %llu", off, (unsigned long long)v);
	assert_field_refused(off, &v, sizeof(v), want);
}

Test(foreign, another_layout_version_is_eprotonosupport)
{
	struct shmkv_header_shm h;

	make_closed_store();
	tu_shm_pread(tu_name, &h, sizeof(h), 0);
	assert_u32_refused(HDR_OFF(layout_version), h.layout_version + 1,
			   -EPROTONOSUPPORT);
	assert_u32_refused(HDR_OFF(layout_version), 0, -EPROTONOSUPPORT);
	assert_u32_refused(HDR_OFF(format), h.format ^ 0x100, -EPROTONOSUPPORT);
}

Test(foreign, inconsistent_geometry_is_ebadmsg)
{
	struct shmkv_header_shm h;

	make_closed_store();
	tu_shm_pread(tu_name, &h, sizeof(h), 0);
	assert_u32_refused(HDR_OFF(slot_count), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(slot_count), 255, -EBADMSG);
	assert_u32_refused(HDR_OFF(slot_count), h.slot_count * 2, -EBADMSG);
	assert_u32_refused(HDR_OFF(slot_count), h.slot_count / 2, -EBADMSG);
	assert_u32_refused(HDR_OFF(slot_count), 0x80000000u, -EBADMSG);
	assert_u32_refused(HDR_OFF(slot_size), h.slot_size + 32, -EBADMSG);
	assert_u32_refused(HDR_OFF(slot_size), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(key_max), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(key_max), h.key_max + 64, -EBADMSG);
	assert_u32_refused(HDR_OFF(key_max), 0xffffffffu, -EBADMSG);
	assert_u32_refused(HDR_OFF(value_max), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(value_max), h.value_max * 4, -EBADMSG);
	assert_u32_refused(HDR_OFF(value_max), 0xffffffffu, -EBADMSG);
	assert_u32_refused(HDR_OFF(probe_limit), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(probe_limit), 0xffffffffu, -EBADMSG);
	assert_u32_refused(HDR_OFF(class_count), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(class_count), 200, -EBADMSG);
	assert_u64_refused(HDR_OFF(segment_size), h.segment_size + 4096,
			   -EBADMSG);
	assert_u64_refused(HDR_OFF(segment_size), 0, -EBADMSG);
	assert_u64_refused(HDR_OFF(slots_offset), 0, -EBADMSG);
	assert_u64_refused(HDR_OFF(slots_offset), h.segment_size, -EBADMSG);
	assert_u64_refused(HDR_OFF(value_memory), 0, -EBADMSG);
	assert_u64_refused(HDR_OFF(value_memory), h.value_memory * 2, -EBADMSG);
	assert_u64_refused(HDR_OFF(value_memory), UINT64_MAX, -EBADMSG);
	assert_u32_refused(HDR_OFF(class_size[0]), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(class_size[0]), h.class_size[0] * 2,
			   -EBADMSG);
	assert_u32_refused(HDR_OFF(class_size[SHMKV_CLASSES_MAX - 1]), 64,
			   -EBADMSG);
	assert_u32_refused(HDR_OFF(page_size), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(page_size), h.page_size * 2, -EBADMSG);
	assert_u32_refused(HDR_OFF(page_size), h.page_size + 4096, -EBADMSG);
	assert_u32_refused(HDR_OFF(page_size), h.page_size - 4096, -EBADMSG);
	assert_u32_refused(HDR_OFF(page_count), h.page_count + 1, -EBADMSG);
	assert_u32_refused(HDR_OFF(page_count), 0xffffffffu, -EBADMSG);
	assert_u32_refused(HDR_OFF(units_per_page), 0, -EBADMSG);
	assert_u32_refused(HDR_OFF(units_per_page), h.units_per_page * 2,
			   -EBADMSG);
	/* Not a power of two: a shift would split units wrong. */
	assert_u32_refused(HDR_OFF(units_per_page), h.units_per_page - 1,
			   -EBADMSG);
	/* A top class off the cache-line grid. */
	assert_u32_refused(HDR_OFF(class_size[h.class_count - 1]),
			   h.class_size[h.class_count - 1] - 8, -EBADMSG);
	assert_u64_refused(HDR_OFF(page_table_offset), 0, -EBADMSG);
	assert_u64_refused(HDR_OFF(page_table_offset), h.segment_size,
			   -EBADMSG);
	assert_u64_refused(HDR_OFF(pages_offset), h.pages_offset + 4096,
			   -EBADMSG);
}

/*
 * Scribbled content: the header is sound, everything after it is noise.
 * Each command must return a result or an error, never crash or hang; the
 * lead guarantees no particular error.
 */

static void scribble(const char *name, off_t from, off_t to, unsigned seed)
{
	size_t len = (size_t)(to - from);
	unsigned char *junk = (unsigned char *)tu_fill(len, 0);
	uint64_t rng = seed;

	rng_fill(&rng, junk, len);
	tu_shm_pwrite(name, junk, len, from);
}

/* A result is in range: every command run here replies 0 or 1 (SCAN
 * gives count_key's 0), or a negative errno. */
static void assert_sane(int rc, const char *what, unsigned i)
{
	cr_assert(rc >= -4095 && rc <= 1, "%s #%u gave %d", what, i, rc);
}

static void assert_value_sane(int rc, const struct shmkv_value *v,
			      const char *what, unsigned i)
{
	assert_sane(rc, what, i);
	if (rc == 1 || rc == -ENOBUFS)
		cr_assert_leq(v->len, 512, "%s #%u: length %zu > value_max",
			      what, i, v->len);
}

static void run_every_command(shmkv_t *kv, const char *k, size_t kl, unsigned i)
{
	struct shmkv_value v = tu_scratch_for(kv);
	int64_t n = 0;

	assert_value_sane(shmkv_get(kv, k, kl, &v), &v, "GET", i);
	assert_sane(shmkv_exists(kv, k, kl), "EXISTS", i);
	assert_sane(shmkv_pttl(kv, k, kl, &n), "PTTL", i);
	assert_sane(shmkv_ttl(kv, k, kl, &n), "TTL", i);
	v = tu_scratch_for(kv);
	assert_value_sane(shmkv_getex(kv, k, kl, SHMKV_GETEX_KEEP, 0, &v), &v,
			  "GETEX", i);
	assert_sane(shmkv_incr(kv, k, kl, &n), "INCR", i);
	assert_sane(shmkv_decrby(kv, k, kl, 3, &n), "DECRBY", i);
	assert_sane(
		shmkv_expire(kv, k, kl, SHMKV_EXPIRE_SEC, SHMKV_EXPIRE_GT, 100),
		"EXPIRE", i);
	assert_sane(shmkv_persist(kv, k, kl), "PERSIST", i);
	v = tu_scratch_for(kv);
	assert_value_sane(
		shmkv_set(kv, k, kl, LIT("new"), SHMKV_SET_GET, 0, &v), &v,
		"SET GET", i);
	assert_sane(shmkv_set(kv, k, kl, k, kl, SHMKV_SET_PX, 100000, NULL),
		    "SET PX", i);
	assert_sane(shmkv_setnx(kv, k, kl, LIT("nx")), "SETNX", i);
	v = tu_scratch_for(kv);
	assert_value_sane(shmkv_getset(kv, k, kl, LIT("gs"), &v), &v, "GETSET",
			  i);
	assert_sane(shmkv_delifeq(kv, k, kl, LIT("gs")), "DELIFEQ", i);
	v = tu_scratch_for(kv);
	assert_value_sane(shmkv_getdel(kv, k, kl, &v), &v, "GETDEL", i);
	assert_sane(shmkv_del(kv, k, kl), "DEL", i);
}

static int count_key(const void *key, size_t klen, void *arg)
{
	(void)key;
	cr_assert_leq(klen, 32, "scan gave a key of %zu bytes", klen);
	++*(unsigned *)arg;
	return 0;
}

static void run_maintenance(shmkv_t *kv, struct shmkv_stats *st)
{
	uint64_t cursor = 0, next = 0;
	unsigned keys = 0, calls = 0;
	int rc;

	rc = shmkv_stats(kv, st);
	cr_assert(rc == 0 || rc == -EBADMSG, "stats: %s", tu_rcname(rc));
	do {
		rc = shmkv_scan(kv, cursor, 64, count_key, &keys, &next);
		assert_sane(rc, "SCAN", calls);
		cursor = next;
	} while (rc == 0 && cursor != 0 && ++calls < 10000);
	calls = 0;
	cursor = 0;
	do {
		rc = shmkv_sweep(kv, &cursor, 64);
		cr_assert(rc >= -4095, "sweep gave %d", rc);
	} while (rc >= 0 && cursor != 0 && ++calls < 10000);
	rc = shmkv_recover(kv, NULL);
	cr_assert(rc >= -4095, "recover gave %d", rc);
}

enum region { ALL_CONTENT, SLOT_ARRAY, VALUE_STORAGE };

/* Makes a store, fills @region with noise, then runs every command on 600
 * keys (half of them keys the store held) and every maintenance call. */
static void torture(enum region region, unsigned seed)
{
	struct shmkv_header_shm h;
	struct shmkv_stats st;
	off_t from, to;
	char k[32];
	int rc;

	make_closed_store();
	tu_shm_pread(tu_name, &h, sizeof(h), 0);
	from = region == VALUE_STORAGE ? (off_t)h.page_table_offset
				       : (off_t)SHMKV_HEADER_SIZE;
	to = region == SLOT_ARRAY
		     ? (off_t)(h.slots_offset +
			       (uint64_t)h.slot_count * h.slot_size)
		     : (off_t)h.segment_size;
	scribble(tu_name, from, to, seed);
	tu_kv = tu_open(tu_name, 0);
	if (region != VALUE_STORAGE) {
		/* Random state words are mostly impossible ones. */
		rc = shmkv_stats(tu_kv, &st);
		cr_assert(rc == -EBADMSG || (rc == 0 && st.corrupt > 0),
			  "stats: %s, corrupt %llu", tu_rcname(rc),
			  rc ? 0ull : (unsigned long long)st.corrupt);
	}
	run_maintenance(tu_kv, &st);
	for (unsigned i = 0; i < 600; i++) {
		size_t kl = tu_fmt(k, sizeof(k), i % 2 ? "base" : "other",
				   i / 2);

		run_every_command(tu_kv, k, kl, i);
	}
	run_maintenance(tu_kv, &st);
}

Test(corrupt, scribbled_slots_and_values_never_crash)
{
	torture(ALL_CONTENT, 1);
}

Test(corrupt, scribbled_slot_array_never_crashes)
{
	torture(SLOT_ARRAY, 2);
}

Test(corrupt, scribbled_value_storage_never_crashes)
{
	torture(VALUE_STORAGE, 3);
}
