/*
 * store_admin.c - what shmkv.Store offers beyond the string commands:
 * len() and iteration (shmkv_scan), info() (shmkv_stats), config(),
 * check(), recover(), sweep(), maintain(), the store-wide settings, the
 * lock listing, and execute_command() (shmkv_exec).
 */
#include "pyshmkv.h"

#include <errno.h>
#include <string.h>

#define STORE_KV_OR(self, kv, fail)                                            \
	pk_store *s = (pk_store *)(self);                                      \
	shmkv_t *kv = pk_store_kv(s);                                          \
	if (!kv)                                                               \
	return fail
#define STORE_KV(self, kv) STORE_KV_OR(self, kv, NULL)

/* Adds name=value to @d for each u64 field; -1 on failure. */
#define PUT(d, name, v)                                                        \
	do {                                                                   \
		PyObject *o_ = PyLong_FromUnsignedLongLong((uint64_t)(v));     \
		if (!o_ || PyDict_SetItemString(d, name, o_) < 0) {            \
			Py_XDECREF(o_);                                        \
			goto fail;                                             \
		}                                                              \
		Py_DECREF(o_);                                                 \
	} while (0)

static int stats(pk_store *s, shmkv_t *kv, struct shmkv_stats *st)
{
	int rc;
	/* A pass over every slot: other threads run meanwhile, and the
	 * bracket keeps the handle mapped if one of them closes it. */
	pk_store_enter_wait(s);
	Py_BEGIN_ALLOW_THREADS
		rc = shmkv_stats(kv, st);
	Py_END_ALLOW_THREADS
	pk_store_leave_wait(s);
	if (rc < 0)
		pk_store_fail(s, rc, NULL, NULL);
	return rc;
}

Py_ssize_t pk_store_len(PyObject *self)
{
	STORE_KV_OR(self, kv, -1);
	struct shmkv_stats st;

	if (stats(s, kv, &st) < 0)
		return -1;
	return (Py_ssize_t)st.live_keys;
}

static PyObject *st_dbsize(PyObject *self, PyObject *unused)
{
	(void)unused;
	Py_ssize_t n = pk_store_len(self);
	return n < 0 ? NULL : PyLong_FromSsize_t(n);
}

static PyObject *class_list(const struct shmkv_stats *st)
{
	PyObject *l = PyList_New(0), *d = NULL;
	if (!l)
		return NULL;
	for (uint32_t i = 0; i < st->classes && i < SHMKV_STATS_CLASSES; i++) {
		d = PyDict_New();
		if (!d)
			goto fail;
		PUT(d, "block_size", st->cls[i].block_size);
		PUT(d, "pages", st->cls[i].pages);
		PUT(d, "blocks", st->cls[i].blocks);
		PUT(d, "used", st->cls[i].used);
		if (PyList_Append(l, d) < 0)
			goto fail;
		Py_CLEAR(d);
	}
	return l;
fail:
	Py_XDECREF(d);
	Py_DECREF(l);
	return NULL;
}

