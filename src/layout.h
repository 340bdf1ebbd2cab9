/*
 * layout.h - what lives in the shared segment, bit for bit.
 *
 * The segment is [header page][tables T(0) .. T(epoch_max)][page table]
 * [value pages]: a sparse file, of which the header, the live table(s),
 * the ready pages' page-table words and the ready pages are allocated. Every
 * struct here ends in _shm, uses fixed-width types and holds offsets and
 * indices only: each process maps the segment at its own
 * address. Nothing read from the segment is trusted: the header's geometry
 * fields are validated once at attach (geometry.c) and copied into the
 * process-local handle (struct shmkv_geometry, internal.h), and every index
 * or length read afterwards is bounds-checked against that copy.
 */
#ifndef SHMKV_LAYOUT_H
#define SHMKV_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

/* "SHMKV1\r\n" read as a little-endian word: a big-endian host or a foreign
 * file reads something else and is refused as not-a-store. */
#define SHMKV_MAGIC 0x0a0d31564b4d4853ULL
/* Bumped on any change to the structs or encodings below. 2: owned-block
 * visits, a reclamation cursor, per-slot wait words, the DOOM tag bit.
 * 3: the header's flags word (huge pages); units per page are a power of
 * two; the top size class is whole cache lines. 4: value blocks name the
 * thread that holds them, and freed blocks may sit in a thread's cache.
 * 5: power-of-two slots with an area word and a key fingerprint; short
 * values inline in the slot (VAL_INLINE). 6: the header's life word (a
 * removed store says so to the processes that still have it). 7: value
 * memory grows online: the segment reserves reserve_memory (sparse), of
 * which pages_ready pages are allocated, within max_memory. 8: eviction:
 * a 16-bit probe bound beside a 16-bit access stamp in each slot, the
 * header's evict_policy, access_clock and evicted words. 9: value words
 * for online growth of the table (FROZEN, NONE_MARK, narrower fields).
 * 10: every allocation is left up to date (faulted in), so that SEEK_HOLE
 * tells allocated memory from a hole, and handles lock the tables they use
 * (SHMKV_TABLE_LOCK_BASE): a store of 9 has allocated pages that read as
 * holes, and processes of 9 give old tables back under processes of 10. */
#define SHMKV_LAYOUT_VERSION 10u
/* Huge pages: the segment is a whole number of these (the PMD size of
 * x86-64 and of arm64 with 4 KiB pages), so the last one is whole. */
#define SHMKV_HUGE_PAGE	  (2u << 20)
#define SHMKV_HEADER_SIZE 4096u
#define SHMKV_CLASSES_MAX 24u
/* Smallest value block; each class doubles it, the last fits value_max
 * in whole cache lines (geometry.c). */
#define SHMKV_BLOCK_MIN	 32u
#define SHMKV_CACHE_LINE 64u
/* Value storage comes in pages of at least this size, each given to one
 * size class the first time that class needs room. */
#define SHMKV_PAGE_MIN (64u << 10)
_Static_assert(SHMKV_PAGE_MIN % 4096 == 0 &&
		       SHMKV_CACHE_LINE % SHMKV_BLOCK_MIN == 0,
	       "pages are page-aligned; the smallest block divides a line");
/* Blocks are numbered page * units_per_page + index, units_per_page the
 * power of two >= page_size / SHMKV_BLOCK_MIN (the split is a shift and a
 * mask); 30 bits of a value word hold that number, which caps value
 * storage at 32 GiB (16 GiB with pages of the largest values). */
#define SHMKV_UNITS_MAX (1u << 30)
/* Futex words for waiters on keys that come and go (pattern locks). */
#define SHMKV_LOCK_WAIT_WORDS 256u
/* Visits to owned blocks in flight at once (see struct
 * shmkv_header_shm.visits): one per process in the middle of a takeover. */
#define SHMKV_VISITS 128u

/*
 * The header. Written once by the creator before the segment gets its name;
 * magic is stored last with release ordering so that whoever sees the magic
 * sees every field. Read-only afterwards.
 */
