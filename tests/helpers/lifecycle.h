/*
 * lifecycle.h - what the lifecycle soak (lifecycle_soak.c) and its workers
 * (lifecycle_worker.c) share: the store's geometry, the key names, the ways
 * a worker leaves, and the journal both sides map.
 *
 * The journal is a memfd the soak creates and every worker inherits (its
 * fd number is on the worker's command line; a worker's forked children
 * inherit the mapping itself), so it outlives every worker and records
 * what a worker did up to the instant it died.
 *
 * The lock-protected counters. Each lock "a", "b", "c" guards the counter
 * "ctr.<lock>", whose value is "<n>:<pid>" (a value block): a holder GETs
 * n and SETs n + 1, which two overlapping holders would break (both write
 * the same n + 1). Every increment is recorded by the value it writes, in
 * two bitmaps per lock: intent[v] is set before the SET of v, acked[v]
 * after the SET returned 1, both while the lock is held. A holder killed
 * between the two leaves intent[v] without acked[v]: if its SET landed, the
 * next holder read v and wrote v + 1; if not, the next holder wrote v
 * itself and acked it. So with C the final counter, a correct lock gives:
 * every v in 1..C has acked[v] or (intent[v], written by a holder that died
 * before acking); no acked[v] past C; no v acked twice (journal "dup").
 * The counter is then exact: C = acked + landed-unacked, and the
 * landed-unacked are at most the holders that died in their section.
 */
#ifndef SHMKV_LIFECYCLE_H
#define SHMKV_LIFECYCLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "shmkv.h"
#include "helpers/worker_exit.h"

/* Room for every key the workers use, several times over. */
#define LC_SLOTS     512u
#define LC_VALUE_MAX 512u
/* Size classes 32..512 and 536: six pages of 64 KiB, one a class, and
 * two to spare. The live keys need well under half of it. */
#define LC_VALUE_MEMORY (8u * 65536u)
/* Data keys "d00".."d47", values self-checking (helpers/selfcheck.h). */
#define LC_DATA_KEYS 48u
#define LC_LOCKS     3u
static const char *const lc_lock_name[LC_LOCKS] = { "a", "b", "c" };
static const char *const lc_counter[LC_LOCKS] = { "ctr.a", "ctr.b", "ctr.c" };
/* Every key a worker or the audit can create: data keys, counters, lock
 * keys, and the audit's "probe". */
#define LC_KEYSPACE (LC_DATA_KEYS + 2 * LC_LOCKS + 1)
/* Only a death or a release ends a grant: a live holder is never
 * stalled this long in the soak. */
#define LC_LEASE_MS 10000
/* Counter values the bitmaps can record, per lock. */
#define LC_COUNT_MAX (1u << 22)
/* Journal slots: direct children alive (or dead, not yet reaped). */
#define LC_PROC_SLOTS 64u

/* How a worker leaves. The first LC_SHORT_KINDS are the short-lived
 * workers' rotation; "long" workers run the whole round. */
enum lc_kind {
	LC_RETURN = 0, /* return from main, store still open */
	LC_EXIT,       /* exit(0) */
	LC__EXIT,      /* _exit(0) */
	LC_ABORT,      /* abort(): SIGABRT */
	LC_KILL,       /* SIGKILLed by the soak at a random moment */
	LC_THREAD,     /* main thread pthread_exit()s, another finishes */
	LC_FORK,       /* forks a child that works and leaves without
			  shmkv_close (any of the first four ways) */
	LC_LONG,       /* works until told to stop, then shmkv_close */
	LC_KINDS,
};
#define LC_SHORT_KINDS LC_LONG
static const char *const lc_kind_name[LC_KINDS] = {
	"return", "exit", "_exit", "abort", "kill", "thread", "fork", "long",
};

