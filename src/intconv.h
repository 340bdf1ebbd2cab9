/*
 * intconv.h - integer <-> string conversions with Redis's exact rules.
 *
 * Redis keeps a string as an integer only when it is the canonical decimal
 * form of a 64-bit integer (no sign but '-', no leading zeros, no spaces,
 * no "-0"), so GET returns exactly the bytes that were SET. INCR accepts the
 * same set of strings. Both rules are this one function.
 *
 * The short cases (up to 8 digits: every counter, lock time in seconds
 * and id a benchmark or a test uses) are inline, so that GET and SET of an
 * inline integer format or parse it without a call; longer numbers, and
 * whatever else needs a closer look, are intconv.c's.
 */
#ifndef SHMKV_INTCONV_H
#define SHMKV_INTCONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Words are loaded and stored with the first character in the low byte. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "intconv.h reads and writes digits as little-endian words"
#endif

/* Longest canonical int64 in decimal: "-9223372036854775808". */
#define SHMKV_INT_STRLEN 20

#define SHMKV__ZEROS 0x3030303030303030ULL /* "00000000" */

/*
 * Parsing.
 */

/* Are the bytes of @w (digits moved up by @pad bits) all digits? A byte
 * below '0' borrows into its top bit on the subtraction, one above '9'
 * carries into it on the addition. */
static inline bool shmkv__all_digits(uint64_t w, unsigned pad)
{
	return ((((w + 0x4646464646464646ULL) | (w - SHMKV__ZEROS)) << pad) &
		0x8080808080808080ULL) == 0;
}

/* The value of 8 digits, as bytes 0-9 (first in the low byte), in three
 * multiplies instead of a chain of eight (D. Lemire, "Fast integer
 * parsing", 2018). */
static inline uint64_t shmkv__eight_digits_value(uint64_t d)
{
	d = d * 10 + (d >> 8);
	return ((d & 0x000000ff000000ffULL) * (100 + (1000000ULL << 32)) +
		((d >> 16) & 0x000000ff000000ffULL) * (1 + (10000ULL << 32))) >>
	       32;
}

/* 4 to 8 bytes at @p (@n of them, the first in the low byte), touching no
 * byte past p[n - 1]: two overlapping 4-byte loads ORed together (a byte
 * both hold lands at the same place in each, so OR keeps it as it is). */
static inline uint64_t shmkv__load_4to8(const char *p, size_t n)
{
	uint32_t lo, hi;

	memcpy(&lo, p, 4);
	memcpy(&hi, p + n - 4, 4);
	return lo | ((uint64_t)hi << (8 * (n - 4)));
}

/* What the inline parser leaves: "0", seventeen digits or more, a lone
 * "-", and anything starting with a zero or a non-digit. Same contract. */
int shmkv__string2ll_rest(const char *s, size_t len, int64_t *out);

/* The value of the @n (1 to 8) digits at @p, leading zeros allowed, in
 * *@v. Return: false if a byte is not a digit. */
static inline __attribute__((always_inline)) bool
shmkv__upto8_value(const char *p, size_t n, uint64_t *v)
{
	uint64_t w = 0;

	if (n <= 3) {
		/* A few digits: one at a time costs least. */
		for (size_t i = 0; i < n; i++) {
			unsigned d = (unsigned)(unsigned char)p[i] - '0';

			if (d > 9)
				return false;
			w = w * 10 + d;
		}
	} else {
		/* 4 to 8 digits, moved to the top of the word: as 8 digits
		 * with leading zeros. The bytes shifted out are not ours
		 * (nothing was loaded there), and what they carry or borrow
		 * only goes up. */
		unsigned pad = (unsigned)(8 * (8 - n));

		w = shmkv__load_4to8(p, n);
		if (!shmkv__all_digits(w, pad))
			return false;
		w = shmkv__eight_digits_value((w - SHMKV__ZEROS) << pad);
	}
	*v = w;
	return true;
}

/* Parses @s (@len bytes, not NUL-terminated) as Redis's string2ll does.
 * Up to 16 digits inline: counters, ids, and the SETNX page's lock
 * values, Unix times in seconds (10 digits) or milliseconds (13), in two
 * groups of at most 8 (no 16-digit number overflows 64 bits).
 * Return: 1 and *@out on success, 0 if @s is not a canonical int64. */
