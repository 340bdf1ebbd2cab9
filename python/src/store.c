/*
 * store.c - shmkv.Store: create, open, close, remove, the context manager,
 * and the wait bracket that keeps a handle mapped while threads wait on it
 * with the GIL released.
 */
#include "pyshmkv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

shmkv_t *pk_store_kv(pk_store *s)
{
	if (!s->kv || s->close_pending) {
		pk_raise(-EBADF, "the store is closed");
		return NULL;
	}
	return s->kv;
}

void pk_store_enter_wait(pk_store *s)
{
	s->waiters++;
}

void pk_store_leave_wait(pk_store *s)
{
	if (--s->waiters == 0 && s->close_pending) {
		shmkv_close(s->kv);
		s->kv = NULL;
		s->close_pending = 0;
	}
}

PyObject *pk_store_fail(pk_store *s, int rc, const struct pk_arg *key,
			const struct pk_arg *val)
{
	if (rc == -EBADF && (!s->kv || s->close_pending)) /* see PK_CALL */
		return pk_raise(rc, "the store is closed");
	if (rc == -ENAMETOOLONG && key)
		return pk_raisef(rc,
				 "key is %zu bytes, this store's key_max "
				 "is %u",
				 key->n, s->key_max);
	if (rc == -E2BIG && val)
		return pk_raisef(rc,
				 "value is %zu bytes, this store's "
				 "value_max is %u",
				 val->n, s->value_max);
	if (rc == -ESTALE)
		return pk_raisef(rc,
				 "store %U was removed since this handle "
				 "opened it: close it and open the name "
				 "afresh",
				 s->shown);
	return pk_raise(rc, NULL);
}

/* A name as the library takes it. "jobs" means "/jobs", as shmctl reads
 * it; a URI ("scheme://...") goes to its backend as it is. */
static PyObject *lib_name(PyObject *name)
{
	const char *s = pk_cstr(name, "a store name");
	if (!s)
		return NULL;
	if (s[0] == '/' || strstr(s, "://")) {
		Py_INCREF(name);
		return name;
	}
	return PyUnicode_FromFormat("/%s", s);
}

/* @name (str) as shmkv_name_redact shows it: a URI's password as ***. */
static PyObject *shown_name(PyObject *name)
{
	const char *s = PyUnicode_AsUTF8(name);
	char buf[2 * SHMKV_NAME_MAX + 16];

	if (!s)
		return NULL;
	if (shmkv_name_redact(s, buf, sizeof buf) < 0)
		snprintf(buf, sizeof buf, "***");
	return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
}

static PyObject *wrap(PyTypeObject *type, shmkv_t *kv, PyObject *name,
		      int readonly)
{
	struct shmkv_config cfg;
	int rc = shmkv_get_config(kv, &cfg);
	if (rc < 0) {
		shmkv_close(kv);
		return pk_raise(rc, NULL);
	}
	PyObject *shown = shown_name(name);
	pk_store *s = shown ? (pk_store *)type->tp_alloc(type, 0) : NULL;
	if (!s) {
		Py_XDECREF(shown);
		shmkv_close(kv);
		return NULL;
	}
	s->kv = kv;
	Py_INCREF(name);
	s->name = name;
	s->shown = shown;
	/* The library sends a URI to its backend (shmkv_create). */
	s->remote = strstr(PyUnicode_AsUTF8(name), "://") != NULL;
	s->readonly = readonly;
	s->key_max = cfg.key_max;
	s->value_max = cfg.value_max;
	return (PyObject *)s;
}

/* An error from create/open, naming the store (its password masked). */
static PyObject *open_fail(int rc, PyObject *name, const char *verb)
{
	PyObject *shown = shown_name(name);
	if (!shown)
		return NULL;
	pk_raisef(rc, "%s %U: %s", verb, shown, shmkv_strerror(rc));
	Py_DECREF(shown);
	return NULL;
}

static char *create_kw[] = { "name",	     "slots",	   "key_max",
			     "value_max",    "memory",	   "max_memory",
			     "mode",	     "huge_pages", "probe_limit",
			     "evict_policy", "populate",   NULL };

