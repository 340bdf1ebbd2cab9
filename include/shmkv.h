/*
 * shmkv.h - a key store in one POSIX shared-memory segment.
 *
 * Unrelated processes on one host open the same named store and run Redis
 * string commands on it as lock-free atomic operations on shared memory.
 *
 * Conventions (all functions):
 * - Keys and values are binary-safe byte strings (pointer + length). Empty
 *   keys and empty values are allowed, as in Redis. A NULL pointer is allowed
 *   only with a length of 0.
 * - Argument order: the handle, the key, the value, then options (flags,
 *   modes, units), then the time they apply to, then outputs. So
 *   shmkv_set(..., flags, expire, old), shmkv_getex(..., mode, t, out),
 *   shmkv_expire(..., unit, flags, t), shmkv_lock_extend(lk, mode, ms).
 * - Success returns 0 or a non-negative result; failure returns a negative
 *   errno. shmkv_strerror() turns any of them into a sentence. Errors common
 *   to every command on an open store:
 *     -EINVAL        NULL handle, NULL pointer with a non-zero length, or an
 *                    option out of range (described per function);
 *     -ENAMETOOLONG  key longer than the store's key_max;
 *     -E2BIG         value longer than the store's value_max;
 *     -EROFS         a write on a handle opened with SHMKV_OPEN_READONLY;
 *     -ENOSPC        the key is new and no slot is free within its probe
 *                    window (table full);
 *     -ENOMEM        the value needs value storage, none is free, and
 *                    the store may not grow (max_memory reached, or
 *                    /dev/shm full);
 *     -ENOBUFS       the caller's buffer is smaller than the value to be
 *                    returned (out->len says how large it must be); the
 *                    store is left unchanged;
 *     -EBADMSG       the segment's content is corrupted (a reference or
 *                    length read from it is out of bounds, or the header's
 *                    life word names tables the file does not hold: the
 *                    handle then touches none of them);
 *     -EAGAIN        the operation lost a race more than SHMKV_RETRY_MAX
 *                    times in a row (only under pathological contention);
 *     -EMFILE, -ENFILE  the first command to meet a table the handle has
 *                    not used yet (after a growth) could not open the
 *                    descriptor that holds it (shmkv_open());
 *     -ESTALE        the store was removed (shmkv_unlink(), "shmctl
 *                    destroy") since this handle opened it: every data
 *                    command, lock call and scan on the handle says so,
 *                    so that no write goes on into a store nobody can
 *                    open again; close it and open the name afresh (a
 *                    store created under the name since is another one).
 *                    shmkv_stats(), shmkv_check() and shmkv_get_config()
 *                    still read the old segment.
 *   On any error the store is left unchanged, and so are the call's
 *   outputs (an INCR result, a TTL, an integer read, a value's len): a
 *   race lost on the way leaves nothing behind. The one exception is
 *   -ENOBUFS, which sets len to the size needed; the bytes of a value
 *   buffer are scratch space on every call.
 * - Thread and process safety: every command is linearizable and may be
 *   called concurrently from any number of threads and processes on handles
 *   to the same store. A shmkv_t handle itself may be shared by threads.
 *   A process killed at any instruction leaves the store usable by all others.
 * - Ordering: every command that changes the store is a full memory barrier
 *   at its linearization point (a CAS on the key's value word); a command
 *   that only reads acquires what the write it observes published.
 */
#ifndef SHMKV_H
#define SHMKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHMKV_VERSION_MAJOR  0
#define SHMKV_VERSION_MINOR  1
#define SHMKV_VERSION_PATCH  0
#define SHMKV_VERSION_STRING "0.1.0"

/* Marks what the library exports. It is built with -fvisibility=hidden, so
 * a function without this marker stays inside it; src/libshmkv.map lists
 * the same names, one version node per release. */
#if defined(__GNUC__) || defined(__clang__)
#define SHMKV_API __attribute__((visibility("default")))
#else
#define SHMKV_API
#endif

/**
 * shmkv_version - the version of the library running, which may differ
 * from the SHMKV_VERSION_* of the header a program was built with (a
 * program can compare the two). As LMDB's mdb_version().
 * @major, @minor, @patch: receive the numbers; each may be NULL.
 * Return: the version as a string, "major.minor.patch" (static storage).
 */
SHMKV_API const char *shmkv_version(int *major, int *minor, int *patch);

/** Name of the store used by the demo, and by shmctl for a data command
 * given without a store name ("shmctl get k", as redis-cli's default
 * server) unless $SHMKV_STORE names another. */
#define SHMKV_DEFAULT_NAME "/shmkv"
/** Longest store name, leading slash included (a /dev/shm file name); a
 * name given without its slash gets one added, and counted, first. */
#define SHMKV_NAME_MAX 200
/** Where Linux keeps POSIX shared-memory objects: store "/x" is the file
 * SHMKV_SHM_DIR "/x" (glibc's shm_open), which shmctl ls lists. */
#define SHMKV_SHM_DIR "/dev/shm"
/** Names in SHMKV_SHM_DIR starting with this are shmkv_create's working
 * files ("<prefix><pid>-<16 hex>"), not stores: never open them. */
#define SHMKV_NEW_PREFIX ".shmkv-new-"

/* Geometry limits, checked by shmkv_create() and again on every attach. */
#define SHMKV_SLOTS_MIN		  16u
#define SHMKV_SLOTS_MAX		  (1u << 28)
#define SHMKV_SLOTS_DEFAULT	  65536u
#define SHMKV_KEY_MAX_LIMIT	  4096u
#define SHMKV_KEY_MAX_DEFAULT	  64u
#define SHMKV_VALUE_MAX_LIMIT	  (1u << 20)
#define SHMKV_VALUE_MAX_DEFAULT	  1024u
#define SHMKV_PROBE_LIMIT_DEFAULT 1024u
#define SHMKV_PROBE_LIMIT_MAX	  65535u
#define SHMKV_MODE_DEFAULT	  0600u
/** Consecutive lost races after which a command gives up with -EAGAIN. */
#define SHMKV_RETRY_MAX 100000u

/** An open store: a process-local handle on a mapped segment. */
typedef struct shmkv shmkv_t;