/* Unexpected results, by the call that gave them. */
enum lc_err {
	LE_ACQUIRE = 0, /* shmkv_lock_acquire: not 0 or OWNER_DEAD */
	LE_RELEASE,	/* shmkv_lock_release: not 0 */
	LE_COMMAND,	/* SET/SETNX/DEL/GET: not a result it may give */
	LE_VALUE,	/* a value read that no worker wrote */
	LE_KINDS,
};
static const char *const lc_err_name[LE_KINDS] = {
	"shmkv_lock_acquire",
	"shmkv_lock_release",
	"commands",
	"values",
};
/* Results are counted by -errno below this; 0 counts anything else. */
#define LC_ERRNO_CAP 160

/* Exit statuses of a worker that fails by itself, beyond enum
 * worker_exit (WORKER_OPEN: shmkv_open or shmkv_lock_init failed;
 * WORKER_LOCK: a lock call failed in "once" mode). */
enum lc_exit {
	LW_ORPHAN = WORKER_OWN, /* the soak went away */
	LW_SYSTEM,		/* fork or pthread_create failed */
};

/*
 * A direct child's slot, for the kill handshake: a kill never lands
 * inside a data command (SET, SETNX, DEL, GET), whose leftovers are
 * shmkv_recover's documented job and this soak runs no recovery; it may
 * land anywhere else, lock calls and critical sections included. The
 * worker sets in_cmd, then reads kill_req (both seq_cst); the soak sets
 * kill_req, then reads in_cmd, and kills only if it is 0. Either the soak
 * sees in_cmd set and waits, or the worker sees kill_req and parks
 * without starting the command (a Dekker pair).
 */
struct lc_slot {
	_Atomic uint32_t kill_req;
	_Atomic uint32_t in_cmd;
	_Atomic uint32_t holding; /* between a grant and its release: only
				     counted, to show kills land there */
	_Atomic uint32_t opened;  /* the store is open: most kills are
				     timed from here, not from the spawn */
};

struct lc_lock_tally {
	_Atomic uint64_t begin;	     /* acquires started */
	_Atomic uint64_t end;	     /* sections ended (release returned) or
					acquires failed: begin - end bounds
					the holders that died holding */
	_Atomic uint64_t grants;     /* acquires that returned a grant */
	_Atomic uint64_t owner_dead; /* of those, SHMKV_LOCK_OWNER_DEAD */
	_Atomic uint64_t expired;    /* SHMKV_LOCK_LEASE_EXPIRED: never */
	_Atomic uint64_t dup;	     /* counter values acked twice */
};

struct lc_journal {
	_Atomic uint32_t stop; /* long workers close and return */
	_Atomic uint32_t note_taken[LE_KINDS];
	char note[LE_KINDS][192]; /* the first unexpected result of each
				     kind, in words */
	_Atomic uint64_t commands, sections, forks, capped;
	_Atomic uint64_t err[LE_KINDS][LC_ERRNO_CAP];
	struct lc_lock_tally lock[LC_LOCKS];
	struct lc_slot slot[LC_PROC_SLOTS];
	_Atomic uint64_t intent[LC_LOCKS][LC_COUNT_MAX / 64];
	_Atomic uint64_t acked[LC_LOCKS][LC_COUNT_MAX / 64];
};

/*
 * The audit after each round (tests/helpers/lifecycle_audit.c), on a store
 * nobody else uses any more: every worker and fork child reaped.
 */
struct lc_audit {
	shmkv_t *kv;	  /* the soak's handle: never takes a lock */
	const char *name; /* the store, for a handle of the audit's own */
	struct lc_journal *j;
	int64_t most_alive; /* workers and fork children alive (or not yet
				 reaped) at once in the round */
	int passed, failed; /* properties checked */
	/* What the last audit found. */
	uint64_t used_final, need_final, takeovers_here;
	long problems_final;
};

/* One checked property: counted, and printed to stderr if it failed. */
void lc_verdict(struct lc_audit *a, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Audits the store after round @r (0-based); prints what it found. */
void lc_audit_round(struct lc_audit *a, int r);

#endif /* SHMKV_LIFECYCLE_H */
