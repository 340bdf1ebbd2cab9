/*
 * mp.h - helpers of the multi-process tests (test_mp_*.c): teams of forked
 * children, barriers between them and the parent, reports from failing
 * children, and a seedable random generator.
 *
 * Children never assert: they report through their exit status and a
 * struct report in a MAP_SHARED|MAP_ANONYMOUS mapping (mp_shared_map), and
 * the parent asserts once every child has been reaped. Every wait is
 * bounded by a count, so a lost wake-up or a hung child fails the test
 * instead of hanging it; no assertion depends on how long anything took.
 *
 * Functions named "child" never assert and may run in a child; the others
 * run in the parent and assert (Criterion).
 */
#ifndef SHMKV_MP_H
#define SHMKV_MP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "helpers/rng.h"
#include "helpers/testutil.h"

#define NPROC	4 /* processes racing in each test */
#define MAXPROC 8 /* report slots in a shared area */

/* Exit statuses of the forked children (0: success). */
enum child_exit {
	CHILD_OPEN = 10,  /* shmkv_open failed */
	CHILD_CMD = 11,	  /* a command returned what it must not */
	CHILD_VALUE = 12, /* a value read is not one that was written */
	CHILD_STUCK = 13, /* a barrier wait ran out of rounds */
};

/* What a failing child tells the parent, beyond its exit status. */
struct report {
	int err;       /* the offending return code */
	long step;     /* loop index where it happened */
	char what[96]; /* the command and key */
};

/* Fills @r (@err, @step, the formatted text) and returns @code, for a
 * child's "return mp_child_fail(...)". */
int mp_child_fail(struct report *r, int code, int err, long step,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Zeroed memory shared with every child forked after this call. */
void *mp_shared_map(size_t len);

/* The seed of this run: SHMKV_SEED if set, else the clock. Logged so a
 * failing run can be replayed as far as scheduling allows. */
uint64_t mp_run_seed(void);

/* Pads @buf (holding @n bytes) with 'x' to @len bytes and returns @len:
 * > 8 bytes and not an integer, so such a value always lives in a value
 * block. */
size_t mp_pad_x(char *buf, int n, size_t len);

/*
 * Process teams: forked children that run a function and exit.
 */

/* A child's body: returns its exit status (0, or an enum child_exit). */
typedef int (*child_fn)(int idx, void *arg);

struct team {
	int n;
	pid_t pid[MAXPROC];
	int status[MAXPROC];
	bool reaped[MAXPROC];
	bool killed[MAXPROC]; /* by mp_team_finish: not the child's fault */
};

/* Forks @n (<= MAXPROC) children running @fn(i, @arg); they never return
 * to Criterion: _exit skips the atexit hooks that would unlink the test's
 * store. */
void mp_team_start(struct team *t, int n, child_fn fn, void *arg);
/* Reaps every child; with @kill_first, SIGKILLs the live ones first. */
void mp_team_finish(struct team *t, bool kill_first);
/* Asserts that every child exited 0, naming the first that did not with
 * its report from @rep; the ones mp_team_finish killed are left to the
 * parent's own verdict. */
void mp_team_assert_ok(struct team *t, const struct report *rep);
/* Whether a wait status is a clean exit 0. */
bool mp_status_ok(int st);

/*
 * Barriers, on counters in shared memory.
 */

/* Parent side: waits for *@c >= @target while the children live.
 * Return: 0, -ECHILD (a child failed first) or -ETIMEDOUT. */
int mp_parent_wait(struct team *t, atomic_uint *c, unsigned target);
/* Child side: waits for *@c >= @target while the parent lives. Return: 0,
 * -ECHILD (the parent is gone) or -ETIMEDOUT. */
int mp_child_wait(atomic_uint *c, unsigned target, pid_t parent);
/*
 * Children-only barrier: arrives at *@c and returns once it reaches
 * @target (returns as mp_child_wait). It spins a little before each
 * yield, so that the children on a CPU when the last one arrives all
 * leave within nanoseconds of each other and their commands really
 * overlap; a barrier released by the parent would let them go one context
 * switch apart.
 */
int mp_child_gather(atomic_uint *c, unsigned target, pid_t parent);

/*
 * Lock-step rounds between the parent and NPROC children, on counters in
 * the test's shared area: the parent opens round r, the children gather
 * and run it together, and each counts itself arrived; the parent waits
 * for all of them before it checks the round. Tests that only need the
 * children to start together use mp_child_start() (and only s->ready).
 */
struct rounds {
	struct report rep[MAXPROC];
	char name[TU_NAME_CAP]; /* the store */
	pid_t parent;
	atomic_uint go;	     /* rounds opened by the parent */
	atomic_uint ready;   /* children at the start line, all rounds */
	atomic_uint arrived; /* child replies over all rounds */
};

/* Child @idx's part of round @r on @kv, with its own generator @rng.
 * Return: 0, or its exit status with s->rep[@idx] filled. Never asserts. */
typedef int (*round_fn)(shmkv_t *kv, void *area, int idx, unsigned r,
			uint64_t *rng);

/* Child side: opens s->name and runs @fn(kv, @area, @idx, r, &rng) for
 * rounds r = 0..@n-1 in step with the parent (@area holds @s). Return:
 * the child's exit status. Never asserts. */
int mp_rounds_child(struct rounds *s, unsigned n, round_fn fn, void *area,
		    int idx, uint64_t rng);
/* Child side of a single start: opens s->name and waits until all NPROC
 * children have (s->ready), so that their commands overlap. Return: 0
 * with *@kv open, or the child's exit status. Never asserts. */
int mp_child_start(struct rounds *s, int idx, shmkv_t **kv);
/* Parent side: opens round @r and waits until every child has run it.
 * Return: 0, or as mp_parent_wait. */
int mp_rounds_open(struct rounds *s, struct team *t, unsigned r);

/*
 * The store.
 */

/* A new store of @slots slots and @value_memory bytes of values (0: the
 * default) under a fresh name, written to @name; asserts. */
shmkv_t *mp_create_store(char name[TU_NAME_CAP], uint32_t slots,
			 uint64_t value_memory);
/* Opens the store in a child; never asserts. Return: 0 or CHILD_OPEN. */
int mp_child_open(const char *name, shmkv_t **kv, struct report *rep);
/* GET of @key (a string) into @buf; returns GET's result, the length in
 * *@len. Never asserts. */
int mp_get_str(shmkv_t *kv, const char *key, char *buf, size_t cap,
	       size_t *len);

#endif /* SHMKV_MP_H */
