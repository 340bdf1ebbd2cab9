/*
 * intconv.c - canonical decimal integers, as Redis's util.c string2ll().
 */
#include "intconv.h"

#include <limits.h>
#include <stdbool.h>
#include <string.h>

/* Words are loaded with the first character in the low byte. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "intconv.c reads digits as little-endian words"
#endif

#define ZEROS 0x3030303030303030ULL /* "00000000" */

/* Are the 8 bytes of @w (first character in the low byte) all digits? */
static inline int eight_digits(uint64_t w)
{
	return (((w + 0x4646464646464646ULL) | (w - ZEROS)) &
		0x8080808080808080ULL) == 0;
}

/* The value of 8 digits, as bytes 0-9 (first in the low byte), in three
 * multiplies instead of a chain of eight (D. Lemire, "Fast integer
 * parsing", 2018). */
static inline uint64_t eight_digits_value(uint64_t d)
{
	d = d * 10 + (d >> 8);
	return ((d & 0x000000ff000000ffULL) * (100 + (1000000ULL << 32)) +
		((d >> 16) & 0x000000ff000000ffULL) * (1 + (10000ULL << 32))) >>
	       32;
}

/* 4 to 8 bytes at @p (@n of them, the first in the low byte), touching no
 * byte past p[n - 1]: two overlapping 4-byte loads ORed together (a byte
 * both hold lands at the same place in each, so OR keeps it as it is). */
static inline uint64_t load_4to8(const char *p, size_t n)
{
	uint32_t lo, hi;

	memcpy(&lo, p, 4);
	memcpy(&hi, p + n - 4, 4);
	return lo | ((uint64_t)hi << (8 * (n - 4)));
}

/* Nine digits or more, or a lone "-": the first digit is checked, then
 * eight digits at a time and the rest one by one, with overflow checks
 * only where 64 bits can overflow. Not inlined: keeps its registers off
 * the short path. */
static __attribute__((noinline)) int parse_long(const char *s, size_t len,
						int64_t *out)
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
		if (!eight_digits(w))
			break; /* the loops below find the offending byte */
		v = v * 100000000 + eight_digits_value(w - ZEROS);
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

int shmkv__string2ll(const char *s, size_t len, int64_t *out)
{
	size_t neg, n, pad;
	uint64_t w;

	/* Redis caps the length so that an int-encoded value always prints
	 * back to the same bytes; longer strings are never integers. */
	if (len == 0 || len > SHMKV_INT_STRLEN)
		return 0;
	neg = s[0] == '-';
	n = len - neg;	/* digits */
	if (n - 1 >= 8) /* none (a lone "-"), or more than 8 */
		return parse_long(s, len, out);
	/* First digit 1-9: rejects leading zeros and "-0"; "0" alone is the
	 * one string that starts with '0' and is an integer. */
	if ((unsigned)(unsigned char)s[neg] - '1' > 8) {
		if (len == 1 && s[0] == '0') {
			*out = 0;
			return 1;
		}
		return 0;
	}
	if (n <= 3) {
		/* A few digits: one at a time costs least. */
		w = (uint64_t)(s[neg] - '0');
		for (size_t i = neg + 1; i < len; i++) {
			unsigned d = (unsigned)(unsigned char)s[i] - '0';

			if (d > 9)
				return 0;
			w = w * 10 + d;
		}
		*out = neg ? -(int64_t)w : (int64_t)w;
		return 1;
	}
	/* 4 to 8 digits, moved to the top of the word: as 8 digits with
	 * leading zeros. The bytes shifted out are not ours (nothing was
	 * loaded there), and what they carry or borrow only goes up. */
	pad = 8 * (8 - n);
	w = load_4to8(s + neg, n);
	if (((w + 0x4646464646464646ULL) | (w - ZEROS)) << pad &
	    0x8080808080808080ULL)
		return 0; /* not all digits: see eight_digits() */
	w = eight_digits_value((w - ZEROS) << pad);
	*out = neg ? -(int64_t)w : (int64_t)w;
	return 1;
}

/* "00" "01" ... "99": two digits per lookup. */
static const char two_digits[200] = {
#define D10(t) t "0" t "1" t "2" t "3" t "4" t "5" t "6" t "7" t "8" t "9"
	D10("0") D10("1") D10("2") D10("3") D10("4") D10("5") D10("6") D10("7")
		D10("8") D10("9")
#undef D10
};

