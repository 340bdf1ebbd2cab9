/*
 * internal.h - the process-local handle and the interfaces between the
 * library's files. Nothing here is public API.
 */
#ifndef SHMKV_INTERNAL_H
#define SHMKV_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "atomic.h"
#include "layout.h"
#include "shmkv.h"

struct shmkv;
/* What a layer above the core attaches to a handle (struct shmkv.ext). */
struct shmkv_ext {
	void (*close)(struct shmkv *kv, struct shmkv_ext *ext);
};

/*
 * The store's geometry, the process-local form. Create derives it from a
 * config (geometry.c) and writes it into the header's fields (layout.h: the
 * on-disk form of the same numbers); attach re-derives it from the header's
 * five inputs and accepts the segment only if every header field agrees.
 * The handle keeps that checked copy and never reads the header's again.
 */
struct shmkv_geometry {
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t key_max;
	uint32_t value_max;
	uint32_t probe_limit;
	uint32_t class_count;
	uint32_t page_size;
	uint32_t page_count;	 /* reserved (the mapping holds them all) */
	uint32_t pages_initial;	 /* ready at creation: value_memory's */
	uint32_t units_per_page; /* a power of two */
	/* log2(units_per_page), block.c's shift: process-local only
	 * (derived, not a header field). */
	uint32_t unit_shift;
	uint32_t slot_shift; /* log2(slot_size): process-local too */
	uint64_t value_memory;
	uint64_t reserve_memory;
	uint64_t slots_offset; /* T(0); T(e) at shmkv__table_offset() */
	uint32_t epoch_max;    /* the largest table the store may grow to */
	uint64_t tables_end;   /* the end of T(epoch_max) */
	uint64_t page_table_offset;
	uint64_t pages_offset;
	uint64_t segment_size; /* the mapping's length too */
	uint32_t flags;	       /* SHMKV_HDR_* (layout.h) */
	uint32_t class_size[SHMKV_CLASSES_MAX];
};

/*
 * One of the store's tables T(e) (the table doubles at each online growth,
 * tests/model/migration-design.md), the process-local view: fixed for the
 * life of the mapping, since every table the store may grow to is reserved
 * in it at creation. A command takes the view its life word names once
 * (shmkv__table_now) and uses it throughout, so that two threads of a
 * process that see a growth at different times each stay in one table.
 */
struct shmkv_table {
	unsigned char *slots;
	uint32_t mask;	    /* slots - 1 */
	uint8_t slot_shift; /* log2(slot_size) */
	uint8_t epoch;	    /* e */
	uint16_t pad;
};

/* Views for every epoch a geometry allows (epoch_max < 32, geometry.c). */
#define SHMKV__EPOCHS 32u

/*
 * The handle. Every bound used on the hot path comes from geo, validated
 * once at attach, so a segment corrupted after attach cannot steer an
 * access outside the mapping.
 */
