/*
 * args.c - strict command-line numbers (see args.h).
 */
#include "helpers/args.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* strtoull in @base over all of @s, refusing what it would accept by
 * wrapping (a leading '-') or by skipping (leading space, '+'). */
static int parse_u64(const char *s, int base, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

int arg_u64(const char *s, uint64_t max, uint64_t *out)
{
	return parse_u64(s, 10, max, out);
}

int arg_int(const char *s, int min, int max, int *out)
{
	uint64_t v;

	if (parse_u64(s, 10, (uint64_t)max, &v) || v < (uint64_t)min)
		return -1;
	*out = (int)v;
	return 0;
}

int arg_seed(const char *s, uint64_t *out)
{
	int base = s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? 16 : 10;

	return parse_u64(base == 16 ? s + 2 : s, base, UINT64_MAX, out);
}

int arg_seconds(const char *s, double *out)
{
	double v;
	char *end;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0)
		return -1;
	*out = v;
	return 0;
}
