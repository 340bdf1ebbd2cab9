/*
 * store_cmds.c - the string commands of shmkv.Store, named and shaped as
 * redis-py's (set(k, v, nx=True, px=1500, get=True)), each one call of the
 * C API; and the mapping protocol (st[k], del st[k], k in st).
 *
 * On a shared-memory store commands keep the GIL: none of them sleeps
 * (shmkv.h: lock-free, bounded retries). On a Redis server each is a round
 * trip, made with the GIL released (PK_CALL).
 */
#include "pyshmkv.h"

#include <errno.h>
#include <string.h>

/* Values up to this size are read on the stack, then copied once into
 * their bytes object; longer ones are read again straight into one. */
#define STACK_VALUE 1024

int pk_read_value(pk_store *s, pk_read_fn fn, const struct pk_arg *key,
		  const struct pk_arg *val, void *ctx, PyObject **out)
{
	char stack[STACK_VALUE];
	struct shmkv_value v = { stack, sizeof stack, 0 };
	shmkv_t *kv = s->kv; /* PK_CALL checks it is still open */
	int rc;

	PK_CALL(s, rc, fn(kv, key, val, ctx, &v));
	*out = NULL;
	while (rc == -ENOBUFS) {
		/* The store is unchanged (shmkv.h): ask again with room for
		 * the length it gave, until the value stops growing. */
		Py_CLEAR(*out);
		*out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)v.len);
		if (!*out)
			return INT32_MIN;
		v.buf = PyBytes_AS_STRING(*out); /* no other thread sees it */
		v.cap = v.len;
		PK_CALL(s, rc, fn(kv, key, val, ctx, &v));
	}
	if (rc <= 0) {
		Py_CLEAR(*out);
		return rc;
	}
	if (!*out) {
		*out = PyBytes_FromStringAndSize(stack, (Py_ssize_t)v.len);
		return *out ? rc : INT32_MIN;
	}
	if (v.len != (size_t)PyBytes_GET_SIZE(*out) &&
	    _PyBytes_Resize(out, (Py_ssize_t)v.len) < 0)
		return INT32_MIN;
	return rc;
}

/* The reply of a read: bytes, None, or the exception. */
static PyObject *value_reply(pk_store *s, int rc, PyObject *v,
			     const struct pk_arg *key, const struct pk_arg *val)
{
	if (rc == INT32_MIN)
		return NULL;
	if (rc < 0)
		return pk_store_fail(s, rc, key, val);
	if (rc == 0)
		Py_RETURN_NONE;
	return v;
}

static int do_get(shmkv_t *kv, const struct pk_arg *k, const struct pk_arg *v,
		  void *ctx, struct shmkv_value *out)
{
	(void)v;
	(void)ctx;
	return shmkv_get(kv, k->p, k->n, out);
}

/* The store and its open handle, or return @fail (an exception set). */
#define STORE_KV_OR(self, kv, fail)                                            \
	pk_store *s = (pk_store *)(self);                                      \
	shmkv_t *kv = pk_store_kv(s);                                          \
	if (!kv)                                                               \
	return fail
#define STORE_KV(self, kv) STORE_KV_OR(self, kv, NULL)

static PyObject *st_get(PyObject *self, PyObject *key)
{
	STORE_KV(self, kv);
	struct pk_arg k;
	PyObject *v;

	if (pk_arg_get(key, &k) < 0) {
		pk_arg_release(&k);
		return NULL;
	}
	int rc = pk_read_value(s, do_get, &k, NULL, NULL, &v);
	PyObject *r = value_reply(s, rc, v, &k, NULL);
	pk_arg_release(&k);
	return r;
}

struct set_ctx {
	unsigned flags;
	int64_t expire;
};

static int do_set(shmkv_t *kv, const struct pk_arg *k, const struct pk_arg *v,
		  void *ctx, struct shmkv_value *out)
{
	const struct set_ctx *c = ctx;
	return shmkv_set(kv, k->p, k->n, v->p, v->n, c->flags, c->expire,
			 (c->flags & SHMKV_SET_GET) ? out : NULL);
}

/* The expiry keywords of SET and GETEX: at most one; Redis's errors.
 * Return 0, -1 (an exception set), or -2 (the time is not positive: the
 * exception "invalid expire time" set). */
