/*
 * test_segment.c - the segment's life: create, open, open_or_create, close,
 * unlink, names, configs and modes; read-only handles; and refusing what is
 * not a sound store (foreign files, truncated or altered headers) and
 * surviving one whose content was scribbled over.
 */
#include "helpers/testutil.h"

#include <stddef.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "../src/layout.h"

TestSuite(segment, .fini = tu_teardown);
TestSuite(names, .fini = tu_teardown);
TestSuite(config, .fini = tu_teardown);
TestSuite(readonly, .init = tu_setup, .fini = tu_teardown);
TestSuite(foreign, .fini = tu_teardown);
TestSuite(corrupt, .fini = tu_teardown, .timeout = 120);

static void assert_no_store(const char *name)
{
	shmkv_t *kv = NULL;

	tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
	cr_assert_null(kv);
}

/*
 * Life cycle
 */

Test(segment, create_then_open_share_one_store)
{
	shmkv_t *a = tu_kv = tu_create(NULL, tu_name);
	shmkv_t *b = tu_open(tu_name, 0);

	tu_assert_rc(shmkv_set(a, LIT("k"), LIT("from a"), 0, 0, NULL), 1);
	tu_assert_get_str(b, "k", "from a");
	tu_assert_rc(shmkv_set(b, LIT("k"), LIT("from b"), 0, 0, NULL), 1);
	tu_assert_get_str(a, "k", "from b");
	shmkv_close(b);
	tu_assert_get_str(a, "k", "from b");
}

Test(segment, data_outlives_every_handle_until_unlinked)
{
	shmkv_t *kv = tu_create(NULL, tu_name);

	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("kept"), 0, 0, NULL), 1);
	shmkv_close(kv);
	tu_kv = tu_open(tu_name, 0);
	tu_assert_get_str(tu_kv, "k", "kept");
}

Test(segment, get_config_reports_the_geometry_given)
{
	struct shmkv_config cfg = tu_config(256, 100, 5000, 1u << 20), got;

	cfg.probe_limit = 32;
	cfg.mode = 0640;
	tu_kv = tu_create(&cfg, tu_name);
	got = tu_get_config(tu_kv);
	cr_assert_eq(got.slots, 256);
	cr_assert_eq(got.key_max, 100);
	cr_assert_eq(got.value_max, 5000);
	cr_assert_eq(got.probe_limit, 32);
	cr_assert_eq(got.value_memory, 1u << 20);
	cr_assert_eq(got.mode, 0640, "mode %o", got.mode);
}

static void assert_default_geometry(const shmkv_t *kv)
{
	struct shmkv_config got = tu_get_config(kv);

	cr_assert_eq(got.slots, SHMKV_SLOTS_DEFAULT);
	cr_assert_eq(got.key_max, SHMKV_KEY_MAX_DEFAULT);
	cr_assert_eq(got.value_max, SHMKV_VALUE_MAX_DEFAULT);
	cr_assert_eq(got.probe_limit, SHMKV_PROBE_LIMIT_DEFAULT);
	cr_assert_eq(got.value_memory, (uint64_t)SHMKV_SLOTS_DEFAULT * 256);
	cr_assert_eq(got.mode, SHMKV_MODE_DEFAULT, "mode %o", got.mode);
}

Test(segment, a_null_config_means_the_defaults)
{
	tu_kv = tu_create(NULL, tu_name);
	assert_default_geometry(tu_kv);
}

Test(segment, config_init_gives_the_defaults)
{
	struct shmkv_config cfg;

	memset(&cfg, 0x5a, sizeof(cfg));
	shmkv_config_init(&cfg);
	tu_kv = tu_create(&cfg, tu_name);
	assert_default_geometry(tu_kv);
}

Test(segment, zero_fields_take_their_defaults_beside_given_ones)
{
	struct shmkv_config cfg = tu_config(64, 0, 0, 0), got;

	tu_kv = tu_create(&cfg, tu_name);
	got = tu_get_config(tu_kv);
	cr_assert_eq(got.slots, 64);
	cr_assert_eq(got.key_max, SHMKV_KEY_MAX_DEFAULT);
	cr_assert_eq(got.value_max, SHMKV_VALUE_MAX_DEFAULT);
	/* The core raises the slots*256 default to fit a few values of
	 * every size class; shmkv.h still says only "slots*256". */
	cr_assert_geq(got.value_memory, 64 * 256);
	cr_assert_eq(got.mode, SHMKV_MODE_DEFAULT, "mode %o", got.mode);
}

