/*
 * shmkv_lock.h - locks on a shmkv store, for processes of one host.
 *
 * Two kinds, both kept as ordinary keys named "lock.<name>":
 *
 * 1. The pattern lock (struct shmkv_pattern): the SETNX locking
 *    pattern of the Redis SETNX page, step by step, built only on the
 *    public commands SETNX, GET, GETSET and DEL. The key holds a decimal
 *    Unix time in MILLISECONDS (the page uses seconds) after which the lock
 *    is no longer valid. Code written against the page ports line by line;
 *    it keeps the page's weaknesses: a crashed holder blocks everyone until
 *    its timeout, expiry is judged on the wall clock, and the release
 *    (check the time, then DEL) can delete a lock someone else took in
 *    between.
 *
 * 2. The safe lock (struct shmkv_lock): the value of "lock.<name>" stands
 *    for an owner record {HELD or FREE, pid, process start time, fencing
 *    token, lease deadline}: a FREE lock reads as the integer -token, a
 *    HELD one as a negative integer naming a lock cell of the holder's
 *    process (past 2^46 grants, as a binary record). In Redis terms:
 *      acquire = SET lock.<name> <owner> NX PX <lease>
 *      release = DELIFEQ lock.<name> <owner>      (compare-and-delete)
 *    Each is one atomic compare-and-set of the whole record, so the
 *    semantics are the same: a lock is held until released or until its
 *    lease runs out, whichever comes first, and only the grant that holds
 *    it can release or extend it. The differences are all additions:
 *    - the lease lives inside the record, not as the key's TTL, so the
 *      record outlives it and the fencing token (a per-lock counter bumped
 *      on every grant) strictly increases across grants, takeovers and
 *      expiries; "release" stores FREE instead of deleting for the same
 *      reason; leases are CLOCK_MONOTONIC time (they do not run while the
 *      host is suspended), started from the coarse clock plus two ticks
 *      and 1 ms: a lease lasts at least what was asked (unless the
 *      kernel's tick itself is late by more than a tick, as under heavy VM
 *      steal: then short by the excess), at most ~9 ms more;
 *    - an acquirer that finds the holder's process gone (or its pid reused:
 *      the start time differs, or, for a pid handed out again within the
 *      clock tick of the holder's start, the new process has no mark in
 *      the store: see below) takes the lock at once instead of waiting
 *      out the lease, and is told SHMKV_LOCK_OWNER_DEAD;
 *    - a blocked acquirer sleeps on the futex word of the lock's slot and
 *      a release wakes one waiter, instead of polling; a waiter killed
 *      while asleep costs the next release one needless wake, no more;
 *    - a lost race is never an error: shmkv_lock_try_acquire answers -EBUSY and
 *      shmkv_lock_acquire goes on waiting.
 *    A holder that is merely stopped (SIGSTOP, a debugger, swapping) is
 *    alive: its lock is never taken over before its lease ends, however
 *    long it stays stopped and however many grants the lock sees meanwhile
 *    (a taker re-validates the grant it judged before replacing it).
 *
 * Liveness is judged with /proc/<pid>/stat, so every process using a lock
 * must live in the same pid namespace (as for shmkv_recover()). A process
 * is the owner: a thread that exits holding a lock is not detected (its
 * lease still ends); a process whose main thread exited while others run
 * is alive until its last thread ends (its /proc state Z is its main
 * thread's; the thread count tells it from a real zombie).
 *
 * /proc gives start times in clock ticks (1/100 s), so a pid handed out
 * again within the tick of the holder's start reads as the holder. Each
 * process therefore marks itself in the store's file before it first
 * takes a lock through a handle (an OFD read lock on a byte past the
 * segment, named by its pid; a fork child marks through a description of
 * its own), and the kernel drops the mark when the handle is closed or
 * the process dies: a holder whose pid and start time read alive but whose
 * pid has no mark is dead. So closing the store handle gives up the locks
 * taken through it (another process takes them over at once), and a
 * holder's pid reused within its start tick is still taken for alive only
 * if the new process itself marked in the same store, or is a fork child
 * of the holder's that has not used its inherited handle for a lock. A
 * store made by a build without marks is judged by pid and start time
 * alone; such a build refuses a store made by this one.
 *
 * The safe lock and the pattern lock of one name share the key
 * "lock.<name>": use one kind per name (the other kind gets -EEXIST).
 * Do not change lock keys with the plain commands: a DEL restarts the
 * fencing token at 1.
 *
 * On a handle of a Redis store (a redis:// URI) the same calls run as
 * server-side scripts and commands (src/redis_lock*.c), with the same
 * returns; what cannot be the same (the keys' braces, round trips,
 * OWNER_DEAD only for a holder on this host, the server's clock and
 * memory) is in the README's "Locks over Redis". There, two more errors:
 * the acquires return -ENOTSUP on a server that may evict the lock's keys
 * (a master's maxmemory-policy other than noeviction, or one neither
 * CONFIG GET nor INFO would tell; volatile-* for the safe lock only, whose
 * record has a TTL) unless the URI says ?locks_on_evicting_server=1; and
 * the safe lock's calls return -EBADMSG when its token counter
 * ("lock.{<name>}:token") has a field that is not a number.
 *
 * Errors are negative errnos; shmkv_strerror() describes them. Every
 * function here is safe to call from any number of processes and threads;
 * a struct shmkv_lock is one holder's handle: one thread at a time.
 */