struct shmkv_header_shm {
	uint64_t magic;
	uint32_t layout_version;
	uint32_t format; /* SHMKV_LAYOUT_FORMAT (a macro, below) */
	uint64_t segment_size;
	uint64_t slots_offset;
	uint64_t value_memory; /* at creation: the pages ready then */
	uint64_t hash_seed;    /* per store, so colliding key sets differ */
	uint32_t slot_count;
	uint32_t slot_size;
	uint32_t key_max;
	uint32_t value_max;
	uint32_t probe_limit;
	uint32_t class_count;
	uint32_t page_size;
	uint32_t page_count;	 /* reserved: reserve_memory's pages */
	uint32_t units_per_page; /* 2^n >= page_size / SHMKV_BLOCK_MIN */
	/* SHMKV_HDR_* choices every process that maps the store must follow
	 * (geometry.c refuses bits it does not know). */
	uint32_t flags;
	uint64_t page_table_offset; /* page_count words: 0 free, else class+1 */
	uint64_t pages_offset;
	uint64_t created_unix_ms;
	uint32_t creator_pid;
	/* The creator's pid namespace (inode of /proc/self/ns/pid), 0:
	 * unknown. Liveness is judged by pid, so a process of another
	 * namespace may not open the store for writing. */
	uint32_t pid_ns;
	/* Unix ms minus CLOCK_BOOTTIME ms, shared so that every process maps
	 * an absolute time to the same deadline; re-synced (CAS) only when
	 * the wall clock has moved more than 5 ms (see expire.c). */
	int64_t clock_offset_ms;
	uint32_t class_size
		[SHMKV_CLASSES_MAX]; /* block bytes, header included */
	/*
	 * The words below are the only ones of the header written after
	 * creation. Futex words of keys that come and go (a pattern lock's
	 * key is deleted on release): a key hashes to one of them. Bit 0:
	 * some waiter may sleep on it; bits 1-31: a wake-up sequence.
	 */
	uint32_t lock_wait[SHMKV_LOCK_WAIT_WORDS];
	/*
	 * Visits (owned.c): a process about to CAS a value word that names
	 * an owned block announces it here, (pid << 32) | (unit + 1), 0:
	 * free. While announced, the block is neither freed nor reused under
	 * the same value word (see owned.c for the protocol).
	 */
	uint64_t visits[SHMKV_VISITS];
	/* Where the next amortised reclamation step starts (owned.c):
	 * value units and slots, moved on by every step. */
	uint64_t reap_unit;
	uint64_t reap_slot;
	/*
	 * What the segment reserves for value pages (page_count of them, the
	 * file's size: a sparse file, and a mapping of its whole length),
	 * fixed at creation: the config's max_memory or, without one, the
	 * size of the file system at /dev/shm then (at least the initial
	 * pages). Memory is allocated only for the pages that are ready
	 * (below), and the rest of the file is never touched.
	 */
	uint64_t reserve_memory;
	uint64_t life_pad; /* 0: puts life at the start of a line */
	/*
	 * The words of this line are read by every command or bound every
	 * block read, and written rarely (a removal, a growth), so reading
	 * them stays a hit in every core; nothing often written shares it.
	 *
	 * The store's life (SHMKV_LIFE_*), so that one load tells a command
	 * both. Bit 0 (REMOVED) is set once, by whoever removes the store's
	 * name (shmkv_unlink), before the name goes. Bits 1-63 are the table's
	 * generation g: even g = 2e, table T(e) alone; odd g = 2e + 1, T(e)
	 * migrating into T(e + 1) (migrate.c). g only grows, by one full-
	 * barrier CAS per step; a g whose table is beyond epoch_max is
	 * corrupt.
	 */
	uint64_t life;
	/* The most shared memory the store may use, the segment's allocated
	 * bytes (header, slots, the ready part of the page table, the ready
	 * pages): value memory grows only while it stays within this. At
	 * most reserve_memory's worth of pages; a larger word counts as that. */
	uint64_t max_memory;
	/* Value pages allocated in the file (posix_fallocate), hence usable:
	 * pages [0, pages_ready) and their page-table words. Only grows, by
	 * CAS, after the allocation (grow.c); at least the initial pages,
	 * at most page_count (a word out of that range is corrupt). */
	uint32_t pages_ready;
	/* SHMKV_EVICT_* (shmkv.h) in bits 0-7, and in bits 8-9 what every
	 * command records in the slot it uses (SHMKV__TRACK_*, evict.h), so
	 * that a store that evicts nothing pays one load and one branch for
	 * it. Set by shmkv_set_evict_policy (a store); a word with other bits
	 * set or an unknown policy evicts nothing (evict.c). */
	uint32_t evict_policy;
	uint64_t life_line_pad[5];
	/*
	 * The access clock (evict.c), on a line of its own: what a command
	 * stamps into the slot it uses when the policy tracks access. A
	 * logical clock, not a time: evictions and new keys tick it (with
	 * odds 256 / the room they turn over), so an access stamp's age
	 * counts the evictions since, and commands read it from a line
	 * written once a tick, not once an eviction.
	 */
	uint32_t access_clock;
	uint32_t clock_pad[15];
	/* Keys evicted since creation (relaxed fetch-and-add, evict.c). */
	uint64_t evicted;
	uint64_t evicted_pad[7];
	/*
	 * The table's growth (tests/model/migration-design.md). Table T(e)
	 * has slot_count << e slots at its offset (geometry.c); the segment
	 * reserves T(0) .. T(epoch_max), of which only the live ones are
	 * allocated. Derived from the geometry, checked at attach.
	 */
	uint32_t epoch_max;
	uint32_t epoch_pad[15];
	/* A growth's sweep: its frontier and the hint that hands out chunks,
	 * each (generation << 32) | slot index. */
	uint64_t grow_front;
	uint64_t grow_claim;
};
/*
 * Table T(x)'s lock byte: byte SHMKV_TABLE_LOCK_BASE + x of the segment's
 * file, far past its end (locks need no data there). Every handle holds an
 * OFD read lock on the byte of each table it may use; a table's memory is
 * given back only by a process that holds the write lock, which the kernel
 * grants only while nobody holds a read lock (src/giveback.c).
 */
