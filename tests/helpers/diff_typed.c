/*
 * diff_typed.c - see diff_typed.h.
 */
#include "helpers/diff_typed.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Is argument @i of @c the word @w (any case)? */
static int is(const struct dg_cmd *c, int i, const char *w)
{
	return i < c->argc && strlen(w) == c->len[i] &&
	       strcasecmp(c->argv[i], w) == 0;
}

/* Argument @i as a canonical int64 (as Redis's string2ll takes it). */
static int int_arg(const struct dg_cmd *c, int i, int64_t *v)
{
	char *end;
	long long n;

	if (i >= c->argc || c->len[i] == 0 || c->len[i] > 20 ||
	    strlen(c->argv[i]) != c->len[i])
		return 0;
	if (c->argv[i][0] == '+' || c->argv[i][0] == ' ' ||
	    (c->argv[i][0] == '0' && c->len[i] > 1) ||
	    (c->argv[i][0] == '-' && (c->argv[i][1] == '0' || c->len[i] == 1)))
		return 0;
	errno = 0;
	n = strtoll(c->argv[i], &end, 10);
	if (errno != 0 || *end != '\0')
		return 0;
	*v = n;
	return 1;
}

/* SET's options after key and value into flags: 0 when one is unknown,
 * repeated or lacks its time (Redis's own errors then come by exec). */
