/*
 * intconv.h - integer <-> string conversions with Redis's exact rules.
 *
 * Redis keeps a string as an integer only when it is the canonical decimal
 * form of a 64-bit integer (no sign but '-', no leading zeros, no spaces,
 * no "-0"), so GET returns exactly the bytes that were SET. INCR accepts the
 * same set of strings. Both rules are this one function.
 */
#ifndef SHMKV_INTCONV_H
#define SHMKV_INTCONV_H

#include <stddef.h>
#include <stdint.h>

/* Longest canonical int64 in decimal: "-9223372036854775808". */
#define SHMKV_INT_STRLEN 20

/* Parses @s (@len bytes, not NUL-terminated) as Redis's string2ll does.
 * Return: 1 and *@out on success, 0 if @s is not a canonical int64. */
int shmkv__string2ll(const char *s, size_t len, int64_t *out);

/* Writes @v in decimal to @buf (at least SHMKV_INT_STRLEN bytes; no NUL).
 * It may also write a junk byte just past the digits (within those bytes).
 * Return: the length of the decimal form. */
size_t shmkv__ll2string(char *buf, int64_t v);

#endif
