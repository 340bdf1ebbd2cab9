/*
 * test_intconv.c - the decimal integer formatter and parser (src/intconv.c)
 * against references that are obviously right and slow.
 *
 * Formatting is checked against snprintf("%lld"): every value of up to 6
 * digits, each side of every power of ten and of the 48-bit inline range,
 * and millions of random values of every length. Parsing is checked
 * against two oracles: Redis's string2ll rules written out one byte at a
 * time (as util.c has them), and libc (strtoll plus printing back), on
 * boundary strings and on random strings biased to near-misses. Every
 * string is parsed from a heap buffer of exactly its length, and every
 * number is formatted into one of exactly SHMKV_INT_STRLEN bytes, so that
 * ASan (make sanitize-test) sees any access past either end.
 */
#include "helpers/rng.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/intconv.h"
#include "../src/layout.h"

/*
 * Formatting.
 */

/* shmkv__ll2string(@v) gives snprintf's bytes and length. */
static void assert_formats(int64_t v)
{
	char want[32];
	char *got = malloc(SHMKV_INT_STRLEN);
	int wlen = snprintf(want, sizeof(want), "%" PRId64, v);
	size_t n;

	cr_assert_not_null(got);
	n = shmkv__ll2string(got, v);
	cr_assert(n == (size_t)wlen && memcmp(got, want, n) == 0,
		  "%" PRId64 ": got \"%.*s\" (%zu bytes), want \"%s\"", v,
		  (int)(n <= SHMKV_INT_STRLEN ? n : SHMKV_INT_STRLEN), got, n,
		  want);
	free(got);
}

Test(intconv, formats_every_number_of_up_to_six_digits)
{
	for (int64_t v = -1000000; v <= 1000000; v++)
		assert_formats(v);
}

Test(intconv, formats_both_sides_of_every_power_of_ten_and_two)
{
	uint64_t p = 1;

	for (int k = 0; k <= 19; k++, p *= 10) {
		for (int d = -1; d <= 1; d++) {
			uint64_t u = p + (uint64_t)d;

			/* Powers of ten up to 10^19: some are above INT64_MAX,
			 * whose negatives still fit down to INT64_MIN. */
			if (u <= (uint64_t)INT64_MAX)
				assert_formats((int64_t)u);
			if (u <= (uint64_t)INT64_MAX + 1)
				assert_formats((int64_t)(0 - u));
		}
	}
	for (int k = 0; k < 64; k++)
		for (int d = -1; d <= 1; d++) {
			uint64_t u = ((uint64_t)1 << k) + (uint64_t)d;

			assert_formats((int64_t)u);
			assert_formats((int64_t)(0 - u));
		}
}

Test(intconv, formats_the_ends_of_int64_and_of_the_inline_range)
{
	static const int64_t ends[] = {
		INT64_MIN,	     INT64_MIN + 1,
		INT64_MAX,	     INT64_MAX - 1,
		VAL_INT_MIN,	     VAL_INT_MIN - 1,
		VAL_INT_MIN + 1,     VAL_INT_MAX,
		VAL_INT_MAX - 1,     VAL_INT_MAX + 1,
		INT32_MIN,	     INT32_MAX,
		(int64_t)UINT32_MAX, -(int64_t)UINT32_MAX,
	};

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		assert_formats(ends[i]);
}

Test(intconv, formats_random_numbers_of_every_length)
{
	uint64_t x = rng_env_seed("SHMKV_TEST_SEED");

	cr_log_info("seed %" PRIu64 " (SHMKV_TEST_SEED)", x);
	for (int i = 0; i < 3000000; i++) {
		/* A random magnitude first, so short numbers are as common
		 * as long ones. */
		int64_t v = (int64_t)(rng_next(&x) >> rng_below(&x, 64));

		assert_formats(rng_next(&x) & 1 ? v
						: (int64_t)(0 - (uint64_t)v));
	}
}

/*
 * Parsing.
 */

/* Redis's string2ll (util.c), rule by rule and one byte at a time: the
 * oracle. A string of 0 or more than 20 bytes is not an integer; "0" alone
 * is; otherwise an optional '-', then a digit 1-9, then digits, with
 * overflow of 64 bits refused at every step and the sign applied last. */
