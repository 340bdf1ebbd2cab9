/*
 * fuzz_commands.c - libFuzzer harness: commands on a store whose slots,
 * value storage, page table and header words were corrupted while it was
 * attached (by a process that may write the segment: the threat model).
 *
 * Input: [patch count u8 (mod 17)][patches, 12 bytes each][script]
 *   patch: [region u8][mode u8][index u16][value u64]
 *     region (mod 10): slot state, value, probe_bound, keymeta (or wait), area
 *       claim, key and inline value bytes; page table word; block tag/deadline/len/slot; header
 *       clock_offset_ms/lock_wait/visits/reap cursors; any 8 bytes past the
 *       header. index picks the slot, page table word, header word or
 *       word; for a block, index % pages the page, index >> 8 the block.
 *     mode & 3: 0 store value, 1 xor it, 2 add its top byte (signed),
 *       3 replace the low byte; mode >> 2 picks a field or offset.
 *   script: commands in fz_ops.h's encoding.
 *
 * The store is created and filled once per process (keys, TTLs, locks)
 * and copied aside; every input starts from that copy, through a fresh
 * handle, so a crash reproduces from its input alone. With no patch the
 * store is sound, and fz_ops.c also checks the commands' results.
 *
 * FUZZ_SEEDS_OUT=dir: write the seed corpus there and exit.
 */
#include <string.h>

#include "fz_script.h"
#include "internal.h"

#define PATCH_MAX 16
#define STEPS_MAX 256

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum region {
	R_STATE,
	R_VALUE,
	R_BOUND,
	R_HASH,
	R_AREA,
	R_KEY,
	R_PAGE,
	R_BLOCK,
	R_HEADER,
	R_RAW,
	R_COUNT
};

static char name[SHMKV_NAME_MAX + 1];
static shmkv_t *owner; /* created the store; its mapping is patched */
static struct fz_snapshot snap;

/*
 * The word of a block header that @mode picks, for block @index. The
 * address is worked out here, not by the library's shmkv__block_at(): a
 * bug there must show up in the library, not in the harness.
 */
static void patch_block(uint32_t index, uint8_t mode, uint64_t v)
{
	uint32_t page = index % owner->geo.page_count, cls;
	struct shmkv_block_shm *b;

	/* Relaxed plain read: nothing else runs. 0 is a free page. */
	cls = owner->page_table[page];
	if (cls == 0 || cls > owner->geo.class_count)
		return;
	cls--;
	b = (struct shmkv_block_shm *)(owner->pages +
				       (size_t)page * owner->geo.page_size +
				       (size_t)(index >> 8) %
					       (owner->geo.page_size /
						owner->geo.class_size[cls]) *
					       owner->geo.class_size[cls]);
	switch ((mode >> 2) % 4) {
	case 0:
		fz_patch64(&b->tag, mode, v);
		break;
	case 1:
		fz_patch64(&b->deadline_ms, mode, v);
		break;
	case 2:
		fz_patch32(&b->len, mode, v);
		break;
	default:
		fz_patch32(&b->slot, mode, v);
	}
}

static void patch_header(uint32_t index, uint8_t mode, uint64_t v)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)owner->base;

	switch ((mode >> 2) % 4) {
	case 0:
		fz_patch64(&h->clock_offset_ms, mode, v);
		break;
	case 1:
		fz_patch32(&h->lock_wait[index % SHMKV_LOCK_WAIT_WORDS], mode, v);
		break;
	case 2:
		fz_patch64(&h->visits[index % SHMKV_VISITS], mode, v);
		break;
	default:
		fz_patch64(index % 2 ? &h->reap_unit : &h->reap_slot, mode, v);
	}
}

static void patch_raw(uint32_t index, uint8_t mode, uint64_t v)
{
	size_t room = (owner->geo.segment_size - SHMKV_HEADER_SIZE) / 8;

	fz_patch64(owner->base + SHMKV_HEADER_SIZE + (size_t)index % room * 8,
		mode, v);
}