/** Geometry and permissions of a store, fixed at creation. */
struct shmkv_config {
	uint32_t slots;	       /**< hash slots, a power of two; 0: default */
	uint32_t key_max;      /**< longest key in bytes; 0: default 64.
				    A slot is the power of two >= 36 +
				    key_max, at least 64 bytes: up to 28,
				    one cache line; what a key leaves of
				    its slot holds short strings */
	uint32_t value_max;    /**< longest value in bytes; 0: default 1024 */
	uint32_t probe_limit;  /**< longest probe run; 0: default (1024);
				    at most SHMKV_PROBE_LIMIT_MAX, and the
				    slots if fewer */
	uint64_t value_memory; /**< bytes of value storage at creation,
				    in pages that go to size classes as
				    values need them; 0: slots*256, but at
				    least one page per class. Grows online
				    within max_memory */
	uint32_t mode;	       /**< permission bits; 0: 0600 (so 0000
				    cannot be asked for: chmod afterwards) */
	uint32_t flags;	       /**< SHMKV_CONFIG_* options; 0: none. A bit
				    this library does not know: -EINVAL */
	/** The most shared memory the store may use, in bytes (the
	 * segment's allocated bytes: header, slots, value pages). Value
	 * memory grows in whole pages while it stays within this; beyond
	 * it a write that needs room gets -ENOMEM. 0: what the system
	 * allows (the size of the file system at /dev/shm). Less than the
	 * store's initial size: -EINVAL. */
	uint64_t max_memory;
	/** What a write that finds no room does (SHMKV_EVICT_*, Redis's
	 * maxmemory-policy): 0 (SHMKV_EVICT_NOEVICTION) fails it with
	 * -ENOMEM or -ENOSPC; the others evict keys to make the room. */
	uint32_t evict_policy;
	/** Room for options of later versions; must be zero. A library
	 * that does not know an option refuses a non-zero word here with
	 * -EINVAL, so a program asking for it gets an error, not silence. */
	uint32_t reserved[5];
};

/**
 * Eviction policies: what a write does when the store has no room for it
 * (its value's size class is full and value memory may not grow within
 * max_memory, or every slot of its key's probe window is taken). Named and
 * behaving as Redis's maxmemory-policy values:
 *
 * - SHMKV_EVICT_NOEVICTION ("noeviction", the default): the write fails
 *   with -ENOMEM (value memory) or -ENOSPC (the table), and changes
 *   nothing.
 * - "allkeys-*" evict any key, "volatile-*" only keys with a TTL (when
 *   none can make the room, the write fails as with noeviction);
 * - "*-lru" the least recently used of a sample, "*-lfu" the least
 *   frequently used (Redis's logarithmic counter, which decays),
 *   "*-random" any one, "volatile-ttl" the one that expires first.
 *
 * Approximated as Redis does: a write that needs room samples a few
 * candidates (SHMKV_EVICT_SAMPLES) among the keys whose eviction gives it
 * that room (keys whose values are in the full size class, or keys in its
 * probe window) and evicts the best. The library's lock keys (shmkv_lock.h:
 * safe locks and pattern locks) are never evicted. "Recently" is counted in
 * evictions, not in seconds (README: Eviction).
 */
enum shmkv_evict_policy {
	SHMKV_EVICT_NOEVICTION = 0,
	SHMKV_EVICT_ALLKEYS_LRU = 1,
	SHMKV_EVICT_ALLKEYS_LFU = 2,
	SHMKV_EVICT_ALLKEYS_RANDOM = 3,
	SHMKV_EVICT_VOLATILE_LRU = 4,
	SHMKV_EVICT_VOLATILE_LFU = 5,
	SHMKV_EVICT_VOLATILE_RANDOM = 6,
	SHMKV_EVICT_VOLATILE_TTL = 7,
};
/** Candidates sampled per eviction (Redis's maxmemory-samples default). */
#define SHMKV_EVICT_SAMPLES 5u

/*
 * Flags for struct shmkv_config.flags.
 *
 * SHMKV_CONFIG_HUGE_PAGES asks for transparent huge pages (2 MiB on x86-64)
 * under the whole segment, so that a random GET pays a cache miss but no
 * TLB miss walking 4 KiB page tables. It is recorded in the store's header:
 * the segment is sized to a whole number of 2 MiB pages, the creator maps
 * it with madvise(MADV_HUGEPAGE) and faults it in through that mapping
 * (before reserving it, so the pages it gets are huge ones), and every
 * process that opens the store later advises its own mapping the same way.
 * It is a request the kernel may refuse: POSIX shared memory lives in the
 * tmpfs mounted at /dev/shm, which gives huge pages only if it is mounted
 * with huge=advise (or huge=within_size, huge=always), or if
 * /sys/kernel/mm/transparent_hugepage/shmem_enabled says "force"; a kernel
 * without transparent huge pages never does. A refused store works exactly
 * as one on 4 KiB pages; shmkv_huge_mapped() tells which one you got.
 *
 * SHMKV_CONFIG_POPULATE pre-faults the whole segment into the creating
 * process's page tables (as SHMKV_OPEN_POPULATE does on open; with
 * shmkv_open_or_create() it applies to whichever of the two happens), so
 * that its first commands take no page faults. Not recorded in the store.
 */
enum shmkv_config_flags {
	SHMKV_CONFIG_HUGE_PAGES = 1 << 0,
	SHMKV_CONFIG_POPULATE = 1 << 1,
};

/** Fills @cfg with the defaults (every field 0 means "default"), reserved
 * words included: start every config with it, then set what you need. */
SHMKV_API void shmkv_config_init(struct shmkv_config *cfg);

/**
 * What a config comes to before any store exists: the numbers a creator
 * needs to choose value_memory and max_memory, by the rules
 * shmkv_create() applies (shmctl create says them when it refuses one).
 */
struct shmkv_plan {
	uint64_t value_memory;	   /**< value storage at creation: the
					config's, or the default it gets */
	uint64_t value_memory_min; /**< the least value_memory: one page per
					size class (a class that cannot get
					a page would make value_max a lie) */
	uint64_t value_memory_max; /**< the most value_memory: what the
					store's block numbers can address */
	uint64_t memory_bytes;	   /**< shared memory a store of this
					config uses at creation (header,
					table, value_memory's pages): the
					least max_memory. 0 when
					value_memory is outside its range */
	uint32_t page_size;	   /**< value storage comes in pages this
					big (64 KiB, or more for a
					value_max near a page) */
	uint32_t classes;	   /**< size classes of this value_max */
	uint64_t reserved[4];	   /**< zeroed */
};