static int expiry_opts(PyObject *const opts[4], const unsigned bits[4],
		       int persist_or_keep, const char *cmd, unsigned *flags,
		       int64_t *t)
{
	static const int64_t scale[4] = { 1, 1000, 1, 1000 };
	int given = persist_or_keep;

	for (int i = 0; i < 4; i++) {
		if (!opts[i] || opts[i] == Py_None)
			continue;
		if (given++) {
			pk_raise(-EINVAL, "syntax error: give at most one of "
					  "ex, px, exat, pxat, keepttl/"
					  "persist");
			return -1;
		}
		if (pk_time_arg(opts[i], scale[i], i >= 2, t) < 0)
			return -1;
		if (*t <= 0) {
			pk_raisef(-EINVAL,
				  "invalid expire time in '%s' "
				  "command",
				  cmd);
			return -2;
		}
		*flags |= bits[i];
	}
	return 0;
}

static PyObject *st_set(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name",	  "value", "ex",   "px",   "nx", "xx",
			       "keepttl", "get",   "exat", "pxat", NULL };
	static const unsigned bits[4] = { SHMKV_SET_EX, SHMKV_SET_PX,
					  SHMKV_SET_EXAT, SHMKV_SET_PXAT };
	STORE_KV(self, kv);
	struct pk_arg k, v;
	PyObject *o[4] = { NULL, NULL, NULL, NULL };
	int nx = 0, xx = 0, keepttl = 0, get = 0;
	struct set_ctx c = { 0, 0 };
	PyObject *r = NULL, *old;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&O&|OOppppOO:set", kws,
					 pk_arg_conv, &k, pk_arg_conv, &v,
					 &o[0], &o[1], &nx, &xx, &keepttl, &get,
					 &o[2], &o[3]))
		return NULL;
	if (nx && xx) {
		pk_raise(-EINVAL, "syntax error: nx and xx exclude each "
				  "other");
		goto out;
	}
	c.flags = (nx ? SHMKV_SET_NX : 0) | (xx ? SHMKV_SET_XX : 0) |
		  (keepttl ? SHMKV_SET_KEEPTTL : 0) | (get ? SHMKV_SET_GET : 0);
	if (expiry_opts(o, bits, keepttl, "set", &c.flags, &c.expire) < 0)
		goto out;
	int rc = pk_read_value(s, do_set, &k, &v, &c, &old);
	if (get)
		r = value_reply(s, rc, old, &k, &v);
	else if (rc < 0)
		r = pk_store_fail(s, rc, &k, &v);
	else
		r = PyBool_FromLong(rc);
out:
	pk_arg_release(&k);
	pk_arg_release(&v);
	return r;
}

static PyObject *st_setnx(PyObject *self, PyObject *args)
{
	STORE_KV(self, kv);
	struct pk_arg k, v;

	if (!PyArg_ParseTuple(args, "O&O&:setnx", pk_arg_conv, &k, pk_arg_conv,
			      &v))
		return NULL;
	int rc;
	PK_CALL(s, rc, shmkv_setnx(kv, k.p, k.n, v.p, v.n));
	PyObject *r = rc < 0 ? pk_store_fail(s, rc, &k, &v)
			     : PyBool_FromLong(rc);
	pk_arg_release(&k);
	pk_arg_release(&v);
	return r;
}

static int do_getset(shmkv_t *kv, const struct pk_arg *k,
		     const struct pk_arg *v, void *ctx, struct shmkv_value *out)
{
	(void)ctx;
	return shmkv_getset(kv, k->p, k->n, v->p, v->n, out);
}

static PyObject *st_getset(PyObject *self, PyObject *args)
{
	STORE_KV(self, kv);
	struct pk_arg k, v;
	PyObject *old;

	if (!PyArg_ParseTuple(args, "O&O&:getset", pk_arg_conv, &k, pk_arg_conv,
			      &v))
		return NULL;
	int rc = pk_read_value(s, do_getset, &k, &v, NULL, &old);
	PyObject *r = value_reply(s, rc, old, &k, &v);
	pk_arg_release(&k);
	pk_arg_release(&v);
	return r;
}

static int do_getdel(shmkv_t *kv, const struct pk_arg *k,
		     const struct pk_arg *v, void *ctx, struct shmkv_value *out)
{
	(void)v;
	(void)ctx;
	return shmkv_getdel(kv, k->p, k->n, out);
}