#ifndef SHMKV_LOCK_H
#define SHMKV_LOCK_H

#include <errno.h>
#include <stdint.h>

#include "shmkv.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest lock name; the key "lock.<name>" must also fit key_max. */
#define SHMKV_LOCK_NAME_MAX 250u
/** Prefix of every lock key. */
#define SHMKV_LOCK_PREFIX     "lock."
#define SHMKV_LOCK_PREFIX_LEN 5u
/** Longest lease or pattern timeout, in ms (about 34 years). */
#define SHMKV_LOCK_LEASE_MAX (INT64_C(1) << 40)
/** A wait without a time limit (the *_acquire calls' wait arguments). */
#define SHMKV_LOCK_FOREVER (-1)
/**
 * Longest single sleep of a blocked acquirer, in ms. A wake-up that never
 * comes (the holder was killed, or a release woke a waiter of another lock
 * hashed to the same futex word) costs at most this much.
 */
#define SHMKV_LOCK_NAP_MS 5

/*
 * The pattern lock.
 */

/**
 * Size of struct shmkv_pattern, fixed for the 0.x ABI (its fields take 320
 * bytes today: the rest is room to grow).
 */
#define SHMKV_PATTERN_SIZE 512
/**
 * A pattern lock handle: the lock's key, hashed once (as
 * shmkv_key_prepare() does), with its slot remembered, so that code taking
 * one lock over and over probes for it once. Initialise with
 * shmkv_pattern_init(); the contents are private. It lives in the caller's
 * memory (no allocation) and may be copied. One thread at a time per
 * handle; handles of one name in any number of processes are the same lock.
 */
struct shmkv_pattern {
	uint64_t opaque[SHMKV_PATTERN_SIZE / 8];
};

/**
 * shmkv_pattern_init - binds @pl to the pattern lock @name of @kv. Nothing
 * is written to the store.
 * @name: NUL-terminated, 1..SHMKV_LOCK_NAME_MAX bytes.
 * Return: 0, -EINVAL (NULL argument, empty name), -ENAMETOOLONG (name
 * longer than SHMKV_LOCK_NAME_MAX or the key longer than key_max), -EROFS
 * (read-only handle). After a failure, acquire and release on @pl give
 * -EINVAL.
 */
SHMKV_API int shmkv_pattern_init(shmkv_t *kv, struct shmkv_pattern *pl,
				 const char *name);

/**
 * shmkv_pattern_acquire - the SETNX page's lock: SETNX lock.<name> with
 * now + @timeout_ms + 1; on 0, GET; if that time has passed, GETSET a new
 * one and own the lock only if the old value had still passed; else wait
 * and start over.
 * @timeout_ms: how long the lock stays valid, 1..SHMKV_LOCK_LEASE_MAX.
 * @wait_ms:    0: one attempt; > 0: keep trying that long;
 *              SHMKV_LOCK_FOREVER: until acquired.
 * @expiry:     receives the Unix time (ms) written: pass it to release.
 *
 * "now" is read from the coarse wall clock plus two ticks and 1 ms: the
 * lock stays valid at least @timeout_ms (unless the kernel's tick itself is
 * late by more than a tick), at most ~9 ms longer.
 * Waiting sleeps at most SHMKV_LOCK_NAP_MS at a time (a release wakes one
 * waiter earlier). A holder that crashed is waited out: up to @timeout_ms.
 *
 * Return: 0 (acquired), -EBUSY (@wait_ms 0 and the lock is held),
 * -ETIMEDOUT (not acquired within @wait_ms), -EINVAL (@pl not initialised,
 * NULL @expiry, @timeout_ms out of range, @wait_ms below -1), -EEXIST (the
 * key holds something that is not a Unix time: another kind of lock),
 * -ENOTSUP (a Redis store whose server may evict the key: allkeys-*; see
 * the top), or an error of the commands used.
 */
SHMKV_API int shmkv_pattern_acquire(struct shmkv_pattern *pl,
				    int64_t timeout_ms, int64_t wait_ms,
				    int64_t *expiry);