#define SHMKV_TABLE_LOCK_BASE (1ull << 62)
/*
 * A process's mark: byte SHMKV_MARK_LOCK_BASE + pid, read-locked through a
 * handle's own description before the process first takes a lock in the
 * store (src/proc_mark.c). Below the tables' bytes (a pid is < 2^22), and
 * past any segment, like them.
 */
#define SHMKV_MARK_LOCK_BASE (1ull << 61)
#define SHMKV_LIFE_REMOVED    1u
#define SHMKV_LIFE_GEN(w)     ((w) >> 1)
#define SHMKV_LIFE_OF_GEN(g)  ((uint64_t)(g) << 1)
_Static_assert(sizeof(struct shmkv_header_shm) <= SHMKV_HEADER_SIZE,
	       "header fits its page");
/* The format word encodes the slot and block sizes, not the header's: these
 * pin where its fields are, so that regrouping them fails to compile
 * instead of silently reading other stores' headers wrong. */
_Static_assert(
	offsetof(struct shmkv_header_shm, segment_size) == 16 &&
		offsetof(struct shmkv_header_shm, hash_seed) == 40 &&
		offsetof(struct shmkv_header_shm, slot_count) == 48 &&
		offsetof(struct shmkv_header_shm, flags) == 84 &&
		offsetof(struct shmkv_header_shm, page_table_offset) == 88 &&
		offsetof(struct shmkv_header_shm, created_unix_ms) == 104 &&
		offsetof(struct shmkv_header_shm, class_size) == 128 &&
		offsetof(struct shmkv_header_shm, lock_wait) == 224 &&
		offsetof(struct shmkv_header_shm, visits) == 1248 &&
		offsetof(struct shmkv_header_shm, reap_slot) == 2280 &&
		offsetof(struct shmkv_header_shm, reserve_memory) == 2288 &&
		offsetof(struct shmkv_header_shm, life) == 2304 &&
		offsetof(struct shmkv_header_shm, max_memory) == 2312 &&
		offsetof(struct shmkv_header_shm, pages_ready) == 2320 &&
		offsetof(struct shmkv_header_shm, evict_policy) == 2324 &&
		offsetof(struct shmkv_header_shm, access_clock) == 2368 &&
		offsetof(struct shmkv_header_shm, evicted) == 2432 &&
		offsetof(struct shmkv_header_shm, epoch_max) == 2496 &&
		offsetof(struct shmkv_header_shm, grow_front) == 2560,
	"header layout (version 10)");