/**
 * shmkv_config_plan - what @cfg comes to (struct shmkv_plan), without
 * creating anything. Its value_memory and max_memory are not judged:
 * @plan says what they must be (value_memory within [value_memory_min,
 * value_memory_max]; max_memory 0, or at least memory_bytes).
 * @cfg:  a config as for shmkv_create() (every 0 a default).
 * @plan: receives the numbers; zeroed first.
 * Return: 0, or -EINVAL (@cfg or @plan NULL, or a field shmkv_create()
 * refuses whatever the memory: slots not a power of two in range, key_max,
 * value_max or probe_limit out of range).
 * Thread safety: safe; reads only @cfg and, for memory_bytes with a
 * max_memory of 0, the size of the file system at SHMKV_SHM_DIR, as
 * shmkv_create() does.
 */
SHMKV_API int shmkv_config_plan(const struct shmkv_config *cfg,
				struct shmkv_plan *plan);

/* Flags for shmkv_open(). */
enum shmkv_open_flags {
	SHMKV_OPEN_READONLY = 1 << 0, /**< map read-only; writes give -EROFS */
	/** pre-fault the whole mapping now (MAP_POPULATE), so that the first
	 * commands take no page faults; costs page tables for the whole
	 * segment at once (little with huge pages, where one entry maps 2
	 * MiB). Best effort: a mapping the kernel cannot pre-fault is used
	 * as it is. */
	SHMKV_OPEN_POPULATE = 1 << 1,
};

/**
 * shmkv_create - create a new store, exclusively.
 * @name: "/name": one leading slash, no other slash, at most SHMKV_NAME_MAX
 *        bytes with the slash; "name" without it is the same store
 *        ("orders" is "/orders", as for shmctl), in every call that takes
 *        a store name. Not "." or "..".
 *        A name of the form "scheme://..." (a URI) names a store that
 *        lives elsewhere, served by the backend registered for the scheme:
 *        "redis://", "redis+unix://" and "redis+cluster://" (README,
 *        "Stores on Redis and Redis Cluster"); another scheme is
 *        -EAFNOSUPPORT.
 * @cfg:  geometry and mode, or NULL for the defaults.
 * @out:  receives the handle on success; untouched on failure.
 *
 * The segment is built in an unnamed file (O_TMPFILE) and linked to @name
 * only once complete, so no process ever sees a half-built store, and a
 * creator killed on the way leaves no file. Where /dev/shm has no O_TMPFILE
 * it is built under "/dev/shm/.shmkv-new-<pid>-<random>" instead; such
 * files of dead processes are removed by the next shmkv_create() or
 * read-write shmkv_open() (one pass over /dev/shm). The mode is applied with
 * fchmod, so the umask does not narrow it.
 *
 * Return: 0, or -EINVAL (bad name or geometry: slots not a power of two or out
 * of [SHMKV_SLOTS_MIN, SHMKV_SLOTS_MAX], key_max or value_max out of range,
 * value_memory too small to hold one value of value_max, mode with bits
 * outside 0777, a flag bit or a non-zero reserved word this library does not
 * know: an option it lacks),
 * -EEXIST (a segment with that name exists), -EACCES, -ENOMEM or -ENOSPC
 * (the system could not provide the memory), -EAFNOSUPPORT (a URI whose
 * scheme this build has no backend for), or another negative errno from
 * the system calls.
 * Thread safety: safe; two processes creating one name race to a single
 * winner, the other gets -EEXIST.
 */
SHMKV_API int shmkv_create(const char *name, const struct shmkv_config *cfg,
			   shmkv_t **out);

/**
 * shmkv_open - attach to an existing store.
 * @name:  as for shmkv_create().
 * @flags: 0, or SHMKV_OPEN_READONLY and/or SHMKV_OPEN_POPULATE.
 * @out:   receives the handle on success.
 *
 * A store created with SHMKV_CONFIG_HUGE_PAGES is mapped with
 * madvise(MADV_HUGEPAGE) here too, whatever @flags say.
 *
 * The header is validated before the store is used: magic, layout version,
 * geometry within bounds and consistent with the file size. A read-write
 * open also removes the working files that killed creators left (see
 * shmkv_create()); a read-only one changes nothing.
 *
 * Return: 0, or -EINVAL (bad name, or a flag bit this library does not
 * know), -ENOENT (no such segment),
 * -EACCES (permission denied), -EPROTO (not a shmkv store: bad magic, too
 * small for a header, or not a regular file: a symbolic link, FIFO,
 * directory, socket or device under the name, refused without waiting on
 * it), -EPROTONOSUPPORT (a shmkv store of another layout
 * version or build), -EBADMSG (header corrupted, segment truncated, or
 * the table its life word names not allocated in the file),
 * -EXDEV (a read-write open from another pid namespace than the store's
 * creator: liveness is judged by pid, so such a writer would take live
 * processes for dead; read-only opens are allowed), -ENOMEM (the store's
 * reservation, as long as its max_memory, does not fit this process's
 * address space: a limit such as ulimit -v below it; or no memory for the
 * handle), -EAFNOSUPPORT (as for shmkv_create()), or the error of
 * opening the file again (through /proc/self/fd, or by its name) for the
 * locks on the tables the handle uses.
 *
 * The handle holds the store's live tables (an OFD read lock on a byte per
 * table, past the file's end) until shmkv_close, and then the tables it
 * meets as the store grows: a table a growth leaves behind is given back
 * only once no open handle holds it (see shmkv_close()).
 */
SHMKV_API int shmkv_open(const char *name, unsigned flags, shmkv_t **out);

/**
 * shmkv_open_or_create - attach to @name, creating it with @cfg if missing.
 *
 * Return: as shmkv_create() and shmkv_open(); never -EEXIST. The geometry
 * of an existing store wins over @cfg, and so does its huge-page choice;
 * SHMKV_CONFIG_POPULATE in @cfg pre-faults the store either way.
 */