/* Parses create()'s keywords into @cfg; None means the default. */
static PyObject *parse_create(PyObject *args, PyObject *kw,
			      struct shmkv_config *cfg)
{
	PyObject *name, *slots = Py_None, *key_max = Py_None,
			*value_max = Py_None, *memory = Py_None,
			*max_memory = Py_None, *probe = Py_None,
			*policy = Py_None;
	unsigned mode = SHMKV_MODE_DEFAULT;
	int huge = 0, populate = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|$OOOOOIpOOp", create_kw,
					 &name, &slots, &key_max, &value_max,
					 &memory, &max_memory, &mode, &huge,
					 &probe, &policy, &populate))
		return NULL;
	shmkv_config_init(cfg);
	struct {
		PyObject *o;
		uint32_t *u32;
		uint64_t *u64;
		const char *what;
	} nums[] = {
		{ slots, &cfg->slots, NULL, "slots" },
		{ key_max, &cfg->key_max, NULL, "key_max" },
		{ value_max, &cfg->value_max, NULL, "value_max" },
		{ probe, &cfg->probe_limit, NULL, "probe_limit" },
		{ memory, NULL, &cfg->value_memory, "memory" },
		{ max_memory, NULL, &cfg->max_memory, "max_memory" },
	};
	for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
		if (nums[i].o == Py_None)
			continue;
		unsigned long long v = PyLong_AsUnsignedLongLong(nums[i].o);
		if (PyErr_Occurred() || (nums[i].u32 && v > UINT32_MAX) ||
		    v == 0) {
			PyErr_Clear();
			return pk_raisef(-EINVAL,
					 "%s must be a positive "
					 "integer%s",
					 nums[i].what,
					 nums[i].u32 ? " below 2^32" : "");
		}
		if (nums[i].u32)
			*nums[i].u32 = (uint32_t)v;
		else
			*nums[i].u64 = v;
	}
	if (policy != Py_None) {
		const char *p = PyUnicode_Check(policy)
					? pk_cstr(policy, "evict_policy")
					: NULL;
		PyErr_Clear(); /* a NUL in it: not a policy name either */
		int ep = p ? shmkv_evict_policy_parse(p) : -EINVAL;
		if (ep < 0)
			return pk_raisef(-EINVAL, "evict_policy: not a policy "
						  "name (allkeys-lru, "
						  "noeviction...)");
		cfg->evict_policy = (uint32_t)ep;
	}
	cfg->mode = mode;
	cfg->flags = (huge ? SHMKV_CONFIG_HUGE_PAGES : 0) |
		     (populate ? SHMKV_CONFIG_POPULATE : 0);
	return lib_name(name);
}

typedef int (*make_fn)(const char *, const struct shmkv_config *, shmkv_t **);

static PyObject *make(PyObject *cls, PyObject *args, PyObject *kw, make_fn fn,
		      const char *verb)
{
	struct shmkv_config cfg;
	PyObject *name = parse_create(args, kw, &cfg);
	if (!name)
		return NULL;
	shmkv_t *kv = NULL;
	const char *lib = PyUnicode_AsUTF8(name);
	int rc;
	/* Creating may wait (a remover's flock) and fault in much memory
	 * (populate, huge pages): other threads run meanwhile. */
	Py_BEGIN_ALLOW_THREADS
		rc = fn(lib, &cfg, &kv);
	Py_END_ALLOW_THREADS
	PyObject *r = rc < 0 ? open_fail(rc, name, verb)
			     : wrap((PyTypeObject *)cls, kv, name, 0);
	Py_DECREF(name);
	return r;
}

static PyObject *store_create(PyObject *cls, PyObject *args, PyObject *kw)
{
	return make(cls, args, kw, shmkv_create, "create");
}

static PyObject *store_open_or_create(PyObject *cls, PyObject *args,
				      PyObject *kw)
{
	return make(cls, args, kw, shmkv_open_or_create, "open_or_create");
}

static PyObject *store_open(PyObject *cls, PyObject *args, PyObject *kw)
{
	static char *kws[] = { "name", "readonly", "populate", NULL };
	PyObject *given;
	int ro = 0, populate = 0;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "U|$pp", kws, &given, &ro,
					 &populate))
		return NULL;
	PyObject *name = lib_name(given);
	if (!name)
		return NULL;
	unsigned flags = (ro ? SHMKV_OPEN_READONLY : 0) |
			 (populate ? SHMKV_OPEN_POPULATE : 0);
	shmkv_t *kv = NULL;
	const char *lib = PyUnicode_AsUTF8(name);
	int rc;
	Py_BEGIN_ALLOW_THREADS
		rc = shmkv_open(lib, flags, &kv);
	Py_END_ALLOW_THREADS
	PyObject *r = rc < 0 ? open_fail(rc, name, "open")
			     : wrap((PyTypeObject *)cls, kv, name, ro);
	Py_DECREF(name);
	return r;
}

/* Store.remove(name) on the class, st.remove() on a store: unlink. */
static PyObject *do_remove(PyObject *given)
{
	PyObject *name = lib_name(given);
	if (!name)
		return NULL;
	const char *lib = PyUnicode_AsUTF8(name);
	int rc;
	Py_BEGIN_ALLOW_THREADS /* removers take turns: a flock wait */
		rc = shmkv_unlink(lib);
	Py_END_ALLOW_THREADS
	PyObject *r = rc < 0 ? open_fail(rc, name, "remove") : Py_None;
	Py_XINCREF(r);
	Py_DECREF(name);
	return r;
}