/* Header flags. HUGE_PAGES: the segment is sized in SHMKV_HUGE_PAGEs and
 * every mapping of it is advised MADV_HUGEPAGE (segment.c). */
#define SHMKV_HDR_HUGE_PAGES 1u
#define SHMKV_HDR_FLAGS SHMKV_HDR_HUGE_PAGES /* all known */

_Static_assert(offsetof(struct shmkv_header_shm, lock_wait) % 8 == 0,
	       "header alignment");
_Static_assert(offsetof(struct shmkv_header_shm, visits) % 8 == 0,
	       "visit words are 64-bit aligned");

/*
 * A slot: one key, its value word, the claim word of its inline area and
 * the probe bound of the keys whose home it is. slot_size is a power of
 * two of at least one cache line (64 bytes when key_max <= 28), so that
 * finding a slot is a shift and a slot of 64 bytes lies in one line. The
 * key bytes follow the fixed part; short values live in the same slot,
 * placed from its end (the "area", see VAL_INLINE and struct area below).
 */
struct shmkv_slot_shm {
	uint64_t state; /* SLOT_* state | pid | version, see below */
	uint64_t value; /* the value word, see below */
	/* Claim of the slot's bytes past the fixed part (SLOT_AREA_*): only
	 * its holder writes them (an inline value, or an inserter's key), and
	 * only it publishes an inline value. Never reset: its publish number
	 * keeps growing over every incarnation of the slot. */
	uint64_t area;
	/* Probes of keys homed here stay below this (at most probe_limit,
	 * which is at most SHMKV_PROBE_LIMIT_MAX). */
	uint16_t probe_bound;
	/* When the slot's key was last used, for eviction (evict.h): the
	 * access clock (LRU), or a frequency counter and the clock's decay
	 * period (LFU). Written by plain stores, in bytes of its own, so
	 * that a reader records a use without a locked instruction and
	 * without ever touching the bound beside it. */
	uint16_t access;
	uint32_t keymeta; /* SLOT_KEYMETA: hash fingerprint | key length */
	/* Futex word of processes waiting for this key's value to change
	 * (safe locks): bit 0 some waiter may sleep, bits 1-31 a wake-up
	 * sequence (wait.c). Kept across recycling: a new key inherits at
	 * most one spurious wake-up. */
	uint32_t wait;
	unsigned char key[];
};
/* Where the key starts; inline values end at the slot's end. */
#define SHMKV_SLOT_FIXED 36u
#define SHMKV_SLOT_MIN	 64u
_Static_assert(offsetof(struct shmkv_slot_shm, key) == SHMKV_SLOT_FIXED &&
		       offsetof(struct shmkv_slot_shm, area) == 16 &&
		       offsetof(struct shmkv_slot_shm, access) == 26,
	       "slot layout (version 8)");
/* The high 16 bits of the key's 32-bit hash and its length (<= 4096), in
 * one word: a probe rejects almost every other key with one load. */
#define SLOT_KEYMETA(hash32, len) (((hash32)&0xffff0000u) | (uint32_t)(len))
#define SLOT_KEYMETA_LEN(m)	  ((uint32_t)(m)&0xffffu)

/*
 * The area word: bits 0-21 the thread id (tid) of its claimer, 0: free
 * (Linux tids are below 2^22); bits 22-63 the number of the last inline
 * value published in this slot. A claim is taken by CAS and released by
 * its holder's store; a dead holder's claim is taken over by CAS with the
 * number bumped (it may have published that number before dying), so no
 * two inline values of one slot ever carry one number (area.h).
 */
#define SLOT_AREA_TID_BITS 22u
#define SLOT_AREA_TID(a)   ((uint32_t)((a) & ((1u << SLOT_AREA_TID_BITS) - 1)))
#define SLOT_AREA_NUM(a)   ((a) >> SLOT_AREA_TID_BITS)
#define SLOT_AREA_WORD(num, tid)                                               \
	(((uint64_t)(num) << SLOT_AREA_TID_BITS) | (uint64_t)(tid))

