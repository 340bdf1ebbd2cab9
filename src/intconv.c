/*
 * intconv.c - canonical decimal integers, as Redis's util.c string2ll().
 */
#include "intconv.h"

#include <limits.h>
#include <string.h>

/* Are the 8 bytes of @w (first character in the low byte) all digits? */
static inline int eight_digits(uint64_t w)
{
	return (((w + 0x4646464646464646ULL) | (w - 0x3030303030303030ULL)) &
		0x8080808080808080ULL) == 0;
}

/* The value of 8 digit characters, in three multiplies instead of a chain
 * of eight (D. Lemire, "Fast integer parsing", 2018). */
static inline uint64_t eight_digits_value(uint64_t w)
{
	w -= 0x3030303030303030ULL;
	w = w * 10 + (w >> 8);
	return ((w & 0x000000ff000000ffULL) * (100 + (1000000ULL << 32)) +
		((w >> 16) & 0x000000ff000000ffULL) * (1 + (10000ULL << 32))) >>
	       32;
}

int shmkv__string2ll(const char *s, size_t len, int64_t *out)
{
	const char *p = s;
	size_t left = len;
	int negative = 0;
	uint64_t v;

	/* Redis caps the length so that an int-encoded value always prints
	 * back to the same bytes; longer strings are never integers. */
	if (len == 0 || len > SHMKV_INT_STRLEN)
		return 0;
	if (len == 1 && p[0] == '0') {
		*out = 0;
		return 1;
	}
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
		if (!eight_digits(w))
			break; /* the loops below find the offending byte */
		v = v * 100000000 + eight_digits_value(w);
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

size_t shmkv__ll2string(char *buf, int64_t v)
{
	char tmp[SHMKV_INT_STRLEN];
	size_t n = 0, i;
	/* Work on the magnitude as unsigned so INT64_MIN needs no special case. */
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	i = 0;
	if (v < 0)
		buf[i++] = '-';
	while (n > 0)
		buf[i++] = tmp[--n];
	return i;
}
