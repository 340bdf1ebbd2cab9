/*
 * fuzz_scribble.c - libFuzzer harness: commands on a store caught in the
 * middle of a growth (its old table half moved into the new one), whose
 * header cursors and slot words of both tables were scribbled on after it
 * was attached. Each command must end within FZ_COMMAND_CPU_MS
 * (fz_watch.c) and must not crash: every loop over shared words has a
 * bound that ends in an error quickly.
 *
 * Input: [patch count u8 (mod 17)][patches, 12 bytes each][script]
 *   patch: [region u8][mode u8][index u16][value u64]
 *     region (mod 12): the header's life word, pages_ready, grow_front,
 *       grow_claim; the new table's slot state, value, probe_bound,
 *       keymeta, key bytes; the old table's state, value, probe_bound.
 *       index picks the slot (mod the table's slots).
 *     mode & 3: 0 store value, 1 xor it, 2 add its top byte (signed),
 *       3 replace the low byte; for key bytes, mode >> 2 the word.
 *   script: commands in fz_ops.h's encoding; then shmkv_maintain, which
 *   drives the growth to its end (under the same bound).
 *
 * The store is created once per process: the fuzzers' keys, then keys
 * until SCRIBBLE_KEYS, then a growth started and one step of it (two
 * chunks of an old table of four), and copied aside; every input starts
 * from that copy through a fresh handle.
 *
 * FUZZ_SEEDS_OUT=dir: write the seed corpus there and exit.
 */
#include <string.h>

#include "fz_script.h"
#include "internal.h"
#include "migrate.h"
#include "tables.h"

#define PATCH_MAX     16
#define STEPS_MAX     64
#define SCRIBBLE_SLOT 256u /* old table: four chunks */
#define SCRIBBLE_KEYS 160u

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum region {
	R_LIFE,
	R_PAGES_READY,
	R_FRONT,
	R_CLAIM,
	R_NEW_STATE,
	R_NEW_VALUE,
	R_NEW_BOUND,
	R_NEW_KEYMETA,
	R_NEW_KEY,
	R_OLD_STATE,
	R_OLD_VALUE,
	R_OLD_BOUND,
	R_COUNT
};

static char name[SHMKV_NAME_MAX + 1];
static shmkv_t *owner;		 /* created the store; its mapping is patched */
static struct shmkv_tables tabs; /* the growth's tables, in owner's view */
static struct fz_snapshot snap;

static void apply_patch(struct fz_in *in)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)owner->base;
	uint8_t region = fz_u8(in) % R_COUNT, mode = fz_u8(in);
	uint32_t index = fz_u16(in);
	uint64_t v = fz_u64(in);
	struct shmkv_slot_shm *n = shmkv__slot(tabs.t, index & tabs.t->mask);
	struct shmkv_slot_shm *o = shmkv__slot(tabs.old,
					       index & tabs.old->mask);
	size_t key_words = (owner->geo.slot_size - SHMKV_SLOT_FIXED) / 8;

	if (region == R_LIFE)
		fz_patch64(&h->life, mode, v);
	else if (region == R_PAGES_READY)
		fz_patch32(&h->pages_ready, mode, v);
	else if (region == R_FRONT)
		fz_patch64(&h->grow_front, mode, v);
	else if (region == R_CLAIM)
		fz_patch64(&h->grow_claim, mode, v);
	else if (region == R_NEW_STATE)
		fz_patch64(&n->state, mode, v);
	else if (region == R_NEW_VALUE)
		fz_patch64(&n->value, mode, v);
	else if (region == R_NEW_BOUND)
		fz_patch16(&n->probe_bound, mode, v);
	else if (region == R_NEW_KEYMETA)
		fz_patch32(&n->keymeta, mode, v);
	else if (region == R_NEW_KEY)
		fz_patch64(n->key + (size_t)(mode >> 2) % key_words * 8, mode, v);
	else if (region == R_OLD_STATE)
		fz_patch64(&o->state, mode, v);
	else if (region == R_OLD_VALUE)
		fz_patch64(&o->value, mode, v);
	else
		fz_patch16(&o->probe_bound, mode, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	unsigned patches = fz_u8(&in) % (PATCH_MAX + 1);
	struct fz_run run = { .steps_max = STEPS_MAX };
	int err;

	fz_snapshot_restore(&snap, owner);
	/* Attach first: the scribbles model a writer acting after it. */
	err = shmkv_open(name, 0, &run.kv);
	FZ_ASSERT(err == 0, "open %s: %s", name, shmkv_strerror(err));
	for (unsigned i = 0; i < patches; i++)
		apply_patch(&in);
	run.sound = patches == 0;
	fz_ops_run(&run, &in);
	/* The rest of the growth, as a store's maintenance would run it. */
	fz_watch_begin("shmkv_maintain");
	err = shmkv_maintain(run.kv);
	fz_watch_end();
	FZ_ASSERT(err <= 0, "shmkv_maintain: %d", err);
	FZ_ASSERT(patches > 0 || err == 0,
		  "shmkv_maintain on a sound store: %s", shmkv_strerror(err));
	shmkv_close(run.kv);
	return 0;
}

/*
 * Seeds: the default script on the sound half-grown store, then one patch
 * of each region, with values that no process writes there: a MOVED
 * state or a FROZEN value in the new table, cursors of another
 * generation, a life word a generation back or ahead.
 */

