/*
 * fuzz_attach.c - libFuzzer harness: attaching arbitrary segment images.
 *
 * Input: [ctrl u8][script length u16][script][image]
 *   ctrl bit 0  raw image: extend it with zeros to the size its header
 *               names (a tmpfs file is zero-filled, so seeds leave out a
 *               real store's trailing zeros)
 *   ctrl bit 1  open read-only (the mapping is then PROT_READ: any write
 *               the library attempts faults)
 *   ctrl bit 2  the image is sparse (fz_put_sparse): its size, then runs
 *               of bytes at offsets; otherwise it is the raw bytes
 *   script      commands in fz_ops.h's encoding; empty: the default
 *
 * The image is written to /dev/shm under this process's name and opened
 * with shmkv_open(), the path every process takes. A refusal must be one
 * of -EPROTO, -EPROTONOSUPPORT, -EBADMSG (or -EXDEV for a read-write open
 * of a header that names another pid namespace); an attached store then runs the
 * script, whose results are checked by fz_ops.c. A crash, a hang
 * (libFuzzer -timeout) or an access next to the segment (fz_guard.c) is
 * a failure; errors are not.
 *
 * FUZZ_SEEDS_OUT=dir: write the seed corpus there (real stores in known
 * states, made by this build) and exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fz_script.h"
#include "internal.h"

#define CTRL_PAD    1u
#define CTRL_RDONLY 2u
#define CTRL_SPARSE 4u
/* Largest image written: the tiny stores of the seeds are under 1 MiB. */
#define IMAGE_MAX (8u << 20)
#define STEPS_MAX 256

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char name[SHMKV_NAME_MAX + 1];
static char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
static struct fz_buf default_script;

static void write_raw(int fd, struct fz_in *img, bool pad)
{
	uint64_t size = 0;

	if (img->n > 0 && write(fd, img->p, img->n) != (ssize_t)img->n)
		FZ_ASSERT(0, "%s: write: %s", path, strerror(errno));
	if (!pad || img->n < offsetof(struct shmkv_header_shm, segment_size) +
				     sizeof(size))
		return;
	memcpy(&size, img->p + offsetof(struct shmkv_header_shm, segment_size),
	       sizeof(size));
	if (size > img->n && size <= IMAGE_MAX)
		FZ_ASSERT(ftruncate(fd, (off_t)size) == 0, "ftruncate: %s",
			  strerror(errno));
}

static void write_sparse(int fd, struct fz_in *img)
{
	uint32_t size = fz_u32(img) % (IMAGE_MAX + 1);

	FZ_ASSERT(ftruncate(fd, (off_t)size) == 0, "ftruncate: %s",
		  strerror(errno));
	while (img->n > 0) {
		uint32_t off = fz_u32(img);
		size_t len;
		const uint8_t *run = fz_bytes(img, fz_u16(img), &len);

		if (off >= size)
			continue;
		if (len > size - off)
			len = size - off;
		FZ_ASSERT(pwrite(fd, run, len, off) == (ssize_t)len,
			  "pwrite: %s", strerror(errno));
	}
}

static void write_image(uint8_t ctrl, struct fz_in *img)
{
	int fd;

	unlink(path);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	FZ_ASSERT(fd >= 0, "%s: %s", path, strerror(errno));
	if (ctrl & CTRL_SPARSE)
		write_sparse(fd, img);
	else
		write_raw(fd, img, ctrl & CTRL_PAD);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size }, script;
	uint8_t ctrl = fz_u8(&in);
	bool ro = ctrl & CTRL_RDONLY;
	shmkv_t *kv = NULL;
	int err;

	script.p = fz_bytes(&in, fz_u16(&in), &script.n);
	if (script.n == 0) {
		script.p = default_script.b;
		script.n = default_script.n;
	}
	write_image(ctrl, &in);
	err = shmkv_open(name, ro ? SHMKV_OPEN_READONLY : 0, &kv);
	if (err == 0) {
		struct fz_run run = { .kv = kv,
				      .readonly = ro,
				      .steps_max = STEPS_MAX };

		fz_ops_run(&run, &script);
		shmkv_close(kv);
	} else {
		/* -EXDEV: a header naming another pid namespace, refused
		 * to writers only. */
		FZ_ASSERT(err == -EPROTO || err == -EPROTONOSUPPORT ||
				  err == -EBADMSG || (err == -EXDEV && !ro),
			  "open refused the image with %d (%s)", err,
			  shmkv_strerror(err));
	}
	unlink(path);
	return 0;
}

/*
 * Seeds: stores of a tiny geometry in known states, as their images.
 */

/* The slot holding @key, or NULL. */
static struct shmkv_slot_shm *find_slot(shmkv_t *kv, const char *key)
{
	for (uint32_t i = 0; i <= shmkv__table_cmd(kv)->mask; i++) {
		struct shmkv_slot_shm *s = shmkv__slot(shmkv__table_cmd(kv), i);

		if (SLOT_STATE(s->state) == SLOT_MEMBER &&
		    SLOT_KEYMETA_LEN(s->keymeta) == strlen(key) &&
		    memcmp(s->key, key, strlen(key)) == 0)
			return s;
	}
	return NULL;
}

