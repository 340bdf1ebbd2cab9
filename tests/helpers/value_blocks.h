/*
 * value_blocks.h - how many value blocks a store uses, and which values
 * need none: what every leak check compares (live keys that need a block
 * against blocks in use).
 *
 * Header-only and free of Criterion, so that the standalone programs and
 * the fuzzer helpers can include it too.
 */
#ifndef SHMKV_TESTS_VALUE_BLOCKS_H
#define SHMKV_TESTS_VALUE_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shmkv.h"

/* Value blocks in use, over every size class. shmkv_stats() fills at
 * most the array's entries, whatever @st->classes says. */
static inline uint64_t mp_blocks_used(const struct shmkv_stats *st)
{
	const uint32_t cap = sizeof(st->cls) / sizeof(st->cls[0]);
	uint32_t n = st->classes < cap ? st->classes : cap;
	uint64_t used = 0;

	for (uint32_t i = 0; i < n; i++)
		used += st->cls[i].used;
	return used;
}

/* The ends of the inline range: integers in [INLINE_MIN, INLINE_MAX]
 * live in the value word itself. */
#define INLINE_MAX (((int64_t)1 << 47) - 1)
#define INLINE_MIN (-((int64_t)1 << 47))

/* Whether @s is the canonical decimal form of a signed 48-bit integer:
 * those are the values the store keeps inline, without a value block
 * (unless the key has a TTL). */
static inline bool mp_is_int48(const char *s, size_t len)
{
	int64_t v = 0;
	size_t i = 0;
	bool neg = false;

	if (len == 0 || len > 16)
		return false;
	if (len == 1 && s[0] == '0')
		return true;
	if (s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i >= len || s[i] < '1' || s[i] > '9')
		return false;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	return neg ? -v >= INLINE_MIN : v <= INLINE_MAX;
}

#endif /* SHMKV_TESTS_VALUE_BLOCKS_H */
