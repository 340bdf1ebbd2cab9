/*
 * lock.c - the safe lock (shmkv_lock.h's lease and fencing-token lock) as
 * shmkv.Lock and shmkv.Grant:
 *
 *     with st.lock("jobs", lease_ms=5000, timeout=None) as grant:
 *         grant.token, grant.owner_died
 *
 * A Lock is one holder's handle (a struct shmkv_lock): one grant at a time,
 * one thread at a time. Threads of a process that want the same lock each
 * take their own st.lock(name); they then exclude each other as processes
 * do. Waits release the GIL in slices (pk_wait_sliced) so that other
 * threads run and Ctrl-C is seen while a lock is awaited.
 */
#include "pyshmkv.h"

#include <errno.h>
#include <time.h>

/* Longest wait with the GIL released before signals are checked. */
#define SLICE_MS 100

typedef struct {
	PyObject_HEAD pk_store *store;
	PyObject *name; /* str */
	int64_t lease_ms;
	int64_t timeout_ms; /* for `with`; -1: forever */
	uint64_t gen;	    /* grants made through this Lock */
	int holding;	    /* the last grant was not given back */
	int busy;	    /* a thread is inside a call on it */
	struct shmkv_lock lk;
} pk_lock;

typedef struct {
	PyObject_HEAD pk_lock *lock;
	uint64_t gen;
	uint64_t token;
	int status; /* enum shmkv_lock_grant */
} pk_grant;

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int pk_timeout_ms(PyObject *o, int64_t *ms)
{
	if (!o || o == Py_None) {
		*ms = SHMKV_LOCK_FOREVER;
		return 0;
	}
	double d = PyFloat_AsDouble(o);
	if (d == -1.0 && PyErr_Occurred())
		return -1;
	if (!(d >= 0) || d > 1e12) {
		pk_raise(-EINVAL, "timeout must be None or seconds >= 0");
		return -1;
	}
	*ms = (int64_t)(d * 1000.0 + 0.5);
	return 0;
}

int pk_wait_sliced(pk_store *s, int (*try_wait)(void *ctx, int64_t ms),
		   void *ctx, int64_t timeout_ms)
{
	int64_t deadline = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;

	for (;;) {
		int64_t slice = SLICE_MS, left = 0;
		if (deadline >= 0) {
			left = deadline - mono_ms();
			slice = left < 0 ? 0 : left < slice ? left : slice;
		}
		int rc;
		/* A close() during the last slice: the handle is gone, or
		 * goes with the last waiter out. */
		if (!s->kv || s->close_pending)
			return -EBADF;
		pk_store_enter_wait(s);
		Py_BEGIN_ALLOW_THREADS
			rc = try_wait(ctx, slice);
		Py_END_ALLOW_THREADS
		pk_store_leave_wait(s);
		if (rc != -ETIMEDOUT)
			return rc;
		if (deadline >= 0 && mono_ms() >= deadline)
			return -ETIMEDOUT;
		if (PyErr_CheckSignals() < 0)
			return INT32_MIN;
	}
}

/* The Lock's handle, with its store open and no other thread in it. */
static int lock_enter(pk_lock *l)
{
	if (!pk_store_kv(l->store))
		return -1;
	if (l->busy) {
		pk_raise(-EBUSY, "this Lock object is in use by another "
				 "thread: take one st.lock(name) per thread");
		return -1;
	}
	l->busy = 1;
	return 0;
}

static PyObject *lock_fail(pk_lock *l, int rc, const char *what)
{
	if (rc == INT32_MIN)
		return NULL;
	if (rc == -EBADF) /* closed by another thread meanwhile */
		return pk_raise(rc, "the store is closed");
	if (rc == -ENAMETOOLONG || rc == -ESTALE || rc == -EROFS ||
	    rc == -EINVAL)
		return pk_raisef(rc, "%s lock '%U': %s", what, l->name,
				 shmkv_strerror(rc));
	return pk_raise_lock(rc, what, PyUnicode_AsUTF8(l->name));
}

struct acq_ctx {
	pk_lock *l;
};

