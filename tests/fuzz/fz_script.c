/*
 * fz_script.c - command scripts, stores in known states and seed files
 * (see fz_script.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fz_script.h"
#include "shmkv_lock.h"

void fz_put(struct fz_buf *s, const void *p, size_t n)
{
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 256;

		while (cap < s->n + n)
			cap *= 2;
		s->b = realloc(s->b, cap);
		FZ_ASSERT(s->b != NULL, "out of memory");
		s->cap = cap;
	}
	if (n > 0)
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

void fz_put8(struct fz_buf *s, uint8_t v)
{
	fz_put(s, &v, 1);
}

void fz_put16(struct fz_buf *s, uint16_t v)
{
	fz_put8(s, (uint8_t)v);
	fz_put8(s, (uint8_t)(v >> 8));
}

void fz_put32(struct fz_buf *s, uint32_t v)
{
	fz_put16(s, (uint16_t)v);
	fz_put16(s, (uint16_t)(v >> 16));
}

void fz_put64(struct fz_buf *s, uint64_t v)
{
	fz_put32(s, (uint32_t)v);
	fz_put32(s, (uint32_t)(v >> 32));
}

void fz_buf_free(struct fz_buf *s)
{
	free(s->b);
	memset(s, 0, sizeof(*s));
}

void fz_put_num(struct fz_buf *s, int64_t v)
{
	fz_put8(s, 0);
	fz_put64(s, (uint64_t)v);
}

void fz_put_value(struct fz_buf *s, const char *v)
{
	size_t n = strlen(v);

	FZ_ASSERT(n <= 0xef - 0x40, "value operand too long");
	fz_put8(s, (uint8_t)(0x40 + n));
	fz_put(s, v, n);
}

/* A key operand given as bytes of the input. */
static void put_key_bytes(struct fz_buf *s, const char *k)
{
	size_t n = strlen(k);

	FZ_ASSERT(n <= 0x1e, "key operand too long");
	fz_put8(s, (uint8_t)(0xe0 | n));
	fz_put(s, k, n);
}

static void put_get(struct fz_buf *s, uint8_t key)
{
	fz_put8(s, FZ_OP_GET);
	fz_put8(s, key);
	fz_put8(s, FZ_OUT_FULL);
}

/* SET key value with @flags and time @t. */
static void put_set(struct fz_buf *s, uint8_t key, const char *v, uint8_t flags,
		    int64_t t)
{
	fz_put8(s, FZ_OP_SET);
	fz_put8(s, key);
	fz_put_value(s, v);
	fz_put8(s, flags);
	fz_put_num(s, t);
	fz_put8(s, FZ_OUT_FULL);
}

/* Every fixed key, then up to 16 keys the first scan found. */
static void put_get_all(struct fz_buf *s)
{
	for (uint8_t k = 0; k < FZ_K_COUNT + 16; k++)
		put_get(s, k);
}

static void put_writes(struct fz_buf *s)
{
	put_set(s, FZ_K_STR, "changed", 0, 0);
	fz_put8(s, FZ_OP_SET);
	put_key_bytes(s, "new");
	fz_put_value(s, "fresh");
	fz_put8(s, SHMKV_SET_NX | SHMKV_SET_PX);
	fz_put_num(s, 60000);
	fz_put8(s, FZ_OUT_FULL);
	fz_put(s, (uint8_t[]){ FZ_OP_SETNX, FZ_K_INT }, 2);
	fz_put_value(s, "1");
	fz_put(s, (uint8_t[]){ FZ_OP_INCRBY, FZ_K_INT }, 2);
	fz_put_num(s, 5);
	fz_put(s, (uint8_t[]){ FZ_OP_INCRBY, FZ_K_STR }, 2);
	fz_put_num(s, 1);
	fz_put(s, (uint8_t[]){ FZ_OP_GETSET, FZ_K_BIG }, 2);
	fz_put_value(s, "small");
	fz_put8(s, FZ_OUT_FULL);
	fz_put(s, (uint8_t[]){ FZ_OP_EXPIRE, FZ_K_TTL, 1, 0 }, 4);
	fz_put_num(s, 60000);
	fz_put(s, (uint8_t[]){ FZ_OP_PERSIST, FZ_K_TTL_INT }, 2);
	fz_put(s, (uint8_t[]){ FZ_OP_TTL, 1, FZ_K_TTL }, 3);
	fz_put(s, (uint8_t[]){ FZ_OP_GETEX, FZ_K_STR, SHMKV_GETEX_EX }, 3);
	fz_put_num(s, 100);
	fz_put8(s, FZ_OUT_FULL);
	fz_put(s, (uint8_t[]){ FZ_OP_DELIFEQ, FZ_K_STR }, 2);
	fz_put_value(s, "changed");
	fz_put(s, (uint8_t[]){ FZ_OP_DEL, FZ_K_GONE }, 2);
	fz_put(s, (uint8_t[]){ FZ_OP_GETDEL, FZ_K_INT, FZ_OUT_FULL }, 3);
}

