/*
 * args.c - Python objects to the byte strings and times the C API takes,
 * encoded as redis-py encodes command arguments, so that code moving
 * between the two clients stores the same bytes.
 */
#include "pyshmkv.h"

#include <math.h>
#include <string.h>

static int refuse(PyObject *o)
{
	PyErr_Format(PyExc_TypeError,
		     "invalid input of type '%.100s': use bytes, str, int "
		     "or float",
		     Py_TYPE(o)->tp_name);
	return -1;
}

int pk_arg_get(PyObject *o, struct pk_arg *a)
{
	a->has_view = 0;
	a->tmp = NULL;
	a->p = NULL;
	a->n = 0;
	/* bytes and str are held, not borrowed: on a remote store the call
	 * runs with the GIL released, while another thread may drop the last
	 * other reference (a kwargs dict it changes, say). */
	if (PyBytes_Check(o)) { /* the common case: no buffer export */
		a->tmp = Py_NewRef(o);
		a->p = PyBytes_AS_STRING(o);
		a->n = (size_t)PyBytes_GET_SIZE(o);
		return 0;
	}
	if (PyUnicode_Check(o)) {
		Py_ssize_t n;
		a->tmp = Py_NewRef(o);
		a->p = PyUnicode_AsUTF8AndSize(o, &n);
		if (!a->p)
			return -1;
		a->n = (size_t)n;
		return 0;
	}
	/* bool is an int in Python, but redis-py refuses it: True would be
	 * stored as "True", which INCR cannot read. */
	if (PyBool_Check(o) || o == Py_None)
		return refuse(o);
	if (PyLong_Check(o) || PyFloat_Check(o)) {
		a->tmp = PyObject_Repr(o);
		if (!a->tmp)
			return -1;
		Py_ssize_t n;
		a->p = PyUnicode_AsUTF8AndSize(a->tmp, &n);
		if (!a->p)
			return -1;
		a->n = (size_t)n;
		return 0;
	}
	if (PyObject_CheckBuffer(o)) {
		if (PyObject_GetBuffer(o, &a->view, PyBUF_SIMPLE) < 0)
			return -1;
		a->has_view = 1;
		a->p = a->view.buf;
		a->n = (size_t)a->view.len;
		return 0;
	}
	return refuse(o);
}

void pk_arg_release(struct pk_arg *a)
{
	if (a->has_view)
		PyBuffer_Release(&a->view);
	a->has_view = 0;
	Py_CLEAR(a->tmp);
}

int pk_arg_conv(PyObject *o, void *out)
{
	struct pk_arg *a = out;

	if (!o) { /* the cleanup call PyArg_Parse makes on a later failure */
		pk_arg_release(a);
		return 1;
	}
	if (pk_arg_get(o, a) < 0) {
		pk_arg_release(a);
		return 0;
	}
	return Py_CLEANUP_SUPPORTED;
}

const char *pk_cstr(PyObject *o, const char *what)
{
	Py_ssize_t n;
	const char *s;

	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s must be a str, not '%.100s'",
			     what, Py_TYPE(o)->tp_name);
		return NULL;
	}
	s = PyUnicode_AsUTF8AndSize(o, &n);
	if (s && strlen(s) != (size_t)n) {
		PyErr_Format(PyExc_ValueError,
			     "%s contains a NUL character ('\\0'): the "
			     "library takes it as a C string, which would end "
			     "there",
			     what);
		return NULL;
	}
	return s;
}

/* A float from a method of @o (timedelta.total_seconds, datetime.timestamp)
 * scaled to an int64, refusing what does not fit. */
static int scaled_method(PyObject *o, const char *meth, int64_t scale,
			 int64_t *out)
{
	PyObject *r = PyObject_CallMethod(o, meth, NULL);
	if (!r)
		return -1;
	double d = PyFloat_AsDouble(r);
	Py_DECREF(r);
	if (d == -1.0 && PyErr_Occurred())
		return -1;
	d *= (double)scale;
	/* 2^63 is exactly representable; anything at or past it overflows */
	if (!isfinite(d) || d >= 9223372036854775808.0 ||
	    d < -9223372036854775808.0) {
		PyErr_SetString(PyExc_OverflowError, "time out of range");
		return -1;
	}
	*out = (int64_t)d;
	return 0;
}

int pk_time_arg(PyObject *o, int64_t scale, int is_abs, int64_t *out)
{
	if (PyLong_Check(o) && !PyBool_Check(o)) {
		long long v = PyLong_AsLongLong(o);
		if (v == -1 && PyErr_Occurred())
			return -1;
		*out = v;
		return 0;
	}
	if (!is_abs && PyObject_HasAttrString(o, "total_seconds"))
		return scaled_method(o, "total_seconds", scale, out);
	if (is_abs && PyObject_HasAttrString(o, "timestamp"))
		return scaled_method(o, "timestamp", scale, out);
	PyErr_Format(PyExc_TypeError, "a time must be an int%s, not '%.100s'",
		     is_abs ? " or a datetime" : " or a timedelta",
		     Py_TYPE(o)->tp_name);
	return -1;
}