/*
 * Slot state word: bits 0-2 state, 3-31 pid of a claimer, 32-63 version.
 * The version is bumped each time the slot is given back (to EMPTY), so a
 * state word is never seen twice for two different keys.
 *
 *   EMPTY --claim--> BUSY(pid) --key written--> INSERTING --> MEMBER
 *     ^                 |  (pid dead)               |            |
 *     |                 v                           v            | value
 *     +------------ EMPTY(v+1) <---------------- COLLIDED      | DEAD
 *     +----------------------------------------------------------+
 */
enum shmkv_slot_state {
	SLOT_EMPTY = 0,
	SLOT_BUSY = 1,
	SLOT_INSERTING = 2,
	SLOT_MEMBER = 3,
	SLOT_COLLIDED = 4,
	/* The slot's table is migrating into the next one (migrate.c), and
	 * this slot is done: its key, if it had one with a value, is there
	 * now. Terminal: nobody claims, recycles or decides it. */
	SLOT_MOVED = 5,
};
#define SLOT_STATE(w)	((unsigned)((w)&7u))
#define SLOT_PID(w)	((uint32_t)(((w) >> 3) & 0x1fffffffu))
#define SLOT_VERSION(w) ((uint32_t)((w) >> 32))
#define SLOT_WORD(state, pid, version)                                         \
	((uint64_t)(state) | ((uint64_t)((pid)&0x1fffffffu) << 3) |            \
	 ((uint64_t)(version) << 32))
/* A MEMBER word names its table's epoch where a BUSY word has its pid:
 * a slot index and state word cached in one table (a prepared key, the
 * plain commands' memo, a lock) never match a slot of another, whose
 * versions start again at 0. */
#define SLOT_MEMBER_WORD(version, epoch) SLOT_WORD(SLOT_MEMBER, epoch, version)
#define SLOT_EPOCH(w)			 SLOT_PID(w)

/*
 * Value word: bits 62-63 kind; bit 61 FROZEN, in every kind: the word is
 * being copied to the next table of an online growth (see the README's
 * design section), and no CAS may replace it any more (a CAS that expects
 * the word unfrozen fails). Every decoder below ignores it.
 *  NONE  (00): no value. Bit 0 DEAD: the slot is being given back. Bits 1-32
 *              the slot version, so a NONE of an old incarnation of the slot
 *              never compares equal to the current one. Bit 33 FRESH: the
 *              key was just inserted and its first value is on its way;
 *              bits 34-59 the inserter's pid: the slot is recycled only
 *              once that process is dead. Bit 60 NONE_MARK, always set: no
 *              value word is ever 0, the word of memory a growth gave back
 *              (so no CAS expecting a value word succeeds on such memory).
 *  INT   (01): an inline integer: bits 0-47 a signed 48-bit value, bits 48-60
 *              the low 13 bits of the slot version (same reason).
 *  BLOCK (10): a value block: bits 31-60 its unit number (page and index in
 *              the page), bits 0-30 the block's generation (the low 31 bits
 *              of its tag's), so a block freed and reused is never mistaken
 *              for the one a reader started copying.
 *  INLINE (11): a short string in the slot itself: bits 0-41 its publish
 *              number (the area word's, unique in the slot for 2^42
 *              inline writes), bits 42-49 its length, bits 50-57 its
 *              offset from the slot's end, bits 58-60 zero. Its bytes are
 *              slot[slot_size - off - len, slot_size - off); they are
 *              written only while no value word names them (area.h).
 */
#define VAL_KIND(w)	 ((unsigned)((w) >> 62))
#define VAL_FROZEN_BIT	 ((uint64_t)1 << 61)
#define VAL_IS_FROZEN(w) (((w)&VAL_FROZEN_BIT) != 0)
/* The kind and the frozen bit in one: VAL_KIND_LIVE(w) == VAL_LIVE(kind)
 * asks "of this kind, and may a CAS replace it?" in one compare. */
#define VAL_KIND_LIVE(w) ((unsigned)((w) >> 61))
#define VAL_LIVE(kind)	 ((unsigned)(kind) << 1)
enum { VAL_NONE = 0, VAL_INT = 1, VAL_BLOCK = 2, VAL_INLINE = 3 };
#define VAL_NONE_MARK ((uint64_t)1 << 60)
#define VAL_NONE_WORD(version, dead)                                           \
	(VAL_NONE_MARK | ((uint64_t)(uint32_t)(version) << 1) |                \
	 (uint64_t)((dead) ? 1 : 0))
