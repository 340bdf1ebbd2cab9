/*
 * limit.h - what the "store at its limit" soak (tests/programs/limit_soak.c)
 * shares with its workers (limit_worker.c) and its audit (limit_audit.c):
 * the store's keys, the workers' roles, and the result area all of them
 * map.
 *
 * The result area is anonymous shared memory the soak maps before it forks
 * any worker, so it outlives every worker and records what one did up to
 * the instant it was killed. A worker writes only its own lane; the soak
 * reads a lane after reaping its worker (or while it runs, for progress
 * only) and clears it before giving it to the next worker.
 *
 * The lock-protected counters. Lock "a" guards the integer key "ctr.a"
 * (and "b" "ctr.b"): a holder GETs n and SETs n + 1, which two
 * overlapping holders would break (both write n + 1). A lane's stage says
 * how far its current section got: GRANTED once the lock is ours (the SET
 * may be in flight), LANDED once the SET returned 1; the section is
 * counted completed after the release returned 0, in the same store that
 * clears the stage. So with D sections completed, L holders killed at
 * LANDED and M at GRANTED, a correct lock gives D + L <= counter <= D + L
 * + M, and exactly D + L when no holder died with a SET in flight. The
 * INCR counters "n0".."n3" likewise: D INCRs returned 0 and M killed
 * inside one give D <= counter <= D + M.
 */
#ifndef SHMKV_LIMIT_H
#define SHMKV_LIMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "helpers/worker_exit.h"
#include "shmkv.h"

/* The table starts at its smallest, so that it grows several times in
 * every round, each growth copying values while value memory is full. */
#define LS_SLOTS 16u
/* 64-byte slots: a key of 5 bytes leaves room for short strings in its
 * slot (inline), while longer ones need a value block. */
#define LS_KEY_MAX   28u
#define LS_VALUE_MAX 4096u
#define LS_KEYS_MAX  (1u << 16)
#define LS_LANES_MAX 32u
#define LS_LOCKS     2u
#define LS_COUNTERS  4u
static const char *const ls_lock_name[LS_LOCKS] = { "a", "b" };
static const char *const ls_lock_counter[LS_LOCKS] = { "ctr.a", "ctr.b" };
static const char *const ls_counter[LS_COUNTERS] = { "n0", "n1", "n2", "n3" };
/* Only a death or a release ends a grant: a live holder is never stalled
 * this long. */
#define LS_LEASE_MS 10000

/* What a worker does, by its lane: lane % LS_ROLES. */
enum ls_role {
	LS_WRITER = 0, /* SET random keys, mixed sizes, until -ENOMEM */
	LS_DELETER,    /* DEL and GETDEL random keys: never an error */
	LS_LOCKER,     /* sections under the safe locks */
	LS_INCR,       /* INCR of the counters (and of random keys) */
	LS_ROLES,
};
static const char *const ls_role_name[LS_ROLES] = { "writer", "deleter",
						    "locker", "incr" };

/* Results a call may not give, by the call. */
enum ls_fail {
	LF_OPEN = 0, /* shmkv_open, shmkv_lock_init in a worker */
	LF_SET,	     /* SET: not 1, -ENOMEM or -ENOSPC */
	LF_DEL,	     /* DEL: negative */
	LF_GETDEL,   /* GETDEL: negative, or a value nobody wrote */
	LF_ACQUIRE,  /* lock acquire: not a grant, -ETIMEDOUT */
	LF_SECTION,  /* the counter's GET or SET under the lock */
	LF_RELEASE,  /* lock release: not 0 */
	LF_INCR,     /* INCR: an error it may not give */
	LF_MAINTAIN, /* shmkv_maintain (the soak's): not 0 */
	LF_MEMORY,   /* shmkv_stats: memory_bytes past max_memory */
	LF_KINDS,
};
static const char *const ls_fail_name[LF_KINDS] = {
	"open",
	"SET",
	"DEL",
	"GETDEL",
	"lock acquire",
	"lock section",
	"lock release",
	"INCR",
	"shmkv_maintain",
	"memory within max_memory",
};

