/*
 * fz_ops.c - decodes a command script from fuzzer input and runs it on a
 * store, checking every result against what the API promises.
 *
 * On a store that may be corrupted, only the contract that holds whatever
 * the segment says is checked: errors are known negative errnos, returned
 * lengths fit the caller's buffer, counts fit the geometry. On a sound
 * store (struct fz_run.sound) a few results are checked too: no -EBADMSG
 * or -EAGAIN, a value just SET reads back, check finds nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "fz_ops_impl.h"

const char *const fz_keys[FZ_K_COUNT] = {
	[FZ_K_STR] = "str",	    [FZ_K_INT] = "int",
	[FZ_K_BIG] = "big",	    [FZ_K_TTL] = "ttl",
	[FZ_K_TTL_INT] = "ttl-int", [FZ_K_GONE] = "gone",
	[FZ_K_LOCK] = "lock.a",	    [FZ_K_PLOCK] = "lock.p",
	[FZ_K_EMPTY] = "",
};

/*
 * Results.
 */

static bool errno_known(int rc)
{
	static const int known[] = {
		EINVAL,
		ENAMETOOLONG,
		E2BIG,
		EROFS,
		ENOSPC,
		ENOMEM,
		ENOBUFS,
		EBADMSG,
		EAGAIN,
		EDOM,
		EOVERFLOW,
		EBUSY,
		EDEADLK,
		EEXIST,
		EPERM,
		ENOLCK,
		ETIMEDOUT,
		/* A life word with its REMOVED bit (scribbled, or a real
		 * removal): every command's answer from then on. */
		ESTALE,
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (rc == -known[i])
			return true;
	return false;
}

void fz__check_rc(const struct ctx *c, int rc, const char *op)
{
	if (rc >= 0)
		return;
	FZ_ASSERT(errno_known(rc), "%s: unexpected error %d (%s)", op, rc,
		  shmkv_strerror(rc));
	FZ_ASSERT(!c->r->sound || (rc != -EBADMSG && rc != -EAGAIN),
		  "%s: %s on a sound store", op, shmkv_strerror(rc));
	FZ_ASSERT(shmkv_strerror(rc) != NULL, "strerror(%d) is NULL", rc);
}

void fz__check_value(const struct ctx *c, int rc, const struct shmkv_value *v,
		     const char *op)
{
	fz__check_rc(c, rc, op);
	if (rc == -ENOBUFS)
		FZ_ASSERT(v->len > v->cap, "%s: ENOBUFS with len %zu cap %zu",
			  op, v->len, v->cap);
	if (rc > 0)
		FZ_ASSERT(v->len <= v->cap, "%s: len %zu > cap %zu", op, v->len,
			  v->cap);
	if (c->r->sound && (rc > 0 || rc == -ENOBUFS))
		FZ_ASSERT(v->len <= c->cfg.value_max, "%s: len %zu > value_max",
			  op, v->len);
}

/* On a sound store, @key now holds exactly @val (no TTL was set). */
static void check_reads_back(struct ctx *c, const void *k, size_t kl,
			     const void *val, size_t vl, const char *op)
{
	struct shmkv_value v = { .buf = c->out, .cap = c->cfg.value_max };
	int rc;

	if (!c->r->sound)
		return;
	rc = shmkv_get(c->kv, k, kl, &v);
	FZ_ASSERT(rc == 1 && v.len == vl &&
			  (vl == 0 || !memcmp(c->out, val, vl)),
		  "%s: GET after it gave %d, len %zu (want %zu)", op, rc, v.len,
		  vl);
}

/* On a sound store, a DEL or GETDEL that gave @rc >= 0 left no @key. */
static void check_gone(const struct ctx *c, int rc, const void *k, size_t kl,
		       const char *op)
{
	if (rc >= 0 && c->r->sound)
		FZ_ASSERT(shmkv_exists(c->kv, k, kl) == 0, "%s: still there",
			  op);
}

/*
 * Operands (formats in fz_ops.h).
 */

void fz__take_key(struct ctx *c, const void **k, size_t *kl)
{
	uint8_t b = fz_u8(c->in);

	if (b < 0xe0) {
		const struct key *key = &c->keys[b % c->nkeys];

		*k = key->b;
		*kl = key->len;
	} else if (b == 0xff) {
		memset(c->kbuf, 'k', c->cfg.key_max + 1);
		*k = c->kbuf;
		*kl = c->cfg.key_max + 1;
	} else {
		*k = fz_bytes(c->in, b & 0x1f, kl);
	}
}

/* A signed number, small more often than not. */
int64_t fz__take_num(struct ctx *c)
{
	uint8_t shift = fz_u8(c->in) & 63;

	return (int64_t)fz_u64(c->in) >> shift;
}

void fz__take_value(struct ctx *c, const void **v, size_t *vl)
{
	uint8_t b = fz_u8(c->in);
	size_t vmax = c->cfg.value_max, n;

	if (b < 0x40) {
		int len = snprintf(c->num, sizeof(c->num), "%" PRId64,
				   fz__take_num(c));

		*v = c->num;
		*vl = (size_t)len;
		return;
	}
	if (b < 0xf0) {
		*v = fz_bytes(c->in, (size_t)(b - 0x40), vl);
		return;
	}
	n = b == 0xff ? vmax + 1 : vmax - (b - 0xf0 < vmax ? b - 0xf0 : vmax);
	memset(c->vbuf, 'v', n);
	*v = c->vbuf;
	*vl = n;
}

/* The caller's buffer: full, tiny (ENOBUFS paths), or none. */
void fz__take_out(struct ctx *c, struct shmkv_value *v)
{
	uint8_t b = fz_u8(c->in);

	v->len = 0;
	if (b >= 16) {
		v->buf = b == 16 ? NULL : c->out;
		v->cap = b == 16 ? 0 : c->cfg.value_max;
		return;
	}
	/* Exactly @b bytes of heap, so ASan sees a write past the cap. */
	free(c->small);
	c->small = malloc(b);
	FZ_ASSERT(c->small != NULL || b == 0, "out of memory");
	v->buf = c->small != NULL ? c->small : c->out;
	v->cap = b;
}

/*
 * String commands.
 */

/* A command whose only operand is a key: takes the key (into *@k, *@kl
 * for the caller's own checks), runs @cmd on it and checks its result.
 * Return: @cmd's result. */
static int key_command(struct ctx *c,
		       int (*cmd)(shmkv_t *kv, const void *key, size_t klen),
		       const void **k, size_t *kl, const char *op)
{
	int rc;

	fz__take_key(c, k, kl);
	rc = cmd(c->kv, *k, *kl);
	fz__check_rc(c, rc, op);
	return rc;
}

static void op_get(struct ctx *c)
{
	struct shmkv_value v;
	const void *k;
	size_t kl;

	fz__take_key(c, &k, &kl);
	fz__take_out(c, &v);
	fz__check_value(c, shmkv_get(c->kv, k, kl, &v), &v, "get");
}

/* Whether a SET that gave @rc >= 0 stored its value: with GET, @rc is
 * GET's reply (an old value or none) and the flags decide, as shmkv.h
 * says. */
static bool set_applied(unsigned flags, int rc)
{
	if (!(flags & SHMKV_SET_GET))
		return rc == 1;
	if (flags & SHMKV_SET_NX)
		return rc == 0;
	if (flags & SHMKV_SET_XX)
		return rc == 1;
	return true;
}

static void op_set(struct ctx *c)
{
	const unsigned ttl_flags = SHMKV_SET_EX | SHMKV_SET_PX |
				   SHMKV_SET_EXAT | SHMKV_SET_PXAT |
				   SHMKV_SET_KEEPTTL;
	struct shmkv_value old;
	const void *k, *val;
	size_t kl, vl;
	unsigned flags;
	int64_t t;
	int rc;

	fz__take_key(c, &k, &kl);
	fz__take_value(c, &val, &vl);
	flags = fz_u8(c->in);
	t = fz__take_num(c);
	fz__take_out(c, &old);
	rc = shmkv_set(c->kv, k, kl, val, vl, flags, t,
		       flags & SHMKV_SET_GET ? &old : NULL);
	fz__check_rc(c, rc, "set");
	FZ_ASSERT(rc <= 1, "set: %d", rc);
	if (rc == 1 && (flags & SHMKV_SET_GET))
		FZ_ASSERT(old.len <= old.cap, "set: old len %zu > cap %zu",
			  old.len, old.cap);
	if (rc >= 0 && set_applied(flags, rc) && !(flags & ttl_flags))
		check_reads_back(c, k, kl, val, vl, "set");
}

static void op_setnx(struct ctx *c)
{
	const void *k, *val;
	size_t kl, vl;
	int rc;

	fz__take_key(c, &k, &kl);
	fz__take_value(c, &val, &vl);
	rc = shmkv_setnx(c->kv, k, kl, val, vl);
	fz__check_rc(c, rc, "setnx");
	if (rc == 1)
		check_reads_back(c, k, kl, val, vl, "setnx");
}

static void op_getset(struct ctx *c)
{
	struct shmkv_value old;
	const void *k, *val;
	size_t kl, vl;
	int rc;

	fz__take_key(c, &k, &kl);
	fz__take_value(c, &val, &vl);
	fz__take_out(c, &old);
	rc = shmkv_getset(c->kv, k, kl, val, vl, &old);
	fz__check_value(c, rc, &old, "getset");
	if (rc >= 0)
		check_reads_back(c, k, kl, val, vl, "getset");
}

static void op_getdel(struct ctx *c)
{
	struct shmkv_value old;
	const void *k;
	size_t kl;
	int rc;

	fz__take_key(c, &k, &kl);
	fz__take_out(c, &old);
	rc = shmkv_getdel(c->kv, k, kl, &old);
	fz__check_value(c, rc, &old, "getdel");
	check_gone(c, rc, k, kl, "getdel");
}

static void op_getex(struct ctx *c)
{
	enum shmkv_getex_mode mode;
	struct shmkv_value v;
	const void *k;
	size_t kl;
	int64_t t;

	fz__take_key(c, &k, &kl);
	mode = (enum shmkv_getex_mode)(fz_u8(c->in) % 7);
	t = fz__take_num(c);
	fz__take_out(c, &v);
	fz__check_value(c, shmkv_getex(c->kv, k, kl, mode, t, &v), &v, "getex");
}

static void op_del(struct ctx *c)
{
	const void *k;
	size_t kl;
	int rc = key_command(c, shmkv_del, &k, &kl, "del");

	check_gone(c, rc, k, kl, "del");
}

static void op_exists(struct ctx *c)
{
	const void *k;
	size_t kl;
	int rc = key_command(c, shmkv_exists, &k, &kl, "exists");

	FZ_ASSERT(rc <= 1, "exists: %d", rc);
}

static void op_delifeq(struct ctx *c)
{
	const void *k, *val;
	size_t kl, vl;

	fz__take_key(c, &k, &kl);
	fz__take_value(c, &val, &vl);
	fz__check_rc(c, shmkv_delifeq(c->kv, k, kl, val, vl), "delifeq");
}

static void op_expire(struct ctx *c)
{
	enum shmkv_expire_unit unit;
	unsigned flags;
	const void *k;
	size_t kl;
	int64_t t;

	fz__take_key(c, &k, &kl);
	unit = (enum shmkv_expire_unit)(fz_u8(c->in) % 5);
	flags = fz_u8(c->in) & 0x1f;
	t = fz__take_num(c);
	fz__check_rc(c, shmkv_expire(c->kv, k, kl, unit, flags, t), "expire");
}

static void op_ttl(struct ctx *c)
{
	bool ms = fz_u8(c->in) & 1;
	const void *k;
	int64_t t = -3;
	size_t kl;
	int rc;

	fz__take_key(c, &k, &kl);
	rc = ms ? shmkv_pttl(c->kv, k, kl, &t) : shmkv_ttl(c->kv, k, kl, &t);
	fz__check_rc(c, rc, "ttl");
	if (rc == 0)
		FZ_ASSERT(t >= -2, "ttl: %" PRId64, t);
}

static void op_persist(struct ctx *c)
{
	const void *k;
	size_t kl;

	key_command(c, shmkv_persist, &k, &kl, "persist");
}

static void op_incrby(struct ctx *c)
{
	int64_t delta, result = 0;
	const void *k;
	size_t kl;
	int rc, len;

	fz__take_key(c, &k, &kl);
	delta = fz__take_num(c);
	rc = shmkv_incrby(c->kv, k, kl, delta, &result);
	fz__check_rc(c, rc, "incrby");
	if (rc != 0 || !c->r->sound)
		return;
	len = snprintf(c->num, sizeof(c->num), "%" PRId64, result);
	/* INCR keeps a TTL: only a key without one must read back. */
	if (shmkv_pttl(c->kv, k, kl, &delta) == 0 && delta == -1)
		check_reads_back(c, k, kl, c->num, (size_t)len, "incrby");
}

/* A prepared key and 1..3 commands on it, so the cached slot is used. */
static void op_keyref(struct ctx *c)
{
	struct shmkv_keyref ref;
	struct shmkv_value v;
	const void *k, *val;
	size_t kl, vl;
	int64_t res;
	int rc, n;

	fz__take_key(c, &k, &kl);
	rc = shmkv_key_prepare(c->kv, &ref, k, kl);
	fz__check_rc(c, rc, "key_prepare");
	for (n = 1 + fz_u8(c->in) % 3; rc == 0 && n > 0; n--) {
		uint8_t sub = fz_u8(c->in) % 8;

		fz__take_value(c, &val, &vl);
		fz__take_out(c, &v);
		if (sub == 0)
			rc = shmkv_key_set(c->kv, &ref, val, vl, 0, 0, NULL);
		else if (sub == 1)
			rc = shmkv_key_setnx(c->kv, &ref, val, vl);
		else if (sub == 2)
			rc = shmkv_key_get(c->kv, &ref, &v);
		else if (sub == 3)
			rc = shmkv_key_getset(c->kv, &ref, val, vl, &v);
		else if (sub == 4)
			rc = shmkv_key_getdel(c->kv, &ref, &v);
		else if (sub == 5)
			rc = shmkv_key_del(c->kv, &ref);
		else if (sub == 6)
			rc = shmkv_key_delifeq(c->kv, &ref, val, vl);
		else
			rc = shmkv_key_incrby(c->kv, &ref, fz__take_num(c),
					      &res);
		fz__check_value(c, rc, &v, "key_*");
		rc = rc < 0 ? rc : 0;
	}
}

/*
 * The script.
 */

static void (*const ops[FZ_OP_COUNT])(struct ctx *c) = {
	[FZ_OP_GET] = op_get,
	[FZ_OP_SET] = op_set,
	[FZ_OP_SETNX] = op_setnx,
	[FZ_OP_GETSET] = op_getset,
	[FZ_OP_GETDEL] = op_getdel,
	[FZ_OP_GETEX] = op_getex,
	[FZ_OP_DEL] = op_del,
	[FZ_OP_EXISTS] = op_exists,
	[FZ_OP_DELIFEQ] = op_delifeq,
	[FZ_OP_EXPIRE] = op_expire,
	[FZ_OP_TTL] = op_ttl,
	[FZ_OP_PERSIST] = op_persist,
	[FZ_OP_INCRBY] = op_incrby,
	[FZ_OP_KEYREF] = op_keyref,
	[FZ_OP_SCAN] = fz__op_scan,
	[FZ_OP_STATS] = fz__op_stats,
	[FZ_OP_CHECK] = fz__op_check,
	[FZ_OP_RECOVER] = fz__op_recover,
	[FZ_OP_SWEEP] = fz__op_sweep,
	[FZ_OP_LOCK] = fz__op_lock,
	[FZ_OP_PATTERN_LOCK] = fz__op_pattern_lock,
	[FZ_OP_LOCK_LIST] = fz__op_lock_list,
	[FZ_OP_EXEC] = fz__op_exec,
	[FZ_OP_EVICT_POLICY] = fz__op_evict_policy,
};

/* For the time bound's report (fz_watch.c). */
static const char *const op_names[FZ_OP_COUNT] = {
	[FZ_OP_GET] = "GET",
	[FZ_OP_SET] = "SET",
	[FZ_OP_SETNX] = "SETNX",
	[FZ_OP_GETSET] = "GETSET",
	[FZ_OP_GETDEL] = "GETDEL",
	[FZ_OP_GETEX] = "GETEX",
	[FZ_OP_DEL] = "DEL",
	[FZ_OP_EXISTS] = "EXISTS",
	[FZ_OP_DELIFEQ] = "DELIFEQ",
	[FZ_OP_EXPIRE] = "EXPIRE",
	[FZ_OP_TTL] = "TTL",
	[FZ_OP_PERSIST] = "PERSIST",
	[FZ_OP_INCRBY] = "INCRBY",
	[FZ_OP_KEYREF] = "a prepared key's command",
	[FZ_OP_SCAN] = "SCAN",
	[FZ_OP_STATS] = "stats",
	[FZ_OP_CHECK] = "check",
	[FZ_OP_RECOVER] = "recover",
	[FZ_OP_SWEEP] = "sweep",
	[FZ_OP_LOCK] = "a safe lock's command",
	[FZ_OP_PATTERN_LOCK] = "a pattern lock's command",
	[FZ_OP_LOCK_LIST] = "lock list",
	[FZ_OP_EXEC] = "shmkv_exec",
	[FZ_OP_EVICT_POLICY] = "the eviction policy",
};

static bool ctx_init(struct ctx *c, const struct fz_run *r, struct fz_in *in)
{
	memset(c, 0, sizeof(*c));
	c->r = r;
	c->in = in;
	c->kv = r->kv;
	if (shmkv_get_config(r->kv, &c->cfg) != 0)
		return false;
	c->kbuf = malloc(c->cfg.key_max + 1);
	c->vbuf = malloc(c->cfg.value_max + 1);
	c->out = malloc(c->cfg.value_max); /* exact: ASan bounds it */
	for (int i = 0; i < FZ_K_COUNT; i++) {
		c->keys[i].b = (const unsigned char *)fz_keys[i];
		c->keys[i].len = strlen(fz_keys[i]);
	}
	c->nkeys = FZ_K_COUNT;
	return c->kbuf != NULL && c->vbuf != NULL && c->out != NULL;
}

static void ctx_free(struct ctx *c)
{
	for (int i = 0; i < KEYS_MAX; i++)
		free(c->own[i]);
	free(c->kbuf);
	free(c->vbuf);
	free(c->out);
	free(c->small);
}

void fz_ops_run(const struct fz_run *r, struct fz_in *in)
{
	struct ctx c;

	FZ_ASSERT(ctx_init(&c, r, in), "get_config or malloc failed");
	/* The keys already in the store, so commands meet what it holds. */
	fz__scan_from(&c, 0, 255);
	for (unsigned step = 0; step < r->steps_max && in->n > 0; step++) {
		unsigned op = fz_u8(in) % FZ_OP_COUNT;

		/* Each command within its bound, whatever the store holds. */
		fz_watch_begin(op_names[op]);
		ops[op](&c);
		fz_watch_end();
	}
	ctx_free(&c);
}
