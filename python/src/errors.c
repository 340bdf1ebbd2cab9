/*
 * errors.c - the one table from the library's negative errnos to the
 * module's exceptions, and the exception classes themselves.
 *
 * Every class is a shmkv.Error, which is an OSError: e.errno is the errno
 * the C call returned, e.strerror the message (naming the limit where
 * there is one). Where Python has a built-in class for the same condition
 * the exception is one of those too (NoSuchStore is a FileNotFoundError,
 * LockTimeout a TimeoutError, InvalidArgument a ValueError...), so generic
 * handlers catch it.
 *
 * The lock calls give some errnos another meaning (shmkv_lock.h): EPERM
 * and ENOLCK are "not your grant", EEXIST "the key holds another kind of
 * lock", ETIMEDOUT a wait that ran out (or, for a pattern lock's release,
 * a validity that did). They have their own rows, looked up first.
 */
#include "pyshmkv.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

PyObject *pk_ResponseError;

struct row {
	int err;	  /* positive errno; 0 ends a table */
	const char *name; /* class name in the module */
	const char *doc;
	PyObject **base2; /* a built-in class it also is, or NULL */
	PyObject *cls;	  /* made by pk_errors_init */
};

static PyObject *error_base; /* shmkv.Error */

/* Data, store and admin calls: every errno shmkv.h and shmkv_exec.h
 * document, and those of the system calls under create/open. */
static struct row store_rows[] = {
	{ ENOENT, "NoSuchStore", "No store of that name (ENOENT).",
	  &PyExc_FileNotFoundError, NULL },
	{ EEXIST, "StoreExists",
	  "create(): a store of that name exists "
	  "(EEXIST).",
	  &PyExc_FileExistsError, NULL },
	{ ESTALE, "StoreRemoved",
	  "The store was removed since this handle "
	  "opened it (ESTALE): close, open anew.",
	  NULL, NULL },
	{ ENOSPC, "StoreFull",
	  "No free slot in the key's probe window, or "
	  "no room in /dev/shm (ENOSPC).",
	  NULL, NULL },
	{ ENOMEM, "OutOfMemory",
	  "No value memory left within max_memory "
	  "(ENOMEM).",
	  &PyExc_MemoryError, NULL },
	{ ENAMETOOLONG, "KeyTooLong",
	  "A key (or lock or store name) longer "
	  "than the store allows "
	  "(ENAMETOOLONG).",
	  NULL, NULL },
	{ E2BIG, "ValueTooLong",
	  "A value longer than the store's "
	  "value_max (E2BIG).",
	  NULL, NULL },
	{ EDOM, "NotAnInteger",
	  "The value is not an integer or out of "
	  "range (EDOM), as Redis's INCR says.",
	  NULL, NULL },
	{ EOVERFLOW, "IntegerOverflow",
	  "Increment or decrement would "
	  "overflow (EOVERFLOW).",
	  NULL, NULL },
	{ EBADMSG, "CorruptStore",
	  "The segment's content is corrupted "
	  "(EBADMSG).",
	  NULL, NULL },
	{ EPROTONOSUPPORT, "WrongLayout",
	  "A shmkv store of another layout "
	  "version or build "
	  "(EPROTONOSUPPORT).",
	  NULL, NULL },
	{ EPROTO, "NotAStore",
	  "The name exists but is not a shmkv store "
	  "(EPROTO).",
	  NULL, NULL },
	{ EACCES, "PermissionDenied", "Permission denied (EACCES).",
	  &PyExc_PermissionError, NULL },
	{ EPERM, "OperationNotPermitted", "Operation not permitted (EPERM).",
	  &PyExc_PermissionError, NULL },
	{ EROFS, "ReadOnlyStore",
	  "A write on a handle opened readonly=True "
	  "(EROFS).",
	  NULL, NULL },
	{ EINVAL, "InvalidArgument",
	  "A bad name, option or combination of "
	  "options (EINVAL).",
	  &PyExc_ValueError, NULL },
	{ EAGAIN, "Contended",
	  "A command lost a race SHMKV_RETRY_MAX times "
	  "in a row (EAGAIN).",
	  &PyExc_BlockingIOError, NULL },
	{ EXDEV, "WrongNamespace",
	  "A read-write open from another pid "
	  "namespace than the creator's (EXDEV).",
	  NULL, NULL },
	{ EAFNOSUPPORT, "Unsupported",
	  "A store URI whose scheme this build "
	  "has no backend for (EAFNOSUPPORT), "
	  "or a call a backend lacks (ENOTSUP).",
	  NULL, NULL },
	{ ENOBUFS, "BufferTooSmall",
	  "(internal) a value outgrew its buffer "
	  "(ENOBUFS).",
	  NULL, NULL },
	{ 0, NULL, NULL, NULL, NULL },
};

