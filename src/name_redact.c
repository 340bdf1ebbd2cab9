/*
 * name_redact.c - a store name as it may be shown: shmkv_name_redact
 * (shmkv.h), the one function behind every message, log line and handle
 * name that shows a store's name.
 *
 * It reads the text, not a parsed URI: it must hold for names the URI
 * parser refuses (a password with a raw '/', '?', '#' or '@'), and for
 * names it accepts with another meaning than the writer's
 * ("redis://u:12?prefix=x@h" parses as host u, port 12, but was likely
 * the password "12?prefix=x" of host h). So where it cannot tell, it shows
 * less:
 *
 *  - the userinfo runs to the LAST '@' of the name: a password ends at
 *    some '@', and no '@' comes after the last one;
 *  - its user is shown only when it is plainly one (letters, digits,
 *    "-._~%", ended by a ':'); anything else is all password;
 *  - the text after it (or after the scheme, with no '@') up to the
 *    first '/', '?' or '#' must read as hosts and ports
 *    ("host:port,[v6]:port"), or else it and all after it is hidden (a
 *    forgotten or misplaced '@': "redis://user:pw", "redis://@:pw"); a
 *    list of hosts only for redis+cluster://, as the parser reads it;
 *  - a query parameter other than the ones a Redis store name has keeps
 *    its key only ("?password=x" is a secret in other clients' URIs), and
 *    a fragment is hidden.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "shmkv.h"

#define HIDDEN "***"

/* The output: what fits of it in @buf, and the length it needs. */
struct redact_out {
	char *buf;
	size_t cap; /* bytes for text, the NUL excluded */
	size_t len;
};

static void put(struct redact_out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t room = o->cap - o->len;

		memcpy(o->buf + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

static bool in_set(const char *s, size_t n, const char *set)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] == '\0' || strchr(set, s[i]) == NULL)
			return false;
	return true;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

static bool is_scheme(const char *s, size_t n)
{
	return n > 0 && strchr(ALNUM, s[0]) != NULL && s[0] > '9' &&
	       in_set(s, n, ALNUM "+-.");
}

/* Where the text after the scheme starts, or NULL: not a URI. A name that
 * starts "redis...:" without "//" is read as a URI too (a typo of one),
 * the slashes that follow its ':' kept with the scheme. @name has no
 * leading '/' (shmkv_name_redact shows it apart). */
static const char *after_scheme(const char *name)
{
	const char *sep = strstr(name, "://");
	const char *colon;

	if (sep != NULL)
		return sep + 3;
	if (strncasecmp(name, "redis", 5) != 0)
		return NULL;
	colon = strchr(name, ':');
	if (colon == NULL || !is_scheme(name, (size_t)(colon - name)))
		return NULL;
	return colon + 1 + strspn(colon + 1, "/");
}

/* One "host[:port]" or "[v6][:port]", port all digits. */
static bool is_addr(const char *s, size_t n)
{
	size_t h;

	if (n > 0 && s[0] == '[') {
		const char *end = memchr(s, ']', n);

		if (end == NULL || end == s + 1 ||
		    !in_set(s + 1, (size_t)(end - s - 1),
			    "0123456789abcdefABCDEF:.%"))
			return false;
		h = (size_t)(end - s) + 1;
	} else {
		const char *colon = memchr(s, ':', n);

		h = colon ? (size_t)(colon - s) : n;
		if (h == 0 || !in_set(s, h, ALNUM "-._"))
			return false;
	}
	if (h == n)
		return true;
	return s[h] == ':' && h + 1 < n &&
	       in_set(s + h + 1, n - h - 1, "0123456789");
}

/* The authority after the userinfo: a host, a comma-separated list of
 * them for a cluster (@list), or nothing (redis+unix:///path). */
static bool is_host_list(const char *s, size_t n, bool list)
{
	if (!list && memchr(s, ',', n) != NULL)
		return false;
	while (n > 0) {
		const char *comma = memchr(s, ',', n);
		size_t one = comma ? (size_t)(comma - s) : n;

		if (!is_addr(s, one))
			return false;
		if (comma == NULL)
			return true;
		s += one + 1;
		n -= one + 1;
		if (n == 0)
			return false;
	}
	return true;
}

