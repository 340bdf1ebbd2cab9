/*
 * pyshmkv.h - what the files of the CPython module shmkv._shmkv share.
 *
 * The module is a thin layer over the public C API (include/shmkv*.h):
 * argument conversion (args.c), the errno -> exception table (errors.c),
 * the Store type (store.c: lifecycle; store_cmds.c: the string commands;
 * store_admin.c: stats, scan, check...), the locks (lock.c, pattern.c),
 * and the module itself (module.c).
 *
 * Threads: every function here runs with the GIL held unless it says
 * otherwise. A shmkv_t may be shared by threads (shmkv.h). On a
 * shared-memory store the GIL is kept for the commands (none of them
 * sleeps, and giving the GIL up and taking it back would cost more than
 * most of them) and released only around the waits that can (lock
 * acquires, passes over the whole store). On a store named by a URI (a
 * Redis server) every call may wait on the network: each is made through
 * PK_CALL, with the GIL released. See pk_store_enter_wait().
 */
#ifndef PYSHMKV_H
#define PYSHMKV_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <stdint.h>

#include "shmkv.h"
#include "shmkv_exec.h"
#include "shmkv_lock.h"

/* ---- args.c: bytes-like, str, int, float in; bytes out ---- */

/*
 * A key or value borrowed from a Python object for one call: bytes and
 * any buffer (bytearray, memoryview) as they are, str encoded UTF-8, int
 * and float as redis-py encodes them (repr(v).encode()); None and bool are
 * refused with TypeError, as redis-py's DataError does.
 */
struct pk_arg {
	const char *p;
	size_t n;
	Py_buffer view; /* held when has_view: the object cannot resize */
	PyObject *tmp;	/* what p points into (bytes, str, the encoded
			 * number), owned: alive with the GIL released */
	int has_view;
};

/* Fills @a from @o. Return 0, or -1 with TypeError set. Release with
 * pk_arg_release() in both cases (it is safe on a failed one). */
int pk_arg_get(PyObject *o, struct pk_arg *a);
void pk_arg_release(struct pk_arg *a);
/* PyArg_Parse "O&" converter with cleanup (Py_CLEANUP_SUPPORTED). */
int pk_arg_conv(PyObject *o, void *out);
/* The str @o as UTF-8 for a C call that takes a C string (a store name,
 * a lock name, a policy name); @what names it in the error. Return: the
 * text (owned by @o), or NULL with TypeError (not a str), ValueError (an
 * embedded NUL: the C string would end there, and "a\0b" be "a") or
 * UnicodeEncodeError set. */
const char *pk_cstr(PyObject *o, const char *what);

/* A time argument (seconds or ms) as int64: an int, or an object with
 * total_seconds() (timedelta) / timestamp() (datetime) scaled by @scale
 * (1 for seconds, 1000 for ms). Return 0, or -1 with an exception. */
int pk_time_arg(PyObject *o, int64_t scale, int is_abs, int64_t *out);

/* ---- errors.c: the one errno -> exception table ---- */

int pk_errors_init(PyObject *module);
/* Raises the exception for negative errno @rc with @msg (NULL: the
 * library's sentence). Returns NULL for "return pk_raise(...)". */
PyObject *pk_raise(int rc, const char *msg);
/* As pk_raise, message formatted. */
PyObject *pk_raisef(int rc, const char *fmt, ...);
/* The lock calls' errnos mean other things (EPERM, ENOLCK, EEXIST,
 * ETIMEDOUT): raise from the lock table first. */
PyObject *pk_raise_lock(int rc, const char *what, const char *name);
/* shmkv.ResponseError: an error reply of execute_command. */
extern PyObject *pk_ResponseError;

/* ---- store.c ---- */

typedef struct {
	PyObject_HEAD shmkv_t *kv; /* NULL once closed */
	PyObject *name;		   /* str, as the library was given it */
	PyObject *shown;	   /* str: name as shmkv_name_redact shows it */
	int remote; /* named by a URI: every call may wait on the network */
	int readonly;
	uint32_t key_max; /* fixed at creation: cached for messages */
	uint32_t value_max;
	/* Threads in a wait with the GIL released (lock acquires): close()
	 * with some pending leaves the unmapping to the last one out, so a
	 * waiter never runs on a freed handle. Counted under the GIL. */
	unsigned waiters;
	int close_pending;
	PyObject *weakrefs;
} pk_store;