/**
 * shmkv_pattern_release - DEL lock.<name>, only if @expiry (what
 * shmkv_pattern_acquire gave) has not passed, then wake one waiter.
 *
 * Return: 0 (deleted), -ETIMEDOUT (@expiry has passed: the lock may be
 * someone else's now, so nothing is deleted), -ENOLCK (the key was already
 * gone), -EINVAL (@pl not initialised), or an error of the store.
 */
SHMKV_API int shmkv_pattern_release(struct shmkv_pattern *pl, int64_t expiry);

/*
 * The safe lock.
 */

/** What a successful acquire found (return values >= 0). */
enum shmkv_lock_grant {
	/** The lock was free (never used, released, or our fresh start). */
	SHMKV_LOCK_ACQUIRED = 0,
	/** The holder's process no longer exists (like EOWNERDEAD): what it
	 * protected may be half-updated; repair it before use. */
	SHMKV_LOCK_OWNER_DEAD = 1,
	/** The holder's lease ran out while it held the lock. It may still
	 * be running and may write with its old token: fence on the token. */
	SHMKV_LOCK_LEASE_EXPIRED = 2,
};

/** Release or extend: the lock is held by another grant than yours
 * (your lease ran out and someone took it, or it was never yours). */
#define SHMKV_LOCK_NOT_OWNER (-EPERM)
/** Release or extend: the lock is not held (free, never created, or
 * already released); extend only: your lease ran out (nobody took the
 * lock, but it was free to take, so it cannot be renewed). */
#define SHMKV_LOCK_NOT_HELD (-ENOLCK)

/* Modes of shmkv_lock_extend(). */
enum shmkv_lock_extend_mode {
	/** The lease ends @ms later than it would have. */
	SHMKV_LOCK_EXTEND_ADD = 0,
	/** The lease ends @ms from now (which may be sooner). */
	SHMKV_LOCK_EXTEND_REPLACE = 1,
};

/**
 * Size of struct shmkv_lock, fixed for the 0.x ABI (its fields take 376
 * bytes today: the rest is room to grow).
 */
#define SHMKV_LOCK_SIZE 640
/**
 * A holder's handle on one named lock. Initialise with shmkv_lock_init();
 * the contents are private. It lives in the caller's memory (no
 * allocation), may be reused for any number of grants, and is not tied to
 * a thread, but only one thread may use it at a time. After fork() the
 * child's copy does not own the parent's grant.
 */
struct shmkv_lock {
	uint64_t opaque[SHMKV_LOCK_SIZE / 8];
};

/**
 * shmkv_lock_init - binds @lk to the lock @name of @kv. Nothing is written
 * to the store. @lk does not hold the lock afterwards.
 * Return: 0, -EINVAL (NULL argument or empty name), -ENAMETOOLONG (name
 * longer than SHMKV_LOCK_NAME_MAX, or "lock.<name>" longer than key_max),
 * -E2BIG (the store's value_max cannot hold an owner record).
 */
SHMKV_API int shmkv_lock_init(shmkv_t *kv, struct shmkv_lock *lk,
			      const char *name);

/**
 * shmkv_lock_try_acquire - one attempt: takes the lock if it is free, its
 * lease has run out, or its holder's process is dead. A busy lock costs one
 * liveness probe of the holder (kill + a read of /proc/<pid>/stat).
 * @lease_ms: 1..SHMKV_LOCK_LEASE_MAX: the lock is yours until then unless
 *            released or extended.
 *
 * Return: an enum shmkv_lock_grant (>= 0) when acquired, or -EBUSY (held
 * by a live process within its lease, possibly this one through another
 * handle or thread), -EDEADLK (@lk itself holds it, lease running),
 * -EINVAL (bad @lk or @lease_ms), -EEXIST (the key holds something that is
 * not an owner record), -EROFS, -ESTALE also for a fork child whose
 * inherited handle's store name is gone (it cannot mark), another negative
 * errno if the mark cannot be taken (-EMFILE: no descriptor for a fork
 * child's own), -ENOTSUP and -EBADMSG (a Redis store: see the top), or an
 * error of the store (shmkv.h).
 * Ordering: a grant is a full barrier; it happens after the release or
 * expiry it follows.
 */
SHMKV_API int shmkv_lock_try_acquire(struct shmkv_lock *lk, int64_t lease_ms);

/**
 * shmkv_lock_timed_acquire - as shmkv_lock_try_acquire(), waiting up to
 * @timeout_ms (0: one attempt; SHMKV_LOCK_FOREVER: no limit). The waiter
 * sleeps on the lock's futex word, at most SHMKV_LOCK_NAP_MS and at most
 * until the holder's lease ends at a time; each sleep that ends without a
 * wake-up probes the holder's liveness, so a killed holder is replaced
 * within about SHMKV_LOCK_NAP_MS.
 * Return: as shmkv_lock_try_acquire(), with -ETIMEDOUT instead of -EBUSY;
 * -EINVAL also for @timeout_ms below -1.
 */
