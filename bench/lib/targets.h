/*
 * targets.h - what bench_backends times, behind one interface: the same
 * five operations through shmkv's public API on any store (shared memory,
 * redis://, redis+unix://, redis+cluster://), and their bare hiredis
 * counterparts on a Redis server or cluster (the protocol's own round
 * trip, without shmkv's layer).
 *
 * Every operation's reply is checked after it is timed: a GET must give
 * the value the setup wrote, an INCR exactly one more than the target's
 * last, a lock cycle must acquire a free lock and release it. A reply
 * that is an error or wrong makes the figure "not available" with the
 * reason; the bench never prints a figure of operations that failed.
 *
 * Names (all 12 bytes, as bench_core's keys): the GET/SET keys
 * "k:%010u" are shared by every target on a server (SET writes the value
 * the setup wrote, so a GET by any target may check it); counters
 * "c<d>:%09u" and locks "s<d>.%02u" (safe), "p<d>.%02u" (pattern),
 * "r<d>.%02u" (bare SET NX PX) are each target's own (<d> its digit), so
 * INCR's results can be checked exactly.
 */
#ifndef SHMKV_BENCH_TARGETS_H
#define SHMKV_BENCH_TARGETS_H

#include <hiredis/hiredis.h>
#include <stdint.h>

#include "bench.h"
#include "shmkv_lock.h"

enum target_op {
	OP_GET,	    /* GET of a present key, 16-byte value */
	OP_SET,	    /* SET of a 16-byte value */
	OP_INCR,    /* INCR of the target's own counter */
	OP_SAFE,    /* shmkv_lock_try_acquire + shmkv_lock_release, free lock */
	OP_PATTERN, /* shmkv_pattern_acquire (no wait) + release */
	OP_RAWLOCK, /* bare: SET NX PX + EVALSHA compare-and-delete */
	OP_N
};
extern const char *const target_op_name[OP_N];
extern const char *const target_op_tag[OP_N];

#define TARGET_KEYS	 64u /* GET/SET keys and counters, a power of two */
#define TARGET_LOCKS	 16u /* locks of each kind, a power of two */
#define TARGET_VLEN	 16u
#define TARGET_NODES_MAX 16
#define TARGET_LEASE_MS	 10000

struct target {
	const char *name; /* for tables */
	const char *tag;  /* for CSV */
	int digit;	  /* in the target's own names, 0..9 */
	shmkv_t *kv;	  /* shmkv's API; NULL: bare hiredis */
	/* Bare hiredis: one connection per node; which node each key,
	 * counter and lock lives on (0 on a single server). */
	redisContext *node[TARGET_NODES_MAX];
	int nnodes;
	uint8_t key_node[TARGET_KEYS], ctr_node[TARGET_KEYS];
	uint8_t lock_node[TARGET_LOCKS];
	char sha[48]; /* the compare-and-delete script, loaded everywhere */
	/* shmkv's lock handles. */
	struct shmkv_lock lk[TARGET_LOCKS];
	struct shmkv_pattern pl[TARGET_LOCKS];
	/* The last operation's reply, for target_check(). */
	int rc;
	int64_t incr;
	char out[64];
	size_t out_len;
	int64_t count[TARGET_KEYS]; /* each counter's value, by this target */
	char why[200];		    /* the first failure, "" while none */
};

/* 1 if a target runs @op: shmkv's (@bare 0) all but OP_RAWLOCK, bare
 * hiredis's GET, SET, INCR and OP_RAWLOCK. */
int target_has(int bare, enum target_op op);

/*
 * Binds @t to the open shmkv handle @kv (left the caller's), writes the
 * GET keys' values with shmkv_set and reads its counters with shmkv_incr.
 * Return: 0, or a negative errno with the reason in t->why.
 */
int target_shmkv(struct target *t, const char *name, const char *tag, int digit,
		 shmkv_t *kv);

/* Inits @t's lock handles for @op (OP_SAFE, OP_PATTERN): apart from
 * target_shmkv, so a lock that cannot be set up leaves the other
 * operations their figures. Return: as target_shmkv. */
int target_locks(struct target *t, enum target_op op);

/*
 * Bare hiredis on one server: TCP 127.0.0.1:@port, or the unix socket
 * @path when it is not NULL; @cluster: @port is a cluster node, the
 * others are found by CLUSTER SLOTS and each name's node by CLUSTER
 * KEYSLOT, so every command goes straight to the master that holds its
 * key (no redirection). Loads the compare-and-delete script.
 * Return: 0, or a negative errno with the reason in t->why.
 */
int target_hiredis(struct target *t, const char *name, const char *tag,
		   int digit, const char *path, int port, int cluster);

void target_close(struct target *t);

/*
 * The operation, on key/counter/lock number @i (mod their count): what
 * the bench times. Its reply stays in @t for target_check(). A lock
 * cycle stops at a failed acquire and returns its code.
 */
void target_do(struct target *t, enum target_op op, uint32_t i);

/* The reply of the last target_do(@op, @i): 0 if right; else a negative
 * errno, with the reason in t->why. */
int target_check(struct target *t, enum target_op op, uint32_t i);

#endif /* SHMKV_BENCH_TARGETS_H */
