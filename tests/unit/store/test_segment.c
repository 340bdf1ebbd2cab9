/*
 * test_segment.c - the segment's life: create, open, open_or_create, close,
 * unlink, names, configs and modes. Read-only handles are tested in
 * test_readonly.c; refusing what is not a sound store, and surviving
 * scribbled content, in test_foreign.c.
 */
#include "helpers/testutil.h"
#include "segment.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(segment, .fini = tu_teardown);
TestSuite(names, .fini = tu_teardown);
TestSuite(config, .fini = tu_teardown);

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

Test(segment, unlink_removes_the_name_and_attached_handles_are_told)
{
	shmkv_t *fresh = NULL;

	tu_kv = tu_create(NULL, tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	tu_assert_ok(shmkv_unlink(tu_name));
	assert_no_store(tu_name);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k2"), LIT("v2"), 0, 0, NULL),
		     -ESTALE);
	/* The name is free again, for a new and empty store. */
	tu_assert_ok(shmkv_create(tu_name, NULL, &fresh));
	tu_assert_missing_str(fresh, "k");
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

/*
 * Working files of creators that died (left only where /dev/shm has no
 * O_TMPFILE, or by older versions)
 */

/* A pid that names no process: a child's, reaped. */
static int dead_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return (int)pid;
}

/* Leaves a working file of creator @pid, as a killed create would. */
static void plant_new_file(int pid)
{
	char name[TU_NAME_CAP];

	snprintf(name, sizeof(name), "/.shmkv-new-%d-0123456789abcdef", pid);
	tu_shm_write_new(name, "x", 1);
}

Test(segment, create_removes_working_files_of_dead_creators_only)
{
	int dead = dead_pid(), parent = (int)getppid(), self = (int)getpid();

	plant_new_file(dead);
	plant_new_file(parent);
	/* Ours may be another thread's create under way. */
	plant_new_file(self);
	tu_kv = tu_create(NULL, tu_name);
	cr_assert_eq(tu_count_new_files(dead), 0, "the dead pid's file stayed");
	cr_assert_eq(tu_count_new_files(parent), 1);
	cr_assert_eq(tu_count_new_files(self), 1);
}

/* (That a read-only open leaves them is not tested: any create running
 * beside this test may remove a dead creator's file at any moment.) */
Test(segment, open_for_writing_removes_working_files_of_dead_creators)
{
	int dead = dead_pid();
	shmkv_t *kv;

	tu_kv = tu_create(NULL, tu_name);
	plant_new_file(dead);
	kv = tu_open(tu_name, 0);
	shmkv_close(kv);
	cr_assert_eq(tu_count_new_files(dead), 0, "the dead pid's file stayed");
}

Test(segment, the_named_fallback_leaves_no_working_file_and_stays_exclusive)
{
	shmkv_t *again = NULL;

	shmkv__tmpfile_off = true;
	tu_kv = tu_create(NULL, tu_name);
	tu_assert_rc(shmkv_create(tu_name, NULL, &again), -EEXIST);
	cr_assert_null(again);
	cr_assert_eq(tu_count_new_files((int)getpid()), 0);
	tu_assert_rc(shmkv_set(tu_kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	again = tu_open(tu_name, 0);
	tu_assert_get(again, LIT("k"), LIT("v"));
	shmkv_close(again);
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
	tu_assert_rc(shmkv_open(tu_name, 1u << 2, &kv), -EINVAL);
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
	static const char *const bad[] = { "",	  "/",	"/a/b", "//x",
					   "/x/", "x/", "a/b",	"/.",
					   "/..", ".",	"..",	NULL };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_name_refused(bad[i], -EINVAL);
}

/* shmctl takes "orders" for "/orders": so does the library, in every
 * call that takes a store name. */
Test(names, a_name_without_its_slash_is_the_same_store)
{
	char name[TU_NAME_CAP];
	const char *bare;
	shmkv_t *kv = NULL, *again = NULL;

	tu_make_name(name, "bare");
	bare = name + 1;
	tu_assert_ok(shmkv_create(bare, NULL, &kv));
	tu_assert_rc(shmkv_create(name, NULL, &again), -EEXIST);
	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("v"), 0, 0, NULL), 1);
	again = tu_open(name, 0);
	tu_assert_get_str(again, "k", "v");
	shmkv_close(again);
	tu_assert_ok(shmkv_open(bare, SHMKV_OPEN_READONLY, &again));
	tu_assert_get_str(again, "k", "v");
	shmkv_close(again);
	tu_assert_ok(shmkv_open_or_create(bare, NULL, &again));
	tu_assert_get_str(again, "k", "v");
	shmkv_close(again);
	tu_assert_ok(shmkv_unlink(bare));
	tu_assert_rc(shmkv_set(kv, LIT("k"), LIT("w"), 0, 0, NULL), -ESTALE);
	tu_assert_rc(shmkv_open(name, 0, &again), -ENOENT);
	tu_assert_rc(shmkv_unlink(bare), -ENOENT);
	shmkv_close(kv);
	/* open_or_create of a missing bare name creates "/name". */
	tu_assert_ok(shmkv_open_or_create(bare, NULL, &kv));
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name));
}