Test(segment, create_twice_is_eexist_and_keeps_the_first)
{
	struct shmkv_config small = tu_config(64, 16, 64, 0);
	struct shmkv_config other = tu_config(128, 32, 128, 0);
	shmkv_t *again = NULL;

	tu_kv = tu_create(&small, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("first"), 0, 0, NULL), 1);
	tu_assert_rc(shmkv_create(tu_name, &other, &again), -EEXIST);
	cr_assert_null(again);
	tu_assert_rc(shmkv_create(tu_name, &small, &again), -EEXIST);
	shmkv_close(tu_kv);
	tu_kv = tu_open(tu_name, 0);
	tu_assert_get_str(tu_kv, "k", "first");
	cr_assert_eq(tu_get_config(tu_kv).slots, 64);
}

Test(segment, open_of_a_missing_store_is_enoent)
{
	shmkv_t *kv = NULL;

	tu_make_name(tu_name, NULL);
	tu_assert_rc(shmkv_open(tu_name, 0, &kv), -ENOENT);
	tu_assert_rc(shmkv_open(tu_name, SHMKV_OPEN_READONLY, &kv), -ENOENT);
	cr_assert_null(kv);
}

Test(segment, open_or_create_creates_a_missing_store_with_the_config)
{
	struct shmkv_config cfg = tu_config(128, 20, 300, 0);

	tu_make_name(tu_name, NULL);
	tu_assert_ok(shmkv_open_or_create(tu_name, &cfg, &tu_kv));
	cr_assert_eq(tu_get_config(tu_kv).slots, 128);
	cr_assert_eq(tu_get_config(tu_kv).value_max, 300);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
}

Test(segment, open_or_create_keeps_an_existing_store_and_its_geometry)
{
	struct shmkv_config first = tu_config(64, 16, 100, 0);
	struct shmkv_config second = tu_config(1024, 200, 2000, 0);
	shmkv_t *kv = tu_create(&first, tu_name), *again = NULL;
	struct shmkv_config got;

	tu_kv = kv;
	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("old"), 0, 0, NULL), 1);
	tu_assert_ok(shmkv_open_or_create(tu_name, &second, &again));
	got = tu_get_config(again);
	cr_assert_eq(got.slots, 64);
	cr_assert_eq(got.key_max, 16);
	cr_assert_eq(got.value_max, 100);
	tu_assert_get_str(again, "k", "old");
	tu_assert_rc(shmkv_set(again, LIT("k17-chars-long-xx"), LIT("v"), 0, 0,
			       NULL),
		     -ENAMETOOLONG);
	shmkv_close(again);
}

