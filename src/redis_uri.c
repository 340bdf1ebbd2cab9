/*
 * redis_uri.c - a Redis store name (redis.h) parsed into its parts (shown
 * with its password masked by shmkv_name_redact, name_redact.c).
 *
 *   redis://[user:password@]host[:port][/db][?key=value&...]
 *   redis+unix://[user:password@]/path/to/socket[?key=value&...]
 *   redis+cluster://[user:password@]host[:port][,host[:port]...][?...]
 *
 * Query keys: prefix (all), timeout and connect_timeout in ms (all), db
 * (redis+unix only: a TCP URI says it as its path, a cluster has only
 * db 0), locks_on_evicting_server=0|1 (all: redis_policy.c). Hosts are
 * names or IPv4 literals, or IPv6 literals in brackets.
 * user, password and prefix are percent-decoded (%00 is refused: they are
 * C strings); nothing else is. Anything else is refused with a reason:
 * a store name is a config, and a typo in it must not silently select
 * another database or no timeout.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "redis.h"

#define DEFAULT_PORT		6379
#define DEFAULT_CONNECT_TIMEOUT 2000
#define DEFAULT_COMMAND_TIMEOUT 5000
/* A day: longer is a mistake (and keeps ms * 1000 in a timeval's range). */
#define TIMEOUT_MAX_MS 86400000
/* Redis's own bound on "databases" is INT_MAX; the server says whether it
 * has the one asked for (SELECT at connect). */
#define DB_MAX INT_MAX

static const struct {
	const char *scheme;
	enum shmkv_redis_kind kind;
} schemes[] = {
	{ "redis", SHMKV_REDIS_TCP },
	{ "redis+unix", SHMKV_REDIS_UNIX },
	{ "redis+cluster", SHMKV_REDIS_CLUSTER },
};

/* A span of the URI: [p, p + n). */
struct span {
	const char *p;
	size_t n;
};