struct shmkv {
	/* The hot path's words first, geo.slot_size just behind them, so
	 * that finding a slot reads one cache line of the handle. */
	unsigned char *base;
	/* The header's life word for which tables[] was last resolved (an
	 * even generation, not removed): a command whose load of the life
	 * word equals it uses tables[life >> 2] (shmkv__table_now). Written
	 * by the slow path of any thread (relaxed: every value it ever holds
	 * names a resolved table, and a stale one only sends commands to the
	 * slow path). */
	uint64_t life_cached;
	bool readonly;
	uint64_t hash_seed;
	struct shmkv_geometry geo;
	/* T(0) .. T(geo.epoch_max), then zeros: filled at attach, never
	 * changed (the views of every table the mapping holds). */
	struct shmkv_table tables[SHMKV__EPOCHS];
	uint32_t *page_table; /* in the segment: 0 free, else class + 1 */
	unsigned char *pages;
	/* This process's copy of the header's pages_ready (grow.c), the
	 * bound of every page number read from the segment: only grows. */
	uint32_t pages_ready;
	uint32_t class_blocks[SHMKV_CLASSES_MAX]; /* blocks in one page */
	int fd; /* kept open: fstat gives the mode even after unlink */
	/* Allocation hints, process-local so allocation shares no hot word:
	 * each class's sweep (the page it last allocated from, and where in
	 * it), the block of each class this process last freed to the pool
	 * (unit + 1, 0: none; tried before the sweep), and where to look for
	 * a free page. */
	uint32_t alloc_page[SHMKV_CLASSES_MAX];
	uint32_t alloc_index[SHMKV_CLASSES_MAX]; /* where in that page */
	/* Where each class's bounded look for freed blocks goes on (block.c:
	 * a hand that goes round the class's pages). */
	uint32_t look_page[SHMKV_CLASSES_MAX];
	uint32_t freed_unit[SHMKV_CLASSES_MAX];
	uint32_t claim_hint;
	/* Per class, (ready pages << 32 | pages_max) + 1 at which may_claim
	 * last said no: an answer that holds while neither changes, since
	 * pages are only ever claimed (block.c). 0: none. */
	uint64_t claim_refused[SHMKV_CLASSES_MAX];
	/* In a store that evicts: allocations of each class left that go
	 * straight to eviction, after a look found the class full (block.c's
	 * alloc_in_class). */
	uint32_t full_skips[SHMKV_CLASSES_MAX];
	/* Names this open handle among all of the process's, for layers
	 * that keep per-thread caches of it (a closed handle's memory may
	 * come back as a new one): never 0, never reused in a process. */
	uint64_t serial;
	/* A layer's per-handle state, attached on first use (lock_cell.c's
	 * cell pool): shmkv_close calls its close() before unmapping. */
	struct shmkv_ext *ext;
	/* The process that ran this handle's reclamation step (owned.c):
	 * a fork child that starts owning blocks through an inherited
	 * handle runs one of its own. 0: none yet. */
	uint32_t reaped_pid;
	/* NULL: this is the shared-memory store; else the backend that owns
	 * the handle (backend.h), which its close and exec dispatch to. */
	const struct shmkv_backend *backend;
	/* The life word whose tables this handle last held and checked
	 * against the file (giveback.c): a command's slow path does both
	 * again only for another one. Relaxed, any thread: a stale value
	 * only makes a thread check again. */
	uint64_t life_checked;
	/* Per table T(x): a descriptor + 1 (0: none) of a description of its
	 * own holding an OFD read lock on T(x)'s lock byte (layout.h), so that
	 * nobody gives T(x) back while this handle may be in it. Taken on the
	 * slow path before the handle first uses T(x), closed by
	 * shmkv_close. */
	uint32_t table_fd[SHMKV__EPOCHS];
	char name[SHMKV_NAME_MAX + 1];
	/* The process whose own open file description @fd is (a fork child
	 * shares its parent's until it marks), and the one marked through
	 * it (proc_mark.c; 0: none yet). */
	uint32_t fd_pid;
	uint32_t marked_pid;
};

/*
 * For the helpers of the straight-line paths (lookup.h, engine.h,
 * strings_fast.h): inline even where the compiler's size heuristics would
 * make a call, which with its register saves and the spills of the
 * structs passed by address costs as much as a helper's body. Each public
 * command that uses them gets its own copy, as it would by hand.
 */
#define SHMKV__INLINE inline __attribute__((always_inline))

/* Slot @index of table @t (wrapped into it). */
static inline struct shmkv_slot_shm *shmkv__slot(const struct shmkv_table *t,
						 uint32_t index)
{
	return (struct shmkv_slot_shm *)(t->slots + ((size_t)(index & t->mask)
						     << t->slot_shift));
}

_Static_assert(sizeof(struct shmkv_table) == 16,
	       "shmkv__table_now indexes tables[] by the life word times 4");

/*
 * The table a command uses, if @kv's store still has its name and is not
 * growing: NULL once the name was removed (shmkv_unlink, "shmctl destroy";
 * a store created under the name since is another one), while the table
 * grows, after a growth this handle has not yet seen, or if the life word
 * is corrupt. Asked first by every command; on NULL, shmkv__live says what
 * it is, so that a process never goes on writing into a store that nobody
 * can open again, nor into a table that has been replaced.
 */
