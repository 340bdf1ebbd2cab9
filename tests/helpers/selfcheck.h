/*
 * selfcheck.h - values that prove they were written whole, for stress
 * programs: a reader that gets a torn, recycled or never-written value
 * fails sc_value_ok() instead of passing by luck.
 *
 * A value is either a canonical decimal integer (as INCR leaves it) or
 * "S<seq>:" followed by letters that depend on seq and the position,
 * 13 + seq % 300 bytes in all, so strings span every block size class up
 * to a value_max of 512.
 */
#ifndef SHMKV_TESTS_SELFCHECK_H
#define SHMKV_TESTS_SELFCHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Longest string sc_make_string() writes, plus room for its NUL. */
#define SC_STRING_MAX 320

/* Whether @s is the canonical decimal form of an int64, Redis's rule and
 * so what INCR may leave: no sign but '-', no leading zero, no -0. */
static inline bool sc_is_canonical_int(const char *s, size_t len)
{
	uint64_t v = 0;
	size_t i = len > 0 && s[0] == '-';

	if (len == 0 || len > 20 || (len == 1 && s[0] == '0'))
		return len == 1;
	/* 19 digits at most: no overflow below, and INT64_MAX has 19. */
	if (i >= len || len - i > 19 || s[i] < '1' || s[i] > '9')
		return false;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	return s[0] == '-' ? v <= (uint64_t)INT64_MAX + 1 : v <= INT64_MAX;
}

/* Writes the string of @seq into @buf (SC_STRING_MAX bytes); returns its
 * length (no NUL is counted). */
static inline size_t sc_make_string(char *buf, uint32_t seq)
{
	size_t len = 13 + seq % 300;
	size_t i = (size_t)snprintf(buf, SC_STRING_MAX, "S%" PRIu32 ":", seq);

	for (; i < len; i++)
		buf[i] = (char)('a' + (seq + i) % 26);
	return len;
}

/* Is @v (@len bytes) a value sc_make_string() or INCR could write? */
static inline bool sc_value_ok(const char *v, size_t len)
{
	uint64_t seq = 0;
	size_t i = 1;

	if (sc_is_canonical_int(v, len))
		return true;
	if (len < 3 || v[0] != 'S')
		return false;
	for (; i < len && i < 12 && v[i] >= '0' && v[i] <= '9'; i++)
		seq = seq * 10 + (uint64_t)(v[i] - '0');
	if (i == 1 || i >= len || v[i] != ':' || seq > UINT32_MAX ||
	    len != 13 + seq % 300)
		return false;
	for (size_t j = i + 1; j < len; j++)
		if (v[j] != (char)('a' + (seq + j) % 26))
			return false;
	return true;
}

#endif /* SHMKV_TESTS_SELFCHECK_H */