/* The userinfo [s, s + n): "user:***" when its user is plainly one. */
static void put_userinfo(struct redact_out *o, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t user = colon ? (size_t)(colon - s) : 0;

	if (colon != NULL && in_set(s, user, ALNUM "-._~%")) {
		put(o, s, user);
		put(o, ":", 1);
	}
	put(o, HIDDEN "@", 4);
}

static bool known_param(const char *s, size_t n)
{
	static const char *const keys[] = { "prefix=", "timeout=",
					    "connect_timeout=", "db=",
					    "locks_on_evicting_server=" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (n >= strlen(keys[i]) &&
		    memcmp(s, keys[i], strlen(keys[i])) == 0)
			return true;
	return false;
}

/* The query [q, q + n): known parameters whole, another's key only
 * (when it is a plain word), a bare word hidden. */
static void put_query(struct redact_out *o, const char *q, size_t n)
{
	for (;;) {
		const char *amp = memchr(q, '&', n);
		size_t one = amp ? (size_t)(amp - q) : n;
		const char *eq = memchr(q, '=', one);
		size_t key = eq ? (size_t)(eq - q) : 0;

		if (known_param(q, one))
			put(o, q, one);
		else if (key > 0 && in_set(q, key, ALNUM "_-."))
			put(o, q, key + 1), put(o, HIDDEN, 3);
		else if (one > 0)
			put(o, HIDDEN, 3);
		if (amp == NULL)
			return;
		put(o, "&", 1);
		q += one + 1;
		n -= one + 1;
	}
}

/* What follows the authority: the path as it is, the query, and a
 * fragment hidden. */
static void put_tail(struct redact_out *o, const char *s)
{
	size_t path = strcspn(s, "?#");

	put(o, s, path);
	s += path;
	if (*s == '?') {
		size_t query = strcspn(s + 1, "#");

		put(o, "?", 1);
		put_query(o, s + 1, query);
		s += 1 + query;
	}
	if (*s == '#')
		put(o, "#" HIDDEN, 4);
}

/* The scheme when it is one, and the "://" (or ":") after it. */
static void put_scheme(struct redact_out *o, const char *name, const char *rest)
{
	size_t n = strcspn(name, ":");
	const char *sep = name + n;

	if (sep < rest && is_scheme(name, n) &&
	    in_set(sep + 1, (size_t)(rest - sep - 1), "/"))
		put(o, name, (size_t)(rest - name));
	else
		put(o, HIDDEN "://", 6);
}

static void redact_uri(struct redact_out *o, const char *name, const char *rest)
{
	const char *at = strrchr(rest, '@');
	size_t auth;

	put_scheme(o, name, rest);
	if (at != NULL) {
		put_userinfo(o, rest, (size_t)(at - rest));
		rest = at + 1;
	}
	auth = strcspn(rest, "/?#");
	if (!is_host_list(rest, auth,
			  strncasecmp(name, "redis+cluster:", 14) == 0)) {
		put(o, HIDDEN, 3);
		return;
	}
	put(o, rest, auth);
	put_tail(o, rest + auth);
}
int shmkv_name_redact(const char *name, char *out, size_t cap)
{
	struct redact_out o = { out, cap > 0 ? cap - 1 : 0, 0 };
	const char *rest;
	size_t lead;

	if (name == NULL || (out == NULL && cap > 0))
		return -EINVAL;
	/* "/redis:pw@h" too: the shm name a tool makes of "redis:pw@h". */
	lead = name[0] == '/';
	rest = after_scheme(name + lead);
	if (rest == NULL) {
		put(&o, name, strlen(name));
	} else {
		put(&o, name, lead);
		redact_uri(&o, name + lead, rest);
	}
	if (cap > 0)
		out[o.len < o.cap ? o.len : o.cap] = '\0';
	return o.len > INT_MAX ? -EOVERFLOW : (int)o.len;
}