static inline const struct shmkv_table *shmkv__table_now(const struct shmkv *kv)
{
	const struct shmkv_header_shm *h = (const struct shmkv_header_shm *)
						   kv->base;
	/* Relaxed: REMOVED is set once and publishes nothing; a command that
	 * reads it clear while the name goes runs before the removal (its
	 * write goes with the store, as every earlier one), and one that
	 * starts after shmkv_unlink returned reads it set, by a full-barrier
	 * CAS before the unlink. A growth's words are validated by their own
	 * acquires and by the re-checks of the migration protocol (§8 of
	 * tests/model/migration-design.md). */
	uint64_t life = shmkv__load_relaxed(&h->life);

	/* Relaxed: a process-local hint (struct shmkv). Equal means an even
	 * generation 2e, not removed, e <= epoch_max: tables[e] is at byte
	 * 16e = 4 * life, one addressing mode. */
	if (life != shmkv__load_relaxed(&kv->life_cached))
		return NULL;
	return (const struct shmkv_table *)(const void *)((const char *)
								  kv->tables +
							  (life << 2));
}

/*
 * The slow path of shmkv__table_now: what the life word says now. 0 (the
 * table this handle resolved is current again, or was resolved now: try
 * again), SHMKV__GROWING (the table is being migrated: the engine's
 * path), -ESTALE (removed), -EBADMSG (a generation the store cannot have:
 * corrupt).
 */
#define SHMKV__GROWING 1
/* What shmkv__life_error (and so shmkv__live and every path built on it)
 * answers for a handle of another backend (backend.h, redis.h): the
 * public calls that dispatch look for it on their error path only. */
#define SHMKV__REMOTE (-EREMOTE)
int shmkv__life_error(const struct shmkv *kv);

/* The table commands write in now (T(e), or T(e + 1) while T(e)
 * migrates), whatever the life word says: the slow path of
 * shmkv__table_cmd. */
const struct shmkv_table *shmkv__table_slow(const struct shmkv *kv);

/* The table a command hashes its key for, after shmkv__live said 0. */
static inline const struct shmkv_table *shmkv__table_cmd(const struct shmkv *kv)
{
	const struct shmkv_table *t = shmkv__table_now(kv);

	return t != NULL ? t : shmkv__table_slow(kv);
}

/* 0 while shmkv__table_now(@kv) gives a table, or after this call has
 * resolved the current one, or while a growth runs; else the removed or
 * corrupt store's error (-ESTALE, -EBADMSG). */
static inline int shmkv__live(const struct shmkv *kv)
{
	int err;

	if (shmkv__table_now(kv) != NULL)
		return 0;
	err = shmkv__life_error(kv);
	return err > 0 ? 0 : err;
}

/* May @kv change a store-wide setting (CONFIG SET: max_memory, the
 * eviction policy)? 0, or -EINVAL (NULL), -ENOTSUP (a backend's handle),
 * -EROFS, or shmkv__live's error. */
static inline int shmkv__settable(const struct shmkv *kv)
{
	if (kv == NULL)
		return -EINVAL;
	if (kv->backend != NULL)
		return -ENOTSUP;
	if (kv->readonly)
		return -EROFS;
	return shmkv__live(kv);
}

/*
 * The failed call's errno, negated; -EIO if errno was not set, so that a
 * failure can never read as success. (Negated before the test, so that
 * clang's analyzer knows the result is never 0.)
 */
static inline int shmkv__errno(void)
{
	int e = -errno;

	return e < 0 ? e : -EIO;
}

/* geometry.c: @plan for @cfg, all but memory_bytes (shmkv_config_plan()).
 * Return: 0 or -EINVAL (a geometry field out of range). */
int shmkv__geometry_plan(const struct shmkv_config *cfg,
			 struct shmkv_plan *plan);