static void put_patch(struct fz_buf *s, uint8_t region, uint8_t mode,
		      uint16_t index, uint64_t v)
{
	fz_put8(s, region);
	fz_put8(s, mode);
	fz_put16(s, index);
	fz_put64(s, v);
}

static void write_seed(const char *dir, const char *file,
		       const struct fz_buf *patches, unsigned n)
{
	struct fz_buf in = { 0 };

	fz_put8(&in, (uint8_t)n);
	fz_put(&in, patches->b, patches->n);
	fz_script_default(&in);
	fz_write_seed(dir, file, &in);
	fz_buf_free(&in);
}

static void seed_one(const char *dir, const char *file, uint8_t region,
		     uint8_t mode, uint16_t index, uint64_t v)
{
	struct fz_buf one = { 0 };

	put_patch(&one, region, mode, index, v);
	write_seed(dir, file, &one, 1);
	fz_buf_free(&one);
}

/* Every slot of the new table's first @n sealed MOVED (version kept:
 * replace the low byte), and their probe bounds raised so that lookups
 * meet them. */
static void seed_moved(const char *dir, const char *file, uint16_t n)
{
	struct fz_buf many = { 0 };

	for (uint16_t i = 0; i < n; i++) {
		put_patch(&many, R_NEW_STATE, 3, i, SLOT_MOVED);
		put_patch(&many, R_NEW_BOUND, 0, (uint16_t)(i + n), 4);
	}
	write_seed(dir, file, &many, 2u * n);
	fz_buf_free(&many);
}

static void write_seeds(const char *dir)
{
	struct fz_buf none = { 0 };

	write_seed(dir, "sound-half-grown", &none, 0);
	seed_moved(dir, "new-table-moved", 8);
	seed_one(dir, "new-value-frozen", R_NEW_VALUE, 1, 5, (uint64_t)1 << 61);
	seed_one(dir, "life-back", R_LIFE, 2, 0, (uint64_t)0xfe << 56);
	seed_one(dir, "life-ahead", R_LIFE, 2, 0, (uint64_t)2 << 56);
	seed_one(dir, "front-gen-back", R_FRONT, 1, 0, (uint64_t)1 << 32);
	seed_one(dir, "front-far", R_FRONT, 0, 0, 0x7fffffffULL);
	seed_one(dir, "claim-gen-back", R_CLAIM, 1, 0, (uint64_t)1 << 32);
	seed_one(dir, "pages-ready-up", R_PAGES_READY, 2, 0, (uint64_t)1 << 56);
	for (uint8_t r = R_NEW_STATE; r < R_COUNT; r++) {
		char file[64];

		snprintf(file, sizeof(file), "slot-region-%u", r);
		seed_one(dir, file, r, (uint8_t)(1 | (r << 2)), 7, 1u << r);
	}
}

static void drop_store(void)
{
	shmkv_close(owner);
	shmkv_unlink(name);
}

/* A store holding the fuzzers' keys and more, not yet grown. Return:
 * false if an insert met a full window and started a growth already
 * (the store's random hash seed decides: the caller makes another). */
static bool filled(const struct shmkv_config *cfg)
{
	char key[16];
	int err;

	owner = fz_create(name, cfg);
	fz_populate(owner, FZ_FILL_KEYS | FZ_FILL_TTLS | FZ_FILL_LOCKS);
	for (unsigned i = 0; i < SCRIBBLE_KEYS; i++) {
		snprintf(key, sizeof(key), "k%u", i);
		err = shmkv_set(owner, key, strlen(key), key, strlen(key), 0, 0,
				NULL);
		FZ_ASSERT(err == 1, "SET %s: %s", key, shmkv_strerror(err));
	}
	if (shmkv__tables(owner, &tabs) == 0)
		return true;
	drop_store();
	return false;
}

/* The store: the fuzzers' keys and more, a growth started, one step. */
static void half_grown(void)
{
	struct shmkv_config cfg = fz_tiny_config(SCRIBBLE_SLOT, 16, 64, 3);
	unsigned tries = 0;
	int err;

	/* Room for the new table and the one after: the growth may end. */
	cfg.max_memory *= 4;
	cfg.probe_limit = 16;
	while (!filled(&cfg))
		FZ_ASSERT(++tries < 64, "every store grew while filled");
	err = shmkv__grow_start(owner, tabs.life);
	FZ_ASSERT(err == 0, "growth: %s", shmkv_strerror(err));
	FZ_ASSERT(shmkv__tables(owner, &tabs) == SHMKV__GROWING, "no growth");
	err = shmkv__migrate_step(owner, &tabs);
	FZ_ASSERT(err == 0, "step: %s", shmkv_strerror(err));
	FZ_ASSERT(shmkv__tables(owner, &tabs) == SHMKV__GROWING,
		  "the growth ended in one step");
	FZ_ASSERT(shmkv_check(owner, NULL, NULL) == 0,
		  "the half-grown store is not sound");
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FUZZ_SEEDS_OUT");

	(void)argc;
	(void)argv;
	if (seeds != NULL) {
		write_seeds(seeds);
		exit(0);
	}
	fz_name(name, "scribble", "store");
	half_grown();
	fz_snapshot_take(&snap, owner);
	/* A crash skips this: run.sh removes what a run left behind. */
	atexit(drop_store);
	return 0;
}
