/*
 * shmctl_args.c - splitting a command line as redis-cli does, and Redis's
 * glob, both binary-safe.
 *
 * ctl_split() follows Redis's sdssplitargs(): blanks separate arguments;
 * "double quotes" take \xHH, \n, \r, \t, \b, \a and \<any> escapes;
 * 'single quotes' take only \'; a closing quote must be followed by a blank
 * or the end of the line. The dump format (shmctl_dump.c) is written with
 * ctl_repr(), which only produces what this parser reads back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shmctl.h"

/* A growing byte buffer for the token being parsed. */
struct tok {
	char *buf;
	size_t len, cap;
};

static int tok_put(struct tok *t, char c)
{
	if (t->len + 1 >= t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 32;
		char *p = realloc(t->buf, cap);

		if (p == NULL)
			return -ENOMEM;
		t->buf = p;
		t->cap = cap;
	}
	t->buf[t->len++] = c;
	t->buf[t->len] = '\0';
	return 0;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
	       c == '\f';
}

static int hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* One escape inside double quotes at @s[*i] == '\\'; advances *i. */
static char dq_escape(const char *s, size_t n, size_t *i)
{
	size_t j = *i;

	if (j + 3 < n && s[j + 1] == 'x' && hex(s[j + 2]) >= 0 &&
	    hex(s[j + 3]) >= 0) {
		*i = j + 3;
		return (char)(hex(s[j + 2]) * 16 + hex(s[j + 3]));
	}
	*i = j + 1;
	switch (s[j + 1]) {
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	case 'b':
		return '\b';
	case 'a':
		return '\a';
	default:
		return s[j + 1];
	}
}

/*
 * Reads one token starting at s[*i] (not a blank). Return: 0 and *i past
 * it, -EINVAL (*i at the fault), -ENOMEM.
 */
static int read_token(const char *s, size_t n, size_t *i, struct tok *t)
{
	char quote = 0;

	for (size_t j = *i;; j++) {
		bool end = j >= n;
		char c = '\0';

		if (!end)
			c = s[j];

		if (!end && c == '\0') {
			*i = j; /* a NUL byte never belongs in a line */
			return -EINVAL;
		}
		if (quote == 0) {
			if (end || is_blank(c)) {
				*i = j;
				return 0;
			}
			if (c == '"' || c == '\'') {
				quote = c;
				continue;
			}
		} else if (end) {
			*i = j; /* unterminated quotes */
			return -EINVAL;
		} else if (c == quote) {
			if (j + 1 < n && !is_blank(s[j + 1])) {
				*i = j + 1;
				return -EINVAL;
			}
			*i = j + 1;
			return 0;
		} else if (c == '\\' && j + 1 < n &&
			   (quote == '"' || s[j + 1] == '\'')) {
			if (quote == '"')
				c = dq_escape(s, n, &j);
			else
				c = s[++j];
		}
		if (tok_put(t, c))
			return -ENOMEM;
	}
}

static int push(struct ctl_args *a, struct tok *t)
{
	char **argv = realloc(a->argv, (size_t)(a->argc + 2) * sizeof(*argv));
	size_t *len;

	if (argv == NULL)
		return -ENOMEM;
	a->argv = argv;
	len = realloc(a->len, (size_t)(a->argc + 1) * sizeof(*len));
	if (len == NULL)
		return -ENOMEM;
	a->len = len;
	if (t->buf == NULL)
		t->buf = calloc(1, 1); /* "" is an argument too */
	if (t->buf == NULL)
		return -ENOMEM;
	a->argv[a->argc] = t->buf;
	a->len[a->argc] = t->len;
	a->argv[++a->argc] = NULL;
	memset(t, 0, sizeof(*t));
	return 0;
}

int ctl_split(const char *line, size_t n, struct ctl_args *a, size_t *at)
{
	size_t i = 0;
	int err = 0;

	memset(a, 0, sizeof(*a));
	for (;;) {
		struct tok t = { 0 };

		while (i < n && is_blank(line[i]))
			i++;
		if (i >= n)
			break;
		err = read_token(line, n, &i, &t);
		if (err == 0)
			err = push(a, &t);
		free(t.buf);
		if (err)
			break;
	}
	if (err) {
		*at = i;
		ctl_args_free(a);
	}
	return err;
}

void ctl_args_free(struct ctl_args *a)
{
	for (int i = 0; i < a->argc; i++)
		free(a->argv[i]);
	free(a->argv);
	free(a->len);
	memset(a, 0, sizeof(*a));
}

/*
 * Does byte @c match the [...] class at pat[*p] (just past '[')? Moves *p
 * past the closing ']' (or to the end, as Redis: an unclosed class ends
 * with the pattern).
 */
static bool class_match(const char *pat, size_t plen, size_t *p,
			unsigned char c)
{
	size_t i = *p;
	bool not = i < plen && pat[i] == '^', match = false;

	if (not )
		i++;
	for (; i < plen && pat[i] != ']'; i++) {
		unsigned char lo = (unsigned char)pat[i], hi;

		if (lo == '\\' && i + 1 < plen) {
			match |= (unsigned char)pat[++i] == c;
		} else if (i + 2 < plen && pat[i + 1] == '-') {
			hi = (unsigned char)pat[i + 2];
			if (lo > hi) {
				unsigned char tmp = lo;

				lo = hi;
				hi = tmp;
			}
			match |= c >= lo && c <= hi;
			i += 2;
		} else {
			match |= lo == c;
		}
	}
	*p = i < plen ? i + 1 : i;
	return not ? !match : match;
}

/* Matches one pattern element (not '*') at pat[*p] against byte @c. */
static bool one_match(const char *pat, size_t plen, size_t *p, unsigned char c)
{
	size_t i = *p;

	switch (pat[i]) {
	case '?':
		*p = i + 1;
		return true;
	case '[':
		*p = i + 1;
		return class_match(pat, plen, p, c);
	case '\\':
		if (i + 1 < plen)
			i++;
		/* fall through */
	default:
		*p = i + 1;
		return (unsigned char)pat[i] == c;
	}
}

/*
 * Greedy matching with one backtrack point: every element but '*' eats
 * exactly one byte, so on a mismatch it suffices to let the last '*' eat
 * one byte more. O(plen * slen) in the worst case, never exponential.
 */
bool ctl_glob(const char *pat, size_t plen, const void *str, size_t slen)
{
	const unsigned char *s = str;
	size_t p = 0, i = 0, star_p = 0, star_i = 0;
	bool star = false;

	while (i < slen) {
		if (p < plen && pat[p] == '*') {
			while (p < plen && pat[p] == '*')
				p++;
			star = true, star_p = p, star_i = i;
			continue;
		}
		if (p < plen && one_match(pat, plen, &p, s[i])) {
			i++;
			continue;
		}
		if (!star)
			return false;
		p = star_p;
		i = ++star_i;
	}
	while (p < plen && pat[p] == '*')
		p++;
	return p == plen;
}