/* A descriptor that passes the store's name when called on an instance
 * and takes it as the argument when called on the class. */
static PyObject *store_remove(PyObject *self, PyObject *args)
{
	PyObject *name = NULL;

	if (!PyArg_ParseTuple(args, "|U:remove", &name))
		return NULL;
	if (PyObject_TypeCheck(self, &pk_store_type)) {
		if (name)
			return PyErr_Format(PyExc_TypeError,
					    "st.remove() takes no name; "
					    "Store.remove(name) does");
		return do_remove(((pk_store *)self)->name);
	}
	if (!name)
		return PyErr_Format(PyExc_TypeError,
				    "Store.remove() needs a store name");
	return do_remove(name);
}

static PyObject *store_close(PyObject *self, PyObject *unused)
{
	pk_store *s = (pk_store *)self;
	(void)unused;

	if (s->kv && s->waiters)
		s->close_pending = 1; /* the last waiter out unmaps */
	else if (s->kv) {
		shmkv_close(s->kv);
		s->kv = NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *store_enter(PyObject *self, PyObject *unused)
{
	(void)unused;
	if (!pk_store_kv((pk_store *)self))
		return NULL;
	Py_INCREF(self);
	return self;
}

static PyObject *store_exit(PyObject *self, PyObject *args)
{
	(void)args;
	return store_close(self, NULL);
}

static void store_dealloc(PyObject *self)
{
	pk_store *s = (pk_store *)self;

	/* Lock objects hold a reference to their store, so no waiter can
	 * be left here: waiters == 0. */
	if (s->weakrefs)
		PyObject_ClearWeakRefs(self);
	shmkv_close(s->kv);
	Py_XDECREF(s->name);
	Py_XDECREF(s->shown);
	Py_TYPE(self)->tp_free(self);
}

static PyObject *store_repr(PyObject *self)
{
	pk_store *s = (pk_store *)self;
	return PyUnicode_FromFormat("<shmkv.Store %R%s%s>", s->shown,
				    s->readonly ? " readonly" : "",
				    s->kv && !s->close_pending ? ""
							       : " closed");
}

static PyObject *get_closed(PyObject *self, void *unused)
{
	pk_store *s = (pk_store *)self;
	(void)unused;
	return PyBool_FromLong(!s->kv || s->close_pending);
}

static PyObject *get_name(PyObject *self, void *unused)
{
	(void)unused;
	return Py_NewRef(((pk_store *)self)->shown);
}

static PyObject *get_readonly(PyObject *self, void *unused)
{
	(void)unused;
	return PyBool_FromLong(((pk_store *)self)->readonly);
}

static PyObject *get_key_max(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(((pk_store *)self)->key_max);
}

static PyObject *get_value_max(PyObject *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLong(((pk_store *)self)->value_max);
}

static PyGetSetDef store_getset[] = {
	{ "closed", get_closed, NULL, "True once close() was called.", NULL },
	{ "name", get_name, NULL,
	  "The store's name, with its leading '/'; a URI as "
	  "shmkv_name_redact() shows it, its password as ***.",
	  NULL },
	{ "readonly", get_readonly, NULL, "Opened with readonly=True.", NULL },
	{ "key_max", get_key_max, NULL,
	  "Longest key in bytes (fixed at "
	  "creation).",
	  NULL },
	{ "value_max", get_value_max, NULL,
	  "Longest value in bytes (fixed "
	  "at creation).",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

#define CREATE_SIG                                                             \
	"(name, *, slots=None, key_max=None, value_max=None, memory=None, "    \
	"max_memory=None, mode=0o600, huge_pages=False, probe_limit=None, "    \
	"evict_policy=None, populate=False)\n--\n\n"

static PyMethodDef store_life_methods[] = {
	{ "create", (PyCFunction)(void (*)(void))store_create,
	  METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "create" CREATE_SIG
	  "Create a new store, exclusively (StoreExists if the name is "
	  "taken). None means the library's default: slots 65536, key_max "
	  "64, value_max 1024, memory slots*256 bytes of value storage, "
	  "max_memory what /dev/shm allows." },
	{ "open_or_create", (PyCFunction)(void (*)(void))store_open_or_create,
	  METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "open_or_create" CREATE_SIG
	  "Open the store, creating it with these settings if missing (an "
	  "existing store keeps its own)." },
	{ "open", (PyCFunction)(void (*)(void))store_open,
	  METH_VARARGS | METH_KEYWORDS | METH_CLASS,
	  "open($cls, name, *, readonly=False, populate=False)\n--\n\n"
	  "Open an existing store (NoSuchStore if missing). readonly maps it "
	  "read-only: writes raise ReadOnlyStore." },
	{ "close", store_close, METH_NOARGS,
	  "close($self, /)\n--\n\nUnmap the store (idempotent). Commands "
	  "then raise Error(EBADF). A lock wait in another thread keeps the "
	  "mapping until it returns." },
	{ "lock", (PyCFunction)(void (*)(void))pk_store_lock,
	  METH_VARARGS | METH_KEYWORDS,
	  "lock($self, name, lease_ms=5000, *, timeout=None)\n--\n\n"
	  "The safe lock @name (shmkv_lock.h) as a Lock: `with "
	  "st.lock(name) as grant:` waits up to timeout seconds (None: "
	  "forever; LockTimeout), holds it for at most lease_ms unless "
	  "extended, and gives grant.token and grant.owner_died." },
	{ "pattern_lock", (PyCFunction)(void (*)(void))pk_store_pattern_lock,
	  METH_VARARGS | METH_KEYWORDS,
	  "pattern_lock($self, name, timeout_ms=5000, *, wait_ms=None)\n--"
	  "\n\nThe pattern lock of Redis's SETNX page as a PatternLock: "
	  "valid timeout_ms after each acquire, which waits up to wait_ms "
	  "(None: no limit)." },
	{ "__enter__", store_enter, METH_NOARGS, "Return the store itself." },
	{ "__exit__", store_exit, METH_VARARGS, "close() the store." },
	{ NULL, NULL, 0, NULL },
};

/* remove is both a class and an instance method: a plain function put in
 * the type's dict as a descriptor bound to whatever it is called on. */
static PyMethodDef remove_def = {
	"remove", store_remove, METH_VARARGS,
	"remove(name) on the class, remove() on a store\n\n"
	"Remove the store (shmkv_unlink): every handle to it then raises "
	"StoreRemoved, and the name is free. NoSuchStore if missing."
};

#define N_METHODS 96
static PyMethodDef store_methods[N_METHODS];

PyTypeObject pk_store_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shmkv.Store",
	.tp_basicsize = sizeof(pk_store),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A shmkv store: a Redis-compatible key store in one POSIX "
		  "shared-memory segment, shared by every process that opens "
		  "its name. Make one with Store.create(), Store.open() or "
		  "Store.open_or_create().",
	.tp_dealloc = store_dealloc,
	.tp_repr = store_repr,
	.tp_getset = store_getset,
	.tp_weaklistoffset = offsetof(pk_store, weakrefs),
	.tp_iter = pk_store_iter,
};

static int append_methods(size_t *n, const PyMethodDef *defs)
{
	for (; defs->ml_name; defs++) {
		if (*n + 1 >= N_METHODS) {
			PyErr_SetString(PyExc_SystemError,
					"shmkv: raise N_METHODS");
			return -1;
		}
		store_methods[(*n)++] = *defs;
	}
	return 0;
}

/* Store.remove is a class method and an instance method at once: this
 * descriptor binds remove_def to whatever it is looked up on. */
static PyObject *hybrid_get(PyObject *descr, PyObject *obj, PyObject *type)
{
	(void)descr;
	return PyCFunction_New(&remove_def, obj && obj != Py_None ? obj : type);
}

static PyTypeObject hybrid_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "shmkv._remove_descriptor",
	.tp_basicsize = sizeof(PyObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_descr_get = hybrid_get,
};

static int add_remove(void)
{
	if (PyType_Ready(&hybrid_type) < 0)
		return -1;
	PyObject *d = PyType_GenericNew(&hybrid_type, NULL, NULL);
	if (!d)
		return -1;
	int rc = PyDict_SetItemString(pk_store_type.tp_dict, "remove", d);
	Py_DECREF(d);
	PyType_Modified(&pk_store_type);
	return rc;
}

int pk_store_ready(PyObject *module)
{
	size_t n = 0;

	if (append_methods(&n, store_life_methods) < 0 ||
	    append_methods(&n, pk_store_cmd_methods) < 0 ||
	    append_methods(&n, pk_store_admin_methods) < 0 ||
	    append_methods(&n, pk_store_scan_methods) < 0)
		return -1;
	pk_store_type.tp_methods = store_methods;
	pk_store_type.tp_as_mapping = &pk_store_as_mapping;
	pk_store_type.tp_as_sequence = &pk_store_as_sequence;
	if (PyType_Ready(&pk_store_type) < 0 || PyType_Ready(&pk_scan_type) < 0)
		return -1;
	if (add_remove() < 0)
		return -1;
	Py_INCREF(&pk_store_type);
	if (PyModule_AddObject(module, "Store", (PyObject *)&pk_store_type) <
	    0) {
		Py_DECREF(&pk_store_type);
		return -1;
	}
	return 0;
}