SHMKV_API int shmkv_open_or_create(const char *name,
				   const struct shmkv_config *cfg,
				   shmkv_t **out);

/**
 * Unmaps the store and frees the handle. NULL is a no-op. No other thread
 * may use the handle meanwhile. The safe locks taken through it are given
 * up: no call can release them any more, and another process takes them
 * over at once (SHMKV_LOCK_OWNER_DEAD, see shmkv_lock.h) rather than after
 * their lease. Its locks on the tables it used go, and an old table a
 * growth left behind that no other open handle holds (in any process; a
 * fork child shares its parent's) is given back here.
 */
SHMKV_API void shmkv_close(shmkv_t *kv);

/**
 * shmkv_unlink - remove the store: its name, and its use by the processes
 * that have it open. It is marked removed in the segment first, so that
 * from then on every command on any handle to it fails with -ESTALE (a
 * lock waiter within SHMKV_LOCK_NAP_MS); then the name goes (memory is
 * freed once the last process closes it). A remover killed between the two
 * leaves a removed store under the name: shmkv_open() says -ENOENT, and
 * shmkv_create() and shmkv_open_or_create() remove it and create anew.
 * Removers of one store take turns (flock on the segment, which the
 * kernel releases if one dies), so that none removes a store created
 * under the name meanwhile; a store removed by other means (rm of the file
 * in /dev/shm) is not marked, and its users are not told.
 * So a store is not made private by unlinking it right after creating it,
 * as a plain shm segment can be: its creator's handle is told too. Keep
 * the name until the last user has closed it.
 * @name: as for shmkv_create() ("orders" is "/orders").
 * Return: 0, -EINVAL (bad name), -ENOENT, -EACCES (no write permission: the
 * store cannot be marked, and is not removed), -EPROTO (the name exists
 * but is not a shmkv store, a regular file without our magic or any other
 * kind of file: it is left alone; remove it with rm), -EPROTONOSUPPORT (a store
 * of another layout version: left alone), -EAFNOSUPPORT (as for
 * shmkv_create()).
 */
SHMKV_API int shmkv_unlink(const char *name);

/** A sentence for any value returned by this library (0 or -errno). */
SHMKV_API const char *shmkv_strerror(int err);

/**
 * shmkv_name_redact - a store name as it may be shown (messages, logs,
 * names of handles): a URI's password as "***", never a byte of it.
 * @name: any string, a store name or not.
 * @out:  receives the shown name, NUL-terminated, cut to @cap - 1 bytes.
 * @cap:  size of @out; 0 only measures (@out may then be NULL).
 *
 * A name without "://" (and not "redis...:" or "/redis...:") is a
 * shared-memory store's name: copied unchanged. A URI ("scheme://...", of any scheme, parsable
 * or not) is read as an attacker would write it, and where it is unclear
 * what is password, more is hidden:
 *  - with an '@', all up to the LAST '@' of the name is the userinfo:
 *    shown "user:***@" when it starts with a user name of letters,
 *    digits and "-._~%" and a ':', else "***@" (a raw '/', '?', '#' or
 *    '@' in a password hides the whole of it, and may hide more);
 *  - the text after that '@' (or after the scheme, with no '@') up to
 *    the first '/', '?' or '#' must read as "host[:port]" (IPv6 in [],
 *    a comma-separated list of them for redis+cluster://), or it and all
 *    after it shows as "***" (a forgotten or misplaced '@':
 *    "redis://user:pw", "redis://@:pw");
 *  - a query parameter other than prefix=, timeout=, connect_timeout=,
 *    db= shows as "key=***" (a bare word as "***"); a "#fragment" as "#***".
 * The host, port, path and the known query parameters show as written.
 * "redis:pw@host" (no "//") is read as a URI too, with or without a
 * leading '/' (the shared-memory name "/redis:pw@host" a tool may make of
 * it): "/redis:***@host".
 *
 * Return: the length of the whole shown name (more than @cap - 1: it was
 * cut), or -EINVAL (@name NULL, or @out NULL with @cap > 0), -EOVERFLOW
 * (longer than INT_MAX).
 * Thread safety: safe (reads @name, writes @out only).
 */
SHMKV_API int shmkv_name_redact(const char *name, char *out, size_t cap);

/** Geometry of an open store, as fixed at creation, its max_memory as it
 * is now (shmkv_set_max_memory) and its current mode (read from the open
 * segment, so right even after shmkv_unlink); flags
 * holds SHMKV_CONFIG_HUGE_PAGES if the store asked for huge pages (whether
 * the kernel gave them or not: see shmkv_huge_mapped()), never
 * SHMKV_CONFIG_POPULATE (a choice of each opener, not of the store); the
 * reserved words are zeroed, so @cfg can create a store like it. */
SHMKV_API int shmkv_get_config(const shmkv_t *kv, struct shmkv_config *cfg);

/**
 * shmkv_set_max_memory - changes the store's max_memory, for every process
 * that uses it (Redis's CONFIG SET maxmemory).
 * @kv:    an open store, read-write.
 * @bytes: the new limit on the shared memory the store may use (header,
 *         slots, value pages); 0: the most it may ever use, the reservation
 *         made at creation (a store created with max_memory reserved that
 *         much; one created without, the size of /dev/shm then).
 *
 * Value memory grows only within the limit from then on. Memory in use is
 * kept: a limit below it only stops growth (nothing shrinks), and writes
 * that need room then get -ENOMEM.
 * Return: 0, -EINVAL (@kv NULL, @bytes more than the reservation or less
 * than the store's initial size), -EROFS, -ESTALE, -EBADMSG (as any
 * command), -ENOTSUP (a backend's handle).
 * Thread safety: safe; a growth under way when it changes may or may not
 * see the new limit. Cost: one store.
 */
SHMKV_API int shmkv_set_max_memory(shmkv_t *kv, uint64_t bytes);

/**
 * shmkv_set_evict_policy - changes the store's eviction policy, for every
 * process that uses it (CONFIG SET maxmemory-policy).
 * @kv:     an open store, read-write.
 * @policy: a SHMKV_EVICT_* value.
 *
 * Every command that starts after the call follows the new policy. Keys
 * keep what the old one recorded: under a new LRU or LFU policy, keys not
 * used since look as old as can be (LRU) or as used as a new key (LFU).
 * Return: 0, -EINVAL (@kv NULL, or @policy not a SHMKV_EVICT_* value),
 * -EROFS, -ESTALE, -EBADMSG (as any command), -ENOTSUP (a backend's
 * handle).
 * Thread safety: safe. Cost: one store.
 */