SHMKV_API int shmkv_lock_timed_acquire(struct shmkv_lock *lk, int64_t lease_ms,
				       int64_t timeout_ms);

/** shmkv_lock_acquire - shmkv_lock_timed_acquire(@lk, @lease_ms,
 * SHMKV_LOCK_FOREVER): waits until the lock is acquired. */
SHMKV_API int shmkv_lock_acquire(struct shmkv_lock *lk, int64_t lease_ms);

/**
 * shmkv_lock_release - gives back the grant @lk holds (stores FREE,
 * keeping the token) and wakes one waiter. This is a compare-and-delete on
 * the grant (Redis's DELIFEQ on the owner record): it succeeds while the
 * grant is still the lock's, even if its lease ran out meanwhile, since
 * then nobody took the lock and no other holder overlapped yours. It reads
 * no clock.
 * Return: 0 (released), SHMKV_LOCK_NOT_OWNER (-EPERM: another grant took
 * the lock, so yours was not exclusive past your lease end),
 * SHMKV_LOCK_NOT_HELD (-ENOLCK), -EINVAL, -EEXIST, -EROFS, -EBADMSG (a
 * Redis store: see the top), or an error of the store. On error the store
 * is unchanged. @lk holds nothing afterwards.
 */
SHMKV_API int shmkv_lock_release(struct shmkv_lock *lk);

/**
 * shmkv_lock_extend - renews the lease of the grant @lk holds, while it is
 * still running: SHMKV_LOCK_EXTEND_ADD moves its end @ms later,
 * SHMKV_LOCK_EXTEND_REPLACE makes it end @ms from now. The token is unchanged.
 * Return: 0, SHMKV_LOCK_NOT_OWNER, SHMKV_LOCK_NOT_HELD (including: the
 * lease has already run out), -EINVAL (@ms out of 1..SHMKV_LOCK_LEASE_MAX,
 * bad @mode, or the new end would pass SHMKV_LOCK_LEASE_MAX from now),
 * -EEXIST, -EROFS, -EBADMSG (a Redis store: see the top), -ENOMEM (the
 * new lease is published in a fresh lock cell or record, and the store is
 * at its max_memory with none free: the grant keeps its old lease; a
 * release needs no memory), or an error of the store. On error nothing
 * changes.
 */
SHMKV_API int shmkv_lock_extend(struct shmkv_lock *lk,
				enum shmkv_lock_extend_mode mode, int64_t ms);

/**
 * shmkv_lock_held - still mine? 1 if @lk's grant is the lock's current
 * value and its lease has not run out, else 0. After the first call per
 * grant (a lookup) it costs one load of the key's value word and one read
 * of CLOCK_MONOTONIC (the clock takers judge by). It answers for this
 * instant only: the token is what a protected resource should check.
 */
SHMKV_API int shmkv_lock_held(struct shmkv_lock *lk);

/** The fencing token of @lk's last grant (0 if it never had one). */
SHMKV_API uint64_t shmkv_lock_token(const struct shmkv_lock *lk);

/*
 * Inspection.
 */

/** One lock as shmkv_lock_list() sees it (a snapshot, not a promise). */
struct shmkv_lock_info {
	const char *name; /**< not NUL-terminated; valid in the call */
	size_t name_len;
	int held;	       /**< 1: HELD with its lease running */
	int alive;	       /**< HELD: 1 holder exists, 0 dead; FREE: -1 */
	uint32_t pid;	       /**< holder, when alive >= 0 (lease running
				    or over); 0 when FREE: a free lock
				    keeps only its token */
	uint64_t token;	       /**< of the last grant */
	int64_t held_for_ms;   /**< since the last grant, when HELD */
	int64_t lease_left_ms; /**< <= 0: lease over; 0 when FREE */
	uint32_t waiters;      /**< 1: a waiter may sleep on the lock's
				    futex word (the mark waiters set; a
				    killed waiter's clears at the next
				    release), 0: none */
};

/** Return 0 to go on, non-zero to stop the listing. */
typedef int (*shmkv_lock_list_fn)(const struct shmkv_lock_info *info,
				  void *arg);

/**
 * shmkv_lock_list - calls @fn for every safe lock of @kv (keys
 * "lock.<name>" whose value is an owner record). Works on a read-only
 * handle. Each HELD lock costs a liveness probe of its holder.
 * Return: the number of locks visited (including one whose @fn stopped the
 * listing), or -EINVAL, or an error of the store.
 */
SHMKV_API int shmkv_lock_list(shmkv_t *kv, shmkv_lock_list_fn fn, void *arg);

#ifdef __cplusplus
}
#endif
#endif /* SHMKV_LOCK_H */