/* The lock calls' rows (shmkv_lock.h), consulted before store_rows. */
static struct row lock_rows[] = {
	{ ETIMEDOUT, "LockTimeout",
	  "A timed lock wait ran out (ETIMEDOUT); "
	  "for a pattern lock's release: its "
	  "validity ran out.",
	  &PyExc_TimeoutError, NULL },
	{ EPERM, "NotLockHolder",
	  "Release or extend of a grant that no "
	  "longer holds the lock (EPERM: another "
	  "grant took it; ENOLCK: it is not held).",
	  NULL, NULL },
	{ EBUSY, "LockBusy",
	  "The lock is held by a live holder within its "
	  "lease (EBUSY).",
	  NULL, NULL },
	{ EDEADLK, "LockAlreadyHeld",
	  "This Lock object already holds the "
	  "lock (EDEADLK).",
	  NULL, NULL },
	{ EEXIST, "WrongLockKind",
	  "The lock's key holds something else: "
	  "another kind of lock or a plain value "
	  "(EEXIST).",
	  NULL, NULL },
	{ 0, NULL, NULL, NULL, NULL },
};

static PyObject *find(const struct row *rows, int err)
{
	for (; rows->err; rows++)
		if (rows->err == err)
			return rows->cls;
	return NULL;
}

/* ENOTSUP has no row of its own (Unsupported covers it); ENOLCK is the
 * other "not your grant". */
static int alias(int err)
{
	if (err == ENOTSUP)
		return EAFNOSUPPORT;
	return err;
}

/* Raises @cls(@err, @msg): an OSError subclass with errno and strerror. */
static PyObject *raise_obj(PyObject *cls, int err, PyObject *msg)
{
	PyObject *e = PyObject_CallFunction(cls, "iO", err, msg);
	if (e) {
		PyErr_SetObject(cls, e);
		Py_DECREF(e);
	}
	return NULL;
}

static PyObject *raise_cls(PyObject *cls, int err, const char *msg)
{
	PyObject *m = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg),
					   "replace");
	if (!m)
		return NULL;
	raise_obj(cls, err, m);
	Py_DECREF(m);
	return NULL;
}

static PyObject *store_cls(int err)
{
	PyObject *cls = find(store_rows, alias(err));
	return cls ? cls : error_base;
}

PyObject *pk_raise(int rc, const char *msg)
{
	return raise_cls(store_cls(-rc), -rc, msg ? msg : shmkv_strerror(rc));
}

PyObject *pk_raisef(int rc, const char *fmt, ...)
{
	va_list ap;

	/* Python's formatter: %U and %R take objects (store names). */
	va_start(ap, fmt);
	PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
	va_end(ap);
	if (!msg)
		return NULL;
	raise_obj(store_cls(-rc), -rc, msg);
	Py_DECREF(msg);
	return NULL;
}

PyObject *pk_raise_lock(int rc, const char *what, const char *name)
{
	int err = -rc;
	PyObject *cls = find(lock_rows, err == ENOLCK ? EPERM : err);
	char buf[512];

	PyOS_snprintf(buf, sizeof buf, "%s lock '%.300s': %s", what, name,
		      shmkv_strerror(rc));
	if (!cls)
		return pk_raise(rc, buf);
	return raise_cls(cls, err, buf);
}

static int add_rows(PyObject *module, struct row *rows)
{
	for (; rows->err; rows++) {
		char qual[96];
		PyObject *bases;

		PyOS_snprintf(qual, sizeof qual, "shmkv.%s", rows->name);
		if (rows->base2)
			bases = PyTuple_Pack(2, error_base, *rows->base2);
		else
			bases = PyTuple_Pack(1, error_base);
		if (!bases)
			return -1;
		rows->cls = PyErr_NewExceptionWithDoc(qual, rows->doc, bases,
						      NULL);
		Py_DECREF(bases);
		if (!rows->cls)
			return -1;
		Py_INCREF(rows->cls); /* the table keeps one reference */
		if (PyModule_AddObject(module, rows->name, rows->cls) < 0) {
			Py_DECREF(rows->cls);
			return -1;
		}
	}
	return 0;
}

int pk_errors_init(PyObject *module)
{
	error_base = PyErr_NewExceptionWithDoc(
		"shmkv.Error",
		"Every error of the shmkv module: an OSError whose errno is "
		"the one the C library returned.",
		PyExc_OSError, NULL);
	if (!error_base)
		return -1;
	Py_INCREF(error_base);
	if (PyModule_AddObject(module, "Error", error_base) < 0)
		return -1;
	pk_ResponseError = PyErr_NewExceptionWithDoc(
		"shmkv.ResponseError",
		"An error reply of execute_command (Redis's -ERR ...); errno "
		"is EINVAL.",
		error_base, NULL);
	if (!pk_ResponseError)
		return -1;
	Py_INCREF(pk_ResponseError);
	if (PyModule_AddObject(module, "ResponseError", pk_ResponseError) < 0)
		return -1;
	if (add_rows(module, store_rows) < 0 || add_rows(module, lock_rows) < 0)
		return -1;
	return 0;
}
