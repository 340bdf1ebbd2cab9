/*
 * fz_ops_impl.h - what fz_ops.c (operands, results, string commands, the
 * script) and fz_ops_admin.c (inspection, maintenance, locks, exec) share.
 * Private to those two files.
 */
#ifndef SHMKV_FZ_OPS_IMPL_H
#define SHMKV_FZ_OPS_IMPL_H

#include "fz_ops.h"
#include "shmkv_lock.h"

/* Keys a run picks from: the fixed ones, then up to 16 found by scans. */
#define KEYS_MAX (FZ_K_COUNT + 16)
/* Scan and sweep calls per step: each covers at most 255 slots. */
#define CURSOR_CALLS 4
/* Whole-store passes (stats, check, recover) per run: each reads every
 * block of the claimed pages, which would otherwise be most of the time
 * spent; more of them in one input find nothing more. */
#define PASSES_MAX 4

struct key {
	const unsigned char *b;
	size_t len;
};

/* One run of a script on one store. */
struct ctx {
	const struct fz_run *r;
	struct fz_in *in;
	shmkv_t *kv;
	struct shmkv_config cfg;
	struct key keys[KEYS_MAX];
	unsigned char *own[KEYS_MAX]; /* copies of keys found by scanning */
	int nkeys;
	int passes;	      /* whole-store passes run so far */
	unsigned char *kbuf;  /* key_max + 1 bytes */
	unsigned char *vbuf;  /* value_max + 1 bytes */
	unsigned char *out;   /* value_max bytes */
	unsigned char *small; /* the last tiny buffer fz__take_out gave */
	char num[32];
	char lname[SHMKV_LOCK_NAME_MAX + 2];
};

/* Results (fz_ops.c): abort on what the API never returns. */
void fz__check_rc(const struct ctx *c, int rc, const char *op);
void fz__check_value(const struct ctx *c, int rc, const struct shmkv_value *v,
		     const char *op);

/* Operands (fz_ops.c), in the encoding of fz_ops.h. */
void fz__take_key(struct ctx *c, const void **k, size_t *kl);
int64_t fz__take_num(struct ctx *c);
void fz__take_value(struct ctx *c, const void **v, size_t *vl);
void fz__take_out(struct ctx *c, struct shmkv_value *v);

/* fz_ops_admin.c */
void fz__scan_from(struct ctx *c, uint64_t cursor, uint32_t count);
void fz__op_scan(struct ctx *c);
void fz__op_stats(struct ctx *c);
void fz__op_check(struct ctx *c);
void fz__op_recover(struct ctx *c);
void fz__op_sweep(struct ctx *c);
void fz__op_evict_policy(struct ctx *c);
void fz__op_lock(struct ctx *c);
void fz__op_pattern_lock(struct ctx *c);
void fz__op_lock_list(struct ctx *c);
void fz__op_exec(struct ctx *c);

#endif /* SHMKV_FZ_OPS_IMPL_H */
