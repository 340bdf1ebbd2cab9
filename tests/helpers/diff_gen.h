/*
 * diff_gen.h - the seeded random stream of Redis string commands that
 * tests/programs/diff_redis.c replays against shmkv_exec() and redis-server.
 *
 * The stream leans on the edges: an empty key and one with a NUL,
 * non-canonical and boundary integers, binary and value_max-long values,
 * conflicting options, and expire times that are invalid, negative, zero,
 * overflowing or already past. Relative TTLs are at least a minute; the
 * few TTLs of milliseconds come with a pause (sleep_ms) that lets them
 * expire on both sides before the next command.
 *
 * One seed gives one stream (splitmix64), except for absolute times,
 * which are taken from the clock. Not thread-safe: the generator's state
 * is global. No Criterion here: standalone programs link this.
 */
#ifndef SHMKV_DIFF_GEN_H
#define SHMKV_DIFF_GEN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define DG_MAX_ARGS 16
/* The keys the stream uses: few, so commands keep meeting each other's
 * values. */
#define DG_NKEYS 8

/* A command: an argument vector that owns its bytes (each argument is
 * also NUL-terminated, for printing). */
struct dg_cmd {
	int argc;
	char *argv[DG_MAX_ARGS];
	size_t len[DG_MAX_ARGS];
	unsigned sleep_ms; /* pause after the command, for short TTLs */
};

/*
 * Starts the stream of @seed. Values are at most @value_max bytes (the
 * store's). @skip is a comma-separated list of generator names to leave
 * out (set getex expire key keyvalue incrby misc del exists short), and
 * "ties" for no GT/LT against a deadline equal to the key's own; it is
 * copied (up to 255 bytes). @skip may be NULL.
 */
void dg_init(uint64_t seed, size_t value_max, const char *skip);

/* Leaves command @name (copied, at most 8 names) out of the stream's
 * wrong-arity and odd commands: for one the peer does not know as such
 * (DELIFEQ, which diff_redis runs as a script), only well-formed calls
 * compare. */
void dg_only_well_formed(const char *name);

/* The next command of the stream into @c (empty: argc 0). */
void dg_next(struct dg_cmd *c);

/* Key @i (0 <= @i < DG_NKEYS) of the stream: *@p and *@len. */
void dg_key(int i, const char **p, size_t *len);

/* Appends a copy of the @len bytes at @p (dropped beyond DG_MAX_ARGS);
 * exits with status 1 if memory runs out. */
void dg_cmd_add(struct dg_cmd *c, const void *p, size_t len);
void dg_cmd_adds(struct dg_cmd *c, const char *s);
/* Frees the arguments; @c is empty again. */
void dg_cmd_free(struct dg_cmd *c);

/* @len bytes as a quoted C string (the first 96 of them). */
void dg_print_bytes(FILE *f, const char *p, size_t len);
/* The command on one line, each argument quoted. */
void dg_cmd_print(FILE *f, const struct dg_cmd *c);

#endif /* SHMKV_DIFF_GEN_H */