/* Prepared key "int": INCRBY 3, GET, DEL. */
static void put_keyref(struct fz_buf *s)
{
	fz_put(s, (uint8_t[]){ FZ_OP_KEYREF, FZ_K_INT, 2 }, 3);
	fz_put8(s, 7);
	fz_put_value(s, "");
	fz_put8(s, FZ_OUT_FULL);
	fz_put_num(s, 3);
	fz_put8(s, 2);
	fz_put_value(s, "");
	fz_put8(s, FZ_OUT_FULL);
	fz_put8(s, 5);
	fz_put_value(s, "");
	fz_put8(s, FZ_OUT_FULL);
}

/* Safe lock "a": try, held, release; pattern lock "p"; the list. */
static void put_locks(struct fz_buf *s)
{
	fz_put(s, (uint8_t[]){ FZ_OP_LOCK, 0, 2, 0 }, 4);
	fz_put_num(s, 1000);
	fz_put(s, (uint8_t[]){ 2, 3 }, 2);
	fz_put(s, (uint8_t[]){ FZ_OP_PATTERN_LOCK, 1 }, 2);
	fz_put_num(s, 1000);
	fz_put(s, (uint8_t[]){ 0, 0, FZ_OP_LOCK_LIST }, 3);
}

/* EXEC set k v PX 100, then get str. */
static void put_exec(struct fz_buf *s)
{
	fz_put(s, (uint8_t[]){ FZ_OP_EXEC, 4, 1, 0xc1, 'k', 0xc1, 'v', 27, 35 },
	       9);
	fz_put(s, (uint8_t[]){ FZ_OP_EXEC, 1, 0, 41 }, 4);
}

static void put_maintenance(struct fz_buf *s)
{
	fz_put(s, (uint8_t[]){ FZ_OP_SCAN, 0, 0 }, 3);
	fz_put(s, (uint8_t[]){ FZ_OP_STATS, FZ_OP_CHECK, FZ_OP_RECOVER }, 3);
	fz_put(s, (uint8_t[]){ FZ_OP_SWEEP, 0, 0 }, 3);
	fz_put8(s, FZ_OP_CHECK);
}

/* allkeys-lru, an unknown policy (refused), then the writes again: a
 * store filled by them evicts. */
static void put_eviction(struct fz_buf *s)
{
	fz_put(s, (uint8_t[]){ FZ_OP_EVICT_POLICY, 1, FZ_OP_EVICT_POLICY, 8 },
	       4);
	put_writes(s);
}

void fz_script_default(struct fz_buf *s)
{
	put_get_all(s);
	put_writes(s);
	put_eviction(s);
	put_keyref(s);
	put_locks(s);
	put_exec(s);
	put_maintenance(s);
	put_get_all(s);
}

void fz_script_reads(struct fz_buf *s)
{
	put_get_all(s);
	fz_put(s, (uint8_t[]){ FZ_OP_TTL, 0, FZ_K_TTL }, 3);
	fz_put(s, (uint8_t[]){ FZ_OP_EXISTS, FZ_K_BIG }, 2);
	fz_put(s, (uint8_t[]){ FZ_OP_SCAN, 0, 7 }, 3);
	fz_put(s, (uint8_t[]){ FZ_OP_STATS, FZ_OP_CHECK, FZ_OP_LOCK_LIST }, 3);
	put_set(s, FZ_K_STR, "refused", 0, 0);
	fz_put(s, (uint8_t[]){ FZ_OP_DEL, FZ_K_INT, FZ_OP_RECOVER }, 3);
	fz_put(s, (uint8_t[]){ FZ_OP_SWEEP, 0, 0 }, 3);
}

/*
 * Stores in known states.
 */

#define HOUR_MS 3600000

static void must(int rc, const char *what)
{
	FZ_ASSERT(rc >= 0, "populate: %s: %s", what, shmkv_strerror(rc));
}