Test(segment, unlink_removes_the_name_and_attached_handles_keep_working)
{
	shmkv_t *fresh = NULL;

	tu_kv = tu_create(NULL, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_ok(shmkv_unlink(tu_name));
	assert_no_store(tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k2"), LIT("v2"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "v");
	/* The name is free again, for a new and empty store. */
	tu_assert_ok(shmkv_create(tu_name, NULL, &fresh));
	tu_assert_missing_str(fresh, "k");
	tu_assert_get_str(tu_kv, "k2", "v2");
	shmkv_close(fresh);
}

Test(segment, unlink_of_a_missing_store_is_enoent)
{
	tu_make_name(tu_name, NULL);
	tu_assert_rc(shmkv_unlink(tu_name), -ENOENT);
}

Test(segment, unlink_of_a_foreign_file_is_eproto_and_leaves_it_alone)
{
	static const char text[] = "not a store, just some bytes of text";
	char zeros[8192] = { 0 };
	char other[TU_NAME_CAP];
	size_t len;
	void *after;

	tu_make_name(tu_name, "text");
	tu_shm_write_new(tu_name, text, sizeof(text));
	tu_assert_rc(shmkv_unlink(tu_name), -EPROTO);
	after = tu_shm_read_all(tu_name, &len);
	cr_assert_eq(len, sizeof(text));
	cr_assert_arr_eq(after, text, sizeof(text));

	tu_make_name(other, "zeros");
	tu_shm_write_new(other, zeros, sizeof(zeros));
	tu_assert_rc(shmkv_unlink(other), -EPROTO);
	cr_assert_eq(tu_shm_size(other), (off_t)sizeof(zeros));
}

Test(segment, close_of_null_is_a_noop)
{
	shmkv_close(NULL);
}

Test(segment, create_and_open_need_an_out_pointer)
{
	tu_make_name(tu_name, NULL);
	tu_assert_rc(shmkv_create(tu_name, NULL, NULL), -EINVAL);
	assert_no_store(tu_name);
	tu_assert_rc(shmkv_open_or_create(tu_name, NULL, NULL), -EINVAL);
	assert_no_store(tu_name);
	tu_kv = tu_create(NULL, tu_name);
	tu_assert_rc(shmkv_open(tu_name, 0, NULL), -EINVAL);
}

Test(segment, open_with_unknown_flags_is_einval)
{
	shmkv_t *kv = NULL;

	tu_kv = tu_create(NULL, tu_name);
	tu_assert_rc(shmkv_open(tu_name, 1u << 1, &kv), -EINVAL);
	tu_assert_rc(shmkv_open(tu_name, ~0u, &kv), -EINVAL);
	cr_assert_null(kv);
}

Test(segment, strerror_has_a_sentence_for_every_error)
{
	static const int errs[] = {
		0,	 -EINVAL,    -ENAMETOOLONG, -E2BIG,   -EROFS,
		-ENOSPC, -ENOMEM,    -ENOBUFS,	    -EBADMSG, -EAGAIN,
		-EEXIST, -ENOENT,    -EACCES,	    -EPROTO,  -EPROTONOSUPPORT,
		-EDOM,	 -EOVERFLOW, -99999,	    1,	      INT32_MIN
	};

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *s = shmkv_strerror(errs[i]);

		cr_assert_not_null(s, "no text for %d", errs[i]);
		cr_assert_gt(strlen(s), 3, "text for %d: \"%s\"", errs[i], s);
	}
	cr_assert_str_neq(shmkv_strerror(-EPROTO), shmkv_strerror(-EBADMSG));
	cr_assert_str_neq(shmkv_strerror(-EPROTO),
			  shmkv_strerror(-EPROTONOSUPPORT));
	cr_assert_str_neq(shmkv_strerror(-ENOSPC), shmkv_strerror(-ENOMEM));
	cr_assert_str_neq(shmkv_strerror(-EDOM), shmkv_strerror(-EOVERFLOW));
}

/*
 * Names
 */

Test(names, a_name_of_exactly_name_max_is_accepted)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL;
	int n;

	tu_make_name(name, NULL);
	n = (int)strlen(name);
	memset(name + n, 'n', SHMKV_NAME_MAX - n);
	name[SHMKV_NAME_MAX] = '\0';
	tu_track(name);
	tu_assert_ok(shmkv_create(name, NULL, &kv));
	shmkv_close(kv);
	kv = tu_open(name, 0);
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}

static void assert_name_refused(const char *name, int want)
{
	struct shmkv_config cfg = tu_config(64, 0, 0, 0);
	shmkv_t *kv = NULL;

	cr_log_info("name \"%.40s\"", name ? name : "(null)");
	tu_assert_rc(shmkv_create(name, &cfg, &kv), want);
	tu_assert_rc(shmkv_open(name, 0, &kv), want);
	tu_assert_rc(shmkv_open_or_create(name, &cfg, &kv), want);
	tu_assert_rc(shmkv_unlink(name), want);
	cr_assert_null(kv);
}

Test(names, malformed_names_are_einval_everywhere)
{
	static const char *const bad[] = { "",	   "/",	  "noslash",
					   "/a/b", "//x", "/x/",
					   "/.",   "/..", NULL };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_name_refused(bad[i], -EINVAL);
}

/* shmkv.h: create, open and unlink give -EINVAL for a bad name, and a
 * name is bad when longer than SHMKV_NAME_MAX. */
