/*
 * crash_worker - a process for test_crashpoints to arm and watch die.
 *
 * usage: crash_worker NAME MODE PREFIX START COUNT
 *
 *   int    SET PREFIX<i> to "<i>" (an inline integer)  for i in
 *   inline SET PREFIX<i> to a string kept in its slot   [START, START+COUNT)
 *   block  SET PREFIX<i> to a block value
 *          (all from helpers/crash_value.h)
 *   sweep  one full shmkv_sweep pass (PREFIX, START, COUNT ignored)
 *   create create NAME (1024 slots), close it; PREFIX, START, COUNT ignored
 *   create-named  the same, built in a named working file (as where
 *          /dev/shm has no O_TMPFILE)
 *   remove shmkv_unlink NAME; PREFIX, START, COUNT ignored
 *
 * The test runs it with SHMKV_CRASH_AT and SHMKV_CRASH_AFTER in its
 * environment on a build with crash points, so it is meant to die of
 * SIGKILL on the way. Exit status otherwise: 0 every command done (the
 * crash point was never reached), 2 usage, 3 open failed, 4 a command
 * returned something else than it must (the cause goes to stderr).
 *
 * With CRASH_WORKER_ACKS=<fd> (an open file it inherits) the SET modes
 * record how many SETs were acknowledged (returned 1) so far, as a
 * uint32_t at offset 0 of that file, after each one: what the test may
 * expect to read back after the worker died.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/args.h"
#include "helpers/crash_value.h"
#include "helpers/worker_exit.h"
#include "segment.h"
#include "shmkv.h"

/* The file CRASH_WORKER_ACKS names, or -1. */
static int acks_fd(void)
{
	const char *s = getenv("CRASH_WORKER_ACKS");
	uint64_t fd;

	return s != NULL && arg_u64(s, INT_MAX, &fd) == 0 ? (int)fd : -1;
}

static int run_sets(shmkv_t *kv, const char *mode, const char *prefix,
		    unsigned long start, unsigned long count)
{
	char key[64], val[CRASH_VALUE_CAP];
	enum crash_kind kind = crash_kind_of(mode);
	int acks = acks_fd();
	uint32_t acked = 0;

	for (unsigned long i = start; i < start + count; i++) {
		size_t kl = (size_t)snprintf(key, sizeof(key), "%s%lu", prefix,
					     i);
		size_t vl = crash_value(val, kind, prefix, i);
		int rc = shmkv_set(kv, key, kl, val, vl, 0, 0, NULL);

		if (rc != 1) {
			fprintf(stderr, "crash_worker: SET %s: %s\n", key,
				shmkv_strerror(rc));
			return WORKER_REPLY;
		}
		acked++;
		if (acks >= 0 &&
		    pwrite(acks, &acked, sizeof(acked), 0) != sizeof(acked)) {
			fprintf(stderr, "crash_worker: acks: %s\n",
				strerror(errno));
			return WORKER_OWN;
		}
	}
	return WORKER_DONE;
}

static int run_sweep(shmkv_t *kv)
{
	uint64_t cursor = 0;
	int rc;

	/* One pass: the cursor wraps to 0 at its end. */
	do
		rc = shmkv_sweep(kv, &cursor, 64);
	while (rc >= 0 && cursor != 0);
	if (rc < 0)
		fprintf(stderr, "crash_worker: sweep: %s\n",
			shmkv_strerror(rc));
	return rc < 0 ? WORKER_REPLY : WORKER_DONE;
}

static int run_create(const char *name)
{
	struct shmkv_config cfg;
	shmkv_t *kv;
	int rc;

	shmkv_config_init(&cfg);
	cfg.slots = 1024;
	rc = shmkv_create(name, &cfg, &kv);
	if (rc) {
		fprintf(stderr, "crash_worker: create %s: %s\n", name,
			shmkv_strerror(rc));
		return WORKER_OPEN;
	}
	shmkv_close(kv);
	return WORKER_DONE;
}

int main(int argc, char **argv)
{
	uint64_t start, count;
	shmkv_t *kv;
	int rc;

	if (argc != 6 || arg_u64(argv[4], INT_MAX, &start) ||
	    arg_u64(argv[5], INT_MAX, &count) ||
	    (strcmp(argv[2], "int") && strcmp(argv[2], "block") &&
	     strcmp(argv[2], "inline") && strcmp(argv[2], "sweep") &&
	     strcmp(argv[2], "create") && strcmp(argv[2], "create-named") &&
	     strcmp(argv[2], "remove"))) {
		fprintf(stderr,
			"usage: crash_worker NAME int|inline|block|sweep|"
			"create|create-named|remove PREFIX START "
			"COUNT\n");
		return WORKER_USAGE;
	}
	if (strcmp(argv[2], "remove") == 0) {
		rc = shmkv_unlink(argv[1]);
		if (rc)
			fprintf(stderr, "crash_worker: unlink %s: %s\n",
				argv[1], shmkv_strerror(rc));
		return rc ? WORKER_OPEN : WORKER_DONE;
	}
	shmkv__tmpfile_off = strcmp(argv[2], "create-named") == 0;
	if (strncmp(argv[2], "create", 6) == 0)
		return run_create(argv[1]);
	rc = shmkv_open(argv[1], 0, &kv);
	if (rc) {
		fprintf(stderr, "crash_worker: open %s: %s\n", argv[1],
			shmkv_strerror(rc));
		return WORKER_OPEN;
	}
	if (strcmp(argv[2], "sweep") == 0)
		rc = run_sweep(kv);
	else
		rc = run_sets(kv, argv[2], argv[3], start, count);
	shmkv_close(kv);
	return rc;
}