/* geometry.c: from a config to a geometry; between a geometry and the
 * header's fields. @reserve: the bytes to reserve for growth when
 * cfg->max_memory is 0 (the creator's look at the system; the header's
 * own reserve_memory on attach). */
int shmkv__geometry_from_config(const struct shmkv_config *cfg,
				uint64_t reserve, struct shmkv_geometry *g);
/*
 * What is allocated of a segment of geometry @g with @ready value pages
 * ready: bytes [0, shmkv__table0_end) (the header and the table T(0)),
 * [page_table_offset, shmkv__head_end) (the ready pages' page-table
 * words) and [pages_offset, shmkv__pages_end) (the pages), each in whole
 * allocation units (4 KiB, or huge pages). The rest is a hole that
 * nothing may touch (the larger tables a growth of the table will use, the
 * pages value memory may grow into): a fault there would allocate memory,
 * or raise SIGBUS on a full tmpfs. The footprint is their sum: the memory
 * the store uses.
 */
uint64_t shmkv__head_end(const struct shmkv_geometry *g, uint32_t ready);
/* Where table T(@e) starts (T(0) at slots_offset; each table twice the
 * last, at whole allocation units), and where T(0)'s allocation ends. */
uint64_t shmkv__table_offset(const struct shmkv_geometry *g, uint32_t e);
uint64_t shmkv__table0_end(const struct shmkv_geometry *g);
/* The bytes of table T(@e) that a growth allocates and its end gives back
 * ([start, end): whole allocation units but for T(0)'s start, which
 * shares a unit with the header). */
uint64_t shmkv__table_start(const struct shmkv_geometry *g, uint32_t e);
uint64_t shmkv__table_end(const struct shmkv_geometry *g, uint32_t e);
/* What the live tables of life word @life take beyond T(0) (the
 * footprint below counts T(0)): 0 before the first growth. */
uint64_t shmkv__tables_extra(const struct shmkv_geometry *g, uint64_t life);
/* The memory T(@e) holds beyond the header's allocation units. */
uint64_t shmkv__table_alloc(const struct shmkv_geometry *g, uint32_t e);
uint64_t shmkv__pages_end(const struct shmkv_geometry *g, uint32_t ready);
uint64_t shmkv__footprint(const struct shmkv_geometry *g, uint32_t ready);
/* The most pages ready whose footprint fits in @max_memory (at most
 * page_count; may be fewer than the initial pages). */
uint32_t shmkv__pages_within(const struct shmkv_geometry *g,
			     uint64_t max_memory);
/* Writes @g into the header's geometry fields (and nothing else). */
void shmkv__geometry_to_header(const struct shmkv_geometry *g,
			       struct shmkv_header_shm *h);
/*
 * The one way from a header to a geometry: validates @h (a private copy)
 * against itself and @file_size and, on success, fills @g with the checked
 * geometry. Return: 0, -EPROTO (not a store), -EPROTONOSUPPORT (other
 * layout or build), -EBADMSG (corrupted header or truncated file).
 */
int shmkv__header_validate(const struct shmkv_header_shm *h, uint64_t file_size,
			   struct shmkv_geometry *g);
/*
 * The shm name a store name stands for, in @out: "/name" as it is, "name"
 * with the slash added (both name the store "/name"). Return: 0, or
 * -EINVAL (NULL, empty, another slash, "." or "..", or longer than
 * SHMKV_NAME_MAX with its slash).
 */
int shmkv__name_canon(const char *name, char out[SHMKV_NAME_MAX + 1]);

/* proc.c: who we are, whether another process is alive, what time it is */
extern uint32_t shmkv__pid_cache; /* 0 until the first call below */
uint32_t shmkv__self_pid_slow(void);

/*
 * getpid() without the system call (glibc no longer caches it, and lock
 * and claim paths need it every time); kept right in children by an
 * atfork handler registered on the first call.
 */
static inline uint32_t shmkv__self_pid(void)
{
	/* Relaxed: a process-local word written only by this process. */
	uint32_t pid = shmkv__load32_relaxed(&shmkv__pid_cache);

	return pid != 0 ? pid : shmkv__self_pid_slow();
}
/* This thread's id, and the pid it was read under: a fork child's copy
 * names its parent's thread, and is read again. */