Test(names, a_name_longer_than_name_max_is_einval_everywhere)
{
	char too_long[SHMKV_NAME_MAX + 2];

	too_long[0] = '/';
	memset(too_long + 1, 'x', SHMKV_NAME_MAX);
	too_long[SHMKV_NAME_MAX + 1] = '\0';
	assert_name_refused(too_long, -EINVAL);
}

/*
 * Configs and modes
 */

Test(config, bad_geometry_is_einval_and_creates_nothing)
{
	static const struct shmkv_config bad[] = {
		{ .slots = 3 },
		{ .slots = 100 },
		{ .slots = 1000 },
		{ .slots = SHMKV_SLOTS_MIN / 2 },
		{ .slots = 1 },
		{ .slots = SHMKV_SLOTS_MAX * 2u },
		{ .slots = 0xffffffffu },
		{ .slots = 64, .key_max = SHMKV_KEY_MAX_LIMIT + 1 },
		{ .slots = 64, .key_max = 0xffffffffu },
		{ .slots = 64, .value_max = SHMKV_VALUE_MAX_LIMIT + 1 },
		{ .slots = 64, .value_max = 0xffffffffu },
		{ .slots = 64, .value_max = 1024, .value_memory = 100 },
		{ .slots = 64, .value_max = 1024, .value_memory = 1024 },
		{ .slots = 64, .mode = 01000 },
		{ .slots = 64, .mode = 04600 },
		{ .slots = 64, .mode = 02700 },
		{ .slots = 64, .mode = 0xffffffffu },
	};
	shmkv_t *kv = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[TU_NAME_CAP];

		cr_log_info("config #%zu", i);
		tu_make_name(name, NULL);
		tu_assert_rc(shmkv_create(name, &bad[i], &kv), -EINVAL);
		tu_assert_rc(shmkv_open_or_create(name, &bad[i], &kv), -EINVAL);
		cr_assert_null(kv);
		assert_no_store(name);
	}
}

static void assert_config_works(const struct shmkv_config *cfg)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(cfg, name);

	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_get_str(kv, "k", "v");
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}

Test(config, limits_themselves_are_accepted)
{
	static const struct shmkv_config ok[] = {
		{ .slots = 16, .value_max = 64 },
		{ .slots = 64, .key_max = SHMKV_KEY_MAX_LIMIT },
		{ .slots = 16,
		  .value_max = SHMKV_VALUE_MAX_LIMIT,
		  .value_memory = 32u << 20 },
		{ .slots = 16, .key_max = 1, .value_max = 1 },
		{ .slots = 64, .mode = 0777 },
		{ .slots = 64, .mode = 0400 },
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cr_log_info("config #%zu", i);
		assert_config_works(&ok[i]);
	}
}

/* shmkv.h: value_memory 0 means slots*256 bytes, and create refuses only
 * a value_memory too small to hold one value of value_max. 16*256 bytes
 * hold a value of the default 1024 bytes. */
Test(config, the_smallest_table_works_with_default_sizes)
{
	struct shmkv_config cfg = tu_config(SHMKV_SLOTS_MIN, 0, 0, 0);

	assert_config_works(&cfg);
}

Test(config, key_max_and_value_max_are_enforced_exactly)
{
	struct shmkv_config cfg = tu_config(64, 10, 20, 0);
	char *big = tu_fill(21, 'x');

	tu_kv = tu_create(&cfg, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, big, 10, big, 20, 0, 0, NULL), 1);
	tu_assert_rc(shmkv_set(tu_kv, big, 11, LIT("v"), 0, 0, NULL),
		     -ENAMETOOLONG);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), big, 21, 0, 0, NULL), -E2BIG);
	tu_assert_get(tu_kv, big, 10, big, 20);
}

static mode_t file_mode(const char *name)
{
	char path[TU_PATH_CAP];
	struct stat st;

	tu_shm_path(name, path);
	cr_assert_eq(stat(path, &st), 0, "stat %s", path);
	return st.st_mode & 07777;
}