/* SHMKV_NAME_MAX counts the slash, added or not. */
Test(names, a_bare_name_gets_the_limit_of_its_slashed_form)
{
	char name[TU_NAME_CAP + 1];
	shmkv_t *kv = NULL;
	int n;

	tu_make_name(name, NULL);
	n = (int)strlen(name);
	memset(name + n, 'n', SHMKV_NAME_MAX - n);
	name[SHMKV_NAME_MAX] = '\0';
	tu_track(name);
	tu_assert_ok(shmkv_create(name + 1, NULL, &kv)); /* 199 bytes bare */
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(name + 1));
	name[SHMKV_NAME_MAX] = 'n'; /* 200 bytes bare: 201 with its slash */
	name[SHMKV_NAME_MAX + 1] = '\0';
	assert_name_refused(name + 1, -EINVAL);
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

/* shmkv_config_plan says the limits shmkv_create() applies: value_memory
 * one page per size class (7 classes of 64 KiB pages for the default
 * value_max; 13 of 100 KiB for a value_max of 100000), max_memory at least
 * memory_bytes; each limit works and the byte below it does not. */
Test(config, plan_says_the_limits_create_applies)
{
	struct shmkv_config cfg = tu_config(1024, 0, 0, 0);
	struct shmkv_plan p;
	char name[TU_NAME_CAP];
	shmkv_t *kv;

	tu_make_name(name, NULL);
	tu_assert_rc(shmkv_config_plan(&cfg, &p), 0);
	cr_assert_eq(p.page_size, 64u << 10);
	cr_assert_eq(p.classes, 7);
	cr_assert_eq(p.value_memory_min, 448u << 10);
	/* The default: 256 bytes a slot, but at least a page per class. */
	cr_assert_eq(p.value_memory, 448u << 10);
	cr_assert_gt(p.memory_bytes, p.value_memory);
	cfg.value_memory = p.value_memory_min - 1;
	tu_assert_rc(shmkv_create(name, &cfg, &kv), -EINVAL);
	tu_assert_rc(shmkv_config_plan(&cfg, &p), 0);
	cr_assert_eq(p.memory_bytes, 0, "value_memory out of range");
	cfg.value_memory = p.value_memory_min;
	tu_assert_rc(shmkv_config_plan(&cfg, &p), 0);
	cfg.max_memory = p.memory_bytes;
	tu_assert_rc(shmkv_config_plan(&cfg, &p), 0);
	cr_assert_eq(p.memory_bytes, cfg.max_memory,
		     "the same with its own limit as its reservation");
	cfg.max_memory = p.memory_bytes - 1;
	tu_assert_rc(shmkv_create(name, &cfg, &kv), -EINVAL);
	cfg.max_memory = p.memory_bytes;
	tu_assert_rc(shmkv_create(name, &cfg, &kv), 0);
	shmkv_close(kv);
	shmkv_unlink(name);
	cfg = tu_config(64, 0, 100000, 0);
	tu_assert_rc(shmkv_config_plan(&cfg, &p), 0);
	cr_assert_eq(p.page_size, 100u << 10);
	cr_assert_eq(p.classes, 13);
	cr_assert_eq(p.value_memory_min, 1300u << 10);
	cfg.value_memory = p.value_memory_max + 1;
	tu_assert_rc(shmkv_create(name, &cfg, &kv), -EINVAL);
	cfg.slots = 100;
	tu_assert_rc(shmkv_config_plan(&cfg, &p), -EINVAL);
	tu_assert_rc(shmkv_config_plan(NULL, &p), -EINVAL);
	tu_assert_rc(shmkv_config_plan(&cfg, NULL), -EINVAL);
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
 * Liveness is judged by pid: a process of another pid namespace may read a
 * store but not write it. The child unshares a pid namespace (root only:
 * otherwise the test is skipped, never passed) and forks into it.
 */
enum { NS_OK = 0, NS_NO_UNSHARE = 77, NS_RW_OPENED = 10, NS_RO_FAILED = 11 };

static int open_from_new_pid_ns(const char *name)
{
	pid_t pid;
	int st;

	if (unshare(CLONE_NEWPID) != 0)
		return NS_NO_UNSHARE;
	pid = fork();
	if (pid < 0)
		return 12;
	if (pid == 0) {
		shmkv_t *kv;

		if (shmkv_open(name, 0, &kv) != -EXDEV)
			_exit(NS_RW_OPENED);
		if (shmkv_open(name, SHMKV_OPEN_READONLY, &kv) != 0)
			_exit(NS_RO_FAILED);
		shmkv_close(kv);
		_exit(NS_OK);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 13;
	return WEXITSTATUS(st);
}

Test(segment, a_writer_from_another_pid_namespace_is_refused)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = tu_create(NULL, name);
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(open_from_new_pid_ns(name));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "status %d", st);
	if (WEXITSTATUS(st) == NS_NO_UNSHARE)
		cr_skip_test("unshare(CLONE_NEWPID) refused: needs root");
	cr_assert_eq(WEXITSTATUS(st), NS_OK,
		     "10: a read-write open worked, 11: a read-only one failed "
		     "(got %d)",
		     WEXITSTATUS(st));
	shmkv_close(kv);
}