#define VAL_FRESH_BIT	((uint64_t)1 << 33)
#define VAL_IS_FRESH(w) (VAL_KIND(w) == VAL_NONE && ((w)&VAL_FRESH_BIT))
/* A FRESH word names its inserter (bits 34-59), so only a dead one's slot
 * is recycled before its first value lands. */
#define VAL_FRESH_PID_MASK 0x3ffffffu
#define VAL_FRESH_WORD(version, pid)                                           \
	(VAL_NONE_WORD(version, 0) | VAL_FRESH_BIT |                           \
	 ((uint64_t)((pid)&VAL_FRESH_PID_MASK) << 34))
#define VAL_FRESH_PID(w)    ((uint32_t)(((w) >> 34) & VAL_FRESH_PID_MASK))
#define VAL_IS_DEAD(w)	    (VAL_KIND(w) == VAL_NONE && ((w)&1u))
#define VAL_NONE_VERSION(w) ((uint32_t)((w) >> 1))
#define VAL_INT_MIN	    (-((int64_t)1 << 47))
#define VAL_INT_MAX	    (((int64_t)1 << 47) - 1)
/* The slot version's bits an INT word carries. */
#define VAL_INT_TAG_MASK    0x1fffu
#define VAL_INT_TAG_OF(ver) ((uint32_t)(ver)&VAL_INT_TAG_MASK)
#define VAL_INT_WORD(version, i)                                               \
	(((uint64_t)VAL_INT << 62) |                                           \
	 ((uint64_t)VAL_INT_TAG_OF(version) << 48) |                           \
	 ((uint64_t)(i)&0xffffffffffffULL))
#define VAL_INT_TAG(w)	((uint32_t)(((w) >> 48) & VAL_INT_TAG_MASK))
#define VAL_INT_PAYLOAD 0xffffffffffffULL /* the integer's 48 bits */
/* Sign-extend the low 48 bits. */
#define VAL_INT_VALUE(w) ((int64_t)((w) << 16) >> 16)
/* Block generations, in value words and (the same bits) in block tags. */
#define VAL_BLOCK_GEN_MASK 0x7fffffffu
#define VAL_BLOCK_WORD(unit, gen)                                              \
	(((uint64_t)VAL_BLOCK << 62) | ((uint64_t)(unit) << 31) |              \
	 (uint64_t)((gen)&VAL_BLOCK_GEN_MASK))
#define VAL_BLOCK_UNIT(w)   ((uint32_t)(((w) >> 31) & (SHMKV_UNITS_MAX - 1)))
#define VAL_BLOCK_GEN(w)    ((uint32_t)(w)&VAL_BLOCK_GEN_MASK)
#define VAL_INLINE_NUM_MASK ((((uint64_t)1) << 42) - 1)
#define VAL_INLINE_MAX	    255u /* bytes: the length and offset fields */
#define VAL_INLINE_WORD(num, len, off)                                         \
	(((uint64_t)VAL_INLINE << 62) | ((uint64_t)(off) << 50) |              \
	 ((uint64_t)(len) << 42) | ((uint64_t)(num)&VAL_INLINE_NUM_MASK))
#define VAL_INLINE_LEN(w)      ((uint32_t)((w) >> 42) & 0xffu)
#define VAL_INLINE_OFF(w)      ((uint32_t)((w) >> 50) & 0xffu)
#define VAL_INLINE_RESERVED(w) ((uint32_t)((w) >> 58) & 0x7u)

/*
 * Pin integers: the inline integers -(2^46 + unit * 2^16 + tag), tag 16
 * bits, name the OWNED block @unit (owned.c) in a value word, with a tag
 * the block's owner chooses. The core keeps an owned block whose owner is
 * dead for as long as the slot its header names holds a pin of it; what
 * the tag means is up to the owner (a lock cell's claim sequence).
 * A plain SET can write such an integer too: a pin names a block, it does
 * not prove that block is an owned one (callers check the tag).
 */
#define VAL_PIN_BASE ((int64_t)1 << 46)
#define VAL_PIN_TAGS 0xffffu
#define VAL_PIN_INT(unit, tag)                                                 \
	(-(VAL_PIN_BASE | ((int64_t)(unit) << 16) |                            \
	   (int64_t)((tag)&VAL_PIN_TAGS)))