struct shmkv_tid_cache {
	uint32_t pid, tid;
};
extern __thread struct shmkv_tid_cache shmkv__tid_cache
	__attribute__((tls_model("initial-exec")));
uint32_t shmkv__self_tid_slow(uint32_t pid);

/* This thread's id (gettid, cached per thread): what a value block's tag
 * names while the thread holds it. A thread that has exited is dead to
 * shmkv__pid_alive, whatever its process does. */
static inline uint32_t shmkv__self_tid(void)
{
	uint32_t pid = shmkv__self_pid();

	return shmkv__tid_cache.pid == pid ? shmkv__tid_cache.tid
					   : shmkv__self_tid_slow(pid);
}
/* Is @pid a live process? No for no such pid and for a zombie (it has
 * exited; only its parent's wait() is missing). A stopped one is alive, and
 * so is one whose main thread exited while other threads run. */
bool shmkv__pid_alive(uint32_t pid);
/*
 * Process identity. The pair (pid, start time) names one process for the
 * life of the system: a reused pid comes with a later start time.
 */
struct shmkv_proc_id {
	uint32_t pid;
	uint64_t start;
};

/* This process (the start time is read from /proc once per process, and
 * again in a child after fork). */
extern uint64_t shmkv__start_cache, shmkv__start_pid;
void shmkv__proc_self_slow(struct shmkv_proc_id *me);

static inline void shmkv__proc_self(struct shmkv_proc_id *me)
{
	uint32_t pid = shmkv__self_pid();

	/* Acquire: pairs with the release in the slow path; the cached start
	 * time is then the one read for this pid. */
	if (shmkv__load_acquire(&shmkv__start_pid) != pid) {
		shmkv__proc_self_slow(me);
		return;
	}
	me->pid = pid;
	me->start = shmkv__load_relaxed(&shmkv__start_cache);
}

/*
 * Is the process named by (@pid, @start) gone? True if no such pid, the
 * pid is a zombie with no live thread, or it now names a process with
 * another start time (@start 0: not compared). Costs a read of
 * /proc/<pid>/stat (kill(pid, 0) if that is unreadable or hidden). A
 * stopped process is alive; so is one whose main thread has exited.
 */
bool shmkv__proc_dead(uint32_t pid, uint64_t start);

/* proc_mark.c: this process's mark in a store's file, which the kernel
 * drops when it dies. */
int shmkv__proc_mark_slow(struct shmkv *kv);
/*
 * Marks this process in @kv's file (once per handle and process: a fork
 * child marks through a description of its own). Every process marks
 * before it records its pid as a lock holder. Return: 0, -ESTALE (a fork
 * child whose store's name is gone or taken by another file), -errno.
 */
static inline int shmkv__proc_mark(struct shmkv *kv)
{
	/* Acquire: pairs with the release in the slow path: the mark is
	 * in place for the pid we read. */
	return shmkv__load32_acquire(&kv->marked_pid) == shmkv__self_pid()
		       ? 0
		       : shmkv__proc_mark_slow(kv);
}
/*
 * Does no process have @kv's store open with a mark for @pid? Asked of a
 * holder whose pid and start time read as alive: true means that process
 * is not the holder (a pid handed out again within the holder's start
 * tick) or has closed the handle it took the lock through. False if the
 * answer cannot be had.
 */
bool shmkv__proc_unmarked(struct shmkv *kv, uint32_t pid);
/* This process's pid namespace: the inode of /proc/self/ns/pid, or 0 if
 * it cannot be read (then nobody's namespace is judged). */
uint32_t shmkv__pid_ns(void);

int64_t shmkv__now_ms(void);
int64_t shmkv__unix_ms(void);
/* Test seam (tests/helpers/ttl.c): non-zero, the ms the two calls above
 * return instead of reading CLOCK_BOOTTIME and CLOCK_REALTIME. */
