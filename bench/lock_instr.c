/*
 * lock_instr - N acquire+release cycles of one lock kind, for callgrind:
 * bench/instr.sh runs it for two N and divides the difference in
 * instructions by the difference in N, so the set-up cancels out.
 *
 * usage: lock_instr safe|pattern CYCLES
 *        lock_instr --quick    both kinds, a few cycles (the test suite's
 *                              smoke run of every bench program)
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmkv.h"
#include "shmkv_lock.h"

static int run(bool safe, long cycles)
{
	struct shmkv_pattern pl;
	struct shmkv_lock lk;
	char name[64];
	shmkv_t *kv;

	snprintf(name, sizeof(name), "/shmkv-lock-instr-%d", (int)getpid());
	if (shmkv_create(name, NULL, &kv) != 0) {
		fprintf(stderr, "lock_instr: cannot create %s\n", name);
		return 1;
	}
	/* Unlinked once closed: a removed store's handle says -ESTALE. */
	if (shmkv_lock_init(kv, &lk, "instr") != 0 ||
	    shmkv_pattern_init(kv, &pl, "instr") != 0) {
		shmkv_close(kv);
		shmkv_unlink(name);
		return 1;
	}
	for (long i = 0; i < cycles; i++) {
		int64_t expiry;
		int rc = safe ? shmkv_lock_acquire(&lk, 10000)
			      : shmkv_pattern_acquire(&pl, 10000, 0, &expiry);

		if (rc < 0 || (safe ? shmkv_lock_release(&lk)
				    : shmkv_pattern_release(&pl, expiry)) < 0) {
			fprintf(stderr, "lock_instr: cycle %ld failed\n", i);
			shmkv_close(kv);
			shmkv_unlink(name);
			return 1;
		}
	}
	shmkv_close(kv);
	shmkv_unlink(name);
	return 0;
}

int main(int argc, char **argv)
{
	long cycles;

	if (argc == 2 && strcmp(argv[1], "--quick") == 0)
		return run(true, 100) || run(false, 100);
	if (argc != 3 || (cycles = atol(argv[2])) <= 0 ||
	    (strcmp(argv[1], "safe") != 0 && strcmp(argv[1], "pattern") != 0)) {
		fprintf(stderr, "usage: lock_instr safe|pattern CYCLES | "
				"lock_instr --quick\n");
		return 2;
	}
	return run(strcmp(argv[1], "safe") == 0, cycles);
}
