/*
 * scan.c - iter(st) and st.scan_iter(match=None, count=None): the keys of
 * a store, fetched a batch of slots at a time with shmkv_scan().
 *
 * As Redis's SCAN: a key present for the whole iteration is yielded at
 * least once, exactly once unless the table grows meanwhile; keys added
 * or deleted meanwhile may or may not be. The store may be written while
 * it is iterated (by this process too).
 */
#include "pyshmkv.h"

#include <errno.h>

/* Slots visited per shmkv_scan() call when count is None. */
#define SCAN_BATCH 1024u

typedef struct {
	PyObject_HEAD pk_store *store;
	PyObject *match; /* bytes, or NULL */
	PyObject *batch; /* list of keys of the last call */
	Py_ssize_t next; /* index into batch */
	uint64_t cursor;
	uint32_t count;
	int done;
	int busy; /* a thread is in a scan call (the GIL released) */
} pk_scan;

static int scan_cb(const void *key, size_t klen, void *arg)
{
	pk_scan *it = arg;
	int stop = 0;

	if (it->match &&
	    !pk_glob_match(PyBytes_AS_STRING(it->match),
			   (size_t)PyBytes_GET_SIZE(it->match), key, klen))
		return 0;
	PyGILState_STATE g = pk_cb_gil_take(it->store);
	PyObject *k = PyBytes_FromStringAndSize(key, (Py_ssize_t)klen);
	if (!k || PyList_Append(it->batch, k) < 0)
		stop = 1; /* stops the scan; the exception is set */
	Py_XDECREF(k);
	pk_cb_gil_give(it->store, g);
	return stop;
}

/* Fills the batch with the next call's keys, until one has some or the
 * scan is complete. Return 0, or -1 with an exception. */
static int refill(pk_scan *it)
{
	if (it->busy) { /* its batch is being filled, the GIL released */
		PyErr_SetString(PyExc_RuntimeError,
				"this scan iterator is in use by another "
				"thread");
		return -1;
	}
	while (!it->done && it->next >= PyList_GET_SIZE(it->batch)) {
		shmkv_t *kv = pk_store_kv(it->store);
		if (!kv)
			return -1;
		if (PyList_SetSlice(it->batch, 0, PyList_GET_SIZE(it->batch),
				    NULL) < 0)
			return -1;
		it->next = 0;
		uint64_t next = 0;
		int rc;
		it->busy = 1;
		PK_CALL(it->store, rc,
			shmkv_scan(kv, it->cursor, it->count, scan_cb, it,
				   &next));
		it->busy = 0;
		if (PyErr_Occurred())
			return -1;
		if (rc < 0) {
			pk_store_fail(it->store, rc, NULL, NULL);
			return -1;
		}
		it->cursor = next;
		it->done = next == 0;
	}
	return 0;
}

static PyObject *scan_next(PyObject *self)
{
	pk_scan *it = (pk_scan *)self;

	if (refill(it) < 0)
		return NULL;
	if (it->next >= PyList_GET_SIZE(it->batch))
		return NULL; /* StopIteration */
	PyObject *k = PyList_GET_ITEM(it->batch, it->next++);
	Py_INCREF(k);
	return k;
}

static void scan_dealloc(PyObject *self)
{
	pk_scan *it = (pk_scan *)self;

	PyObject_GC_UnTrack(self);
	Py_XDECREF(it->store);
	Py_XDECREF(it->match);
	Py_XDECREF(it->batch);
	PyObject_GC_Del(self);
}

static int scan_traverse(PyObject *self, visitproc visit, void *arg)
{
	pk_scan *it = (pk_scan *)self;
	Py_VISIT(it->batch);
	return 0;
}

PyTypeObject pk_scan_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shmkv.ScanIterator",
	.tp_basicsize = sizeof(pk_scan),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.tp_doc = "The keys of a store (bytes), from shmkv_scan().",
	.tp_dealloc = scan_dealloc,
	.tp_traverse = scan_traverse,
	.tp_iter = PyObject_SelfIter,
	.tp_iternext = scan_next,
};

static PyObject *new_scan(PyObject *store, PyObject *match, uint32_t count)
{
	if (!pk_store_kv((pk_store *)store))
		return NULL;
	pk_scan *it = PyObject_GC_New(pk_scan, &pk_scan_type);
	if (!it)
		return NULL;
	Py_INCREF(store);
	it->store = (pk_store *)store;
	it->match = match;
	it->batch = PyList_New(0);
	it->next = 0;
	it->cursor = 0;
	it->count = count;
	it->done = 0;
	it->busy = 0;
	if (!it->batch) {
		Py_DECREF(it);
		return NULL;
	}
	PyObject_GC_Track(it);
	return (PyObject *)it;
}

PyObject *pk_store_iter(PyObject *self)
{
	return new_scan(self, NULL, SCAN_BATCH);
}

static PyObject *st_scan_iter(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "match", "count", NULL };
	PyObject *match = Py_None, *count = Py_None, *m = NULL;
	uint32_t n = SCAN_BATCH;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:scan_iter", kws, &match,
					 &count))
		return NULL;
	if (count != Py_None) {
		unsigned long c = PyLong_AsUnsignedLong(count);
		if (PyErr_Occurred() || c == 0 || c > UINT32_MAX) {
			PyErr_Clear();
			return pk_raise(-EINVAL, "count must be a positive "
						 "integer below 2^32");
		}
		n = (uint32_t)c;
	}
	if (match != Py_None) {
		struct pk_arg a;
		if (pk_arg_get(match, &a) == 0)
			m = PyBytes_FromStringAndSize(a.p, (Py_ssize_t)a.n);
		pk_arg_release(&a);
		if (!m)
			return NULL;
	}
	PyObject *it = new_scan(self, m, n);
	if (!it)
		Py_XDECREF(m);
	return it;
}

PyMethodDef pk_store_scan_methods[] = {
	{ "scan_iter", (PyCFunction)(void (*)(void))st_scan_iter,
	  METH_VARARGS | METH_KEYWORDS,
	  "scan_iter($self, match=None, count=None)\n--\n\nIterate over the "
	  "keys (bytes) with SCAN: match is a Redis glob ('user:*'), count "
	  "the slots visited per batch. A key present throughout is yielded "
	  "at least once (twice only if the table grows meanwhile)." },
	{ NULL, NULL, 0, NULL },
};