/* Stages of a lane's lock section (see above). */
enum ls_stage { LS_IDLE = 0, LS_GRANTED, LS_LANDED };

/* A lane's words change in one store each, so that a kill between two
 * steps leaves a word that says exactly how far the worker got. */
#define LS_SECTION(done, stage) (((uint64_t)(done) << 2) | (stage))
#define LS_INCR(done, in)	(((uint64_t)(done) << 1) | (in))

struct ls_lane {
	/* Per lock: LS_SECTION(sections completed, enum ls_stage). */
	_Atomic uint64_t section[LS_LOCKS];
	/* Per counter: LS_INCR(INCRs that returned 0, one running). */
	_Atomic uint64_t incr[LS_COUNTERS];
};

struct ls_area {
	_Atomic uint32_t stop; /* workers exit 0 at their next command */
	/* Per role: calls that did their job (a SET that stored, a DEL that
	 * deleted, a section released, an INCR): the soak's progress. */
	_Atomic uint64_t done[LS_ROLES];
	_Atomic uint64_t calls[LS_ROLES];
	_Atomic uint64_t lock_done[LS_LOCKS];	 /* sections, per lock */
	_Atomic uint64_t incr_done[LS_COUNTERS]; /* INCRs, per counter */
	_Atomic uint64_t enomem, enospc; /* SETs refused for want of room */
	_Atomic uint64_t acquire_enomem; /* acquires refused: no cell free */
	_Atomic uint64_t fails[LF_KINDS];
	_Atomic uint32_t noted[LF_KINDS];
	char note[LF_KINDS][200]; /* the first failure of each kind */
	struct ls_lane lane[LS_LANES_MAX];
};

/* A worker's orders. */
struct ls_worker {
	const char *name; /* the store */
	struct ls_area *area;
	unsigned lane, keys;
	int64_t del_pause_us; /* a deleter's pause after each call */
	uint64_t seed;
};

/* Records a failure of @kind: counted, and its words kept if it is the
 * first of its kind. Safe in any process that maps @a. */
void ls_fail(struct ls_area *a, enum ls_fail kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The key of number @i ("k00042") into @buf (16 bytes). Return: its
 * length. */
unsigned ls_key(char *buf, unsigned i);

/* A value of @len bytes into @buf: the canonical decimal @n when @n >= 0
 * (then @len is ignored and the length returned), else "V" then letters
 * that depend on @len and the position. Return: the length. */
unsigned ls_value(char *buf, unsigned len, int64_t n);

/* Whether @v (@len bytes) is a value ls_value() or INCR could write. */
bool ls_value_ok(const char *v, size_t len);

/* Runs worker @o until the area says stop; never returns (_exit 0, or a
 * worker_exit status after an ls_fail() of LF_OPEN). */
void ls_worker_run(const struct ls_worker *o) __attribute__((noreturn));

/* What the soak knows of a round when its workers are all reaped. */
struct ls_tally {
	uint64_t sections[LS_LOCKS], landed[LS_LOCKS], in_flight[LS_LOCKS];
	uint64_t incrs[LS_COUNTERS], incr_in[LS_COUNTERS];
	bool evicting; /* the policy may evict counters: upper bounds only */
	int passed, failed;
};

/* One checked property: counted, and printed to stderr if it failed. */
void ls_verdict(struct ls_tally *t, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Audits the store on handle @kv with every worker reaped (limit_audit.c):
 * the growth finishes, each lock is taken and released, the counters are
 * exact, shmkv_check is clean, every key deletes, and new values fit
 * again; prints one line of what it found. @keys: the keyspace. */
void ls_audit(shmkv_t *kv, struct ls_area *a, struct ls_tally *t,
	      unsigned keys);

#endif /* SHMKV_LIMIT_H */