static void apply_patch(struct fz_in *in)
{
	uint8_t region = fz_u8(in) % R_COUNT, mode = fz_u8(in);
	uint32_t index = fz_u16(in);
	uint64_t v = fz_u64(in);
	struct shmkv_slot_shm *s = shmkv__slot(shmkv__table_cmd(owner), index);
	size_t key_words = (owner->geo.slot_size - SHMKV_SLOT_FIXED) / 8;

	if (region == R_STATE)
		fz_patch64(&s->state, mode, v);
	else if (region == R_VALUE)
		fz_patch64(&s->value, mode, v);
	else if (region == R_BOUND)
		fz_patch32(&s->probe_bound, mode, v);
	else if (region == R_HASH) /* or the slot's futex word beside it */
		fz_patch32((mode >> 2) & 1 ? &s->wait : &s->keymeta, mode, v);
	else if (region == R_AREA)
		fz_patch64(&s->area, mode, v);
	else if (region == R_KEY)
		fz_patch64(s->key + (size_t)(mode >> 2) % key_words * 8, mode, v);
	else if (region == R_PAGE)
		fz_patch32(&owner->page_table[index % owner->geo.page_count], mode,
			v);
	else if (region == R_BLOCK)
		patch_block(index, mode, v);
	else if (region == R_HEADER)
		patch_header(index, mode, v);
	else
		patch_raw(index, mode, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	unsigned patches = fz_u8(&in) % (PATCH_MAX + 1);
	struct fz_run run = { .steps_max = STEPS_MAX };
	int err;

	fz_snapshot_restore(&snap, owner);
	/* Attach first: a corrupted header must not stop the attach, since
	 * the corruption models a writer acting after it. */
	err = shmkv_open(name, 0, &run.kv);
	FZ_ASSERT(err == 0, "open %s: %s", name, shmkv_strerror(err));
	for (unsigned i = 0; i < patches; i++)
		apply_patch(&in);
	run.sound = patches == 0;
	fz_ops_run(&run, &in);
	shmkv_close(run.kv);
	return 0;
}

/*
 * Seeds: the default and read-only scripts on the sound store, then one
 * patch of each region with each mode, then several at once.
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
		       const struct fz_buf *patches, unsigned n, bool reads)
{
	struct fz_buf in = { 0 };

	fz_put8(&in, (uint8_t)n);
	fz_put(&in, patches->b, patches->n);
	if (reads)
		fz_script_reads(&in);
	else
		fz_script_default(&in);
	fz_write_seed(dir, file, &in);
	fz_buf_free(&in);
}

static void write_seeds(const char *dir)
{
	struct fz_buf none = { 0 }, many = { 0 };
	char file[64];

	write_seed(dir, "sound-default", &none, 0, false);
	write_seed(dir, "sound-reads", &none, 0, true);
	for (uint8_t r = 0; r < R_COUNT; r++) {
		struct fz_buf one = { 0 };

		/* xor one bit of each slot-ish field of slot 3, the first
		 * page, block 0, the first header word... */
		put_patch(&one, r, (uint8_t)(1 | (r << 2)), 3, 1u << r);
		snprintf(file, sizeof(file), "patch-region-%u", r);
		write_seed(dir, file, &one, 1, false);
		put_patch(&many, r, (uint8_t)(r & 3), (uint16_t)(r * 7),
			  0x8000000000000001ULL >> r);
		fz_buf_free(&one);
	}
	write_seed(dir, "patch-many", &many, R_COUNT, false);
	fz_buf_free(&many);
}

static void drop_store(void)
{
	shmkv_close(owner);
	shmkv_unlink(name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FUZZ_SEEDS_OUT");
	struct shmkv_config cfg = fz_tiny_config(32, 16, 64, 3);

	(void)argc;
	(void)argv;
	if (seeds != NULL) {
		write_seeds(seeds);
		exit(0);
	}
	fz_name(name, "commands", "store");
	owner = fz_create(name, &cfg);
	fz_populate(owner, FZ_FILL_KEYS | FZ_FILL_TTLS | FZ_FILL_LOCKS);
	FZ_ASSERT(shmkv_check(owner, NULL, NULL) == 0,
		  "the filled store is not sound");
	fz_snapshot_take(&snap, owner);
	/* A crash skips this: run.sh removes what a run left behind. */
	atexit(drop_store);
	return 0;
}