/* Is inline integer @v a pin? Then *@unit and *@tag are what it names. */
static inline int val_pin_decode(int64_t v, uint32_t *unit, uint32_t *tag)
{
	int64_t m;

	if (v >= 0 || v < -((VAL_PIN_BASE << 1) - 1))
		return 0;
	m = -v;
	if (m < VAL_PIN_BASE)
		return 0;
	m -= VAL_PIN_BASE;
	*unit = (uint32_t)(m >> 16);
	*tag = (uint32_t)(m & VAL_PIN_TAGS);
	return 1;
}

/*
 * A value block. tag bits 0 USED, 1-29 the id of the thread that holds it
 * (a value block: its tid, kept once published until a writer of another
 * thread or reclamation settles it to 0) or of the process that owns it
 * (an OWNED block: its pid, for life), bit 30 CACHED (freed into its
 * holder's per-thread cache: block.c), bit 31 DOOM (an owned block being
 * freed: see owned.c), 32-62 generation, bumped on every free (bit 63:
 * 0; value words hold 31 bits of it). A value block is written only
 * between its allocation and its publication; while
 * published it is immutable, which is what lets readers copy it without a
 * lock and check the generation after. (Linux pids and tids fit 22 bits.)
 */
/* A block's back-pointer: the slot index in bits 0-27 (SHMKV_SLOTS_MAX is
 * 2^28), and the epoch of the slot's table, mod 16, in bits 28-31: of the
 * two tables live during a growth it says which (tables.c), and an older
 * table's names nothing live. Only a hint: whoever follows it checks that
 * the slot's value word names exactly this block. */
#define BLK_BACK_WORD(idx, epoch)                                              \
	(((uint32_t)(idx)&0x0fffffffu) | (((uint32_t)(epoch)&15u) << 28))
#define BLK_BACK_INDEX(w) ((uint32_t)(w)&0x0fffffffu)
#define BLK_BACK_EPOCH(w) ((uint32_t)(w) >> 28)
/* The back-pointer of a value published in the MEMBER slot @idx whose
 * state word is @state (SLOT_MEMBER_WORD names the table). */
#define BLK_BACK_OF(idx, state) BLK_BACK_WORD(idx, SLOT_EPOCH(state))

struct shmkv_block_shm {
	uint64_t tag;
	int64_t deadline_ms; /* CLOCK_BOOTTIME ms; 0: no expiry */
	uint32_t len;
	/* The slot it was published to (recovery's back-pointer), with its
	 * table's epoch: BLK_BACK_WORD. */
	uint32_t slot;
	unsigned char data[];
};
_Static_assert(sizeof(struct shmkv_block_shm) == 24, "block layout");
_Static_assert(sizeof(struct shmkv_block_shm) + 40 <= SHMKV_CACHE_LINE,
	       "a 40-byte value and its header fill one cache line");
#define BLK_USED(t) ((unsigned)((t)&1u))
#define BLK_PID(t)  ((uint32_t)(((t) >> 1) & 0x1fffffffu))
#define BLK_CACHED  ((uint64_t)1 << 30)
#define BLK_DOOM    ((uint64_t)1 << 31)
#define BLK_GEN(t)  ((uint32_t)((t) >> 32) & VAL_BLOCK_GEN_MASK)
#define BLK_TAG(gen, pid, used)                                                \
	(((uint64_t)((gen)&VAL_BLOCK_GEN_MASK) << 32) |                        \
	 ((uint64_t)((pid)&0x1fffffffu) << 1) | (uint64_t)((used) ? 1 : 0))

/* The format word: a build whose structs differ is refused at attach. */
#define SHMKV_LAYOUT_FORMAT                                                    \
	((SHMKV_LAYOUT_VERSION << 24) | (SHMKV_SLOT_FIXED << 16) |             \
	 ((uint32_t)sizeof(struct shmkv_block_shm) << 8) | SHMKV_HASH_VERSION)
/* Bumped when the key hash (hash.c) changes: keys would not be found. */
#define SHMKV_HASH_VERSION 3u

#endif /* SHMKV_LAYOUT_H */