extern PyTypeObject pk_store_type;
int pk_store_ready(PyObject *module);
/* The handle, or NULL with shmkv.Error (EBADF-like "store is closed"). */
shmkv_t *pk_store_kv(pk_store *s);
/* Bracket a wait that releases the GIL; leave may unmap (see waiters). */
void pk_store_enter_wait(pk_store *s);
void pk_store_leave_wait(pk_store *s);

/*
 * PK_CALL(s, rc, call): rc = call, a library call on store @s's handle.
 * On a remote store, with the GIL released and @s bracketed as a waiter
 * (a close() meanwhile leaves the handle to the last one out); rc is
 * -EBADF, and @call not made, if the handle was closed by another thread
 * during an earlier call of the same method. On a shared-memory store,
 * with the GIL held, as before. The call's arguments must not be memory
 * another thread could free or resize: pk_arg owns a reference or a
 * buffer export, and outputs go to C memory or objects no other thread
 * sees. A callback of @call that touches Python objects takes the GIL
 * back with pk_cb_gil_take().
 */
#define PK_CALL(s, rc, call)                                                   \
	do {                                                                   \
		pk_store *pk_s_ = (s);                                         \
		if (!pk_s_->remote) {                                          \
			(rc) = (call);                                         \
			break;                                                 \
		}                                                              \
		if (!pk_s_->kv || pk_s_->close_pending) {                      \
			(rc) = -EBADF;                                         \
			break;                                                 \
		}                                                              \
		pk_store_enter_wait(pk_s_);                                    \
		PyThreadState *pk_ts_ = PyEval_SaveThread();                   \
		(rc) = (call);                                                 \
		PyEval_RestoreThread(pk_ts_);                                  \
		pk_store_leave_wait(pk_s_);                                    \
	} while (0)

/* In a library callback of a PK_CALL on @s: the GIL, if that call gave it
 * up (and then pk_cb_gil_give() after). */
static inline PyGILState_STATE pk_cb_gil_take(const pk_store *s)
{
	return s->remote ? PyGILState_Ensure() : PyGILState_LOCKED;
}

static inline void pk_cb_gil_give(const pk_store *s, PyGILState_STATE g)
{
	if (s->remote)
		PyGILState_Release(g);
}
/* Raise for @rc from a command on key @key (ENAMETOOLONG and E2BIG name
 * the store's limits). */
PyObject *pk_store_fail(pk_store *s, int rc, const struct pk_arg *key,
			const struct pk_arg *val);

/* store_cmds.c / store_admin.c: method tables joined in store.c. */
extern PyMethodDef pk_store_cmd_methods[];
extern PyMethodDef pk_store_admin_methods[];
extern PyMethodDef pk_store_scan_methods[];
Py_ssize_t pk_store_len(PyObject *self);
extern PyMappingMethods pk_store_as_mapping;
extern PySequenceMethods pk_store_as_sequence;
PyObject *pk_store_iter(PyObject *self);
extern PyTypeObject pk_scan_type;

/* Reads value of @key into a new bytes object (*out), Redis-reply style:
 * return 1 (value), 0 (missing) or a negative errno. Retries with a
 * buffer of the right size when the value outgrows the first one. */
typedef int (*pk_read_fn)(shmkv_t *kv, const struct pk_arg *key,
			  const struct pk_arg *val, void *ctx,
			  struct shmkv_value *out);
int pk_read_value(pk_store *s, pk_read_fn fn, const struct pk_arg *key,
		  const struct pk_arg *val, void *ctx, PyObject **out);

/* glob.c: Redis's glob (SCAN MATCH); 1 when @s matches @pat. */
int pk_glob_match(const char *pat, size_t plen, const char *s, size_t slen);

/* ---- lock.c, pattern.c ---- */

extern PyTypeObject pk_lock_type;
extern PyTypeObject pk_grant_type;
extern PyTypeObject pk_pattern_type;
PyObject *pk_store_lock(PyObject *self, PyObject *args, PyObject *kw);
PyObject *pk_store_pattern_lock(PyObject *self, PyObject *args, PyObject *kw);
/* Converts a timeout in seconds (None: forever) to ms for the C calls. */
int pk_timeout_ms(PyObject *o, int64_t *ms);
/* Waits in slices that release the GIL and check signals in between:
 * @try_wait(ctx, slice_ms) is one C wait; it returns its C result, and
 * -ETIMEDOUT when the slice ran out. Return the final C result, or
 * INT32_MIN with an exception set (a signal handler raised). */
int pk_wait_sliced(pk_store *s, int (*try_wait)(void *ctx, int64_t ms),
		   void *ctx, int64_t timeout_ms);

#endif /* PYSHMKV_H */