static int acq_wait(void *ctx, int64_t ms)
{
	pk_lock *l = ((struct acq_ctx *)ctx)->l;
	int rc = shmkv_lock_timed_acquire(&l->lk, l->lease_ms, ms);
	/* a zero wait is one attempt, which may say EBUSY */
	return rc == -EBUSY ? -ETIMEDOUT : rc;
}

static PyObject *new_grant(pk_lock *l, int status)
{
	pk_grant *g = PyObject_New(pk_grant, &pk_grant_type);
	if (!g)
		return NULL;
	Py_INCREF(l);
	g->lock = l;
	g->gen = l->gen;
	g->token = shmkv_lock_token(&l->lk);
	g->status = status;
	return (PyObject *)g;
}

/* Acquire; -EBUSY (blocking=False) gives None. */
static PyObject *do_acquire(pk_lock *l, int blocking, int64_t timeout_ms)
{
	int rc;

	if (lock_enter(l) < 0)
		return NULL;
	/* One attempt with the GIL held first (on shared memory: a free
	 * lock is granted in tens of nanoseconds, and giving the GIL up and
	 * taking it back would cost more than that). Only a wait gives it
	 * up, and a round trip to a Redis server (PK_CALL). */
	PK_CALL(l->store, rc, shmkv_lock_try_acquire(&l->lk, l->lease_ms));
	if (rc == -EBUSY && blocking) {
		struct acq_ctx c = { l };
		rc = pk_wait_sliced(l->store, acq_wait, &c, timeout_ms);
	}
	l->busy = 0;
	if (rc == -EBUSY && !blocking)
		Py_RETURN_NONE;
	if (rc < 0)
		return lock_fail(l, rc, "acquire");
	l->gen++;
	l->holding = 1;
	return new_grant(l, rc);
}

static PyObject *lock_acquire(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "blocking", "timeout", NULL };
	pk_lock *l = (pk_lock *)self;
	int blocking = 1;
	PyObject *to = Py_None;
	int64_t ms;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:acquire", kws,
					 &blocking, &to) ||
	    pk_timeout_ms(to, &ms) < 0)
		return NULL;
	return do_acquire(l, blocking, ms);
}

static PyObject *do_release(pk_lock *l)
{
	if (lock_enter(l) < 0)
		return NULL;
	int rc;
	PK_CALL(l->store, rc, shmkv_lock_release(&l->lk));
	l->busy = 0;
	l->holding = 0; /* holds nothing afterwards, either way */
	if (rc < 0)
		return lock_fail(l, rc, "release");
	Py_RETURN_NONE;
}

static PyObject *lock_release(PyObject *self, PyObject *unused)
{
	(void)unused;
	return do_release((pk_lock *)self);
}

static PyObject *lock_enter_cm(PyObject *self, PyObject *unused)
{
	pk_lock *l = (pk_lock *)self;
	(void)unused;
	return do_acquire(l, 1, l->timeout_ms);
}

static PyObject *lock_exit_cm(PyObject *self, PyObject *args)
{
	(void)args;
	PyObject *r = do_release((pk_lock *)self);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE; /* never swallows the body's exception */
}

static PyObject *lock_held(PyObject *self, PyObject *unused)
{
	pk_lock *l = (pk_lock *)self;
	(void)unused;
	if (lock_enter(l) < 0)
		return NULL;
	int rc = 0;
	if (l->gen)
		PK_CALL(l->store, rc, shmkv_lock_held(&l->lk));
	l->busy = 0;
	return PyBool_FromLong(rc > 0);
}

static void lock_dealloc(PyObject *self)
{
	pk_lock *l = (pk_lock *)self;

	/* A Lock dropped while holding gives its grant back rather than
	 * making everyone wait out the lease (in a fork child, whose copy
	 * does not own the parent's grant, this is refused harmlessly). */
	if (l->holding && !l->busy && l->store && l->store->kv &&
	    !l->store->close_pending) {
		int rc;
		PK_CALL(l->store, rc, shmkv_lock_release(&l->lk));
		(void)rc;
	}
	Py_XDECREF(l->store);
	Py_XDECREF(l->name);
	PyObject_Free(self);
}

static PyObject *lock_repr(PyObject *self)
{
	pk_lock *l = (pk_lock *)self;
	return PyUnicode_FromFormat("<shmkv.Lock %R of %R, lease %lld ms>",
				    l->name, l->store->shown,
				    (long long)l->lease_ms);
}

