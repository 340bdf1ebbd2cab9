/*
 * glob.c - Redis's glob patterns (SCAN MATCH, KEYS): '*', '?', '[abc]',
 * '[^a-z]', and '\' quoting the next byte; binary-safe. The semantics of
 * Redis's stringmatchlen(), without its case-folding mode.
 */
#include "pyshmkv.h"

/* A '*' per level of recursion at most: patterns are short, and a depth
 * bound keeps a pathological one ("*a*a*a...") from running away. */
#define GLOB_DEPTH_MAX 64

/* One '[...]' class at @p (after the '['), against byte @c; advances *@p
 * and *@pl past the closing ']' (or to the pattern's end). */
static int class_match(const char **pp, size_t *plp, unsigned char c)
{
	const char *p = *pp;
	size_t pl = *plp;
	int neg = 0, ok = 0;

	if (pl && *p == '^') {
		neg = 1;
		p++;
		pl--;
	}
	while (pl && *p != ']') {
		if (*p == '\\' && pl >= 2) {
			p++;
			pl--;
			ok |= (unsigned char)*p == c;
		} else if (pl >= 3 && p[1] == '-') {
			unsigned char a = (unsigned char)p[0],
				      b = (unsigned char)p[2];
			if (a > b) {
				unsigned char t = a;
				a = b;
				b = t;
			}
			ok |= c >= a && c <= b;
			p += 2;
			pl -= 2;
		} else {
			ok |= (unsigned char)*p == c;
		}
		p++;
		pl--;
	}
	if (pl) { /* past the ']' */
		p++;
		pl--;
	}
	*pp = p;
	*plp = pl;
	return neg ? !ok : ok;
}

static int match(const char *p, size_t pl, const char *s, size_t sl, int depth)
{
	while (pl) {
		if (*p == '*') {
			while (pl && *p == '*') {
				p++;
				pl--;
			}
			if (!pl)
				return 1;
			if (depth >= GLOB_DEPTH_MAX)
				return 0;
			for (size_t i = 0; i <= sl; i++)
				if (match(p, pl, s + i, sl - i, depth + 1))
					return 1;
			return 0;
		}
		if (!sl)
			return 0;
		if (*p == '?') {
			p++;
			pl--;
		} else if (*p == '[') {
			p++;
			pl--;
			if (!class_match(&p, &pl, (unsigned char)*s))
				return 0;
		} else {
			if (*p == '\\' && pl >= 2) {
				p++;
				pl--;
			}
			if (*p != *s)
				return 0;
			p++;
			pl--;
		}
		s++;
		sl--;
	}
	return sl == 0;
}

int pk_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
	return match(pat, plen, s, slen, 0);
}