static PyObject *st_getdel(PyObject *self, PyObject *key)
{
	STORE_KV(self, kv);
	struct pk_arg k;
	PyObject *old;

	if (pk_arg_get(key, &k) < 0) {
		pk_arg_release(&k);
		return NULL;
	}
	int rc = pk_read_value(s, do_getdel, &k, NULL, NULL, &old);
	PyObject *r = value_reply(s, rc, old, &k, NULL);
	pk_arg_release(&k);
	return r;
}

struct getex_ctx {
	enum shmkv_getex_mode mode;
	int64_t t;
};

static int do_getex(shmkv_t *kv, const struct pk_arg *k, const struct pk_arg *v,
		    void *ctx, struct shmkv_value *out)
{
	const struct getex_ctx *c = ctx;
	(void)v;
	return shmkv_getex(kv, k->p, k->n, c->mode, c->t, out);
}

static PyObject *st_getex(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name", "ex",	  "px", "exat",
			       "pxat", "persist", NULL };
	static const unsigned modes[4] = { SHMKV_GETEX_EX, SHMKV_GETEX_PX,
					   SHMKV_GETEX_EXAT, SHMKV_GETEX_PXAT };
	STORE_KV(self, kv);
	struct pk_arg k;
	PyObject *o[4] = { NULL, NULL, NULL, NULL }, *r = NULL, *val;
	int persist = 0;
	unsigned mode = 0;
	struct getex_ctx c = { SHMKV_GETEX_KEEP, 0 };

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|OOOOp:getex", kws,
					 pk_arg_conv, &k, &o[0], &o[1], &o[2],
					 &o[3], &persist))
		return NULL;
	int bad = expiry_opts(o, modes, persist, "getex", &mode, &c.t);
	if (bad < 0) {
		/* Redis looks the key up before it checks the time: a missing
		 * key is nil even with a bad time (shmkv_getex's doc), only
		 * an existing one gets the error. */
		int rc = 0;
		if (bad == -2)
			PK_CALL(s, rc, shmkv_exists(kv, k.p, k.n));
		if (bad == -2 && rc == 0) {
			PyErr_Clear();
			r = Py_NewRef(Py_None);
		}
		goto out;
	}
	c.mode = persist ? SHMKV_GETEX_PERSIST : (enum shmkv_getex_mode)mode;
	int rc = pk_read_value(s, do_getex, &k, NULL, &c, &val);
	r = value_reply(s, rc, val, &k, NULL);
out:
	pk_arg_release(&k);
	return r;
}

/* DEL and EXISTS of several keys: one C call per key, summed (each key is
 * atomic on its own; Redis's multi-key DEL is atomic as a whole). */
static PyObject *per_key(PyObject *self, PyObject *args,
			 int (*fn)(shmkv_t *, const void *, size_t))
{
	STORE_KV(self, kv);
	long long n = 0;

	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++) {
		struct pk_arg k;
		int rc = pk_arg_get(PyTuple_GET_ITEM(args, i), &k);
		if (rc == 0) {
			PK_CALL(s, rc, fn(kv, k.p, k.n));
			if (rc < 0)
				pk_store_fail(s, rc, &k, NULL);
		}
		pk_arg_release(&k);
		if (rc < 0)
			return NULL;
		n += rc;
	}
	return PyLong_FromLongLong(n);
}

static PyObject *st_delete(PyObject *self, PyObject *args)
{
	return per_key(self, args, shmkv_del);
}

static PyObject *st_exists(PyObject *self, PyObject *args)
{
	return per_key(self, args, shmkv_exists);
}

static PyObject *st_delifeq(PyObject *self, PyObject *args)
{
	STORE_KV(self, kv);
	struct pk_arg k, v;

	if (!PyArg_ParseTuple(args, "O&O&:delifeq", pk_arg_conv, &k,
			      pk_arg_conv, &v))
		return NULL;
	int rc;
	PK_CALL(s, rc, shmkv_delifeq(kv, k.p, k.n, v.p, v.n));
	PyObject *r = rc < 0 ? pk_store_fail(s, rc, &k, &v)
			     : PyBool_FromLong(rc);
	pk_arg_release(&k);
	pk_arg_release(&v);
	return r;
}

/* EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with redis-py's keywords. */
static PyObject *expire_cmd(PyObject *self, PyObject *args, PyObject *kw,
			    enum shmkv_expire_unit unit, const char *fmt)
{
	static char *kws[] = { "name", "time", "nx", "xx", "gt", "lt", NULL };
	static const int64_t scale[4] = { 1, 1000, 1, 1000 };
	STORE_KV(self, kv);
	struct pk_arg k;
	PyObject *to, *r = NULL;
	int nx = 0, xx = 0, gt = 0, lt = 0;
	int64_t t;

	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kws, pk_arg_conv, &k,
					 &to, &nx, &xx, &gt, &lt))
		return NULL;
	if (pk_time_arg(to, scale[unit], unit >= SHMKV_EXPIRE_AT_SEC, &t) < 0)
		goto out;
	unsigned flags = (nx ? SHMKV_EXPIRE_NX : 0) |
			 (xx ? SHMKV_EXPIRE_XX : 0) |
			 (gt ? SHMKV_EXPIRE_GT : 0) |
			 (lt ? SHMKV_EXPIRE_LT : 0);
	int rc;
	PK_CALL(s, rc, shmkv_expire(kv, k.p, k.n, unit, flags, t));
	if (rc == -EINVAL && flags && (nx + xx + gt + lt > 1))
		r = pk_raise(rc, "NX and XX, GT or LT options at the same "
				 "time are not compatible");
	else if (rc == -EINVAL)
		r = pk_raise(rc, "invalid expire time");
	else
		r = rc < 0 ? pk_store_fail(s, rc, &k, NULL)
			   : PyBool_FromLong(rc);
out:
	pk_arg_release(&k);
	return r;
}

static PyObject *st_expire(PyObject *self, PyObject *args, PyObject *kw)
{
	return expire_cmd(self, args, kw, SHMKV_EXPIRE_SEC, "O&O|pppp:expire");
}

static PyObject *st_pexpire(PyObject *self, PyObject *args, PyObject *kw)
{
	return expire_cmd(self, args, kw, SHMKV_EXPIRE_MSEC,
			  "O&O|pppp:pexpire");
}

static PyObject *st_expireat(PyObject *self, PyObject *args, PyObject *kw)
{
	return expire_cmd(self, args, kw, SHMKV_EXPIRE_AT_SEC,
			  "O&O|pppp:expireat");
}

static PyObject *st_pexpireat(PyObject *self, PyObject *args, PyObject *kw)
{
	return expire_cmd(self, args, kw, SHMKV_EXPIRE_AT_MSEC,
			  "O&O|pppp:pexpireat");
}

static PyObject *ttl_cmd(PyObject *self, PyObject *key,
			 int (*fn)(shmkv_t *, const void *, size_t, int64_t *))
{
	STORE_KV(self, kv);
	struct pk_arg k;
	int64_t t = 0;

	if (pk_arg_get(key, &k) < 0) {
		pk_arg_release(&k);
		return NULL;
	}
	int rc;
	PK_CALL(s, rc, fn(kv, k.p, k.n, &t));
	PyObject *r = rc < 0 ? pk_store_fail(s, rc, &k, NULL)
			     : PyLong_FromLongLong(t);
	pk_arg_release(&k);
	return r;
}

static PyObject *st_ttl(PyObject *self, PyObject *key)
{
	return ttl_cmd(self, key, shmkv_ttl);
}

static PyObject *st_pttl(PyObject *self, PyObject *key)
{
	return ttl_cmd(self, key, shmkv_pttl);
}

static PyObject *st_persist(PyObject *self, PyObject *key)
{
	STORE_KV(self, kv);
	struct pk_arg k;

	if (pk_arg_get(key, &k) < 0) {
		pk_arg_release(&k);
		return NULL;
	}
	int rc;
	PK_CALL(s, rc, shmkv_persist(kv, k.p, k.n));
	PyObject *r = rc < 0 ? pk_store_fail(s, rc, &k, NULL)
			     : PyBool_FromLong(rc);
	pk_arg_release(&k);
	return r;
}