static PyObject *st_info(PyObject *self, PyObject *unused)
{
	STORE_KV(self, kv);
	struct shmkv_stats st;
	PyObject *d, *cls;
	(void)unused;

	if (stats(s, kv, &st) < 0 || !(d = PyDict_New()))
		return NULL;
	PUT(d, "slots", st.slots);
	PUT(d, "live_keys", st.live_keys);
	PUT(d, "volatile_keys", st.volatile_keys);
	PUT(d, "tombstones", st.tombstones);
	PUT(d, "expired", st.expired);
	PUT(d, "pending", st.pending);
	PUT(d, "corrupt", st.corrupt);
	PUT(d, "longest_probe", st.longest_probe);
	PUT(d, "page_size", st.page_size);
	PUT(d, "pages", st.pages);
	PUT(d, "pages_free", st.pages_free);
	PUT(d, "segment_bytes", st.segment_bytes);
	PUT(d, "created_unix_ms", st.created_unix_ms);
	PUT(d, "creator_pid", st.creator_pid);
	PUT(d, "inline_values", st.inline_values);
	PUT(d, "block_values", st.block_values);
	PUT(d, "memory_bytes", st.memory_bytes);
	PUT(d, "tables_kept_bytes", st.tables_kept_bytes);
	PUT(d, "max_memory", st.max_memory);
	PUT(d, "pages_max", st.pages_max);
	PUT(d, "evicted", st.evicted);
	PUT(d, "growths", st.growths);
	PUT(d, "growing_from", st.growing_from);
	PUT(d, "growing_moved", st.growing_moved);
	PUT(d, "slots_max", st.slots_max);
	const char *pol = shmkv_evict_policy_name((int)st.evict_policy);
	PyObject *po = PyUnicode_FromString(pol ? pol : "unknown");
	if (!po || PyDict_SetItemString(d, "evict_policy", po) < 0) {
		Py_XDECREF(po);
		goto fail;
	}
	Py_DECREF(po);
	cls = class_list(&st);
	if (!cls || PyDict_SetItemString(d, "classes", cls) < 0) {
		Py_XDECREF(cls);
		goto fail;
	}
	Py_DECREF(cls);
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

static PyObject *st_config(PyObject *self, PyObject *unused)
{
	STORE_KV(self, kv);
	struct shmkv_config c;
	PyObject *d;
	(void)unused;

	int rc;
	PK_CALL(s, rc, shmkv_get_config(kv, &c));
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	if (!(d = PyDict_New()))
		return NULL;
	PUT(d, "slots", c.slots);
	PUT(d, "key_max", c.key_max);
	PUT(d, "value_max", c.value_max);
	PUT(d, "probe_limit", c.probe_limit);
	PUT(d, "memory", c.value_memory);
	PUT(d, "max_memory", c.max_memory);
	PUT(d, "mode", c.mode);
	if (PyDict_SetItemString(d, "huge_pages",
				 (c.flags & SHMKV_CONFIG_HUGE_PAGES)
					 ? Py_True
					 : Py_False) < 0)
		goto fail;
	const char *pol = shmkv_evict_policy_name((int)c.evict_policy);
	PyObject *po = PyUnicode_FromString(pol ? pol : "unknown");
	if (!po || PyDict_SetItemString(d, "evict_policy", po) < 0) {
		Py_XDECREF(po);
		goto fail;
	}
	Py_DECREF(po);
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

/* ---- check ---- */

struct check_ctx {
	pk_store *s;
	PyObject *list;
	int leftovers;
	int failed;
};

static void check_cb(const char *problem, void *arg)
{
	struct check_ctx *c = arg;
	static const char left[] = "leftover: ";

	if (c->failed ||
	    (!c->leftovers && strncmp(problem, left, sizeof left - 1) == 0))
		return;
	PyGILState_STATE g = pk_cb_gil_take(c->s);
	PyObject *o = PyUnicode_DecodeUTF8(problem, (Py_ssize_t)strlen(problem),
					   "replace");
	if (!o || PyList_Append(c->list, o) < 0)
		c->failed = 1;
	Py_XDECREF(o);
	pk_cb_gil_give(c->s, g);
}

static PyObject *st_check(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "leftovers", NULL };
	STORE_KV(self, kv);
	struct check_ctx c = { s, NULL, 0, 0 };

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$p:check", kws,
					 &c.leftovers))
		return NULL;
	if (!(c.list = PyList_New(0)))
		return NULL;
	int rc;
	PK_CALL(s, rc, shmkv_check(kv, check_cb, &c));
	if (c.failed) {
		Py_DECREF(c.list);
		return NULL;
	}
	if (rc < 0) {
		Py_DECREF(c.list);
		return pk_store_fail(s, rc, NULL, NULL);
	}
	return c.list;
}

static PyObject *st_recover(PyObject *self, PyObject *unused)
{
	STORE_KV(self, kv);
	struct shmkv_recover_report r;
	PyObject *d;
	(void)unused;

	memset(&r, 0, sizeof r);
	int rc;
	pk_store_enter_wait(s);
	Py_BEGIN_ALLOW_THREADS
		rc = shmkv_recover(kv, &r);
	Py_END_ALLOW_THREADS
	pk_store_leave_wait(s);
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	if (!(d = PyDict_New()))
		return NULL;
	PUT(d, "repairs", rc);
	PUT(d, "stale_claims", r.stale_claims);
	PUT(d, "stuck_inserts", r.stuck_inserts);
	PUT(d, "collided", r.collided);
	PUT(d, "dead_slots", r.dead_slots);
	PUT(d, "leaked_blocks", r.leaked_blocks);
	return d;
fail:
	Py_DECREF(d);
	return NULL;
}

static PyObject *st_sweep(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "cursor", "max_slots", NULL };
	STORE_KV(self, kv);
	unsigned long long cursor = 0;
	unsigned max_slots = 1024;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|KI:sweep", kws, &cursor,
					 &max_slots))
		return NULL;
	uint64_t cur = cursor;
	int rc;
	PK_CALL(s, rc, shmkv_sweep(kv, &cur, max_slots));
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	return Py_BuildValue("(iK)", rc, (unsigned long long)cur);
}