static PyObject *lock_get_name(PyObject *self, void *unused)
{
	(void)unused;
	return Py_NewRef(((pk_lock *)self)->name);
}

static PyObject *lock_get_token(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(
		shmkv_lock_token(&((pk_lock *)self)->lk));
}

static PyGetSetDef lock_getset[] = {
	{ "name", lock_get_name, NULL, "The lock's name.", NULL },
	{ "token", lock_get_token, NULL,
	  "The fencing token of this Lock's last grant (0: none yet).", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef lock_methods[] = {
	{ "acquire", (PyCFunction)(void (*)(void))lock_acquire,
	  METH_VARARGS | METH_KEYWORDS,
	  "acquire($self, blocking=True, timeout=None)\n--\n\n"
	  "Take the lock: a Grant. blocking=False: one attempt, None if the "
	  "lock is busy. Otherwise wait up to timeout seconds (None: "
	  "forever), releasing the GIL; LockTimeout when it runs out. A dead "
	  "holder is taken over at once (grant.owner_died)." },
	{ "release", lock_release, METH_NOARGS,
	  "release($self, /)\n--\n\nGive the grant back. NotLockHolder if "
	  "another grant took the lock after this one's lease ran out, or "
	  "if it is not held." },
	{ "held", lock_held, METH_NOARGS,
	  "held($self, /)\n--\n\nTrue if this Lock's grant still holds the "
	  "lock and its lease is running (for this instant only)." },
	{ "__enter__", lock_enter_cm, METH_NOARGS,
	  "acquire(timeout=the lock's timeout); return the Grant." },
	{ "__exit__", lock_exit_cm, METH_VARARGS, "release()." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pk_lock_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shmkv.Lock",
	.tp_basicsize = sizeof(pk_lock),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A safe lock of a store (st.lock(name)): lease, fencing "
		  "token, dead-holder takeover. One holder's handle: one "
		  "thread at a time.",
	.tp_dealloc = lock_dealloc,
	.tp_repr = lock_repr,
	.tp_methods = lock_methods,
	.tp_getset = lock_getset,
};

PyObject *pk_store_lock(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name", "lease_ms", "timeout", NULL };
	pk_store *s = (pk_store *)self;
	PyObject *name, *to = Py_None;
	long long lease = 5000;
	int64_t ms;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|L$O:lock", kws, &name,
					 &lease, &to) ||
	    pk_timeout_ms(to, &ms) < 0)
		return NULL;
	const char *cname = pk_cstr(name, "a lock name");
	if (!cname)
		return NULL;
	shmkv_t *kv = pk_store_kv(s);
	if (!kv)
		return NULL;
	if (lease < 1 || lease > SHMKV_LOCK_LEASE_MAX)
		return pk_raisef(-EINVAL, "lease_ms must be 1..%lld",
				 (long long)SHMKV_LOCK_LEASE_MAX);
	pk_lock *l = PyObject_New(pk_lock, &pk_lock_type);
	if (!l)
		return NULL;
	Py_INCREF(s);
	l->store = s;
	Py_INCREF(name);
	l->name = name;
	l->lease_ms = lease;
	l->timeout_ms = ms;
	l->gen = 0;
	l->holding = 0;
	l->busy = 0;
	int rc;
	PK_CALL(s, rc, shmkv_lock_init(kv, &l->lk, cname));
	if (rc == -ENAMETOOLONG) {
		Py_ssize_t n = 0;
		(void)PyUnicode_AsUTF8AndSize(name, &n);
		pk_raisef(rc,
			  "lock key 'lock.%U' is %zu bytes, this store's "
			  "key_max is %u (and a lock name at most %u)",
			  name, SHMKV_LOCK_PREFIX_LEN + (size_t)n, s->key_max,
			  SHMKV_LOCK_NAME_MAX);
	} else if (rc < 0) {
		lock_fail(l, rc, "init");
	}
	if (rc < 0) {
		Py_DECREF(l);
		return NULL;
	}
	return (PyObject *)l;
}

/* ---- Grant ---- */

/* The grant's Lock, if this grant is still its last one. */
static pk_lock *grant_lock(pk_grant *g, const char *what)
{
	pk_lock *l = g->lock;
	if (l->gen != g->gen || !l->holding) {
		pk_raise_lock(SHMKV_LOCK_NOT_HELD, what,
			      PyUnicode_AsUTF8(l->name));
		return NULL;
	}
	return l;
}

static PyObject *grant_extend(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "ms", "replace", NULL };
	long long ms;
	int replace = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "L|$p:extend", kws, &ms,
					 &replace))
		return NULL;
	pk_lock *l = grant_lock((pk_grant *)self, "extend");
	if (!l || lock_enter(l) < 0)
		return NULL;
	int rc;
	PK_CALL(l->store, rc,
		shmkv_lock_extend(&l->lk,
				  replace ? SHMKV_LOCK_EXTEND_REPLACE
					  : SHMKV_LOCK_EXTEND_ADD,
				  ms));
	l->busy = 0;
	if (rc < 0)
		return lock_fail(l, rc, "extend");
	Py_RETURN_NONE;
}

