/*
 * lock_instr - N acquire+release cycles of one lock kind, for callgrind:
 * bench/instr.sh runs it for two N and divides the difference in
 * instructions by the difference in N, so the set-up cancels out.
 *
 * usage: lock_instr safe|pattern CYCLES
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmkv.h"
#include "shmkv_lock.h"

int main(int argc, char **argv)
{
	struct shmkv_pattern pl;
	struct shmkv_lock lk;
	char name[64];
	shmkv_t *kv;
	long cycles;
	bool safe;

	if (argc != 3 || (cycles = atol(argv[2])) <= 0 ||
	    (strcmp(argv[1], "safe") != 0 && strcmp(argv[1], "pattern") != 0)) {
		fprintf(stderr, "usage: lock_instr safe|pattern CYCLES\n");
		return 2;
	}
	safe = strcmp(argv[1], "safe") == 0;
	snprintf(name, sizeof(name), "/shmkv-lock-instr-%d", (int)getpid());
	if (shmkv_create(name, NULL, &kv) != 0) {
		fprintf(stderr, "lock_instr: cannot create %s\n", name);
		return 1;
	}
	shmkv_unlink(name);
	if (shmkv_lock_init(kv, &lk, "instr") != 0 ||
	    shmkv_pattern_init(kv, &pl, "instr") != 0)
		return 1;
	for (long i = 0; i < cycles; i++) {
		int64_t expiry;
		int rc = safe ? shmkv_lock_acquire(&lk, 10000)
			      : shmkv_pattern_acquire(&pl, 10000, 0, &expiry);

		if (rc < 0 || (safe ? shmkv_lock_release(&lk)
				    : shmkv_pattern_release(&pl, expiry)) < 0) {
			fprintf(stderr, "lock_instr: cycle %ld failed\n", i);
			return 1;
		}
	}
	shmkv_close(kv);
	return 0;
}
