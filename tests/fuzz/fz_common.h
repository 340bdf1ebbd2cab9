/*
 * fz_common.h - what the libFuzzer harnesses share: reading the input,
 * store names, snapshots, silencing the tools, and the failure macro.
 *
 * A harness fails by crashing: a sanitizer report, a SEGV in the guard
 * pages around a mapped segment (fz_guard.c), a libFuzzer timeout, or
 * FZ_ASSERT (abort with a message) when a property it checks is broken.
 * Errors returned by the library are never failures in themselves.
 */
#ifndef SHMKV_FZ_COMMON_H
#define SHMKV_FZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shmkv.h"

/* Aborts with the broken property: libFuzzer saves the input as a crash. */
#define FZ_ASSERT(cond, ...)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(fz_err,                                        \
				"fuzz: %s:%d: property broken: ", __FILE__,    \
				__LINE__);                                     \
			fprintf(fz_err, __VA_ARGS__);                          \
			fputc('\n', fz_err);                                   \
			fflush(fz_err);                                        \
			abort();                                               \
		}                                                              \
	} while (0)

/* Where the harness reports (the real stderr even when the tools' output
 * is silenced by fz_silence()). */
extern FILE *fz_err;

/*
 * The input, consumed front to back. Reading past the end gives zeros, so
 * every decoder is total: any byte string is a valid input.
 */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

uint8_t fz_u8(struct fz_in *in);
uint16_t fz_u16(struct fz_in *in);
uint32_t fz_u32(struct fz_in *in);
uint64_t fz_u64(struct fz_in *in);
/* Up to @want bytes (fewer at the end of the input): a pointer into the
 * input and their count in *@got. */
const uint8_t *fz_bytes(struct fz_in *in, size_t want, size_t *got);

/* "/shmkv-fuzz-<harness>-<pid>-<tag>": unique per process, so run.sh can
 * remove what a crashed run left behind. */
void fz_name(char name[SHMKV_NAME_MAX + 1], const char *harness,
	     const char *tag);

/*
 * Sends the tools' stdout and stderr messages to /dev/null (they would
 * drown libFuzzer's output), keeping fz_err on the real stderr for
 * libFuzzer, the sanitizers and FZ_ASSERT. FUZZ_VERBOSE=1 keeps them.
 */
void fz_silence(void);

/* A copy of a store's whole segment, put back before each run so that
 * every input starts from the same store (crashes then reproduce). */
struct fz_snapshot {
	unsigned char *copy;
	size_t size;
};
void fz_snapshot_take(struct fz_snapshot *s, shmkv_t *kv);
void fz_snapshot_restore(const struct fz_snapshot *s, shmkv_t *kv);

/* The segment of @kv (library internals: fuzzers corrupt it on purpose). */
unsigned char *fz_base(shmkv_t *kv, size_t *size);

/* A tiny geometry: 16..64 slots, small keys and values, 1..2 pages. */
struct shmkv_config fz_tiny_config(uint32_t slots, uint32_t key_max,
				   uint32_t value_max, uint32_t pages);
/* @cfg with max_memory its initial size: a store that never grows, whose
 * file is all allocated (so a snapshot of it touches no reserved hole). */
struct shmkv_config fz_fixed_memory(struct shmkv_config cfg);

/* Creates (or re-creates, after a stale one) store @name. Aborts if it
 * cannot: the harness has nothing to fuzz without it. */
shmkv_t *fz_create(const char *name, const struct shmkv_config *cfg);

/*
 * The bound on one command's time (fz_watch.c): between fz_watch_begin()
 * and fz_watch_end(), the calling thread may spend FZ_COMMAND_CPU_MS of
 * CPU time; past it, a watchdog thread aborts (the command loops) and
 * names @command. A command normally takes well under a millisecond, on
 * any content: every loop over shared words has a bound that ends it.
 * Only one thread of a harness may be watched.
 */
#define FZ_COMMAND_CPU_MS 1000
/*
 * Changes the word at @p (which need not be aligned) by @mode & 3: 0 sets
 * it to @v, 1 XORs @v in, 2 adds the small signed delta in @v's top byte,
 * 3 sets its low byte to @v's. The fuzzers' one way to scribble a word.
 */
void fz_patch64(void *p, uint8_t mode, uint64_t v);
void fz_patch32(void *p, uint8_t mode, uint64_t v);
void fz_patch16(void *p, uint8_t mode, uint64_t v);

void fz_watch_begin(const char *command);
void fz_watch_end(void);

#endif /* SHMKV_FZ_COMMON_H */
