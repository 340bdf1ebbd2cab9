/*
 * atomic.h - the only place shmkv touches shared-memory atomics.
 *
 * Every wrapper is named by the ordering it gives, so each call site can say
 * in one comment which ordering it needs and why. They are built on liburcu's
 * uatomic (0.13 semantics: uatomic_read/uatomic_set are relaxed single-copy
 * atomic accesses; uatomic_cmpxchg/uatomic_xchg are full barriers) and on its
 * cmm_smp_* fences for acquire and release.
 *
 * Only 32- and 64-bit words are used, and the static assertions below refuse
 * to build on a target where those are not lock-free: an atomic that falls
 * back to a process-local lock (libatomic's 16-byte path, say) would not be
 * atomic for the other processes mapping the segment.
 *
 * Process-local words that threads share (the pid cache, a handle's
 * allocation hints, serial, extension and reaped pid, the lock layer's
 * cell pool) use these same wrappers, not the __atomic builtins: one layer
 * to audit, one set of orderings to name, and TSan sees them as atomics
 * through the redefinitions below. The pointer forms are for such words
 * only: the segment holds none.
 *
 * No file but this one calls uatomic_*, cmm_* or the compiler's __atomic_*
 * and __sync_* builtins: `make lint` fails if one does (mk/quality.mk).
 */
#ifndef SHMKV_ATOMIC_H
#define SHMKV_ATOMIC_H

#include <stdint.h>
#include <urcu/arch.h>
#include <urcu/uatomic.h>

/*
 * liburcu 0.13 has no acquire/release accessors. x86 is TSO (a load is not
 * reordered with later loads or stores, a store not with earlier ones), so a
 * compiler barrier gives acquire and release there; elsewhere use the full
 * SMP barrier, which is stronger than needed but correct.
 */
#if defined(__x86_64__) || defined(__i386__)
#define SHMKV_ACQUIRE_FENCE() cmm_barrier()
#define SHMKV_RELEASE_FENCE() cmm_barrier()
#else
#define SHMKV_ACQUIRE_FENCE() cmm_smp_mb()
#define SHMKV_RELEASE_FENCE() cmm_smp_mb()
#endif

_Static_assert(__atomic_always_lock_free(sizeof(uint64_t), 0),
	       "64-bit atomics must be lock-free to work across processes");
_Static_assert(__atomic_always_lock_free(sizeof(uint32_t), 0),
	       "32-bit atomics must be lock-free to work across processes");
_Static_assert(__atomic_always_lock_free(sizeof(void *), 0),
	       "process-local pointers must be lock-free too");

/*
 * ThreadSanitizer sees neither liburcu's inline-asm CAS nor its volatile
 * loads and stores as atomics: every CAS is invisible to it and every
 * relaxed access a plain one, so it reports races on the words themselves
 * and misses the ordering the CASes give. Under TSan (and only there) the
 * uatomic_* used here and in the src/ files are redefined as the compiler's
 * __atomic builtins, which it understands, and the acquire and release
 * wrappers use real acquire and release accesses. Builds without TSan are
 * unchanged. Every uatomic_* used below must be redefined here.
 */
#if defined(__SANITIZE_THREAD__)
#define SHMKV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHMKV_TSAN 1
#endif
#endif

