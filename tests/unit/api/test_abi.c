/*
 * test_abi.c - what the ABI promises beyond the commands: the run-time
 * version, the fixed sizes of the caller-allocated handles, and the
 * reserved room of the public structs (zeroed by the library, and refused
 * when a caller sets it).
 */
#include <stddef.h>
#include <stdio.h>

#include "helpers/testutil.h"
#include "shmkv_lock.h"

TestSuite(abi, .init = tu_setup, .fini = tu_teardown);

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Every byte of @p is @c. */
static int all_bytes(const void *p, size_t n, unsigned char c)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != c)
			return 0;
	return 1;
}

Test(abi, version_gives_the_library_numbers_and_their_string)
{
	int major = -1, minor = -1, patch = -1;
	char want[32];
	const char *s = shmkv_version(&major, &minor, &patch);

	/* Built from this tree, the library's numbers are the header's. */
	cr_assert_eq(major, SHMKV_VERSION_MAJOR);
	cr_assert_eq(minor, SHMKV_VERSION_MINOR);
	cr_assert_eq(patch, SHMKV_VERSION_PATCH);
	snprintf(want, sizeof(want), "%d.%d.%d", major, minor, patch);
	cr_assert_str_eq(s, want);
	cr_assert_str_eq(s, SHMKV_VERSION_STRING);
}

Test(abi, version_takes_null_for_any_number)
{
	int minor = -1;

	cr_assert_str_eq(shmkv_version(NULL, NULL, NULL), SHMKV_VERSION_STRING);
	cr_assert_str_eq(shmkv_version(NULL, &minor, NULL),
			 SHMKV_VERSION_STRING);
	cr_assert_eq(minor, SHMKV_VERSION_MINOR);
}

/* The sizes are the 0.x ABI: changing one breaks every program built
 * against the old header. */
Test(abi, handles_keep_their_fixed_sizes)
{
	cr_assert_eq(sizeof(struct shmkv_lock), 640);
	cr_assert_eq(sizeof(struct shmkv_pattern), 512);
	cr_assert_eq(sizeof(struct shmkv_keyref), 96);
	cr_assert_eq(SHMKV_LOCK_SIZE, 640);
	cr_assert_eq(SHMKV_PATTERN_SIZE, 512);
	cr_assert_eq(SHMKV_KEYREF_SIZE, 96);
}

/* The flags word, then max_memory and evict_policy, took reserved words'
 * places: the config is as big as before, flags sits where reserved[0] was,
 * max_memory where the next two were and evict_policy where the one after
 * was (a program built before them left them zero: the defaults). */
Test(abi, the_config_keeps_its_size_with_new_options)
{
	cr_assert_eq(sizeof(struct shmkv_config), 64);
	cr_assert_eq(offsetof(struct shmkv_config, flags), 28);
	cr_assert_eq(offsetof(struct shmkv_config, max_memory), 32);
	cr_assert_eq(offsetof(struct shmkv_config, evict_policy), 40);
	cr_assert_eq(offsetof(struct shmkv_config, reserved), 44);
}

Test(abi, a_copied_handle_is_the_same_handle)
{
	struct shmkv_lock lk, copy;
	struct shmkv_keyref ref, ref_copy;
	char key[] = "k";

	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "a"));
	tu_assert_rc(shmkv_lock_try_acquire(&lk, 60000), SHMKV_LOCK_ACQUIRED);
	memcpy(&copy, &lk, sizeof(lk));
	memset(&lk, 0xee, sizeof(lk));
	cr_assert_eq(shmkv_lock_held(&copy), 1);
	tu_assert_ok(shmkv_lock_release(&copy));
	tu_assert_ok(shmkv_key_prepare(tu_kv, &ref, key, 1));
	ref_copy = ref;
	memset(&ref, 0xee, sizeof(ref));
	tu_assert_rc(shmkv_key_set(tu_kv, &ref_copy, LIT("v"), 0, 0, NULL), 1);
	tu_assert_get_str(tu_kv, "k", "v");
}

Test(abi, config_init_zeroes_the_reserved_words)
{
	struct shmkv_config cfg;

	memset(&cfg, 0xa5, sizeof(cfg));
	shmkv_config_init(&cfg);
	cr_assert(all_bytes(cfg.reserved, sizeof(cfg.reserved), 0));
}

Test(abi, create_refuses_a_config_with_any_reserved_word_set)
{
	char name[TU_NAME_CAP];
	shmkv_t *kv = NULL;

	tu_make_name(name, "reserved");
	for (size_t i = 0; i < COUNT(((struct shmkv_config *)0)->reserved);
	     i++) {
		struct shmkv_config cfg;

		shmkv_config_init(&cfg);
		cfg.reserved[i] = 1;
		tu_assert_rc(shmkv_create(name, &cfg, &kv), -EINVAL);
		tu_assert_rc(shmkv_open_or_create(name, &cfg, &kv), -EINVAL);
		cr_assert_null(kv);
		tu_assert_rc(shmkv_open(name, 0, &kv), -ENOENT);
	}
}

Test(abi, get_config_zeroes_the_reserved_words_so_it_can_create_a_twin)
{
	char name[TU_NAME_CAP];
	struct shmkv_config cfg;
	shmkv_t *kv;

	memset(&cfg, 0xa5, sizeof(cfg));
	tu_assert_ok(shmkv_get_config(tu_kv, &cfg));
	cr_assert(all_bytes(cfg.reserved, sizeof(cfg.reserved), 0));
	kv = tu_create(&cfg, name);
	shmkv_close(kv);
}

Test(abi, stats_zeroes_its_reserved_room_and_fits_every_class)
{
	struct shmkv_stats st;

	memset(&st, 0xa5, sizeof(st));
	tu_assert_ok(shmkv_stats(tu_kv, &st));
	cr_assert_eq(st.reserved32, 0);
	cr_assert(all_bytes(st.reserved, sizeof(st.reserved), 0));
	cr_assert_eq(COUNT(st.cls), SHMKV_STATS_CLASSES);
	cr_assert(st.classes >= 1 && st.classes <= SHMKV_STATS_CLASSES,
		  "%u classes", st.classes);
}

Test(abi, recover_zeroes_its_report_reserved_room)
{
	struct shmkv_recover_report rep;

	memset(&rep, 0xa5, sizeof(rep));
	tu_assert_rc(shmkv_recover(tu_kv, &rep), 0);
	cr_assert(all_bytes(rep.reserved, sizeof(rep.reserved), 0));
}
