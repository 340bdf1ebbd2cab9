/*
 * pattern.c - the pattern lock of Redis's SETNX page (shmkv_lock.h) as
 * shmkv.PatternLock, with the C call's parameters as keywords:
 *
 *     with st.pattern_lock("jobs", timeout_ms=5000, wait_ms=None) as pl:
 *         pl.expiry   # the Unix time (ms) the lock is valid until
 *
 * It keeps the page's weaknesses (a crashed holder is waited out; the
 * release can race): the safe lock, st.lock(), has none of them.
 */
#include "pyshmkv.h"

#include <errno.h>

typedef struct {
	PyObject_HEAD pk_store *store;
	PyObject *name;
	int64_t timeout_ms; /* validity of a grant */
	int64_t wait_ms;    /* for `with`; -1: forever */
	int64_t expiry;	    /* of the grant held; 0: none */
	int busy;
	struct shmkv_pattern pl;
} pk_pattern;

static int pat_enter(pk_pattern *p)
{
	if (!pk_store_kv(p->store))
		return -1;
	if (p->busy) {
		pk_raise(-EBUSY, "this PatternLock object is in use by another "
				 "thread: take one st.pattern_lock(name) per "
				 "thread");
		return -1;
	}
	p->busy = 1;
	return 0;
}

static PyObject *pat_fail(pk_pattern *p, int rc, const char *what)
{
	if (rc == INT32_MIN)
		return NULL;
	if (rc == -EBADF) /* closed by another thread meanwhile */
		return pk_raise(rc, "the store is closed");
	if (rc == -ETIMEDOUT && what[0] == 'r')
		return pk_raise_lock(-EPERM, what, PyUnicode_AsUTF8(p->name));
	if (rc == -ENAMETOOLONG || rc == -ESTALE || rc == -EROFS ||
	    rc == -EINVAL)
		return pk_raisef(rc, "%s pattern lock '%U': %s", what, p->name,
				 shmkv_strerror(rc));
	return pk_raise_lock(rc, what, PyUnicode_AsUTF8(p->name));
}

static int pat_wait(void *ctx, int64_t ms)
{
	pk_pattern *p = ctx;
	int rc = shmkv_pattern_acquire(&p->pl, p->timeout_ms, ms, &p->expiry);
	/* a zero wait is one attempt, which says EBUSY */
	return rc == -EBUSY ? -ETIMEDOUT : rc;
}

static PyObject *do_acquire(pk_pattern *p, int blocking, int64_t wait_ms)
{
	int rc;

	if (pat_enter(p) < 0)
		return NULL;
	if (!blocking)
		PK_CALL(p->store, rc,
			shmkv_pattern_acquire(&p->pl, p->timeout_ms, 0,
					      &p->expiry));
	else
		rc = pk_wait_sliced(p->store, pat_wait, p, wait_ms);
	p->busy = 0;
	if (rc == -EBUSY && !blocking)
		Py_RETURN_NONE;
	if (rc < 0) {
		p->expiry = 0;
		return pat_fail(p, rc, "acquire");
	}
	return PyLong_FromLongLong(p->expiry);
}

static int wait_arg(PyObject *o, int64_t *ms)
{
	if (o == Py_None) {
		*ms = SHMKV_LOCK_FOREVER;
		return 0;
	}
	long long v = PyLong_AsLongLong(o);
	if (v == -1 && PyErr_Occurred())
		return -1;
	if (v < 0) {
		pk_raise(-EINVAL, "wait_ms must be None (forever) or >= 0");
		return -1;
	}
	*ms = v;
	return 0;
}

static PyObject *pat_acquire(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "blocking", "wait_ms", NULL };
	pk_pattern *p = (pk_pattern *)self;
	int blocking = 1;
	PyObject *w = NULL;
	int64_t ms = p->wait_ms;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|pO:acquire", kws,
					 &blocking, &w) ||
	    (w && wait_arg(w, &ms) < 0))
		return NULL;
	return do_acquire(p, blocking, ms);
}

static PyObject *pat_release(PyObject *self, PyObject *unused)
{
	pk_pattern *p = (pk_pattern *)self;
	(void)unused;

	if (!p->expiry)
		return pk_raise_lock(-ENOLCK, "release",
				     PyUnicode_AsUTF8(p->name));
	if (pat_enter(p) < 0)
		return NULL;
	int rc;
	PK_CALL(p->store, rc, shmkv_pattern_release(&p->pl, p->expiry));
	p->busy = 0;
	p->expiry = 0;
	if (rc < 0)
		return pat_fail(p, rc, "release");
	Py_RETURN_NONE;
}