/* INCR, INCRBY, DECR, DECRBY: redis-py's (name, amount=1). */
static PyObject *incr_cmd(PyObject *self, PyObject *args, PyObject *kw,
			  int sign, const char *fmt)
{
	static char *kws[] = { "name", "amount", NULL };
	STORE_KV(self, kv);
	struct pk_arg k;
	long long amount = 1;
	int64_t result = 0;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kws, pk_arg_conv, &k,
					 &amount))
		return NULL;
	if (sign > 0)
		PK_CALL(s, rc, shmkv_incrby(kv, k.p, k.n, amount, &result));
	else
		PK_CALL(s, rc, shmkv_decrby(kv, k.p, k.n, amount, &result));
	PyObject *r;
	if (rc == -EDOM)
		r = pk_raise(rc, "value is not an integer or out of range");
	else if (rc == -EOVERFLOW)
		r = pk_raise(rc, "increment or decrement would overflow");
	else
		r = rc < 0 ? pk_store_fail(s, rc, &k, NULL)
			   : PyLong_FromLongLong(result);
	pk_arg_release(&k);
	return r;
}

static PyObject *st_incr(PyObject *self, PyObject *args, PyObject *kw)
{
	return incr_cmd(self, args, kw, 1, "O&|L:incr");
}

static PyObject *st_incrby(PyObject *self, PyObject *args, PyObject *kw)
{
	return incr_cmd(self, args, kw, 1, "O&|L:incrby");
}

static PyObject *st_decr(PyObject *self, PyObject *args, PyObject *kw)
{
	return incr_cmd(self, args, kw, -1, "O&|L:decr");
}

static PyObject *st_decrby(PyObject *self, PyObject *args, PyObject *kw)
{
	return incr_cmd(self, args, kw, -1, "O&|L:decrby");
}

static PyObject *st_get_int(PyObject *self, PyObject *key)
{
	STORE_KV(self, kv);
	struct pk_arg k;
	int64_t v = 0;

	if (pk_arg_get(key, &k) < 0) {
		pk_arg_release(&k);
		return NULL;
	}
	int rc;
	PK_CALL(s, rc, shmkv_get_int(kv, k.p, k.n, &v));
	PyObject *r;
	if (rc == -EDOM)
		r = pk_raise(rc, "value is not an integer or out of range");
	else if (rc < 0)
		r = pk_store_fail(s, rc, &k, NULL);
	else if (rc == 0)
		r = Py_NewRef(Py_None);
	else
		r = PyLong_FromLongLong(v);
	pk_arg_release(&k);
	return r;
}

/* ---- the mapping protocol ---- */

static PyObject *mp_get(PyObject *self, PyObject *key)
{
	PyObject *v = st_get(self, key);
	if (v == Py_None) {
		Py_DECREF(v);
		PyErr_SetObject(PyExc_KeyError, key);
		return NULL;
	}
	return v;
}

static int mp_set(PyObject *self, PyObject *key, PyObject *val)
{
	STORE_KV_OR(self, kv, -1);
	struct pk_arg k, v;
	int rc = pk_arg_get(key, &k);

	if (rc == 0 && val) {
		rc = pk_arg_get(val, &v);
		if (rc == 0) {
			PK_CALL(s, rc,
				shmkv_set(kv, k.p, k.n, v.p, v.n, 0, 0, NULL));
			if (rc < 0)
				pk_store_fail(s, rc, &k, &v);
		}
		pk_arg_release(&v);
	} else if (rc == 0) {
		PK_CALL(s, rc, shmkv_del(kv, k.p, k.n));
		if (rc < 0)
			pk_store_fail(s, rc, &k, NULL);
		else if (rc == 0) {
			PyErr_SetObject(PyExc_KeyError, key);
			rc = -1;
		}
	}
	pk_arg_release(&k);
	return rc < 0 ? -1 : 0;
}

static int sq_has(PyObject *self, PyObject *key)
{
	STORE_KV_OR(self, kv, -1);
	struct pk_arg k;
	int rc = pk_arg_get(key, &k);

	if (rc == 0) {
		PK_CALL(s, rc, shmkv_exists(kv, k.p, k.n));
		if (rc < 0) {
			pk_store_fail(s, rc, &k, NULL);
			rc = -1;
		}
	}
	pk_arg_release(&k);
	return rc;
}

PyMappingMethods pk_store_as_mapping = {
	.mp_length = pk_store_len,
	.mp_subscript = mp_get,
	.mp_ass_subscript = mp_set,
};

PySequenceMethods pk_store_as_sequence = {
	.sq_contains = sq_has,
};

#define KW    (METH_VARARGS | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