SHMKV_API int shmkv_set_evict_policy(shmkv_t *kv, int policy);

/** The name of eviction policy @policy ("allkeys-lru"), or NULL if it is
 * not a SHMKV_EVICT_* value. */
SHMKV_API const char *shmkv_evict_policy_name(int policy);

/** The SHMKV_EVICT_* value named @name (Redis's names, any case), or
 * -EINVAL (NULL or unknown). */
SHMKV_API int shmkv_evict_policy_parse(const char *name);

/**
 * shmkv_huge_mapped - how much of this handle's mapping is in huge pages.
 * @kv:    an open store.
 * @bytes: receives the bytes of @kv's mapping that the kernel maps with
 *         huge (PMD) pages right now: ShmemPmdMapped plus FilePmdMapped of
 *         the mapping in /proc/self/smaps. Only pages this process has
 *         touched are mapped at all: open with SHMKV_OPEN_POPULATE first to
 *         learn what the whole store got.
 *
 * The one honest answer to "did SHMKV_CONFIG_HUGE_PAGES take effect?": the
 * kernel may refuse huge pages silently (see SHMKV_CONFIG_HUGE_PAGES).
 * Return: 0, -EINVAL (@kv or @bytes NULL), -ENOTSUP (a handle of a backend,
 * not of shared memory), -ENOENT (no /proc, or the mapping is not in it),
 * or another negative errno from reading /proc/self/smaps.
 * Thread safety: safe. Cost: one read of /proc/self/smaps (a system call
 * per mapping of the process): not for hot paths.
 */
SHMKV_API int shmkv_huge_mapped(const shmkv_t *kv, uint64_t *bytes);

/*
 * Values returned to the caller.
 *
 * The caller owns @buf (capacity @cap); the library writes at most @cap
 * bytes and sets @len to the value's length. Bytes of @buf past @len may be
 * overwritten (scratch space); nothing past @cap ever is. A buffer of the store's
 * value_max always suffices. @buf may be NULL with @cap 0 to learn only
 * whether the value exists (and its length, through -ENOBUFS). A NULL @buf
 * with a non-zero @cap is -EINVAL.
 */
struct shmkv_value {
	void *buf;
	size_t cap;
	size_t len;
};

/* Flags for shmkv_set(), as Redis's SET options. */
enum shmkv_set_flags {
	SHMKV_SET_NX = 1 << 0,	    /**< only if the key does not exist */
	SHMKV_SET_XX = 1 << 1,	    /**< only if the key exists */
	SHMKV_SET_GET = 1 << 2,	    /**< return the old value in @old */
	SHMKV_SET_KEEPTTL = 1 << 3, /**< keep the key's time to live */
	SHMKV_SET_EX = 1 << 4,	    /**< @expire: seconds from now */
	SHMKV_SET_PX = 1 << 5,	    /**< @expire: milliseconds from now */
	SHMKV_SET_EXAT = 1 << 6,    /**< @expire: Unix time in seconds */
	SHMKV_SET_PXAT = 1 << 7,    /**< @expire: Unix time in milliseconds */
};

/**
 * shmkv_set - SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT t|KEEPTTL].
 * @flags:  a combination of enum shmkv_set_flags (0: plain SET).
 * @expire: the time for the one EX/PX/EXAT/PXAT flag given, else ignored.
 * @old:    with SHMKV_SET_GET, receives the old value; else may be NULL.
 *
 * Without KEEPTTL, the key's time to live is replaced (dropped when no
 * expiry flag is given). The new value and its expiry become visible in one
 * atomic step: no reader sees one without the other. An EXAT/PXAT in the
 * past stores the value already expired: the key is gone. One of exactly
 * now stores a key that lives through this millisecond (PTTL 0), as in
 * Redis 7: a key expires once now has passed its deadline.
 *
 * Return: without GET, 1 if the value was set, 0 if NX or XX prevented it.
 * With GET, Redis's GET reply: 1 if the key had a value (now in @old), 0
 * if not (an expired key has none). Whether the value was set then follows
 * from the flags, as in Redis 7: with NX it was set iff the result is 0,
 * with XX iff it is 1, with neither always.
 * -EINVAL: NX with XX, more than one of EX/PX/EXAT/PXAT/KEEPTTL, GET
 * without @old, or an expire time that is <= 0 or overflows (Redis:
 * "invalid expire time").
 */
SHMKV_API int shmkv_set(shmkv_t *kv, const void *key, size_t klen,
			const void *val, size_t vlen, unsigned flags,
			int64_t expire, struct shmkv_value *old);

/** SETNX: 1 if the key was set, 0 if it already existed. */
SHMKV_API int shmkv_setnx(shmkv_t *kv, const void *key, size_t klen,
			  const void *val, size_t vlen);

/**
 * GET: 1 and the value in @out if the key exists, 0 if not.
 * @out may be NULL to test existence only (as shmkv_exists).
 */
SHMKV_API int shmkv_get(shmkv_t *kv, const void *key, size_t klen,
			struct shmkv_value *out);

/**
 * shmkv_get_int - GET of a value that is an integer, as the integer: no
 * decimal text is made or parsed for a value the store keeps as an
 * integer (SET of a canonical integer of 48 bits without a TTL; INCR's
 * results in that range).
 * @key, @klen: the key.
 * @out: receives the value on success (return 1); left unchanged otherwise.
 *
 * A value is an integer exactly when INCR would take it: the canonical
 * decimal form of a 64-bit integer, as Redis's string2ll accepts it (an
 * optional '-', no '+', no leading zeros but "0" itself, no "-0", no
 * spaces, at most 20 bytes, no overflow). So "42" and "-9223372036854775808"
 * are integers, "042", "+1", " 1", "1.0" and "" are not.
 *
 * Return: 1 and *@out if the key holds an integer; 0 if the key does not
 * exist (an expired key does not); -EDOM if it holds a value that is not
 * an integer (INCR's "value is not an integer or out of range"); -EINVAL
 * (NULL handle or @out, NULL @key with a non-zero @klen); -ENAMETOOLONG
 * (@klen above the store's key_max); -EBADMSG, -EAGAIN as every command.
 * Nothing is ever changed, except that an expired value met is deleted
 * (as GET does); allowed on a read-only handle.
 * Ordering: a read; acquires what the write it observes published.
 */