static PyObject *grant_held(PyObject *self, PyObject *unused)
{
	pk_grant *g = (pk_grant *)self;
	(void)unused;
	if (g->lock->gen != g->gen || !g->lock->holding)
		Py_RETURN_FALSE;
	return lock_held((PyObject *)g->lock, NULL);
}

static PyObject *grant_release(PyObject *self, PyObject *unused)
{
	(void)unused;
	pk_lock *l = grant_lock((pk_grant *)self, "release");
	return l ? do_release(l) : NULL;
}

static PyObject *grant_get_token(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(((pk_grant *)self)->token);
}

static PyObject *grant_get_owner_died(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(((pk_grant *)self)->status ==
			       SHMKV_LOCK_OWNER_DEAD);
}

static PyObject *grant_get_lease_expired(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(((pk_grant *)self)->status ==
			       SHMKV_LOCK_LEASE_EXPIRED);
}

static PyObject *grant_get_lock(PyObject *self, void *unused)
{
	(void)unused;
	return Py_NewRef((PyObject *)((pk_grant *)self)->lock);
}

static void grant_dealloc(PyObject *self)
{
	Py_XDECREF(((pk_grant *)self)->lock);
	PyObject_Free(self);
}

static PyObject *grant_repr(PyObject *self)
{
	pk_grant *g = (pk_grant *)self;
	static const char *const how[] = { "", " owner_died",
					   " lease_expired" };
	return PyUnicode_FromFormat("<shmkv.Grant of %R token %llu%s>",
				    g->lock->name, (unsigned long long)g->token,
				    how[g->status % 3]);
}

static PyGetSetDef grant_getset[] = {
	{ "token", grant_get_token, NULL,
	  "The fencing token: strictly increasing over the grants of this "
	  "lock, across processes, takeovers and expiries.",
	  NULL },
	{ "owner_died", grant_get_owner_died, NULL,
	  "True when this grant took the lock over from a holder whose "
	  "process had died: what it protected may be half-updated.",
	  NULL },
	{ "lease_expired", grant_get_lease_expired, NULL,
	  "True when the previous holder's lease ran out while it held the "
	  "lock (it may still run: fence on the token).",
	  NULL },
	{ "lock", grant_get_lock, NULL, "The Lock this grant came from.",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef grant_methods[] = {
	{ "extend", (PyCFunction)(void (*)(void))grant_extend,
	  METH_VARARGS | METH_KEYWORDS,
	  "extend($self, ms, *, replace=False)\n--\n\nRenew the lease while "
	  "it runs: end ms later (replace=True: ms from now). NotLockHolder "
	  "when the lease has already run out or another grant holds the "
	  "lock." },
	{ "held", grant_held, METH_NOARGS,
	  "held($self, /)\n--\n\nTrue while this grant holds the lock with "
	  "its lease running (this instant only: fence on the token)." },
	{ "release", grant_release, METH_NOARGS,
	  "release($self, /)\n--\n\nGive the lock back (Lock.release())." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pk_grant_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shmkv.Grant",
	.tp_basicsize = sizeof(pk_grant),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "One grant of a safe lock: its fencing token and how it "
		  "was obtained.",
	.tp_dealloc = grant_dealloc,
	.tp_repr = grant_repr,
	.tp_methods = grant_methods,
	.tp_getset = grant_getset,
};