static int fail(const char **why, const char *reason)
{
	if (why != NULL)
		*why = reason;
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* @s percent-decoded into @out (@cap bytes with the NUL). Return: the
 * length, -1 malformed (a bad escape, %00), -2 too long. */
static ssize_t decode(struct span s, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < s.n; i++) {
		int c = (unsigned char)s.p[i];

		if (c == '%') {
			int hi = i + 1 < s.n ? hexval(s.p[i + 1]) : -1;
			int lo = i + 2 < s.n ? hexval(s.p[i + 2]) : -1;

			if (hi < 0 || lo < 0 || (hi | lo) == 0)
				return -1;
			c = hi << 4 | lo;
			i += 2;
		}
		if (n + 1 >= cap)
			return -2;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return (ssize_t)n;
}

/* A decimal in [lo, hi] filling all of @s. */
static bool number(struct span s, long lo, long hi, long *v)
{
	long x = 0;

	if (s.n == 0 || s.n > 10)
		return false;
	for (size_t i = 0; i < s.n; i++) {
		if (s.p[i] < '0' || s.p[i] > '9')
			return false;
		x = x * 10 + (s.p[i] - '0');
	}
	if (x < lo || x > hi)
		return false;
	*v = x;
	return true;
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

static bool ipv6_char(char c)
{
	return hexval(c) >= 0 || c == ':' || c == '.' || c == '%';
}

/* One "host[:port]" or "[v6][:port]" into @a. */
static int parse_addr(struct span s, struct shmkv_redis_addr *a,
		      const char **why)
{
	struct span h = s, port = { NULL, 0 };
	long v = DEFAULT_PORT;

	if (s.n > 0 && s.p[0] == '[') {
		const char *end = memchr(s.p, ']', s.n);

		if (end == NULL)
			return fail(why, "an IPv6 address without its ']'");
		h = (struct span){ s.p + 1, (size_t)(end - s.p - 1) };
		if ((size_t)(end - s.p) + 1 < s.n) {
			if (end[1] != ':')
				return fail(why, "text after an IPv6 address's "
						 "']' that is not :port");
			port = (struct span){ end + 2,
					      s.n - (size_t)(end - s.p) - 2 };
		}
		for (size_t i = 0; i < h.n; i++)
			if (!ipv6_char(h.p[i]))
				return fail(why, "not an IPv6 address in []");
	} else {
		const char *colon = memchr(s.p, ':', s.n);

		if (colon != NULL) {
			h.n = (size_t)(colon - s.p);
			port = (struct span){ colon + 1, s.n - h.n - 1 };
		}
		for (size_t i = 0; i < h.n; i++)
			if (!host_char(h.p[i]))
				return fail(why, "a host name with a character "
						 "other than letters, digits, "
						 "'-', '.', '_' (IPv6: in [])");
	}
	if (h.n == 0)
		return fail(why, "no host");
	if (h.n > SHMKV_REDIS_HOST_MAX)
		return fail(why, "host longer than 255 bytes");
	if (port.p != NULL && !number(port, 1, 65535, &v))
		return fail(why, "port not a number in 1..65535");
	memcpy(a->host, h.p, h.n);
	a->host[h.n] = '\0';
	a->port = (int)v;
	return 0;
}

/* The comma-separated seeds (one for redis://). */
static int parse_seeds(struct span s, struct shmkv_redis_uri *u,
		       const char **why)
{
	for (;;) {
		const char *comma = memchr(s.p, ',', s.n);
		struct span one = { s.p, comma ? (size_t)(comma - s.p) : s.n };
		int err;

		if (comma != NULL && u->kind != SHMKV_REDIS_CLUSTER)
			return fail(why, "a list of hosts is for "
					 "redis+cluster:// only");
		if (u->nseeds == SHMKV_REDIS_SEEDS_MAX)
			return fail(why, "more than 16 seed hosts");
		err = parse_addr(one, &u->seeds[u->nseeds], why);
		if (err)
			return err;
		u->nseeds++;
		if (comma == NULL)
			return 0;
		s.n -= one.n + 1;
		s.p = comma + 1;
	}
}

/* "user:password" or "password"... as Redis clients read it: a user
 * without ':' is a password for the default user only when written
 * ":password"; "user@" alone is a user with no password (refused: AUTH
 * needs one). */
static int parse_userinfo(struct span s, struct shmkv_redis_uri *u,
			  const char **why)
{
	const char *colon = memchr(s.p, ':', s.n);
	struct span user = s, pass;

	if (colon == NULL)
		return fail(why, "user without ':password' (write "
				 "user:password@, or :password@)");
	user.n = (size_t)(colon - s.p);
	pass = (struct span){ colon + 1, s.n - user.n - 1 };
	if (pass.n == 0)
		return fail(why, "empty password");
	if (decode(user, u->user, sizeof(u->user)) < 0 ||
	    decode(pass, u->password, sizeof(u->password)) < 0)
		return fail(why, "user or password: a bad %-escape, %00, or "
				 "longer than 255 bytes");
	return 0;
}

/* One "key=value" of the query. @seen: the keys met so far (bits). */
static int parse_param(struct span kv, struct shmkv_redis_uri *u,
		       unsigned *seen, const char **why)
{
	static const char *const keys[] = { "prefix", "timeout",
					    "connect_timeout", "db",
					    "locks_on_evicting_server" };
	const char *eq = memchr(kv.p, '=', kv.n);
	struct span k = { kv.p, eq ? (size_t)(eq - kv.p) : kv.n };
	struct span v = { eq ? eq + 1 : kv.p + kv.n, eq ? kv.n - k.n - 1 : 0 };
	size_t i;
	long x;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == k.n && memcmp(keys[i], k.p, k.n) == 0)
			break;
	if (i == sizeof(keys) / sizeof(keys[0]) || eq == NULL)
		return fail(why, "a query parameter other than prefix=, "
				 "timeout=, connect_timeout=, db= "
				 "(redis+unix), locks_on_evicting_server=");
	if (*seen & (1u << i))
		return fail(why, "a query parameter given twice");
	*seen |= 1u << i;
	switch (i) {
	case 0: {
		ssize_t n = decode(v, u->prefix, sizeof(u->prefix));

		if (n < 0)
			return fail(why, "prefix: a bad %-escape, %00, or "
					 "longer than 128 bytes");
		u->prefix_len = (size_t)n;
		return 0;
	}
	case 1:
		if (!number(v, 0, TIMEOUT_MAX_MS, &x))
			return fail(why, "timeout= not a number of ms in "
					 "0..86400000 (0: none)");
		u->command_timeout_ms = (int)x;
		return 0;
	case 2:
		if (!number(v, 1, TIMEOUT_MAX_MS, &x))
			return fail(why, "connect_timeout= not a number of ms "
					 "in 1..86400000");
		u->connect_timeout_ms = (int)x;
		return 0;
	case 4:
		if (!number(v, 0, 1, &x))
			return fail(why, "locks_on_evicting_server= not 0 "
					 "or 1");
		u->locks_on_evicting = x == 1;
		return 0;
	default:
		if (u->kind != SHMKV_REDIS_UNIX)
			return fail(why, "db= is for redis+unix:// (redis:// "
					 "says /db; a cluster has only db 0)");
		if (!number(v, 0, DB_MAX, &x))
			return fail(why, "db not a number in 0..2147483647");
		u->db = (int)x;
		return 0;
	}
}

static int parse_query(struct span q, struct shmkv_redis_uri *u,
		       const char **why)
{
	unsigned seen = 0;

	while (q.n > 0) {
		const char *amp = memchr(q.p, '&', q.n);
		struct span one = { q.p, amp ? (size_t)(amp - q.p) : q.n };
		int err = parse_param(one, u, &seen, why);

		if (err)
			return err;
		if (amp == NULL)
			break;
		q.n -= one.n + 1;
		q.p = amp + 1;
		if (q.n == 0)
			return fail(why, "a query ending in '&'");
	}
	return 0;
}

/* The path of redis+unix://, or "/db" of redis:// (@path starts with
 * '/', or is empty). */
static int parse_path(struct span path, struct shmkv_redis_uri *u,
		      const char **why)
{
	long db;

	if (u->kind == SHMKV_REDIS_UNIX) {
		if (path.n < 2)
			return fail(why, "redis+unix:// without a socket path");
		if (path.n > SHMKV_REDIS_PATH_MAX)
			return fail(why, "socket path longer than 107 bytes");
		if (memchr(path.p, '%', path.n) != NULL)
			return fail(why, "a socket path with '%' (paths are "
					 "not percent-decoded)");
		memcpy(u->path, path.p, path.n);
		u->path[path.n] = '\0';
		return 0;
	}
	if (path.n <= 1) /* none, or a bare "/" */
		return 0;
	if (u->kind == SHMKV_REDIS_CLUSTER)
		return fail(why, "a database on a cluster (it has only db 0)");
	path.p++;
	path.n--;
	if (!number(path, 0, DB_MAX, &db))
		return fail(why, "/db not a number in 0..2147483647");
	u->db = (int)db;
	return 0;
}

static int parse_scheme(const char *uri, struct shmkv_redis_uri *u,
			const char **rest, const char **why)
{
	const char *sep = strstr(uri, "://");
	size_t n = sep ? (size_t)(sep - uri) : 0;

	for (size_t i = 0; sep && i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].scheme) == n &&
		    strncasecmp(schemes[i].scheme, uri, n) == 0) {
			u->kind = schemes[i].kind;
			*rest = sep + 3;
			return 0;
		}
	return fail(why, "not redis://, redis+unix:// or redis+cluster://");
}

