/*
 * worker_exit.h - the exit statuses of the test programs' worker
 * processes (the tests/programs workers), one meaning per number, so that a
 * status in a failure message reads the same whichever worker gave it.
 *
 * Workers never assert: a worker that stops by itself exits with one of
 * these and writes the cause to stderr (or its log). The parents only tell
 * 0 from the rest; the number is for the person reading the failure.
 */
#ifndef SHMKV_TESTS_WORKER_EXIT_H
#define SHMKV_TESTS_WORKER_EXIT_H

enum worker_exit {
	WORKER_DONE = 0,  /* finished, or asked to stop */
	WORKER_USAGE = 2, /* a bad command line */
	WORKER_OPEN = 3,  /* the store, a lock or the journal would not open */
	WORKER_REPLY = 4, /* a command returned what it must not */
	WORKER_VALUE = 5, /* a value read was never written */
	WORKER_LOCK = 6,  /* a lock call broke its contract */
	/* A worker's own causes, which mean nothing to the others, are
	 * numbered from here. */
	WORKER_OWN = 16,
};

#endif /* SHMKV_TESTS_WORKER_EXIT_H */
