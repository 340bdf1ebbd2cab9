/*
 * fz_ops.h - a command script decoded from fuzzer input, run on a store.
 *
 * Each step is one opcode byte (modulo FZ_OP_COUNT) followed by its
 * operands, each decoded from the input (see fz_ops.c). Steps run until
 * the input or the step budget ends. Every return value is checked for
 * what the API promises (a known errno, lengths within the buffer, counts
 * within the geometry); store errors themselves are expected.
 *
 * Operand bytes (fz_ops.c):
 *   key:   < 0xe0: one of the run's keys (fixed names, then keys found by
 *          scanning); 0xe0..0xfe: (b & 0x1f) bytes of input; 0xff: a key
 *          one byte longer than key_max.
 *   value: < 0x40: a decimal integer (8 input bytes); 0x40..0xef: b - 0x40
 *          bytes of input; 0xf0..0xfe: value_max - (b - 0xf0) bytes;
 *          0xff: value_max + 1 bytes.
 */
#ifndef SHMKV_FZ_OPS_H
#define SHMKV_FZ_OPS_H

#include "fz_common.h"

enum fz_op {
	FZ_OP_GET,
	FZ_OP_SET,
	FZ_OP_SETNX,
	FZ_OP_GETSET,
	FZ_OP_GETDEL,
	FZ_OP_GETEX,
	FZ_OP_DEL,
	FZ_OP_EXISTS,
	FZ_OP_DELIFEQ,
	FZ_OP_EXPIRE,
	FZ_OP_TTL,
	FZ_OP_PERSIST,
	FZ_OP_INCRBY,
	FZ_OP_KEYREF,
	FZ_OP_SCAN,
	FZ_OP_STATS,
	FZ_OP_CHECK,
	FZ_OP_RECOVER,
	FZ_OP_SWEEP,
	FZ_OP_LOCK,
	FZ_OP_PATTERN_LOCK,
	FZ_OP_LOCK_LIST,
	FZ_OP_EXEC,
	FZ_OP_EVICT_POLICY,
	FZ_OP_COUNT
};

/* Key operand bytes for the fixed keys (fz_keys[] in fz_ops.c). */
enum fz_key {
	FZ_K_STR,     /* "str": a short string value */
	FZ_K_INT,     /* "int": an inline integer */
	FZ_K_BIG,     /* "big": a value of the top size class */
	FZ_K_TTL,     /* "ttl": a string with a TTL */
	FZ_K_TTL_INT, /* "ttl-int": an integer with a TTL (a block) */
	FZ_K_GONE,    /* "gone": deleted (a tombstone) */
	FZ_K_LOCK,    /* "lock.a": a safe lock held by the creator */
	FZ_K_PLOCK,   /* "lock.p": a pattern lock */
	FZ_K_EMPTY,   /* "": the empty key */
	FZ_K_COUNT
};

/* Lock names matching FZ_K_LOCK and FZ_K_PLOCK. */
#define FZ_LOCK_NAME	 "a"
#define FZ_PLOCK_NAME	 "p"
#define FZ_STEPS_DEFAULT 64

struct fz_run {
	shmkv_t *kv;
	bool readonly; /* the handle was opened SHMKV_OPEN_READONLY */
	/* The store is known sound (no corruption applied): then results
	 * are also checked against what the commands promise. */
	bool sound;
	unsigned steps_max;
};

/* Runs the script in @in on @r->kv. Collects keys with a scan first. */
void fz_ops_run(const struct fz_run *r, struct fz_in *in);

/* The fixed keys, for seed generators and harnesses. */
extern const char *const fz_keys[FZ_K_COUNT];

#endif /* SHMKV_FZ_OPS_H */