SHMKV_API int shmkv_get_int(shmkv_t *kv, const void *key, size_t klen,
			    int64_t *out);

/** GETSET: sets the value, drops any TTL; 1 and the old value, or 0. */
SHMKV_API int shmkv_getset(shmkv_t *kv, const void *key, size_t klen,
			   const void *val, size_t vlen,
			   struct shmkv_value *old);

/** GETDEL: deletes the key; 1 and its value, or 0 if it did not exist. */
SHMKV_API int shmkv_getdel(shmkv_t *kv, const void *key, size_t klen,
			   struct shmkv_value *old);

/* Expiry options for shmkv_getex(). */
enum shmkv_getex_mode {
	SHMKV_GETEX_KEEP = 0, /**< plain GET */
	SHMKV_GETEX_EX,	      /**< @t seconds from now */
	SHMKV_GETEX_PX,	      /**< @t milliseconds from now */
	SHMKV_GETEX_EXAT,     /**< Unix time @t in seconds */
	SHMKV_GETEX_PXAT,     /**< Unix time @t in milliseconds */
	SHMKV_GETEX_PERSIST,  /**< remove the TTL */
};

/**
 * GETEX: GET, then change the key's TTL in the same atomic step.
 * A time at or before now deletes the key (its value is still returned).
 * Return: 1 and the value, 0 if missing; -EINVAL for t <= 0 or overflow
 * (checked before the key is looked at: Redis replies nil for a missing
 * key with a bad time, which shmkv_exec() reproduces).
 */
SHMKV_API int shmkv_getex(shmkv_t *kv, const void *key, size_t klen,
			  enum shmkv_getex_mode mode, int64_t t,
			  struct shmkv_value *out);

/** DEL: 1 if the key existed and was deleted, 0 if not. */
SHMKV_API int shmkv_del(shmkv_t *kv, const void *key, size_t klen);

/** EXISTS: 1 if the key exists, 0 if not. */
SHMKV_API int shmkv_exists(shmkv_t *kv, const void *key, size_t klen);

/**
 * DELIFEQ: delete the key only if its value equals @val (byte for byte).
 * The safe release of a lock whose value identifies its owner.
 * Return: 1 if deleted, 0 if the key is missing or holds another value.
 */
SHMKV_API int shmkv_delifeq(shmkv_t *kv, const void *key, size_t klen,
			    const void *val, size_t vlen);

/* Units and conditions for shmkv_expire(). */
enum shmkv_expire_unit {
	SHMKV_EXPIRE_SEC = 0, /**< EXPIRE: seconds from now */
	SHMKV_EXPIRE_MSEC,    /**< PEXPIRE: milliseconds from now */
	SHMKV_EXPIRE_AT_SEC,  /**< EXPIREAT: Unix time, seconds */
	SHMKV_EXPIRE_AT_MSEC, /**< PEXPIREAT: Unix time, milliseconds */
};
enum shmkv_expire_flags {
	SHMKV_EXPIRE_NX = 1 << 0, /**< only if the key has no TTL */
	SHMKV_EXPIRE_XX = 1 << 1, /**< only if the key has a TTL */
	SHMKV_EXPIRE_GT = 1 << 2, /**< only if later than the current TTL */
	SHMKV_EXPIRE_LT = 1 << 3, /**< only if earlier than the current TTL */
};

/**
 * EXPIRE / PEXPIRE / EXPIREAT / PEXPIREAT key t [NX|XX|GT|LT].
 * A key without TTL counts as an infinite TTL for GT and LT (Redis 7).
 * A deadline at or before now deletes the key.
 * Return: 1 if the TTL was set (or the key deleted), 0 if the key is
 * missing or a condition failed; -EINVAL for NX with XX/GT/LT, GT with LT,
 * or a time that overflows (Redis: "invalid expire time").
 */
SHMKV_API int shmkv_expire(shmkv_t *kv, const void *key, size_t klen,
			   enum shmkv_expire_unit unit, unsigned flags,
			   int64_t t);

/**
 * PTTL: sets *@ms to the remaining time to live in milliseconds, -1 if the
 * key has none, -2 if the key does not exist. 0 during the millisecond of
 * the deadline, when the key still exists (Redis: expired once now > the
 * deadline). Return: 0.
 */
SHMKV_API int shmkv_pttl(shmkv_t *kv, const void *key, size_t klen,
			 int64_t *ms);

/** TTL: as shmkv_pttl() in seconds, rounded as Redis does. */
SHMKV_API int shmkv_ttl(shmkv_t *kv, const void *key, size_t klen,
			int64_t *sec);

/** PERSIST: 1 if a TTL was removed, 0 if the key is missing or had none. */
SHMKV_API int shmkv_persist(shmkv_t *kv, const void *key, size_t klen);

/**
 * INCRBY: adds @delta to the integer in the key (0 if missing), keeping its
 * TTL, and stores the result in *@result (may be NULL) on success only:
 * on any error *@result keeps what it held.
 * Return: 0; -EDOM if the value is not a base-10 64-bit integer as Redis
 * parses it ("value is not an integer or out of range"); -EOVERFLOW if the
 * result would overflow ("increment or decrement would overflow").
 */
SHMKV_API int shmkv_incrby(shmkv_t *kv, const void *key, size_t klen,
			   int64_t delta, int64_t *result);
/** INCR, DECR, DECRBY: thin wrappers of shmkv_incrby(). DECRBY with
 * INT64_MIN gives -EOVERFLOW ("decrement would overflow"). */
SHMKV_API int shmkv_incr(shmkv_t *kv, const void *key, size_t klen,
			 int64_t *result);
SHMKV_API int shmkv_decr(shmkv_t *kv, const void *key, size_t klen,
			 int64_t *result);
SHMKV_API int shmkv_decrby(shmkv_t *kv, const void *key, size_t klen,
			   int64_t delta, int64_t *result);

