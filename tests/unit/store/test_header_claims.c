/*
 * test_header_claims.c - what the header's shared words claim, checked
 * against what the segment's file really holds (src/giveback.c,
 * src/grow.c): a scribbled word must give -EBADMSG and a report from
 * shmkv_check, never a write into a hole of the file, where a fault
 * allocates memory (or raises SIGBUS on a full tmpfs).
 *
 *  - The life word (the table's generation) raised by two, past the
 *    tables the file reserves, or made odd: commands on an open handle
 *    fail with -EBADMSG, shmkv_check reports it, a new open is refused,
 *    and nothing dies on a /dev/shm full to its last page (a private
 *    tmpfs: root only, skipped elsewhere).
 *  - pages_ready raised by 200 after a growth (the file then holds a
 *    larger table than the one the store started with): not believed,
 *    the next page a SET needs is -EBADMSG, shmkv_check reports it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "migrate.h"
#include "tables.h"

TestSuite(claims, .fini = tu_teardown);

#define CLASSES 7u /* value_max 1024: one page per class */
#define KEYS	20u

/* What the namespace's process found wrong (its exit status). */
enum step {
	ST_OK,
	ST_CREATE = 10,
	ST_SET,
	ST_FILL,
	ST_GET_NOT_EBADMSG,
	ST_SET_NOT_EBADMSG,
	ST_CHECK_SILENT,
	ST_OPEN_NOT_EBADMSG,
};

enum scribble { PLUS_TWO, PAST_FILE, ODD };
static enum scribble scribble;

static uint64_t *life_word(shmkv_t *kv)
{
	return &((struct shmkv_header_shm *)kv->base)->life;
}

/* Takes every page /dev/shm has left. */
static int fill_shm(void)
{
	return tu_shm_fill() ? ST_OK : ST_FILL;
}

static int scribbled_life(const char *name)
{
	struct shmkv_config cfg = tu_config(64, 28, TU_VALUE_MAX,
					    (uint64_t)CLASSES * SHMKV_PAGE_MIN);
	char buf[64];
	struct shmkv_value v = { buf, sizeof(buf), 0 };
	uint64_t life;
	shmkv_t *kv, *again = NULL;
	int err;

	if (shmkv_create(name, &cfg, &kv) != 0)
		return ST_CREATE;
	for (unsigned i = 0; i < KEYS; i++) {
		char key[16];
		size_t kl = tu_fmt(key, sizeof(key), "k", i);

		if (shmkv_set(kv, key, kl, key, kl, 0, 0, NULL) != 1)
			return ST_SET;
	}
	if (fill_shm() != ST_OK)
		return ST_FILL;
	life = *life_word(kv);
	if (scribble == PLUS_TWO)
		life += SHMKV_LIFE_OF_GEN(2);
	else if (scribble == PAST_FILE)
		life = SHMKV_LIFE_OF_GEN(2 * (kv->geo.epoch_max + 1));
	else
		life |= SHMKV_LIFE_OF_GEN(1);
	/* Relaxed: nothing else runs on the store. */
	shmkv__store_relaxed(life_word(kv), life);
	if (shmkv_get(kv, LIT("k0"), &v) != -EBADMSG)
		return ST_GET_NOT_EBADMSG;
	if (shmkv_set(kv, LIT("new"), LIT("value"), 0, 0, NULL) != -EBADMSG)
		return ST_SET_NOT_EBADMSG;
	if (shmkv_check(kv, NULL, NULL) < 1)
		return ST_CHECK_SILENT;
	err = shmkv_open(name, 0, &again);
	if (err != -EBADMSG) {
		if (err == 0)
			shmkv_close(again);
		return ST_OPEN_NOT_EBADMSG;
	}
	shmkv_close(kv);
	return ST_OK;
}

static void run_scribbled(enum scribble how, const char *what)
{
	int st;

	scribble = how;
	tu_make_name(tu_name, NULL);
	st = tu_in_private_shm("size=8m", scribbled_life, tu_name, what);
	cr_assert_eq(st, ST_OK, "failed at step %d", st);
}

Test(claims, a_life_word_raised_by_two_is_ebadmsg_on_a_full_tmpfs)
{
	run_scribbled(PLUS_TWO, "a scribbled life word on a full tmpfs");
}

Test(claims, a_life_word_past_the_files_tables_is_ebadmsg_and_reported)
{
	run_scribbled(PAST_FILE, "a scribbled life word on a full tmpfs");
}

Test(claims, an_odd_life_word_without_its_new_table_is_ebadmsg)
{
	run_scribbled(ODD, "a scribbled life word on a full tmpfs");
}

/*
 * pages_ready raised by 200 once the table has grown: the file then
 * holds more than the store started with (a table twice T(0)'s size), as
 * much as 200 pages and more, but not those pages.
 */
#define BIG_SLOTS (1u << 18) /* T(1) - T(0) = 16 MiB > 200 pages */
#define RAISE	  200u

Test(claims, pages_ready_raised_after_a_growth_is_not_believed)
{
	struct shmkv_config cfg = tu_config(BIG_SLOTS, 28, TU_VALUE_MAX,
					    (uint64_t)CLASSES * SHMKV_PAGE_MIN);
	uint32_t *ready, before;
	struct shmkv_tables tabs;
	char value[1000];
	int rc = 1;

	tu_kv = tu_create_growing(&cfg, tu_name);
	cr_assert_eq(shmkv__tables(tu_kv, &tabs), 0);
	tu_assert_ok(shmkv__grow_start(tu_kv, tabs.life));
	tu_assert_ok(shmkv_maintain(tu_kv));
	cr_assert_eq(shmkv__tables(tu_kv, &tabs), 0);
	cr_assert_eq(tabs.t->epoch, 1);
	ready = &((struct shmkv_header_shm *)tu_kv->base)->pages_ready;
	before = shmkv__pages_ready_refresh(tu_kv);
	*ready = before + RAISE;
	cr_assert_eq(shmkv__pages_ready_refresh(tu_kv), before,
		     "a pages_ready over a hole was believed");
	cr_assert_geq(shmkv_check(tu_kv, NULL, NULL), 1);
	/* Values of the largest class fill the ready pages, then need
	 * another: the word is not believed, and growing from it fails. */
	memset(value, 'v', sizeof(value));
	for (unsigned i = 0;
	     i < (CLASSES + 1) * SHMKV_PAGE_MIN / sizeof(value) && rc == 1;
	     i++) {
		char key[16];
		size_t kl = tu_fmt(key, sizeof(key), "v", i);

		rc = shmkv_set(tu_kv, key, kl, value, sizeof(value), 0, 0,
			       NULL);
	}
	tu_assert_rc(rc, -EBADMSG);
	cr_assert_eq(shmkv__pages_ready(tu_kv), before);
	*ready = before;
	tu_assert_rc(shmkv_check(tu_kv, NULL, NULL), 0);
}
