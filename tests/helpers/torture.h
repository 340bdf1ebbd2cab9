/*
 * torture.h - what the crash-torture supervisor (torture.c) and its
 * workers (torture_worker.c) share: the store's geometry, the key names,
 * the journal both sides map, and the self-checking value format.
 *
 * The journal is a memfd the supervisor creates and every worker inherits
 * (its fd number is on the worker's command line), so it needs no name and
 * outlives every worker. A worker writes only its own slot; the supervisor
 * reads a slot after reaping the worker (or while it runs, for progress
 * only) and clears it before giving it to the next worker. So a killed
 * worker's slot tells exactly how far it got.
 */
#ifndef SHMKV_TORTURE_H
#define SHMKV_TORTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "shmkv.h"
#include "helpers/rng.h"

/* A small table, so that inserts collide and tombstones get recycled. */
#define TORTURE_SLOTS 128u
/* Random keys "k000".."k159": more than the table holds, so some inserts
 * find it full (-ENOSPC, counted) and deleted keys' slots get recycled. */
#define TORTURE_KEYS	     160u
#define TORTURE_VALUE_MAX    400u
#define TORTURE_VALUE_MEMORY (1u << 20)
#define TORTURE_WORKERS_MAX  16u
/* Journal slots: one per worker alive, killed ones' until reaped. */
#define TORTURE_JOURNAL_SLOTS 64u

/* The two locks, each guarding the counter "ctr.<name>". */
enum torture_lock {
	TL_SAFE = 0, /* struct shmkv_lock "safe" */
	TL_PATTERN,  /* shmkv_pattern_acquire on "pat" */
	TL_COUNT,
};
static const char *const torture_lock_name[TL_COUNT] = { "safe", "pat" };
static const char *const torture_counter[TL_COUNT] = { "ctr.safe", "ctr.pat" };
/* Safe lock lease: only a death (detected at once) or a release ends a
 * grant; a live holder stalled this long would void the count. */
#define TORTURE_LEASE_MS 10000
/* Pattern lock timeout: a dead holder blocks the lock this long. */
#define TORTURE_PATTERN_MS 250

/*
 * One worker's slot. The section words are (completed << 1) | in:
 * "in" is set once the lock is granted and cleared by the same store that
 * counts the section completed, after the release returned 0. So a killed
 * holder shows as in = 1, whether or not its increment landed.
 */
struct torture_slot {
	_Atomic uint64_t ops; /* commands done by this incarnation */
	_Atomic uint64_t seq; /* highest value sequence it used */
	_Atomic uint64_t section[TL_COUNT]; /* see above */
	_Atomic uint64_t late[TL_COUNT];    /* see pattern_section() */
	_Atomic uint64_t takeovers;	    /* safe grants of a dead holder's */
	_Atomic uint64_t full;		    /* inserts refused: table full */
};

struct torture_journal {
	_Atomic uint32_t stop; /* workers exit 0 at the next command */
	_Atomic uint64_t token[TL_COUNT]; /* largest fencing token granted */
	struct torture_slot w[TORTURE_JOURNAL_SLOTS];
};

/*
 * What the supervisor learned from the journal, and the verdicts so far.
 * The audit (tests/helpers/torture_audit.c) takes it with the store.
 */
struct torture_tally {
	uint64_t done[TL_COUNT];      /* sections completed */
	uint64_t killed_in[TL_COUNT]; /* holders killed inside a section */
	uint64_t late[TL_COUNT];      /* sections that ended late */
	uint32_t *seq_final;	      /* per spawn: the last seq it used */
	uint32_t spawns;
	int passed, failed; /* properties checked */
};

/* One checked property: counted, and printed to stderr if it failed. */
void torture_verdict(struct torture_tally *t, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Audits the stopped store: recover, check, value storage, every value,
 * the lock counters; @granted is the largest safe-lock token granted. */
void torture_audit(shmkv_t *kv, struct torture_tally *t, uint64_t granted);

/*
 * Block values: "T<spawn>.<seq>:" then filler bytes that depend on the
 * header and the position, to a length the header also fixes. <spawn>
 * names the writing incarnation (numbered by the supervisor), <seq> its
 * write. A value torn between two writes, copied from a reused block, or
 * cut short fails the check. Never a number, so always a block.
 */
#define TORTURE_VALUE_CAP (TORTURE_VALUE_MAX + 1)

static inline uint64_t torture_value_hash(uint32_t spawn, uint32_t seq)
{
	uint64_t s = ((uint64_t)spawn << 32) | seq;

	return rng_next(&s);
}

static inline size_t torture_value_len(size_t head, uint64_t h)
{
	return head + 1 + (size_t)(h % (TORTURE_VALUE_MAX - 32));
}

static inline size_t torture_value_make(char *buf, uint32_t spawn, uint32_t seq)
{
	uint64_t h = torture_value_hash(spawn, seq);
	size_t i = (size_t)snprintf(buf, TORTURE_VALUE_CAP, "T%u.%u:", spawn,
				    seq);
	size_t len = torture_value_len(i, h);

	for (; i < len; i++)
		buf[i] = (char)('a' + (h + i * 7) % 26);
	return len;
}

/* Parses and verifies a block value; false if it is not one we wrote. */
static inline bool torture_value_parse(const char *v, size_t len,
				       uint32_t *spawn, uint32_t *seq)
{
	char want[TORTURE_VALUE_CAP];
	unsigned long long a, b;
	int head = 0;

	if (len < 5 || len > TORTURE_VALUE_MAX || v[0] != 'T')
		return false;
	memcpy(want, v, len < 24 ? len : 24);
	want[len < 24 ? len : 24] = '\0';
	if (sscanf(want, "T%llu.%llu:%n", &a, &b, &head) != 2 || head == 0 ||
	    a > UINT32_MAX || b > UINT32_MAX)
		return false;
	*spawn = (uint32_t)a;
	*seq = (uint32_t)b;
	return torture_value_make(want, *spawn, *seq) == len &&
	       memcmp(want, v, len) == 0;
}

#endif /* SHMKV_TORTURE_H */