/*
 * Prepared keys.
 *
 * A command hashes its key and probes the table for it. A process that
 * works on one key over and over (a lock, a counter) can do that once:
 * shmkv_key_prepare() hashes the key, and the shmkv_key_* commands remember
 * the slot where they last found it. Before using a remembered slot they
 * check with one load that its state word is unchanged (same key, same
 * incarnation); if the slot was recycled meanwhile they probe again. The
 * semantics are those of the plain commands, with the same errors.
 *
 * On a handle of a store on Redis (a URI: README, "Stores on Redis") there
 * is no slot to remember: a prepared key keeps the key and its handle, and
 * each shmkv_key_* call is the plain call, sent to the server.
 */

/**
 * Size of struct shmkv_keyref, fixed for the 0.x ABI. The struct is opaque
 * storage the caller allocates (stack, heap, inside its own structs); the
 * library keeps its fields there, with room to grow (they take 48 bytes
 * today).
 */
#define SHMKV_KEYREF_SIZE 96
/** A prepared key: fill with shmkv_key_prepare(); the contents are private. */
struct shmkv_keyref {
	uint64_t opaque[SHMKV_KEYREF_SIZE / 8];
};

/**
 * shmkv_key_prepare - hashes @key for use with @kv's shmkv_key_* commands.
 * @ref: filled in; a plain struct the caller owns (stack or heap). It
 *       refers to @key without copying it: @key must outlive it. Use it
 *       with @kv only, and from one thread at a time (the commands update
 *       its cache). It may be copied.
 * Return: 0, -EINVAL (NULL argument), -ENAMETOOLONG.
 */
SHMKV_API int shmkv_key_prepare(shmkv_t *kv, struct shmkv_keyref *ref,
				const void *key, size_t klen);

/* The string commands on a prepared key: as shmkv_<command>() above; a
 * @ref not prepared for @kv gives -EINVAL. */
SHMKV_API int shmkv_key_set(shmkv_t *kv, struct shmkv_keyref *ref,
			    const void *val, size_t vlen, unsigned flags,
			    int64_t expire, struct shmkv_value *old);
SHMKV_API int shmkv_key_setnx(shmkv_t *kv, struct shmkv_keyref *ref,
			      const void *val, size_t vlen);
SHMKV_API int shmkv_key_get(shmkv_t *kv, struct shmkv_keyref *ref,
			    struct shmkv_value *out);
/** shmkv_key_get_int - shmkv_get_int() on a prepared key. An inline
 * integer or an absent value is answered from one load of the value word
 * and one re-check of the slot's state word. Return: as shmkv_get_int(),
 * with -EINVAL also for a @ref not prepared for @kv. */
SHMKV_API int shmkv_key_get_int(shmkv_t *kv, struct shmkv_keyref *ref,
				int64_t *out);
SHMKV_API int shmkv_key_getset(shmkv_t *kv, struct shmkv_keyref *ref,
			       const void *val, size_t vlen,
			       struct shmkv_value *old);
SHMKV_API int shmkv_key_getdel(shmkv_t *kv, struct shmkv_keyref *ref,
			       struct shmkv_value *old);
SHMKV_API int shmkv_key_del(shmkv_t *kv, struct shmkv_keyref *ref);
SHMKV_API int shmkv_key_delifeq(shmkv_t *kv, struct shmkv_keyref *ref,
				const void *val, size_t vlen);
SHMKV_API int shmkv_key_incrby(shmkv_t *kv, struct shmkv_keyref *ref,
			       int64_t delta, int64_t *result);

/*
 * Maintenance.
 */

/**
 * shmkv_sweep - active expiry: deletes expired keys in up to @max_slots
 * slots starting at *@cursor and advances the cursor (0 when a full pass
 * wrapped around). Any process may call it at any time.
 * Return: the number of keys deleted, or a negative errno (-ENOTSUP on a
 * store on Redis: the server expires its keys itself).
 */
SHMKV_API int shmkv_sweep(shmkv_t *kv, uint64_t *cursor, uint32_t max_slots);

/**
 * shmkv_maintain - finishes a growth of the table that is under way. The
 * table doubles online when it fills (every command keeps running, and
 * every write moves a bounded share of the keys to the new table); a store
 * that gets few writes meanwhile finishes the move here. Any process may
 * call it at any time, as often as it likes ("shmctl maintain" does).
 * A growth's copies need no value memory (a block is handed to the new
 * slot), so a store at its max_memory finishes a growth like any other.
 * Return: 0 (no growth under way now), -EROFS (a read-only handle), -ESTALE
 * (the store was removed), -ENOSPC (a key's probe window in the new table
 * is full: the growth waits, every key stays readable, and the call may
 * be made again once keys are deleted), -EAGAIN (other processes kept
 * changing a slot, or held its area's claim, SHMKV_RETRY_MAX times: call
 * again), -EBADMSG (words no process writes: a MOVED slot or a FROZEN
 * value where no growth has begun, sweep cursors of an older growth, or a
 * frontier that never reaches the end). It ends within a bounded number
 * of steps on any content. It also gives back the old tables that no open
 * handle holds any more (their holders closed, or died).
 */
SHMKV_API int shmkv_maintain(shmkv_t *kv);

/** What shmkv_recover() found and repaired. */
struct shmkv_recover_report {
	uint64_t stale_claims;	/**< slots claimed by dead processes */
	uint64_t stuck_inserts; /**< inserts a dead process left pending */
	uint64_t collided;	/**< losing duplicate inserts returned */
	uint64_t dead_slots;	/**< deletes completed for dead processes */
	uint64_t leaked_blocks; /**< value storage returned to the pool */
	uint64_t reserved[11];	/**< room for later counts; zeroed */
};

/**
 * shmkv_recover - reclaims at once what processes killed mid-operation
 * left: slots half-claimed, inserts half-done, value storage allocated but
 * never published or unpublished but never freed, lock cells of dead
 * processes that no lock names. The store also reclaims all of this by
 * itself (a few hundred slots and blocks on every read-write open, and a
 * pass over all value memory before an allocation would answer -ENOMEM),
 * so nobody needs to call this for the store to stay usable. Safe to run
 * while other processes use the store. Liveness is judged by pid, so it
 * assumes every user of the store lives in this process's pid namespace.
 * @report: may be NULL.
 * Return: the number of repairs, or a negative errno (-ENOTSUP on a store
 * on Redis: there is no segment to repair).
 */