static void fill_keys(shmkv_t *kv)
{
	struct shmkv_config cfg;
	char *big;

	must(shmkv_get_config(kv, &cfg), "config");
	big = malloc(cfg.value_max);
	FZ_ASSERT(big != NULL, "out of memory");
	memset(big, 'B', cfg.value_max);
	must(shmkv_set(kv, "str", 3, "hello", 5, 0, 0, NULL), "str");
	must(shmkv_set(kv, "int", 3, "42", 2, 0, 0, NULL), "int");
	must(shmkv_set(kv, "big", 3, big, cfg.value_max, 0, 0, NULL), "big");
	must(shmkv_set(kv, "gone", 4, "x", 1, 0, 0, NULL), "gone");
	must(shmkv_del(kv, "gone", 4), "del gone");
	must(shmkv_set(kv, "", 0, "empty key", 9, 0, 0, NULL), "empty");
	free(big);
}

static void fill_ttls(shmkv_t *kv)
{
	struct timespec ms3 = { .tv_nsec = 3000000 };

	must(shmkv_set(kv, "ttl", 3, "soon", 4, SHMKV_SET_EX, 3600, NULL),
	     "ttl");
	must(shmkv_set(kv, "ttl-int", 7, "7", 1, SHMKV_SET_PX, HOUR_MS, NULL),
	     "ttl-int");
	must(shmkv_set(kv, "expired", 7, "e", 1, SHMKV_SET_PX, 1, NULL),
	     "expired");
	/* Expired but still in its slot: the next touch deletes it. */
	nanosleep(&ms3, NULL);
}

static void fill_locks(shmkv_t *kv)
{
	struct shmkv_lock lk;
	struct shmkv_pattern pl;
	int64_t expiry;

	must(shmkv_lock_init(kv, &lk, FZ_LOCK_NAME), "lock init");
	must(shmkv_lock_try_acquire(&lk, HOUR_MS), "lock");
	must(shmkv_pattern_init(kv, &pl, FZ_PLOCK_NAME), "pattern init");
	must(shmkv_pattern_acquire(&pl, HOUR_MS, 0, &expiry), "pattern lock");
}

static void fill_table(shmkv_t *kv)
{
	struct shmkv_config cfg;
	char key[16], val[16];

	must(shmkv_get_config(kv, &cfg), "config");
	/* Inline integers: no value storage, so only slots run out. */
	for (uint32_t i = 0; i < 2 * cfg.slots; i++) {
		int kn = snprintf(key, sizeof(key), "f%u", i);
		int vn = snprintf(val, sizeof(val), "%u", i);

		if (shmkv_set(kv, key, (size_t)kn, val, (size_t)vn, 0, 0,
			      NULL) == -ENOSPC)
			break;
	}
}

void fz_populate(shmkv_t *kv, unsigned fill)
{
	if (fill & FZ_FILL_KEYS)
		fill_keys(kv);
	if (fill & FZ_FILL_TTLS)
		fill_ttls(kv);
	if (fill & FZ_FILL_LOCKS)
		fill_locks(kv);
	if (fill & FZ_FILL_FULL)
		fill_table(kv);
}

/* Zero gaps shorter than this stay inside a run: fewer, longer runs. */
#define SPARSE_GAP 16

void fz_put_sparse(struct fz_buf *s, const unsigned char *img, size_t size)
{
	size_t i = 0;

	fz_put32(s, (uint32_t)size);
	while (i < size) {
		size_t start, end, zeros = 0;

		while (i < size && img[i] == 0)
			i++;
		if (i == size)
			break;
		start = end = i;
		/* Extend while the zero gap stays short and the run fits
		 * its 16-bit length. */
		for (; i < size && zeros < SPARSE_GAP && i - start < 0xffff;
		     i++) {
			zeros = img[i] == 0 ? zeros + 1 : 0;
			if (img[i] != 0)
				end = i + 1;
		}
		fz_put32(s, (uint32_t)start);
		fz_put16(s, (uint16_t)(end - start));
		fz_put(s, img + start, end - start);
		i = end;
	}
}

void fz_write_seed(const char *dir, const char *name, const struct fz_buf *s)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FZ_ASSERT(fd >= 0, "%s: %s", path, strerror(errno));
	FZ_ASSERT(write(fd, s->b, s->n) == (ssize_t)s->n, "%s: write", path);
	close(fd);
	fprintf(fz_err, "seed %s (%zu bytes)\n", path, s->n);
}
