/*
 * fz_script.h - building inputs: command scripts in the encoding of
 * fz_ops.h, stores in known states, and seed files.
 *
 * The seed corpora under tests/fuzz/corpus/ are written by these (run.sh
 * seeds), so a change to an encoding regenerates them instead of leaving
 * stale seeds behind.
 */
#ifndef SHMKV_FZ_SCRIPT_H
#define SHMKV_FZ_SCRIPT_H

#include "fz_ops.h"

/* A growing byte string. */
struct fz_buf {
	uint8_t *b;
	size_t n, cap;
};
void fz_put(struct fz_buf *s, const void *p, size_t n);
void fz_put8(struct fz_buf *s, uint8_t v);
void fz_put16(struct fz_buf *s, uint16_t v);
void fz_put32(struct fz_buf *s, uint32_t v);
void fz_put64(struct fz_buf *s, uint64_t v);
void fz_buf_free(struct fz_buf *s);

/* Operands, as fz_ops.c decodes them. */
void fz_put_num(struct fz_buf *s, int64_t v);	    /* shift 0, then v */
void fz_put_value(struct fz_buf *s, const char *v); /* <= 175 bytes */
#define FZ_OUT_FULL 0xff /* fz__take_out(): a value_max buffer */

/* A script that touches every fixed key with every kind of command, then
 * inspects and repairs: what a harness runs when it has no other script. */
void fz_script_default(struct fz_buf *s);
/* Reads only (with a few writes a read-only handle must refuse). */
void fz_script_reads(struct fz_buf *s);

/* What fz_populate() puts in a store. */
enum fz_fill {
	FZ_FILL_KEYS = 1 << 0,	/* str, int, big, gone (deleted), "" */
	FZ_FILL_TTLS = 1 << 1,	/* ttl, ttl-int, and one already expired */
	FZ_FILL_LOCKS = 1 << 2, /* safe lock "a" held, pattern lock "p" */
	FZ_FILL_FULL = 1 << 3,	/* every slot taken */
};
void fz_populate(shmkv_t *kv, unsigned fill);

/*
 * A segment image in fuzz_attach's sparse form: the size (u32), then runs
 * of non-zero bytes as [offset u32][length u16][bytes].
 */
void fz_put_sparse(struct fz_buf *s, const unsigned char *img, size_t size);

/* Writes @s to @dir/@name. Aborts on failure (seed generation only). */
void fz_write_seed(const char *dir, const char *name, const struct fz_buf *s);

#endif /* SHMKV_FZ_SCRIPT_H */