static PyObject *st_maintain(PyObject *self, PyObject *unused)
{
	STORE_KV(self, kv);
	(void)unused;
	int rc;
	pk_store_enter_wait(s);
	Py_BEGIN_ALLOW_THREADS
		rc = shmkv_maintain(kv);
	Py_END_ALLOW_THREADS
	pk_store_leave_wait(s);
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	Py_RETURN_NONE;
}

static PyObject *st_set_max_memory(PyObject *self, PyObject *arg)
{
	STORE_KV(self, kv);
	unsigned long long n = PyLong_AsUnsignedLongLong(arg);
	if (n == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	int rc;
	PK_CALL(s, rc, shmkv_set_max_memory(kv, n));
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	Py_RETURN_NONE;
}

static PyObject *st_set_evict_policy(PyObject *self, PyObject *arg)
{
	STORE_KV(self, kv);
	const char *name = PyUnicode_Check(arg) ? pk_cstr(arg, "a policy")
						: NULL;
	PyErr_Clear(); /* a NUL in it: not a policy name either */
	int pol = name ? shmkv_evict_policy_parse(name) : -EINVAL;
	if (pol < 0)
		return pk_raise(-EINVAL, "not an eviction policy name "
					 "(noeviction, allkeys-lru, ...)");
	int rc;
	PK_CALL(s, rc, shmkv_set_evict_policy(kv, pol));
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	Py_RETURN_NONE;
}

static PyObject *st_huge_mapped(PyObject *self, PyObject *unused)
{
	STORE_KV(self, kv);
	uint64_t bytes = 0;
	(void)unused;
	int rc;
	PK_CALL(s, rc, shmkv_huge_mapped(kv, &bytes));
	if (rc < 0)
		return pk_store_fail(s, rc, NULL, NULL);
	return PyLong_FromUnsignedLongLong(bytes);
}

/* ---- locks() ---- */

struct lock_ctx {
	pk_store *s;
	PyObject *list;
};

static int lock_cb(const struct shmkv_lock_info *li, void *arg)
{
	struct lock_ctx *c = arg;
	PyGILState_STATE g = pk_cb_gil_take(c->s);
	int stop = 0;
	PyObject *d = Py_BuildValue(
		"{s:s#,s:O,s:i,s:I,s:K,s:L,s:L,s:I}", "name", li->name,
		(Py_ssize_t)li->name_len, "held", li->held ? Py_True : Py_False,
		"alive", li->alive, "pid", li->pid, "token",
		(unsigned long long)li->token, "held_for_ms",
		(long long)li->held_for_ms, "lease_left_ms",
		(long long)li->lease_left_ms, "waiters", li->waiters);
	if (!d || PyList_Append(c->list, d) < 0)
		stop = 1; /* the exception is set */
	Py_XDECREF(d);
	pk_cb_gil_give(c->s, g);
	return stop;
}

static PyObject *st_locks(PyObject *self, PyObject *unused)
{
	STORE_KV(self, kv);
	PyObject *l = PyList_New(0);
	(void)unused;
	if (!l)
		return NULL;
	struct lock_ctx c = { s, l };
	int rc;
	PK_CALL(s, rc, shmkv_lock_list(kv, lock_cb, &c));
	if (PyErr_Occurred()) {
		Py_DECREF(l);
		return NULL;
	}
	if (rc < 0) {
		Py_DECREF(l);
		return pk_store_fail(s, rc, NULL, NULL);
	}
	return l;
}

/* ---- execute_command ---- */

static PyObject *reply_object(const struct shmkv_reply *r)
{
	switch (r->type) {
	case SHMKV_REPLY_STATUS:
		return PyUnicode_DecodeUTF8(r->str, (Py_ssize_t)r->len,
					    "replace");
	case SHMKV_REPLY_INTEGER:
		return PyLong_FromLongLong(r->integer);
	case SHMKV_REPLY_NIL:
		Py_RETURN_NONE;
	case SHMKV_REPLY_BULK:
		return PyBytes_FromStringAndSize(r->str, (Py_ssize_t)r->len);
	case SHMKV_REPLY_ERROR:
	default:
		break;
	}
	PyErr_Format(PyExc_SystemError, "shmkv_exec: reply type %d",
		     (int)r->type);
	return NULL;
}

static PyObject *st_execute_command(PyObject *self, PyObject *args)
{
	STORE_KV(self, kv);
	Py_ssize_t n = PyTuple_GET_SIZE(args);
	struct pk_arg *a = PyMem_Calloc((size_t)n + 1, sizeof *a);
	const char **argv = PyMem_Calloc((size_t)n + 1, sizeof *argv);
	size_t *lens = PyMem_Calloc((size_t)n + 1, sizeof *lens);
	PyObject *r = NULL;
	Py_ssize_t got = 0;
	struct shmkv_reply rep;

	if (!a || !argv || !lens) {
		PyErr_NoMemory();
		goto out;
	}
	if (n == 0) {
		pk_raise(-EINVAL, "execute_command needs a command name");
		goto out;
	}
	for (; got < n; got++) {
		if (pk_arg_get(PyTuple_GET_ITEM(args, got), &a[got]) < 0) {
			pk_arg_release(&a[got]);
			goto out;
		}
		argv[got] = a[got].p;
		lens[got] = a[got].n;
	}
	int rc;
	PK_CALL(s, rc, shmkv_exec(kv, (int)n, argv, lens, &rep));
	if (rep.type == SHMKV_REPLY_ERROR) {
		PyObject *msg = PyUnicode_DecodeUTF8(
			rep.str, (Py_ssize_t)rep.len, "replace");
		if (msg && rc < 0)
			pk_raisef(rc, "%U", msg);
		else if (msg) {
			PyObject *t = Py_BuildValue("(iO)", EINVAL, msg);
			if (t)
				PyErr_SetObject(pk_ResponseError, t);
			Py_XDECREF(t);
		}
		Py_XDECREF(msg);
	} else if (rc < 0) {
		pk_raise(rc, NULL);
	} else {
		r = reply_object(&rep);
	}
	shmkv_reply_free(&rep);
out:
	for (Py_ssize_t i = 0; i < got; i++)
		pk_arg_release(&a[i]);
	PyMem_Free(a);
	PyMem_Free(argv);
	PyMem_Free(lens);
	return r;
}

#define KW    (METH_VARARGS | METH_KEYWORDS)
#define FN(f) ((PyCFunction)(void (*)(void))(f))

PyMethodDef pk_store_admin_methods[] = {
	{ "dbsize", st_dbsize, METH_NOARGS,
	  "dbsize($self, /)\n--\n\nDBSIZE: live keys (a pass over the store; "
	  "len(st) is the same)." },
	{ "info", st_info, METH_NOARGS,
	  "info($self, /)\n--\n\nThe store's counts (shmkv_stats) as a "
	  "dict: slots, live_keys, memory_bytes, classes, ..." },
	{ "config", st_config, METH_NOARGS,
	  "config($self, /)\n--\n\nThe store's settings (shmkv_get_config) "
	  "as a dict, in create()'s keyword names." },
	{ "check", FN(st_check), KW,
	  "check($self, *, leftovers=False)\n--\n\nVerify the whole store "
	  "(shmkv_check): the list of problems found, [] when clean. "
	  "leftovers=True also lists what dead processes left, which the "
	  "store reclaims by itself." },
	{ "recover", st_recover, METH_NOARGS,
	  "recover($self, /)\n--\n\nReclaim at once what killed processes "
	  "left (shmkv_recover); a dict of counts. Never needed for "
	  "correctness." },
	{ "sweep", FN(st_sweep), KW,
	  "sweep($self, cursor=0, max_slots=1024)\n--\n\nActive expiry over "
	  "max_slots slots: (keys deleted, next cursor; 0 after a full "
	  "pass)." },
	{ "maintain", st_maintain, METH_NOARGS,
	  "maintain($self, /)\n--\n\nFinish a growth of the table under way "
	  "(shmkv_maintain)." },
	{ "set_max_memory", st_set_max_memory, METH_O,
	  "set_max_memory($self, nbytes, /)\n--\n\nChange max_memory for "
	  "every user (CONFIG SET maxmemory)." },
	{ "set_evict_policy", st_set_evict_policy, METH_O,
	  "set_evict_policy($self, policy, /)\n--\n\nChange the eviction "
	  "policy ('allkeys-lru', 'noeviction', ...) for every user." },
	{ "huge_mapped", st_huge_mapped, METH_NOARGS,
	  "huge_mapped($self, /)\n--\n\nBytes of this mapping in huge pages "
	  "now." },
	{ "locks", st_locks, METH_NOARGS,
	  "locks($self, /)\n--\n\nThe store's safe locks (shmkv_lock_list): "
	  "a list of dicts (name, held, alive, pid, token, held_for_ms, "
	  "lease_left_ms, waiters)." },
	{ "execute_command", st_execute_command, METH_VARARGS,
	  "execute_command($self, *args)\n--\n\nRun one command given as "
	  "Redis arguments (shmkv_exec): bytes, int, None, or str for a "
	  "status reply ('OK', 'PONG'); an error reply raises "
	  "ResponseError." },
	{ NULL, NULL, 0, NULL },
};
