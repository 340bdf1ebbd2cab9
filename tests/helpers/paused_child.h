/*
 * paused_child.h - forcing an interleaving with a pause point (src/fault.h).
 *
 * A forked child runs one call with a pause hook: at the named step it
 * tells the parent and waits; the parent (another process) then does
 * exactly what makes the interleaving dangerous and lets the child go on.
 * The child never asserts: it sends its call's int result back through a
 * pipe. Pause points exist only in a FAULT=1 build (NEED_PAUSE_POINTS).
 */
#ifndef TU_PAUSED_CHILD_H
#define TU_PAUSED_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

#ifdef SHMKV_FAULT_INJECTION
#define NEED_PAUSE_POINTS() ((void)0)
#else
#define NEED_PAUSE_POINTS()                                                    \
	cr_skip_test("no pause points in this build: make FAULT=1, then "      \
		     "build-fault/tests/unit --filter 'pausepoint*/*'")
#endif

struct tu_child {
	pid_t pid;
	int paused; /* read: a byte per pause */
	int go;	    /* write: a byte lets it go on */
	int result; /* read: its int result */
};

/* Forks a child that runs @call(@arg) with the pause hook set: its first
 * @pauses passes through pause point @at stop until tu_child_let_go. */
struct tu_child tu_child_start(int (*call)(void *arg), void *arg,
			       const char *at, int pauses);
/* Waits until the child stops at its pause point: false if it ended its
 * call first (its result says how). */
bool tu_child_paused(const struct tu_child *c);
/* The same, failing the test if the child never paused. */
void tu_child_await(const struct tu_child *c);
void tu_child_let_go(const struct tu_child *c);
/* Reaps the child (which must exit normally) and returns its result. */
int tu_child_finish(struct tu_child *c);

#endif