PyMethodDef pk_store_cmd_methods[] = {
	{ "get", st_get, METH_O,
	  "get($self, name, /)\n--\n\nGET: the value (bytes), or None." },
	{ "set", FN(st_set), KW,
	  "set($self, name, value, ex=None, px=None, nx=False, xx=False, "
	  "keepttl=False, get=False, exat=None, pxat=None)\n--\n\n"
	  "SET with Redis's options. Returns True when set, False when nx "
	  "or xx stopped it; with get=True the old value (bytes or None) "
	  "instead, as SET ... GET. ex/px take an int or a timedelta, "
	  "exat/pxat an int or a datetime." },
	{ "setnx", st_setnx, METH_VARARGS,
	  "setnx($self, name, value, /)\n--\n\nSETNX: True if set, False if "
	  "the key existed." },
	{ "getset", st_getset, METH_VARARGS,
	  "getset($self, name, value, /)\n--\n\nGETSET: set, drop any TTL, "
	  "return the old value or None." },
	{ "getdel", st_getdel, METH_O,
	  "getdel($self, name, /)\n--\n\nGETDEL: delete, return the value "
	  "or None." },
	{ "getex", FN(st_getex), KW,
	  "getex($self, name, ex=None, px=None, exat=None, pxat=None, "
	  "persist=False)\n--\n\nGETEX: GET, changing the TTL in the same "
	  "atomic step." },
	{ "delete", st_delete, METH_VARARGS,
	  "delete($self, *names)\n--\n\nDEL: how many of the keys existed "
	  "and were deleted (each key atomically on its own)." },
	{ "exists", st_exists, METH_VARARGS,
	  "exists($self, *names)\n--\n\nEXISTS: how many of the keys exist "
	  "(a key named twice counts twice)." },
	{ "delifeq", st_delifeq, METH_VARARGS,
	  "delifeq($self, name, value, /)\n--\n\nDELIFEQ: delete the key "
	  "only if it holds exactly value; True if deleted." },
	{ "expire", FN(st_expire), KW,
	  "expire($self, name, time, nx=False, xx=False, gt=False, "
	  "lt=False)\n--\n\nEXPIRE in seconds (int or timedelta): True if "
	  "set." },
	{ "pexpire", FN(st_pexpire), KW,
	  "pexpire($self, name, time, nx=False, xx=False, gt=False, "
	  "lt=False)\n--\n\nPEXPIRE in milliseconds: True if set." },
	{ "expireat", FN(st_expireat), KW,
	  "expireat($self, name, when, nx=False, xx=False, gt=False, "
	  "lt=False)\n--\n\nEXPIREAT: Unix time in seconds or a datetime." },
	{ "pexpireat", FN(st_pexpireat), KW,
	  "pexpireat($self, name, when, nx=False, xx=False, gt=False, "
	  "lt=False)\n--\n\nPEXPIREAT: Unix time in milliseconds or a "
	  "datetime." },
	{ "ttl", st_ttl, METH_O,
	  "ttl($self, name, /)\n--\n\nTTL in seconds; -2 missing, -1 no "
	  "TTL." },
	{ "pttl", st_pttl, METH_O,
	  "pttl($self, name, /)\n--\n\nPTTL in milliseconds; -2 missing, -1 "
	  "no TTL." },
	{ "persist", st_persist, METH_O,
	  "persist($self, name, /)\n--\n\nPERSIST: True if a TTL was "
	  "removed." },
	{ "incr", FN(st_incr), KW,
	  "incr($self, name, amount=1)\n--\n\nINCRBY name amount: the new "
	  "value. NotAnInteger, IntegerOverflow." },
	{ "incrby", FN(st_incrby), KW,
	  "incrby($self, name, amount=1)\n--\n\nINCRBY: the new value." },
	{ "decr", FN(st_decr), KW,
	  "decr($self, name, amount=1)\n--\n\nDECRBY name amount: the new "
	  "value." },
	{ "decrby", FN(st_decrby), KW,
	  "decrby($self, name, amount=1)\n--\n\nDECRBY: the new value." },
	{ "get_int", st_get_int, METH_O,
	  "get_int($self, name, /)\n--\n\nThe value as an int (None if "
	  "missing); NotAnInteger if it is not one as INCR reads it." },
	{ NULL, NULL, 0, NULL },
};