Test(config, the_mode_given_is_the_file_mode_despite_the_umask)
{
	static const uint32_t modes[] = { 0666, 0640, 0604, 0660, 0600, 0400 };
	mode_t old = umask(077);

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct shmkv_config cfg = tu_config(64, 0, 0, 0);
		char name[TU_NAME_CAP];
		shmkv_t *kv;

		cfg.mode = modes[i];
		kv = tu_create(&cfg, name);
		cr_assert_eq(file_mode(name), modes[i], "mode %o, asked %o",
			     file_mode(name), modes[i]);
		cr_assert_eq(tu_get_config(kv).mode, modes[i]);
		shmkv_close(kv);
	}
	umask(old);
}

Test(config, the_default_mode_is_0600_despite_the_umask)
{
	mode_t old = umask(0777);

	tu_kv = tu_create(NULL, tu_name);
	umask(old);
	cr_assert_eq(file_mode(tu_name), 0600, "mode %o", file_mode(tu_name));
}

Test(config, open_or_create_applies_the_mode_too)
{
	struct shmkv_config cfg = tu_config(64, 0, 0, 0);
	mode_t old = umask(077);

	cfg.mode = 0644;
	tu_make_name(tu_name, NULL);
	tu_assert_ok(shmkv_open_or_create(tu_name, &cfg, &tu_kv));
	umask(old);
	cr_assert_eq(file_mode(tu_name), 0644, "mode %o", file_mode(tu_name));
}

/*
 * Read-only handles
 */

Test(readonly, reads_work_and_every_write_is_erofs)
{
	shmkv_t *ro;
	struct shmkv_value v = tu_value_for(tu_kv);
	struct tu_snap *snap;
	uint64_t cursor = 0;
	int64_t n = 0;

	tu_populate(tu_kv, 10);
	snap = tu_snap_take(tu_kv);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);

	tu_assert_get_str(ro, "base1", "value1");
	tu_assert_rc(shmkv_exists(ro, LIT("base2")), 1);
	tu_assert_ok(shmkv_pttl(ro, LIT("base0"), &n));
	cr_assert_gt(n, 0);
	tu_assert_ok(shmkv_ttl(ro, LIT("base1"), &n));
	cr_assert_eq(n, -1);
	tu_assert_rc(shmkv_getex(ro, LIT("base1"), SHMKV_GETEX_KEEP, 0, &v), 1);
	tu_assert_value_str(v, "value1");
	tu_assert_unchanged(ro, snap);

	tu_assert_rc(shmkv_set(ro, LIT("base1"), LIT("x"), 0, 0, NULL), -EROFS);
	tu_assert_rc(shmkv_set(ro, LIT("new"), LIT("x"), 0, 0, NULL), -EROFS);
	tu_assert_rc(shmkv_setnx(ro, LIT("new"), LIT("x")), -EROFS);
	tu_assert_rc(shmkv_getset(ro, LIT("base1"), LIT("x"), &v), -EROFS);
	tu_assert_rc(shmkv_getdel(ro, LIT("base1"), &v), -EROFS);
	tu_assert_rc(shmkv_getex(ro, LIT("base0"), SHMKV_GETEX_PERSIST, 0, &v),
		     -EROFS);
	tu_assert_rc(shmkv_getex(ro, LIT("base1"), SHMKV_GETEX_EX, 10, &v),
		     -EROFS);
	tu_assert_rc(shmkv_del(ro, LIT("base1")), -EROFS);
	tu_assert_rc(shmkv_delifeq(ro, LIT("base1"), LIT("value1")), -EROFS);
	tu_assert_rc(shmkv_expire(ro, LIT("base1"), 10, SHMKV_EXPIRE_SEC, 0),
		     -EROFS);
	tu_assert_rc(shmkv_expire(ro, LIT("base1"), 0, SHMKV_EXPIRE_SEC, 0),
		     -EROFS);
	tu_assert_rc(shmkv_persist(ro, LIT("base0")), -EROFS);
	tu_assert_rc(shmkv_incr(ro, LIT("n"), &n), -EROFS);
	tu_assert_rc(shmkv_incrby(ro, LIT("n"), 5, &n), -EROFS);
	tu_assert_rc(shmkv_decr(ro, LIT("n"), &n), -EROFS);
	tu_assert_rc(shmkv_decrby(ro, LIT("n"), 5, &n), -EROFS);
	tu_assert_rc(shmkv_sweep(ro, &cursor, 64), -EROFS);
	tu_assert_rc(shmkv_recover(ro, NULL), -EROFS);
	tu_assert_unchanged(tu_kv, snap);
	shmkv_close(ro);
}