static int set_flags(const struct dg_cmd *c, unsigned *flags, int64_t *t)
{
	static const struct {
		const char *w;
		unsigned f;
		int timed;
	} opts[] = {
		{ "NX", SHMKV_SET_NX, 0 },
		{ "XX", SHMKV_SET_XX, 0 },
		{ "GET", SHMKV_SET_GET, 0 },
		{ "KEEPTTL", SHMKV_SET_KEEPTTL, 0 },
		{ "EX", SHMKV_SET_EX, 1 },
		{ "PX", SHMKV_SET_PX, 1 },
		{ "EXAT", SHMKV_SET_EXAT, 1 },
		{ "PXAT", SHMKV_SET_PXAT, 1 },
	};

	*flags = 0;
	*t = 0;
	for (int i = 3; i < c->argc; i++) {
		size_t o;

		for (o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
			if (is(c, i, opts[o].w))
				break;
		if (o == sizeof(opts) / sizeof(opts[0]) || (*flags & opts[o].f))
			return 0;
		*flags |= opts[o].f;
		if (opts[o].timed && !int_arg(c, ++i, t))
			return 0;
	}
	return 1;
}

static int expire_flags(const struct dg_cmd *c, unsigned *flags)
{
	static const char *const w[] = { "NX", "XX", "GT", "LT" };

	*flags = 0;
	for (int i = 3; i < c->argc; i++) {
		unsigned f = 0;

		for (unsigned b = 0; b < 4; b++)
			if (is(c, i, w[b]))
				f = 1u << b;
		if (f == 0 || (*flags & f))
			return 0;
		*flags |= f;
	}
	return 1;
}

/* The value calls: GET, GETDEL, GETEX, SET ... GET. */
static void value_out(struct dt_result *r, const struct shmkv_value *v)
{
	if (r->ret == 1 || r->ret == -ENOBUFS)
		r->len = v->len;
}

static int run_set(shmkv_t *kv, const struct dg_cmd *c, struct shmkv_value *v,
		   struct dt_result *r)
{
	unsigned flags;
	int64_t t;

	if (c->argc < 3 || !set_flags(c, &flags, &t))
		return 0;
	r->ret = shmkv_set(kv, c->argv[1], c->len[1], c->argv[2], c->len[2],
			   flags, t, (flags & SHMKV_SET_GET) ? v : NULL);
	if (flags & SHMKV_SET_GET)
		value_out(r, v);
	return 1;
}

static int run_getex(shmkv_t *kv, const struct dg_cmd *c, struct shmkv_value *v,
		     struct dt_result *r)
{
	static const char *const w[] = { "EX", "PX", "EXAT", "PXAT" };
	enum shmkv_getex_mode mode = SHMKV_GETEX_KEEP;
	int64_t t = 0;

	if (c->argc == 3 && is(c, 2, "PERSIST"))
		mode = SHMKV_GETEX_PERSIST;
	else if (c->argc == 4) {
		for (int i = 0; i < 4; i++)
			if (is(c, 2, w[i]))
				mode = (enum shmkv_getex_mode)(SHMKV_GETEX_EX +
							       i);
		if (mode == SHMKV_GETEX_KEEP || !int_arg(c, 3, &t))
			return 0;
	} else if (c->argc != 2)
		return 0;
	r->ret = shmkv_getex(kv, c->argv[1], c->len[1], mode, t, v);
	value_out(r, v);
	return 1;
}

static int run_expire(shmkv_t *kv, const struct dg_cmd *c, struct dt_result *r)
{
	static const char *const w[] = { "EXPIRE", "PEXPIRE", "EXPIREAT",
					 "PEXPIREAT" };
	unsigned flags;
	int64_t t;

	for (int u = 0; u < 4; u++) {
		if (!is(c, 0, w[u]))
			continue;
		if (c->argc < 3 || !int_arg(c, 2, &t) ||
		    !expire_flags(c, &flags))
			return 0;
		r->ret = shmkv_expire(kv, c->argv[1], c->len[1],
				      (enum shmkv_expire_unit)u, flags, t);
		return 1;
	}
	return 0;
}

static int run_incr(shmkv_t *kv, const struct dg_cmd *c, struct dt_result *r)
{
	int64_t d = 1;

	if ((is(c, 0, "INCR") || is(c, 0, "DECR")) && c->argc == 2)
		d = is(c, 0, "DECR") ? -1 : 1;
	else if ((is(c, 0, "INCRBY") || is(c, 0, "DECRBY")) && c->argc == 3) {
		if (!int_arg(c, 2, &d))
			return 0;
		if (is(c, 0, "DECRBY")) {
			r->has_num = 1;
			r->ret = shmkv_decrby(kv, c->argv[1], c->len[1], d,
					      &r->num);
			return 1;
		}
	} else
		return 0;
	r->has_num = 1;
	r->ret = shmkv_incrby(kv, c->argv[1], c->len[1], d, &r->num);
	return 1;
}

static int run_one_key(shmkv_t *kv, const struct dg_cmd *c,
		       struct shmkv_value *v, struct dt_result *r)
{
	const char *k = c->argv[1];
	size_t kl = c->len[1];

	if (is(c, 0, "GET"))
		r->ret = shmkv_get(kv, k, kl, v), value_out(r, v);
	else if (is(c, 0, "GETDEL"))
		r->ret = shmkv_getdel(kv, k, kl, v), value_out(r, v);
	else if (is(c, 0, "DEL"))
		r->ret = shmkv_del(kv, k, kl);
	else if (is(c, 0, "EXISTS"))
		r->ret = shmkv_exists(kv, k, kl);
	else if (is(c, 0, "PERSIST"))
		r->ret = shmkv_persist(kv, k, kl);
	else if (is(c, 0, "TTL") || is(c, 0, "PTTL")) {
		r->ttl = is(c, 0, "TTL") ? 1 : 2;
		r->has_num = 1;
		r->ret = r->ttl == 1 ? shmkv_ttl(kv, k, kl, &r->num)
				     : shmkv_pttl(kv, k, kl, &r->num);
	} else
		return 0;
	return 1;
}

int dt_run(shmkv_t *kv, const struct dg_cmd *c, size_t cap, struct dt_result *r)
{
	struct shmkv_value v = { r->buf,
				 cap < sizeof(r->buf) ? cap : sizeof(r->buf),
				 0 };

	memset(r, 0, sizeof(*r));
	v.buf = r->buf;
	if (c->argc < 2)
		return 0;
	if (is(c, 0, "SET"))
		return run_set(kv, c, &v, r);
	if (is(c, 0, "GETEX"))
		return run_getex(kv, c, &v, r);
	if (c->argc == 3 && is(c, 0, "SETNX")) {
		r->ret = shmkv_setnx(kv, c->argv[1], c->len[1], c->argv[2],
				     c->len[2]);
		return 1;
	}
	if (c->argc == 3 && is(c, 0, "GETSET")) {
		r->ret = shmkv_getset(kv, c->argv[1], c->len[1], c->argv[2],
				      c->len[2], &v);
		value_out(r, &v);
		return 1;
	}
	if (c->argc == 3 && is(c, 0, "DELIFEQ")) {
		r->ret = shmkv_delifeq(kv, c->argv[1], c->len[1], c->argv[2],
				       c->len[2]);
		return 1;
	}
	if (run_expire(kv, c, r) || run_incr(kv, c, r))
		return 1;
	return c->argc == 2 && run_one_key(kv, c, &v, r);
}

int dt_equal(const struct dt_result *a, const struct dt_result *b)
{
	if (a->ret != b->ret || a->has_num != b->has_num)
		return 0;
	if (a->ttl && a->ret == 0) {
		long long slack = a->ttl == 1 ? 2 : 1500;

		if (a->num < 0 || b->num < 0)
			return a->num == b->num;
		return llabs((long long)(a->num - b->num)) <= slack;
	}
	if (a->has_num && a->ret == 0 && a->num != b->num)
		return 0;
	if (a->len != b->len)
		return 0;
	return a->ret != 1 || memcmp(a->buf, b->buf, a->len) == 0;
}

void dt_print(FILE *f, const char *who, const struct dt_result *r)
{
	fprintf(f, "  %-6s ret %d", who, r->ret);
	if (r->has_num)
		fprintf(f, " num %lld", (long long)r->num);
	if (r->ret == 1 || r->len) {
		fprintf(f, " len %zu ", r->len);
		if (r->ret == 1)
			dg_print_bytes(f, r->buf, r->len);
	}
	fputc('\n', f);
}