static inline __attribute__((always_inline)) int
shmkv__string2ll(const char *s, size_t len, int64_t *out)
{
	size_t neg, n;
	uint64_t w, lo;

	/* Redis caps the length so that an int-encoded value always prints
	 * back to the same bytes; longer strings are never integers. */
	if (len == 0 || len > SHMKV_INT_STRLEN)
		return 0;
	neg = s[0] == '-';
	n = len - neg; /* digits */
	/* None (a lone "-") or more than 16, or a first byte that is no
	 * digit 1-9 (a leading zero, "-0", or "0" alone): intconv.c's. */
	if (n - 1 >= 16 || (unsigned)(unsigned char)s[neg] - '1' > 8)
		return shmkv__string2ll_rest(s, len, out);
	if (n <= 8) {
		if (!shmkv__upto8_value(s + neg, n, &w))
			return 0;
	} else {
		if (!shmkv__upto8_value(s + neg, n - 8, &w) ||
		    !shmkv__upto8_value(s + len - 8, 8, &lo))
			return 0;
		w = w * 100000000 + lo;
	}
	*out = neg ? -(int64_t)w : (int64_t)w;
	return 1;
}

/*
 * Formatting.
 */

/*
 * The 8 decimal digits of @n < 10^8, leading zeros included, as byte
 * values 0-9 with the last digit in the low byte (the number's own order:
 * a byte swap gives the text's). Lanes of a word divide at once: @n's
 * halves (n / 10^4 and n % 10^4) go into two 32-bit lanes, each of which
 * splits into two 16-bit lanes of two digits, each of those into two
 * bytes of one digit. Each split is a multiply by a reciprocal exact over
 * its lane's range (x * 10486 >> 20 is x / 100 for x < 43699, x * 103 >>
 * 10 is x / 10 for x < 179) and x + q * (2^k - d), which leaves x - q * d
 * in a lane's low half and moves q to its high half. No product reaches
 * the next lane, and nothing is looked up in a table.
 */
static inline uint64_t shmkv__digits8(uint32_t n)
{
	uint64_t v = n, q = n / 10000;

	v += q * ((1ULL << 32) - 10000);
	q = ((v * 10486) >> 20) & 0x0000007f0000007fULL;
	v += q * ((1ULL << 16) - 100);
	q = ((v * 103) >> 10) & 0x000f000f000f000fULL;
	return v + q * ((1ULL << 8) - 10);
}

/* @n < 10^8 as its 1 to 8 digits at @p, which must have room for 8 bytes:
 * the word of digits is stored whole, the leading zeros shifted out (the
 * zero bytes that come in are junk past the digits). Return: the number
 * of digits. */
static inline size_t shmkv__put_upto8(char *p, uint32_t n)
{
	uint64_t d = shmkv__digits8(n);
	/* Leading zeros are the high zero bytes; | 1 keeps the last digit,
	 * so 0 is "0". */
	unsigned skip = (unsigned)__builtin_clzll(d | 1) / 8;

	d = __builtin_bswap64(d + SHMKV__ZEROS) >> (8 * skip);
	memcpy(p, &d, 8);
	return 8 - skip;
}

/* @n < 10^8 as exactly 8 digits at @p, leading zeros included. Return:
 * the end. */
static inline char *shmkv__put_eight(char *p, uint32_t n)
{
	uint64_t d = __builtin_bswap64(shmkv__digits8(n) + SHMKV__ZEROS);

	memcpy(p, &d, 8);
	return p + 8;
}

/* @u >= 10^8 into @buf after its sign (@neg: 1 if there is one): the long
 * numbers' part of shmkv__ll2string (intconv.c), out of line so that the
 * short ones' code stays small. Return: the length. */
size_t shmkv__ll2string_long(char *buf, size_t neg, uint64_t u);

/* Writes @v in decimal to @buf (at least SHMKV_INT_STRLEN bytes; no NUL).
 * It may also write junk past the digits (within those bytes).
 * Return: the length of the decimal form. */
static inline size_t shmkv__ll2string(char *buf, int64_t v)
{
	/* Work on the magnitude as unsigned so INT64_MIN needs no special case. */
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t neg = v < 0;

	buf[0] = '-'; /* the digits overwrite it when there is no sign */
	if (u >= 100000000)
		return shmkv__ll2string_long(buf, neg, u);
	/* 1 + 8 bytes written, of SHMKV_INT_STRLEN. */
	return neg + shmkv__put_upto8(buf + neg, (uint32_t)u);
}

#endif
