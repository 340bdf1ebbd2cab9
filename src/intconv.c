/*
 * intconv.c - canonical decimal integers, as Redis's util.c string2ll().
 */
#include "intconv.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

/* Nine digits or more, or a lone "-": the first digit is checked, then
 * eight digits at a time and the rest one by one, with overflow checks
 * only where 64 bits can overflow. */
static int parse_long(const char *s, size_t len, int64_t *out)
{
	const char *p = s;
	size_t left = len;
	int negative = 0;
	uint64_t v;

	if (p[0] == '-') {
		negative = 1;
		p++;
		left--;
		if (left == 0)
			return 0;
	}
	/* First digit 1-9: rejects leading zeros and "-0". */
	if (p[0] < '1' || p[0] > '9')
		return 0;
	v = (uint64_t)(p[0] - '0');
	p++;
	left--;
	/* Eight digits at a time while v * 10^8 + 99999999 fits 64 bits. */
	while (left >= 8 && v < 100000000000ULL) {
		uint64_t w;

		memcpy(&w, p, 8);
		if (!shmkv__all_digits(w, 0))
			break; /* the loops below find the offending byte */
		v = v * 100000000 + shmkv__eight_digits_value(w - SHMKV__ZEROS);
		p += 8;
		left -= 8;
	}
	/* Up to 19 digits cannot overflow 64 bits: no checks needed there. */
	for (; left > 0 && v < 100000000000000000ULL; p++, left--) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	for (; left > 0; p++, left--) {
		if (*p < '0' || *p > '9')
			return 0;
		if (v > UINT64_MAX / 10)
			return 0;
		v *= 10;
		if (v > UINT64_MAX - (uint64_t)(*p - '0'))
			return 0;
		v += (uint64_t)(*p - '0');
	}
	if (negative) {
		/* -(INT64_MIN) does not fit in int64: compare unsigned. */
		if (v > (uint64_t)INT64_MAX + 1)
			return 0;
		*out = (int64_t)(0 - v);
	} else {
		if (v > (uint64_t)INT64_MAX)
			return 0;
		*out = (int64_t)v;
	}
	return 1;
}

int shmkv__string2ll_rest(const char *s, size_t len, int64_t *out)
{
	size_t neg = s[0] == '-';

	/* The header checked the length. "0" alone is the one string that
	 * starts with '0' and is an integer. */
	if (len == 1 && s[0] == '0') {
		*out = 0;
		return 1;
	}
	if (len - neg > 16)
		return parse_long(s, len, out);
	return 0; /* a lone "-", or a short string not starting with 1-9 */
}

size_t shmkv__ll2string_long(char *buf, size_t neg, uint64_t u)
{
	/* In groups of 8 digits, the first without leading zeros: two up to
	 * 16 digits (a Unix time in ms has 13), three above. */
	uint64_t lead = u / 100000000;
	char *p = buf + neg;

	if (lead >= 100000000) {
		p += shmkv__put_upto8(p, (uint32_t)(lead / 100000000));
		p = shmkv__put_eight(p, (uint32_t)(lead % 100000000));
	} else {
		p += shmkv__put_upto8(p, (uint32_t)lead);
	}
	p = shmkv__put_eight(p, (uint32_t)(u % 100000000));
	return (size_t)(p - buf);
}