SHMKV_API int shmkv_recover(shmkv_t *kv, struct shmkv_recover_report *report);

/**
 * shmkv_check - verifies the whole store read-only: every key findable by
 * probing from its home within the probe bound, no key in two MEMBER slots,
 * every value word well-formed and naming a USED block of the right
 * generation whose backpointer names its slot, probe bounds within the
 * limit.
 * @fn: called once per problem with a one-line description (may be NULL).
 * It is also called, with a line that starts with "leftover: ", for each
 * thing a dead process left (a slot claimed or half-inserted, a block
 * never published or no longer named): those are not problems, since the
 * store reclaims them by itself (see shmkv_recover), and are not counted.
 * Works on a read-only handle. Racing writers can produce transient
 * reports; run it on a quiet store for a verdict.
 * Return: the number of problems found (0: clean), or a negative errno
 * (-ENOTSUP on a store on Redis: there is no segment to check).
 */
typedef void (*shmkv_check_fn)(const char *problem, void *arg);
SHMKV_API int shmkv_check(shmkv_t *kv, shmkv_check_fn fn, void *arg);

/** Entries of shmkv_stats.cls: the most value size classes a store has. */
#define SHMKV_STATS_CLASSES 24

/** Counts taken by one pass over the store (not a snapshot). */
struct shmkv_stats {
	uint64_t slots;	    /**< slots of the table commands write in
				 (the new one while a growth runs) */
	uint64_t live_keys; /**< keys with a value (expired ones excluded) */
	uint64_t volatile_keys; /**< live keys with a TTL */
	uint64_t tombstones;	/**< slots holding a deleted key, reusable */
	uint64_t expired;	/**< keys expired but not yet deleted (their
				     value storage is freed on next touch or
				     by shmkv_sweep) */
	uint64_t pending;	/**< slots mid-insert or claimed */
	uint64_t corrupt;	/**< slots whose words make no sense */
	uint32_t longest_probe; /**< largest probe bound of any home slot */
	uint32_t page_size;	/**< value storage comes in pages this big */
	uint32_t pages;		/**< pages of value storage allocated now */
	uint32_t pages_free;	/**< of those, pages not yet given to a
				     size class */
	uint32_t classes;	/**< value size classes in use below */
	struct {
		uint32_t block_size; /**< bytes per block (24 are header) */
		uint32_t pages;	     /**< pages given to the class */
		uint32_t blocks;     /**< blocks in those pages */
		uint32_t used;	     /**< blocks allocated */
	} cls[SHMKV_STATS_CLASSES];
	uint64_t segment_bytes;	    /**< size of the mapped segment: the whole
				       reservation, mostly not allocated */
	uint64_t created_unix_ms;   /**< when the store was created */
	uint32_t creator_pid;	    /**< who created it */
	uint32_t reserved32;	    /**< zeroed */
	uint64_t inline_values;	    /**< keys whose string lives in its slot */
	uint64_t block_values;	    /**< keys whose value is in a value block
				       (expired ones included) */
	uint64_t memory_bytes;	    /**< shared memory the store uses now:
				       header, the live tables, old tables
				       not yet given back, the allocated
				       pages */
	uint64_t max_memory;	    /**< the most it may use (the setting) */
	uint32_t pages_max;	    /**< pages it may have within max_memory */
	uint32_t evict_policy;	    /**< SHMKV_EVICT_* in force */
	uint64_t evicted;	    /**< keys evicted since creation */
	uint64_t growths;	    /**< times the table has doubled since
				       creation (finished growths) */
	uint64_t growing_from;	    /**< while the table grows: the slots of
				       the table being moved (0: none) */
	uint64_t growing_moved;	    /**< of those, how many the sweep has
				       passed (all are moved at the end) */
	uint64_t slots_max;	    /**< the most slots the table may reach by
				       doubling (it doubles at 7/8 full):
				       each doubling needs the new table
				       beside the old within max_memory,
				       counting the value pages allocated
				       now, and within the reservation.
				       Equal to slots: the table cannot
				       grow, and a full one refuses new
				       keys (or evicts, per the policy) */
	uint64_t tables_kept_bytes; /**< memory of tables a growth left
				       behind that is not yet given back
				       (counted in memory_bytes): an open
				       handle that may still be in one
				       keeps it until shmkv_close (or its
				       process's end); the last one gives
				       it back */
	uint64_t reserved[5];	    /**< room for later counts; zeroed */
};

/** shmkv_stats - walks the store and fills @st. Return: 0 or -errno.
 * On a store on Redis only live_keys is counted (DBSIZE summed over the
 * masters; with a prefix, its keys by SCAN); every other field is 0. */
SHMKV_API int shmkv_stats(shmkv_t *kv, struct shmkv_stats *st);

/**
 * shmkv_scan - visits live keys, as Redis SCAN: starts at @cursor (0 for a
 * new scan), calls @fn for each live key in up to @count slots, and returns
 * the next cursor in *@next (0 when the scan is complete). As with Redis
 * SCAN, a key present for the whole scan is visited at least once: exactly
 * once if the table does not grow meanwhile (keys never move within a
 * table), and possibly twice if it does (a growth moves keys to the new
 * table, which the scan walks after the old one, or walks again from its
 * start); one deleted and added again meanwhile may be visited twice or
 * not at all. @fn returns 0 to go on or non-zero to stop (the scan then
 * returns that value).
 * On a store on Redis: SCAN with MATCH <prefix>* and COUNT @count on each
 * master in turn (the master in the cursor's top 6 bits), the prefix
 * stripped from each key; a stop gives in *@next the cursor of the batch
 * it stopped in, whose keys the next call visits again.
 */
typedef int (*shmkv_scan_fn)(const void *key, size_t klen, void *arg);
SHMKV_API int shmkv_scan(shmkv_t *kv, uint64_t cursor, uint32_t count,
			 shmkv_scan_fn fn, void *arg, uint64_t *next);

/* The Redis-style command interface (shmkv_exec) is in shmkv_exec.h. */

#ifdef __cplusplus
}
#endif
#endif /* SHMKV_H */