static struct shmkv_slot_shm *find_empty(shmkv_t *kv)
{
	for (uint32_t i = 0; i <= shmkv__table_cmd(kv)->mask; i++)
		if (SLOT_STATE(shmkv__slot(shmkv__table_cmd(kv), i)->state) == SLOT_EMPTY)
			return shmkv__slot(shmkv__table_cmd(kv), i);
	return NULL;
}

/* What processes killed mid-command leave (the README's crash table):
 * a stuck insert, a stale claim, a collided copy, a leaked block. */
static void leave_crash_debris(shmkv_t *kv)
{
	const uint32_t dead = 0x1ffffffe; /* above any Linux pid_max */
	struct shmkv_slot_shm *s = find_slot(kv, "str"), *e;
	uint32_t cls, unit;
	struct shmkv_block_shm *b;

	FZ_ASSERT(s != NULL, "seed: no slot for str");
	s->state = SLOT_WORD(SLOT_INSERTING, 0, SLOT_VERSION(s->state));
	e = find_empty(kv);
	FZ_ASSERT(e != NULL, "seed: no empty slot");
	e->state = SLOT_WORD(SLOT_BUSY, dead, SLOT_VERSION(e->state));
	e = find_empty(kv);
	FZ_ASSERT(e != NULL, "seed: no empty slot");
	memcpy(e->key, "int", 3);
	e->keymeta = SLOT_KEYMETA(e->keymeta, 3);
	e->state = SLOT_WORD(SLOT_COLLIDED, 0, SLOT_VERSION(e->state));
	/* The last block of the first claimed page: allocated, never
	 * published, by a process now dead. */
	for (unit = 0; unit < kv->geo.page_count * kv->geo.units_per_page;
	     unit++) {
		b = shmkv__block_at(kv, unit, &cls);
		if (b != NULL && !BLK_USED(b->tag) &&
		    unit % kv->geo.units_per_page + 1 ==
			    kv->class_blocks[cls]) {
			b->tag = BLK_TAG(BLK_GEN(b->tag), dead & 0x7fffffff, 1);
			break;
		}
	}
}

struct seed {
	const char *file;
	uint8_t ctrl;
	unsigned fill;
	bool debris;
	bool reads_only; /* the read-only script */
	struct shmkv_config cfg;
};

static void write_one(const char *dir, const struct seed *sd)
{
	struct fz_buf in = { 0 }, script = { 0 };
	unsigned char *img;
	size_t size;
	shmkv_t *kv = fz_create(name, &sd->cfg);

	fz_populate(kv, sd->fill);
	if (sd->debris)
		leave_crash_debris(kv);
	if (sd->reads_only)
		fz_script_reads(&script);
	else
		fz_script_default(&script);
	img = fz_base(kv, &size);
	fz_put8(&in, sd->ctrl);
	fz_put16(&in, (uint16_t)script.n);
	fz_put(&in, script.b, script.n);
	if (sd->ctrl & CTRL_SPARSE) {
		fz_put_sparse(&in, img, size);
	} else {
		while (size > 0 && img[size - 1] == 0)
			size--;
		fz_put(&in, img, size);
	}
	fz_write_seed(dir, sd->file, &in);
	shmkv_close(kv);
	shmkv_unlink(name);
	fz_buf_free(&in);
	fz_buf_free(&script);
}

static struct shmkv_config with_huge_pages(struct shmkv_config cfg)
{
	cfg.flags = SHMKV_CONFIG_HUGE_PAGES;
	cfg = fz_fixed_memory(cfg);
	return cfg;
}

static void write_seeds(const char *dir)
{
	const struct shmkv_config tiny = fz_tiny_config(16, 16, 64, 4);
	const struct shmkv_config other = fz_tiny_config(32, 40, 300, 5);
	const struct shmkv_config huge = with_huge_pages(tiny);
	const unsigned all = FZ_FILL_KEYS | FZ_FILL_TTLS | FZ_FILL_LOCKS;
	const struct seed seeds[] = {
		{ "empty-raw", CTRL_PAD, 0, false, false, tiny },
		{ "empty", CTRL_SPARSE, 0, false, false, tiny },
		{ "keys", CTRL_SPARSE, FZ_FILL_KEYS, false, false, tiny },
		{ "ttls", CTRL_SPARSE, FZ_FILL_TTLS, false, false, tiny },
		{ "locks", CTRL_SPARSE, FZ_FILL_LOCKS, false, false, tiny },
		{ "all", CTRL_SPARSE, all, false, false, tiny },
		{ "crashed", CTRL_SPARSE, all, true, false, tiny },
		{ "full", CTRL_SPARSE, FZ_FILL_FULL, false, false, tiny },
		{ "readonly", CTRL_SPARSE | CTRL_RDONLY, all, false, true,
		  tiny },
		{ "other-geometry", CTRL_SPARSE, all, false, false, other },
		/* A header flag, and a segment of whole 2 MiB pages. */
		{ "huge-pages", CTRL_SPARSE, all, false, false, huge },
	};

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		write_one(dir, &seeds[i]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FUZZ_SEEDS_OUT");

	(void)argc;
	(void)argv;
	fz_name(name, "attach", "img");
	snprintf(path, sizeof(path), "%s%s", SHMKV_SHM_DIR, name);
	fz_script_default(&default_script);
	if (seeds != NULL) {
		write_seeds(seeds);
		exit(0);
	}
	return 0;
}