/* shmkv.h: -EROFS is "a write on a handle opened with READONLY". Redis
 * refuses write commands on a read-only replica whatever the data; here a
 * write command that would happen to change nothing must not answer as if
 * the handle could write either. */
Test(readonly, write_commands_are_erofs_even_when_they_would_change_nothing)
{
	struct shmkv_value v = tu_value_for(tu_kv);
	shmkv_t *ro;

	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_assert_rc(shmkv_set(ro, LIT("k"), LIT("x"), SHMKV_SET_NX, 0, NULL),
		     -EROFS);
	tu_assert_rc(shmkv_set(ro, LIT("m"), LIT("x"), SHMKV_SET_XX, 0, NULL),
		     -EROFS);
	tu_assert_rc(shmkv_setnx(ro, LIT("k"), LIT("x")), -EROFS);
	tu_assert_rc(shmkv_del(ro, LIT("missing")), -EROFS);
	tu_assert_rc(shmkv_getdel(ro, LIT("missing"), &v), -EROFS);
	tu_assert_rc(shmkv_delifeq(ro, LIT("k"), LIT("other")), -EROFS);
	tu_assert_rc(shmkv_expire(ro, LIT("missing"), 10, SHMKV_EXPIRE_SEC, 0),
		     -EROFS);
	tu_assert_rc(shmkv_persist(ro, LIT("k")), -EROFS);
	tu_assert_rc(shmkv_getex(ro, LIT("k"), SHMKV_GETEX_PERSIST, 0, &v),
		     -EROFS);
	tu_assert_get_str(tu_kv, "k", "v");
	shmkv_close(ro);
}

Test(readonly, an_expired_key_reads_as_missing_without_writing)
{
	shmkv_t *ro;
	struct shmkv_stats st;

	tu_assert_rc(
		shmkv_set(tu_kv, LIT("k"), LIT("v"), SHMKV_SET_PX, 40, NULL),
		1);
	tu_assert_rc(
		shmkv_set(tu_kv, LIT("i"), LIT("5"), SHMKV_SET_PX, 40, NULL),
		1);
	ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	tu_sleep_ms(150);
	/* The mapping is read-only: any attempt to delete would crash. */
	tu_assert_missing(ro, LIT("k"));
	tu_assert_missing(ro, LIT("i"));
	tu_assert_ok(shmkv_stats(ro, &st));
	cr_assert_eq(st.live_keys, 0);
	shmkv_close(ro);
}

Test(readonly, sees_writes_made_through_other_handles)
{
	shmkv_t *ro = tu_open(tu_name, SHMKV_OPEN_READONLY);

	tu_assert_missing_str(ro, "k");
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v1"), 0, 0, NULL), 1);
	tu_assert_get_str(ro, "k", "v1");
	tu_assert_rc(shmkv_del(tu_kv, LIT("k")), 1);
	tu_assert_missing_str(ro, "k");
	shmkv_close(ro);
}

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

	srand(12345);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)rand();
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
	assert_u32_refused(HDR_OFF(page_count), h.page_count + 1, -EBADMSG);
	assert_u32_refused(HDR_OFF(page_count), 0xffffffffu, -EBADMSG);
	assert_u32_refused(HDR_OFF(units_per_page), 0, -EBADMSG);
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

	srand(seed);
	for (size_t i = 0; i < len; i++)
		junk[i] = (unsigned char)rand();
	tu_shm_pwrite(name, junk, len, from);
}

/* A result is in range: >= 0 as documented, or a negative errno. */
static void assert_sane(int rc, const char *what, unsigned i)
{
	cr_assert(rc >= -4095 && rc <= 3, "%s #%u gave %d", what, i, rc);
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
		shmkv_expire(kv, k, kl, 100, SHMKV_EXPIRE_SEC, SHMKV_EXPIRE_GT),
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