static int redis_string2ll(const char *s, size_t slen, int64_t *value)
{
	const char *p = s;
	size_t plen = 0;
	int negative = 0;
	unsigned long long v;

	if (slen == 0 || slen >= 21) /* LONG_STR_SIZE */
		return 0;
	if (slen == 1 && p[0] == '0') {
		*value = 0;
		return 1;
	}
	if (p[0] == '-') {
		negative = 1;
		p++;
		plen++;
		if (plen == slen)
			return 0;
	}
	if (p[0] >= '1' && p[0] <= '9') {
		v = (unsigned long long)(p[0] - '0');
		p++;
		plen++;
	} else {
		return 0;
	}
	while (plen < slen && p[0] >= '0' && p[0] <= '9') {
		if (v > ULLONG_MAX / 10)
			return 0;
		v *= 10;
		if (v > ULLONG_MAX - (unsigned long long)(p[0] - '0'))
			return 0;
		v += (unsigned long long)(p[0] - '0');
		p++;
		plen++;
	}
	if (plen < slen)
		return 0;
	if (negative) {
		if (v > (unsigned long long)LLONG_MAX + 1)
			return 0;
		*value = (int64_t)(0 - v);
	} else {
		if (v > (unsigned long long)LLONG_MAX)
			return 0;
		*value = (int64_t)v;
	}
	return 1;
}

/* A second oracle from libc: an integer is what strtoll takes whole,
 * without overflow, and prints back to the same bytes. */
static int libc_string2ll(const char *s, size_t len, int64_t *out)
{
	char buf[32], back[32], *end;
	long long v;

	if (len == 0 || len >= sizeof(buf) || memchr(s, '\0', len))
		return 0;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (errno || *end ||
	    (size_t)snprintf(back, sizeof(back), "%lld", v) != len ||
	    memcmp(back, buf, len))
		return 0;
	*out = v;
	return 1;
}

/* The parser and both oracles agree on @s (@len bytes), parsed from a heap
 * copy of exactly @len bytes. */
static void assert_parses_as_redis(const char *s, size_t len)
{
	char *exact = malloc(len ? len : 1);
	int64_t got = 0, want = 0, libc = 0;
	int rg, rw, rl;

	cr_assert_not_null(exact);
	memcpy(exact, s, len);
	rg = shmkv__string2ll(exact, len, &got);
	rw = redis_string2ll(s, len, &want);
	rl = libc_string2ll(s, len, &libc);
	free(exact);
	cr_assert(rw == rl && (!rw || want == libc),
		  "the oracles disagree on \"%.*s\"", (int)len, s);
	cr_assert(rg == rw && (!rg || got == want),
		  "\"%.*s\" (%zu bytes): parser %d/%" PRId64
		  ", Redis %d/%" PRId64,
		  (int)len, s, len, rg, got, rw, want);
}

#define PARSES(s) assert_parses_as_redis((s), sizeof(s) - 1)

Test(intconv, parses_the_edges_of_int64_and_of_redis_rules)
{
	PARSES("0");
	PARSES("-0");
	PARSES("00");
	PARSES("01");
	PARSES("-01");
	PARSES("+1");
	PARSES(" 1");
	PARSES("1 ");
	PARSES("-");
	PARSES("--1");
	PARSES("");
	PARSES("1a");
	PARSES("12345678");
	PARSES("-12345678");
	PARSES("123456789");
	PARSES("1234567a");
	PARSES("a2345678");
	PARSES("9223372036854775807");
	PARSES("9223372036854775808");
	PARSES("-9223372036854775808");
	PARSES("-9223372036854775809");
	PARSES("18446744073709551615");
	PARSES("18446744073709551616");
	PARSES("99999999999999999999");
	PARSES("-99999999999999999999");
	PARSES("100000000000000000000");
	PARSES("-0000000000000000001");
	PARSES("140737488355327");
	PARSES("-140737488355328");
	/* 9 to 16 digits go in two groups (the last 8, and what is before
	 * them): a bad byte in either, at each group's ends, and the lock
	 * values of the SETNX page (Unix times in s and ms). */
	PARSES("1700000000");
	PARSES("-1700000000");
	PARSES("1700000000123");
	PARSES("9999999999999999");
	PARSES("-9999999999999999");
	PARSES("10000000000000000");
	PARSES("1000000000000000");
	PARSES("100000000");
	PARSES("x00000000");
	PARSES("1x0000000");
	PARSES("10000000x");
	PARSES("1234567x90123");
	PARSES("12345x7890123");
	PARSES("123456789012345x");
	PARSES("x234567890123456");
	PARSES("1234567/90");
	PARSES("1234567:90");
	PARSES("0123456789");
	PARSES("-0123456789");
	PARSES("1 23456789");
	PARSES("12345678 9");
	/* A NUL inside, and bytes that are not ASCII. */
	assert_parses_as_redis("1\0", 2);
	assert_parses_as_redis("\0001", 2);
	PARSES("1\x80");
	PARSES("\xb1\xb2");
	PARSES("12\xff");
	PARSES("1234\xba");
}