static PyObject *pat_enter_cm(PyObject *self, PyObject *unused)
{
	pk_pattern *p = (pk_pattern *)self;
	(void)unused;
	PyObject *r = do_acquire(p, 1, p->wait_ms);
	if (!r)
		return NULL;
	Py_DECREF(r);
	return Py_NewRef(self);
}

static PyObject *pat_exit_cm(PyObject *self, PyObject *args)
{
	(void)args;
	PyObject *r = pat_release(self, NULL);
	if (!r)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static void pat_dealloc(PyObject *self)
{
	pk_pattern *p = (pk_pattern *)self;
	Py_XDECREF(p->store);
	Py_XDECREF(p->name);
	PyObject_Free(self);
}

static PyObject *pat_get_expiry(PyObject *self, void *unused)
{
	pk_pattern *p = (pk_pattern *)self;
	(void)unused;
	if (!p->expiry)
		Py_RETURN_NONE;
	return PyLong_FromLongLong(p->expiry);
}

static PyObject *pat_get_name(PyObject *self, void *unused)
{
	(void)unused;
	return Py_NewRef(((pk_pattern *)self)->name);
}

static PyGetSetDef pat_getset[] = {
	{ "expiry", pat_get_expiry, NULL,
	  "Unix time in ms the held grant is valid until; None if not "
	  "held.",
	  NULL },
	{ "name", pat_get_name, NULL, "The lock's name.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef pat_methods[] = {
	{ "acquire", (PyCFunction)(void (*)(void))pat_acquire,
	  METH_VARARGS | METH_KEYWORDS,
	  "acquire($self, blocking=True, wait_ms=<the lock's>)\n--\n\n"
	  "The SETNX page's acquire: the expiry (Unix ms), None if "
	  "blocking=False and the lock is held; LockTimeout after wait_ms "
	  "(None: no limit). Waits release the GIL." },
	{ "release", pat_release, METH_NOARGS,
	  "release($self, /)\n--\n\nDEL the lock if its validity has not "
	  "passed. NotLockHolder if it has (it may be someone else's now: "
	  "nothing is deleted) or the key was gone." },
	{ "__enter__", pat_enter_cm, METH_NOARGS,
	  "acquire(); return the PatternLock." },
	{ "__exit__", pat_exit_cm, METH_VARARGS, "release()." },
	{ NULL, NULL, 0, NULL },
};

PyTypeObject pk_pattern_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shmkv.PatternLock",
	.tp_basicsize = sizeof(pk_pattern),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The pattern lock of Redis's SETNX page "
		  "(st.pattern_lock(name)). One thread at a time.",
	.tp_dealloc = pat_dealloc,
	.tp_methods = pat_methods,
	.tp_getset = pat_getset,
};

PyObject *pk_store_pattern_lock(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name", "timeout_ms", "wait_ms", NULL };
	pk_store *s = (pk_store *)self;
	PyObject *name, *w = Py_None;
	long long timeout = 5000;
	int64_t wait;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|L$O:pattern_lock", kws,
					 &name, &timeout, &w) ||
	    wait_arg(w, &wait) < 0)
		return NULL;
	const char *cname = pk_cstr(name, "a lock name");
	if (!cname)
		return NULL;
	shmkv_t *kv = pk_store_kv(s);
	if (!kv)
		return NULL;
	if (timeout < 1 || timeout > SHMKV_LOCK_LEASE_MAX)
		return pk_raisef(-EINVAL, "timeout_ms must be 1..%lld",
				 (long long)SHMKV_LOCK_LEASE_MAX);
	pk_pattern *p = PyObject_New(pk_pattern, &pk_pattern_type);
	if (!p)
		return NULL;
	Py_INCREF(s);
	p->store = s;
	p->name = Py_NewRef(name);
	p->timeout_ms = timeout;
	p->wait_ms = wait;
	p->expiry = 0;
	p->busy = 0;
	int rc;
	PK_CALL(s, rc, shmkv_pattern_init(kv, &p->pl, cname));
	if (rc < 0) {
		pat_fail(p, rc, "init");
		Py_DECREF(p);
		return NULL;
	}
	return (PyObject *)p;
}
