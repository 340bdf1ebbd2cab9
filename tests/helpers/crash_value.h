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
#define CRASH_VALUE_CAP 64

/* Key @i's value into @buf (CRASH_VALUE_CAP bytes): "<i>", an inline
 * integer, when @as_int; else "blk-<prefix><i>-" padded with 'x' to 40
 * bytes, never a number, so the store keeps it in a value block.
 * Return: its length. */
static inline size_t crash_value(char *buf, bool as_int, const char *prefix,
				 unsigned long i)
{
	int n = as_int ? snprintf(buf, CRASH_VALUE_CAP, "%lu", i)
		       : snprintf(buf, CRASH_VALUE_CAP, "blk-%s%lu-", prefix,
				  i);
	size_t len = n < 0 ? 0 : (size_t)n;

	while (!as_int && len < 40)
		buf[len++] = 'x';
	return len;
}

#endif /* SHMKV_TESTS_CRASH_VALUE_H */