#ifdef SHMKV_TSAN
#undef uatomic_read
#define uatomic_read(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#undef uatomic_set
#define uatomic_set(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#undef uatomic_cmpxchg
#define uatomic_cmpxchg(p, o, n)                                               \
	__extension__({                                                        \
		__typeof__(*(p)) _o = (o);                                     \
		__atomic_compare_exchange_n(                                   \
			(p), &_o, (n), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
		_o;                                                            \
	})
#undef uatomic_add_return
#define uatomic_add_return(p, v) __atomic_add_fetch((p), (v), __ATOMIC_SEQ_CST)
#define SHMKV_LOAD_ACQ(p)	 __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SHMKV_STORE_REL(p, v)	 __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#else
#define SHMKV_LOAD_ACQ(p)                                                      \
	__extension__({                                                        \
		__typeof__(*(p)) _v = uatomic_read(p);                         \
		SHMKV_ACQUIRE_FENCE();                                         \
		_v;                                                            \
	})
#define SHMKV_STORE_REL(p, v)                                                  \
	do {                                                                   \
		SHMKV_RELEASE_FENCE();                                         \
		uatomic_set((p), (v));                                         \
	} while (0)
#endif

/* Relaxed load: a single-copy atomic read, no ordering. */
static inline uint64_t shmkv__load_relaxed(const uint64_t *p)
{
	return uatomic_read(p);
}

static inline uint32_t shmkv__load32_relaxed(const uint32_t *p)
{
	return uatomic_read(p);
}

static inline uint16_t shmkv__load16_relaxed(const uint16_t *p)
{
	return uatomic_read(p);
}

/* Acquire load: later loads and stores are not hoisted above it. */
static inline uint64_t shmkv__load_acquire(const uint64_t *p)
{
	return SHMKV_LOAD_ACQ(p);
}

static inline uint32_t shmkv__load32_acquire(const uint32_t *p)
{
	return SHMKV_LOAD_ACQ(p);
}

/* Relaxed store: a single-copy atomic write, no ordering. */
static inline void shmkv__store_relaxed(uint64_t *p, uint64_t v)
{
	uatomic_set(p, v);
}

static inline void shmkv__store32_relaxed(uint32_t *p, uint32_t v)
{
	uatomic_set(p, v);
}

static inline void shmkv__store16_relaxed(uint16_t *p, uint16_t v)
{
	uatomic_set(p, v);
}

/* Release store: earlier loads and stores complete before it is seen. */
static inline void shmkv__store_release(uint64_t *p, uint64_t v)
{
	SHMKV_STORE_REL(p, v);
}

static inline void shmkv__store32_release(uint32_t *p, uint32_t v)
{
	SHMKV_STORE_REL(p, v);
}

/*
 * A process-local pointer: an acquire load, and a full-barrier CAS that
 * returns the pointer found at @pp. Macros, so that the pointee's type is
 * kept (a cast to void ** would break aliasing).
 */
#define shmkv__load_ptr_acquire(pp)	  SHMKV_LOAD_ACQ(pp)
#define shmkv__cas_ptr_full(pp, old, new) uatomic_cmpxchg((pp), (old), (new))

/* Full-barrier compare-and-swap; returns the value found at @p. */
static inline uint64_t shmkv__cas_full(uint64_t *p, uint64_t old, uint64_t new)
{
	return uatomic_cmpxchg(p, old, new);
}

static inline uint32_t shmkv__cas32_full(uint32_t *p, uint32_t old,
					 uint32_t new)
{
	return uatomic_cmpxchg(p, old, new);
}

/* 16 bits: a native cmpxchgw on x86-64, a halfword LL/SC or CASH on
 * arm64; never a library lock. */
static inline uint16_t shmkv__cas16_full(uint16_t *p, uint16_t old,
					 uint16_t new)
{
	return uatomic_cmpxchg(p, old, new);
}

/*
 * Full-barrier fetch-and-add; returns the new value. liburcu 0.13 has no
 * weaker one that returns a value, so a site that needs only atomicity
 * pays the barrier too (and says so).
 */
static inline uint64_t shmkv__add_full(uint64_t *p, uint64_t d)
{
	return uatomic_add_return(p, d);
}

static inline uint32_t shmkv__add32_full(uint32_t *p, uint32_t d)
{
	return uatomic_add_return(p, d);
}

/*
 * Read fence between the loads of a seqlock-style read: the copy of a value
 * block must complete before its generation is checked again. (TSan does not
 * model fences; the seqlock copies are in tests/tsan.supp.)
 */
static inline void shmkv__fence_acquire(void)
{
	SHMKV_ACQUIRE_FENCE();
}

/*
 * Full fence: orders earlier stores before later loads (the one reordering
 * x86 allows): each side of a store-buffer pair (owned.h, wait.h) writes
 * its word, fences, then reads the other's.
 */
static inline void shmkv__fence_full(void)
{
	cmm_smp_mb();
}

/*
 * Write fence of a seqlock writer: the sequence stored before it is seen
 * before any store after it.
 */
static inline void shmkv__fence_release(void)
{
	SHMKV_RELEASE_FENCE();
}

#endif /* SHMKV_ATOMIC_H */