Test(intconv, parses_every_power_of_ten_and_its_neighbours_back)
{
	uint64_t p = 1;

	for (int k = 0; k <= 19; k++, p *= 10)
		for (int d = -1; d <= 1; d++) {
			char s[32];
			uint64_t u = p + (uint64_t)d;
			int n = snprintf(s, sizeof(s), "%" PRIu64, u);

			assert_parses_as_redis(s, (size_t)n);
			n = snprintf(s, sizeof(s), "-%" PRIu64, u);
			assert_parses_as_redis(s, (size_t)n);
		}
}

/* A random string, biased to near-misses: a printed int64 (of a random
 * magnitude) as it is, or with a byte changed, inserted or deleted, or
 * with leading zeros; else random bytes, mostly digits. */
static size_t near_miss(uint64_t *x, char *buf, size_t cap)
{
	static const char odd[] = "0123456789-+ a\x80\xff/:";
	size_t len;
	int64_t v = (int64_t)(rng_next(x) >> rng_below(x, 64));

	if (rng_below(x, 4) == 0) {
		len = rng_below(x, 23);
		for (size_t i = 0; i < len; i++)
			buf[i] = rng_below(x, 8) == 0
					 ? odd[rng_below(x, sizeof(odd) - 1)]
					 : (char)('0' + rng_below(x, 10));
		return len;
	}
	len = (size_t)snprintf(buf, cap, "%" PRId64,
			       rng_next(x) & 1 ? v
					       : (int64_t)(0 - (uint64_t)v));
	switch (rng_below(x, 6)) {
	case 0: /* a byte changed */
		buf[rng_below(x, len)] = odd[rng_below(x, sizeof(odd) - 1)];
		break;
	case 1: /* a byte inserted */
		if (len + 1 < cap) {
			size_t at = rng_below(x, len + 1);

			memmove(buf + at + 1, buf + at, len - at);
			buf[at] = odd[rng_below(x, sizeof(odd) - 1)];
			len++;
		}
		break;
	case 2: /* a byte deleted */
		if (len > 0) {
			size_t at = rng_below(x, len);

			memmove(buf + at, buf + at + 1, len - at - 1);
			len--;
		}
		break;
	case 3: /* a leading zero, after the sign if any */
		if (len + 1 < cap) {
			size_t at = buf[0] == '-';

			memmove(buf + at + 1, buf + at, len - at);
			buf[at] = '0';
			len++;
		}
		break;
	default: /* as printed */
		break;
	}
	return len;
}

Test(intconv, parses_random_near_misses_as_redis_does)
{
	uint64_t x = rng_env_seed("SHMKV_TEST_SEED");
	char buf[32];

	cr_log_info("seed %" PRIu64 " (SHMKV_TEST_SEED)", x);
	for (int i = 0; i < 2000000; i++)
		assert_parses_as_redis(buf, near_miss(&x, buf, sizeof(buf)));
}

Test(intconv, parses_what_it_formats_back_to_the_same_number)
{
	uint64_t x = rng_env_seed("SHMKV_TEST_SEED");
	char buf[SHMKV_INT_STRLEN];

	cr_log_info("seed %" PRIu64 " (SHMKV_TEST_SEED)", x);
	for (int i = 0; i < 1000000; i++) {
		int64_t v = (int64_t)(rng_next(&x) >> rng_below(&x, 64)), got;
		size_t n;

		v = rng_next(&x) & 1 ? v : (int64_t)(0 - (uint64_t)v);
		n = shmkv__ll2string(buf, v);
		cr_assert(shmkv__string2ll(buf, n, &got) && got == v,
			  "%" PRId64 " does not come back", v);
	}
}
