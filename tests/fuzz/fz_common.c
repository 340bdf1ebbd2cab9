/*
 * fz_common.c - input decoding, names, snapshots and output handling
 * shared by the harnesses (see fz_common.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "fz_common.h"
#include "internal.h"

FILE *fz_err;

/* Before main: FZ_ASSERT may fire in LLVMFuzzerInitialize already. */
__attribute__((constructor)) static void fz_err_init(void)
{
	fz_err = stderr;
}

uint8_t fz_u8(struct fz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

uint16_t fz_u16(struct fz_in *in)
{
	uint16_t lo = fz_u8(in);

	return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

uint32_t fz_u32(struct fz_in *in)
{
	uint32_t lo = fz_u16(in);

	return lo | (uint32_t)fz_u16(in) << 16;
}

uint64_t fz_u64(struct fz_in *in)
{
	uint64_t lo = fz_u32(in);

	return lo | (uint64_t)fz_u32(in) << 32;
}

const uint8_t *fz_bytes(struct fz_in *in, size_t want, size_t *got)
{
	const uint8_t *p = in->p;

	*got = want < in->n ? want : in->n;
	in->p += *got;
	in->n -= *got;
	return p;
}

void fz_name(char name[SHMKV_NAME_MAX + 1], const char *harness,
	     const char *tag)
{
	snprintf(name, SHMKV_NAME_MAX + 1, "/shmkv-fuzz-%s-%ld-%s", harness,
		 (long)getpid(), tag);
}

void fz_silence(void)
{
	const char *v = getenv("FUZZ_VERBOSE");
	FILE *devnull;
	int fd;

	if (v != NULL && strcmp(v, "1") == 0)
		return;
	/* stdout: nothing of libFuzzer's goes there. */
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	FZ_ASSERT(fd >= 0, "open /dev/null: %s", strerror(errno));
	fflush(stdout);
	FZ_ASSERT(dup2(fd, STDOUT_FILENO) >= 0, "dup2: %s", strerror(errno));
	close(fd);
	/* stderr: libFuzzer and the sanitizers write to fd 2 (libFuzzer
	 * through its own FILE taken at start-up), so fd 2 stays; only the
	 * stdio stream the tools print their messages on is replaced. */
	devnull = fopen("/dev/null", "w");
	FZ_ASSERT(devnull != NULL, "fopen /dev/null: %s", strerror(errno));
	fz_err = fdopen(dup(STDERR_FILENO), "w");
	FZ_ASSERT(fz_err != NULL, "fdopen: %s", strerror(errno));
	setvbuf(fz_err, NULL, _IONBF, 0);
	stderr = devnull;
}

unsigned char *fz_base(shmkv_t *kv, size_t *size)
{
	*size = kv->geo.segment_size;
	return kv->base;
}

void fz_snapshot_take(struct fz_snapshot *s, shmkv_t *kv)
{
	unsigned char *base = fz_base(kv, &s->size);

	s->copy = malloc(s->size);
	FZ_ASSERT(s->copy != NULL, "snapshot of %zu bytes", s->size);
	memcpy(s->copy, base, s->size);
}

void fz_snapshot_restore(const struct fz_snapshot *s, shmkv_t *kv)
{
	size_t size;
	unsigned char *base = fz_base(kv, &size);

	FZ_ASSERT(size == s->size, "snapshot of another store");
	memcpy(base, s->copy, size);
}

struct shmkv_config fz_tiny_config(uint32_t slots, uint32_t key_max,
				   uint32_t value_max, uint32_t pages)
{
	struct shmkv_config cfg;

	shmkv_config_init(&cfg);
	cfg.slots = slots;
	cfg.key_max = key_max;
	cfg.value_max = value_max;
	cfg.probe_limit = slots;
	/* Pages are 64 KiB for every value_max the harnesses use. */
	cfg.value_memory = (uint64_t)pages * SHMKV_PAGE_MIN;
	return fz_fixed_memory(cfg);
}

struct shmkv_config fz_fixed_memory(struct shmkv_config cfg)
{
	struct shmkv_geometry g;

	cfg.max_memory = 0;
	FZ_ASSERT(shmkv__geometry_from_config(&cfg, 0, &g) == 0,
		  "a harness's config is refused");
	cfg.max_memory = shmkv__footprint(&g, g.pages_initial);
	return cfg;
}

shmkv_t *fz_create(const char *name, const struct shmkv_config *cfg)
{
	shmkv_t *kv = NULL;
	int err = shmkv_create(name, cfg, &kv);

	if (err == -EEXIST) {
		/* A stale store of a crashed run with our pid: ours to drop. */
		shmkv_unlink(name);
		err = shmkv_create(name, cfg, &kv);
	}
	FZ_ASSERT(err == 0, "create %s: %s", name, shmkv_strerror(err));
	return kv;
}

static uint64_t mutate(uint64_t cur, uint8_t mode, uint64_t v)
{
	switch (mode & 3) {
	case 0:
		return v;
	case 1:
		return cur ^ v;
	case 2:
		return cur + (uint64_t)(int64_t)(int8_t)(v >> 56);
	default:
		return (cur & ~(uint64_t)0xff) | (v & 0xff);
	}
}

void fz_patch64(void *p, uint8_t mode, uint64_t v)
{
	uint64_t cur;

	memcpy(&cur, p, sizeof(cur));
	cur = mutate(cur, mode, v);
	memcpy(p, &cur, sizeof(cur));
}

/* For add, the top byte of the low word: the same small delta. */
void fz_patch32(void *p, uint8_t mode, uint64_t v)
{
	uint32_t cur;

	memcpy(&cur, p, sizeof(cur));
	cur = (uint32_t)mutate(cur, mode, (mode & 3) == 2 ? v : (uint32_t)v);
	memcpy(p, &cur, sizeof(cur));
}

void fz_patch16(void *p, uint8_t mode, uint64_t v)
{
	uint16_t cur;

	memcpy(&cur, p, sizeof(cur));
	cur = (uint16_t)mutate(cur, mode, (mode & 3) == 2 ? v : (uint16_t)v);
	memcpy(p, &cur, sizeof(cur));
}