extern int64_t shmkv__fake_now_ms, shmkv__fake_unix_ms;
/* CLOCK_MONOTONIC ms: the locks' clock. A lease is running time: it does
 * not run out while the host is suspended. */
int64_t shmkv__mono_ms(void);
/* Upper bounds of shmkv__mono_ms() and shmkv__unix_ms() from the coarse
 * clocks, at a quarter of the cost: later than the precise reading by at
 * most two ticks + 1 ms, and never earlier unless the kernel's tick is
 * late by more than a tick (see proc.c). */
extern int64_t shmkv__coarse_margin; /* ms; 0 until measured */
int64_t shmkv__coarse_margin_slow(void);

static inline int64_t shmkv__upper_ms(clockid_t coarse)
{
	/* Relaxed: every thread computes the same value. */
	int64_t m = (int64_t)shmkv__load_relaxed(
		(uint64_t *)&shmkv__coarse_margin);
	struct timespec ts;

	if (m == 0)
		m = shmkv__coarse_margin_slow();
	clock_gettime(coarse, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + m;
}

static inline int64_t shmkv__mono_upper_ms(void)
{
	return shmkv__upper_ms(CLOCK_MONOTONIC_COARSE);
}

static inline int64_t shmkv__unix_upper_ms(void)
{
	return shmkv__upper_ms(CLOCK_REALTIME_COARSE);
}

/*
 * table.c: the lock-free open-addressed table.
 *
 * A slot reference names a MEMBER slot together with the state word seen
 * when the key was matched: the version in it identifies the incarnation,
 * so later checks can tell that the slot was given back meanwhile.
 */
struct shmkv_slot_ref {
	const struct shmkv_table *t; /* the table the slot is in */
	uint32_t index;
	uint64_t state;
};

/* A hashed key: computed once per command, for one table. */
struct shmkv_key {
	const void *bytes;
	const struct shmkv_table *t; /* the table probed */
	uint32_t len;
	uint32_t hash32; /* its top 16 bits are in the slot (SLOT_KEYMETA) */
	uint32_t home;	 /* first slot of the probe sequence in t */
};

/* lookup.h: shmkv__key_init, shmkv__lookup_inline (inline). */
int shmkv__lookup(struct shmkv *kv, const struct shmkv_key *k,
		  struct shmkv_slot_ref *ref);
int shmkv__insert(struct shmkv *kv, const struct shmkv_key *k,
		  struct shmkv_slot_ref *ref);
bool shmkv__slot_still(const struct shmkv_slot_ref *r);
/* Gives back slot @ref that this process inserted, if its value is still
 * the FRESH word of the insert (no value ever landed). */
void shmkv__insert_undo(const struct shmkv_slot_ref *ref);
int shmkv__slot_reclaim(struct shmkv *kv, const struct shmkv_table *t,
			uint32_t idx, uint64_t w, bool check_pid);
void shmkv__assist(struct shmkv *kv, const struct shmkv_table *t, uint32_t idx,
		   uint64_t w);

/* block.c: value storage */
#define SHMKV__NO_CLASS UINT32_MAX
uint32_t shmkv__page_class(const struct shmkv *kv, uint32_t page);

/* grow.c: value memory that grows online. */
/* Allocates in file @fd (mapped at @base, or NULL) the memory of value
 * pages [@from, @to) and their page-table words; @from 0 takes the header
 * and slots too. Return: 0, -ENOSPC (the system has no memory for it). */
int shmkv__memory_allocate(int fd, unsigned char *base,
			   const struct shmkv_geometry *g, uint32_t from,
			   uint32_t to);
/* Allocates table T(@e) (0, or -ENOSPC: the system has no memory for
 * it), and gives a table's memory back (its end, migrate.c). */
int shmkv__table_allocate(const struct shmkv *kv, uint32_t e);
void shmkv__table_punch(const struct shmkv *kv, uint32_t e);
/* Reads the shared pages_ready into @kv's copy (clamped to the
 * reservation). Return: the pages ready. */
uint32_t shmkv__pages_ready_refresh(const struct shmkv *kv);
/* Pages [0, return) are ready: this process's copy, without a refresh. */
static inline uint32_t shmkv__pages_ready(const struct shmkv *kv)
{
	/* Relaxed: a process-local bound (threads share the handle). */
	return shmkv__load32_relaxed(&kv->pages_ready);
}
/* Makes more pages ready than the @seen we found full. Return: 0 (more
 * are ready: ours or another grower's), -ENOMEM (max_memory reached or
 * the system out of memory), -EROFS, -EBADMSG (a corrupt ready word). */
int shmkv__pages_grow(struct shmkv *kv, uint32_t seen);
/* The most pages the store may have ready now (max_memory's). */
uint32_t shmkv__pages_max(const struct shmkv *kv);
struct shmkv_block_shm *shmkv__block_at(const struct shmkv *kv, uint32_t unit,
					uint32_t *cls);
struct shmkv_block_shm *shmkv__block(const struct shmkv *kv, uint64_t ref);
/* Without reclaiming (callers above block.c use owned.h's
 * shmkv__block_alloc_reaping). Return: 0 and *@ref, or -ENOMEM. */
int shmkv__block_alloc(struct shmkv *kv, size_t len, uint64_t *ref);
/* Has class @cls a page among the ready ones? One pass over the page
 * table, for paths that run out of room. */
bool shmkv__class_has_page(const struct shmkv *kv, uint32_t cls);
void shmkv__block_free(struct shmkv *kv, uint64_t ref);
/* Value blocks (engine, sweep): allocated and freed through this
 * thread's cache, tagged with its tid (see block.c). Return: 0 and *@ref,
 * SHMKV__CACHE_STARTED and *@ref (this allocation started the thread's
 * cache of the store: the caller, shmkv__value_alloc_reaping, runs a
 * reclamation step), or -ENOMEM; *@hdr the block's header (-EBADMSG if
 * a page table corrupted under us will not locate it). */
#define SHMKV__CACHE_STARTED 1
/* A thread's cache of a store holds, per size class, up to this many
 * freed blocks, and no more than SHMKV__CACHE_BYTES of them (one always):
 * block.c. */
#define SHMKV__CACHE_DEPTH 8u
#define SHMKV__CACHE_BYTES (16u << 10)
int shmkv__value_alloc(struct shmkv *kv, size_t len, uint64_t *ref,
		       struct shmkv_block_shm **hdr);
void shmkv__value_free(struct shmkv *kv, uint64_t ref);
void shmkv__value_settle(struct shmkv *kv, uint64_t ref, uint32_t id);
size_t shmkv__block_capacity(const struct shmkv *kv, uint64_t ref);
bool shmkv__block_owner(const struct shmkv *kv, uint64_t ref, uint32_t *id,
			int64_t *deadline);
/* Block @ref and, in *@room, the data bytes it holds (0 if NULL): one
 * resolution of the unit for both. */
struct shmkv_block_shm *shmkv__block_room(const struct shmkv *kv, uint64_t ref,
					  size_t *room);

/* What a seqlock-style read of a block found. */
struct shmkv_block_view {
	int64_t deadline_ms;
	uint32_t len;
	bool equal;	/* the bytes compared equal (shmkv__block_read_cmp) */
	uint32_t owner; /* the id its tag named (0: settled) */
};
/* Read outcomes besides 0 (a consistent copy was made). */
#define SHMKV__STALE 1 /* the block changed under us: reload the value word */
int shmkv__block_read_cmp(const struct shmkv *kv, uint64_t ref, void *dst,
			  size_t cap, const void *cmp, size_t cmp_len,
			  struct shmkv_block_view *view);

/* shmkv__block_read_cmp without a compare. */
static inline int shmkv__block_read(const struct shmkv *kv, uint64_t ref,
				    void *dst, size_t cap,
				    struct shmkv_block_view *view)
{
	return shmkv__block_read_cmp(kv, ref, dst, cap, NULL, 0, view);
}

#endif /* SHMKV_INTERNAL_H */