/* The authority ("userinfo@hosts") and what follows, split. */
static int parse_rest(const char *s, struct shmkv_redis_uri *u,
		      const char **why)
{
	size_t auth_n = strcspn(s, "/?");
	const char *at = NULL;
	struct span auth = { s, auth_n }, path, query;
	int err;

	if (strchr(s, '#') != NULL)
		return fail(why, "a '#fragment' in a store URI");
	/* The last '@': a password's own '@' should be %40, but a bare one
	 * cannot be mistaken for the host's start. */
	for (size_t i = 0; i < auth_n; i++)
		if (s[i] == '@')
			at = s + i;
	if (at != NULL) {
		err = parse_userinfo((struct span){ s, (size_t)(at - s) }, u,
				     why);
		if (err)
			return err;
		auth = (struct span){ at + 1, auth_n - (size_t)(at - s) - 1 };
	}
	path.p = s + auth_n;
	path.n = strcspn(path.p, "?");
	query.p = path.p + path.n + (path.p[path.n] == '?');
	query.n = strlen(query.p);
	if (u->kind == SHMKV_REDIS_UNIX) {
		if (auth.n != 0)
			return fail(why, "redis+unix:// takes no host (write "
					 "redis+unix:///path/to/socket)");
	} else {
		err = parse_seeds(auth, u, why);
		if (err)
			return err;
	}
	err = parse_path(path, u, why);
	return err ? err : parse_query(query, u, why);
}

int shmkv__redis_uri_parse(const char *uri, struct shmkv_redis_uri *u,
			   const char **why)
{
	const char *rest;
	int err;

	memset(u, 0, sizeof(*u));
	u->connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT;
	u->command_timeout_ms = DEFAULT_COMMAND_TIMEOUT;
	if (uri == NULL)
		return fail(why, "no URI");
	err = parse_scheme(uri, u, &rest, why);
	if (!err)
		err = parse_rest(rest, u, why);
	if (err) {
		/* Nothing half-parsed (a password above all) stays behind. */
		memset(u, 0, sizeof(*u));
		return err;
	}
	return 0;
}
