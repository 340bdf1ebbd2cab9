/*
 * module.c - the extension module shmkv._shmkv, which the package shmkv
 * re-exports: its types, its exceptions, and the library's version.
 */
#include "pyshmkv.h"

static PyObject *lib_version(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyUnicode_FromString(shmkv_version(NULL, NULL, NULL));
}

static PyObject *strerror_(PyObject *self, PyObject *arg)
{
	(void)self;
	int err = PyLong_AsLong(arg);
	if (err == -1 && PyErr_Occurred())
		return NULL;
	/* shmkv_strerror takes 0 or a negative errno; accept either sign */
	return PyUnicode_FromString(shmkv_strerror(err > 0 ? -err : err));
}

static PyMethodDef module_methods[] = {
	{ "library_version", lib_version, METH_NOARGS,
	  "library_version()\n--\n\nThe version of the C library linked in "
	  "(shmkv_version())." },
	{ "strerror", strerror_, METH_O,
	  "strerror(errno, /)\n--\n\nThe library's sentence for an errno "
	  "(shmkv_strerror())." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "shmkv._shmkv",
	.m_doc = "The C part of shmkv: Store, Lock, Grant, PatternLock and "
		 "the exceptions. Import shmkv, which re-exports it.",
	.m_size = -1,
	.m_methods = module_methods,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
	if (PyType_Ready(t) < 0)
		return -1;
	Py_INCREF(t);
	if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
		Py_DECREF(t);
		return -1;
	}
	return 0;
}

PyMODINIT_FUNC PyInit__shmkv(void);
PyMODINIT_FUNC PyInit__shmkv(void)
{
	PyObject *m = PyModule_Create(&module_def);
	if (!m)
		return NULL;
	if (pk_errors_init(m) < 0 || pk_store_ready(m) < 0 ||
	    add_type(m, &pk_lock_type, "Lock") < 0 ||
	    add_type(m, &pk_grant_type, "Grant") < 0 ||
	    add_type(m, &pk_pattern_type, "PatternLock") < 0 ||
	    add_type(m, &pk_scan_type, "ScanIterator") < 0 ||
	    PyModule_AddStringConstant(m, "__version__", SHMKV_VERSION_STRING) <
		    0 ||
	    PyModule_AddIntConstant(m, "LOCK_NAME_MAX", SHMKV_LOCK_NAME_MAX) <
		    0 ||
	    PyModule_AddIntConstant(m, "NAME_MAX", SHMKV_NAME_MAX) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