/* @n < 100 as its 1 or 2 digits at @p. Return: the end. Stores 2 bytes
 * either way, without a branch: for one digit the second byte is junk,
 * past the end, that the next pair overwrites (or nobody reads). */
static inline char *put_lead(char *p, size_t n)
{
	size_t one = n < 10;

	memcpy(p, two_digits + 2 * n + one, 2);
	return p + 2 - one;
}

/* @n < 100 as exactly 2 digits at @p. Return: the end. */
static inline char *put_pair(char *p, size_t n)
{
	memcpy(p, two_digits + 2 * n, 2);
	return p + 2;
}

/*
 * Digits by fixed point (J. Anhalt's itoa): y = n * ceil(2^32 / 10^k) holds
 * n / 10^k in its high word and n % 10^k, as a fraction of 2^32, in its
 * low word; each multiply of that fraction by 100 brings the next two
 * digits up into the high word. Rounding the reciprocal up makes the
 * fraction too large by e < n / 2^32 * (ceil - 2^32 / 10^k): for n < 10^6
 * and k = 4, e < 2^32 * 0.63e-4 (e < 0.63 after the two multiplies by 100,
 * so less than one unit of the last pair); for n < 10^4 and k = 2, far
 * less. The excess never reaches a digit, and each pair is exact (the
 * tests check every n below 10^6).
 */
#define RECIP_1E2 42949673ULL /* ceil(2^32 / 10^2), for n < 10^4 */
#define RECIP_1E4 429497ULL   /* ceil(2^32 / 10^4), for n < 10^6 */

/* The next two digits of fraction @y (see above) at @p. Return: the end. */
static inline char *put_next(char *p, uint64_t *y)
{
	*y = (uint64_t)(uint32_t)*y * 100;
	return put_pair(p, (size_t)(*y >> 32));
}

/* @n < 10^8 as its 1 to 8 digits at @p. Return: the end. From the front,
 * two digits per step: the leading pair takes 1 or 2 places, each one
 * after it 2. Always inlined: both callers want it without a call. */
static inline __attribute__((always_inline)) char *put_upto8(char *p,
							     uint32_t n)
{
	uint64_t y;

	if (n < 100)
		return put_lead(p, n);
	if (n < 10000) {
		y = n * RECIP_1E2;
		return put_next(put_lead(p, (size_t)(y >> 32)), &y);
	}
	if (n < 1000000) {
		y = n * RECIP_1E4;
		p = put_lead(p, (size_t)(y >> 32));
		return put_next(put_next(p, &y), &y);
	}
	/* 7 or 8 digits: 3-4, then exactly 4. */
	y = (n / 10000) * RECIP_1E2;
	p = put_next(put_lead(p, (size_t)(y >> 32)), &y);
	y = (n % 10000) * RECIP_1E2;
	return put_next(put_pair(p, (size_t)(y >> 32)), &y);
}

/* @n < 10^8 as exactly 8 digits at @p. Return: the end. */
static inline char *put_eight(char *p, uint32_t n)
{
	uint64_t y = (n / 10000) * RECIP_1E2;

	p = put_next(put_pair(p, (size_t)(y >> 32)), &y);
	y = (n % 10000) * RECIP_1E2;
	return put_next(put_pair(p, (size_t)(y >> 32)), &y);
}

/* @u >= 10^8 at @p (after the sign, if any, in @buf). Return: the length.
 * In groups of 8 digits, the first without leading zeros: up to 16
 * digits (a time in ms), or up to 20. Not inlined: keeps its registers
 * off the short path. */
static __attribute__((noinline)) size_t long_ll2string(const char *buf, char *p,
						       uint64_t u)
{
	uint64_t lead = u / 100000000, mid = lead % 100000000;
	bool three = lead >= 100000000;

	if (three)
		lead /= 100000000;
	p = put_upto8(p, (uint32_t)lead);
	if (three)
		p = put_eight(p, (uint32_t)mid);
	p = put_eight(p, (uint32_t)(u % 100000000));
	return (size_t)(p - buf);
}

size_t shmkv__ll2string(char *buf, int64_t v)
{
	/* Work on the magnitude as unsigned so INT64_MIN needs no special case. */
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	char *p = buf + (v < 0);

	buf[0] = '-'; /* the digits overwrite it when there is no sign */
	if (u >= 100000000)
		return long_ll2string(buf, p, u);
	return (size_t)(put_upto8(p, (uint32_t)u) - buf);
}
