/*
 * crash_value.h - the value crash_worker SETs for its key number @i, which
 * test_crashpoints then expects to read back: one definition for both.
 *
 * Header-only and free of Criterion: the standalone worker includes it.
 */
#ifndef SHMKV_TESTS_CRASH_VALUE_H
#define SHMKV_TESTS_CRASH_VALUE_H

#include <stdbool.h>
#include <stdio.h>

/* Room for any value below (the prefix is a short test literal). */
#define CRASH_VALUE_CAP 128

/* What a worker's values are: inline integers, strings short enough to
 * live in their slot (20 bytes: a store of key_max 64 has 128-byte slots),
 * or strings too long for it (110 bytes: the size class of testutil.h's
 * TU_BLOCK_TEXT, so that a worker's SET over one reuses its block), kept
 * in value blocks. */
enum crash_kind { CRASH_INT, CRASH_INLINE, CRASH_BLOCK };

/* Key @i's value into @buf (CRASH_VALUE_CAP bytes): "<i>" for CRASH_INT;
 * else "<in|blk>-<prefix><i>-" padded with 'x', never a number.
 * Return: its length. */
static inline size_t crash_value(char *buf, enum crash_kind kind,
				 const char *prefix, unsigned long i)
{
	int n = kind == CRASH_INT
			? snprintf(buf, CRASH_VALUE_CAP, "%lu", i)
			: snprintf(buf, CRASH_VALUE_CAP, "%s-%s%lu-",
				   kind == CRASH_INLINE ? "in" : "blk", prefix,
				   i);
	size_t len = n < 0 ? 0 : (size_t)n;
	size_t want = kind == CRASH_INLINE ? 20 : 110;

	while (kind != CRASH_INT && len < want)
		buf[len++] = 'x';
	return len;
}

/* The kind a worker's mode names ("int", "inline", anything else: block). */
static inline enum crash_kind crash_kind_of(const char *mode)
{
	if (mode[0] == 'i' && mode[1] == 'n' && mode[2] == 't' && !mode[3])
		return CRASH_INT;
	if (mode[0] == 'i' && mode[1] == 'n' && mode[2] == 'l')
		return CRASH_INLINE;
	return CRASH_BLOCK;
}

#endif /* SHMKV_TESTS_CRASH_VALUE_H */
