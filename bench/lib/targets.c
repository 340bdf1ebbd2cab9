/*
 * targets.c - the operations bench_backends times, through shmkv's API or
 * bare hiredis, and the checks of their replies (see targets.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "targets.h"

#define NAME_LEN  12u
#define SLOTS	  16384u
#define TIMEOUT_S 5 /* bare connections: a hang becomes an error */
/* A lock cycle's rc when acquire and release both returned 0: apart
 * from every code either may return (0, grants > 0, -errno). */
#define CYCLE_DONE INT32_MIN

const char *const target_op_name[OP_N] = {
	"GET 16 B",  "SET 16 B",     "INCR",
	"safe lock", "pattern lock", "SET NX PX + EVALSHA del",
};
const char *const target_op_tag[OP_N] = {
	"get", "set", "incr", "safe_lock", "pattern_lock", "raw_lock",
};

/* The compare-and-delete every Redis lock library runs to release. */
static const char delifeq_lua[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then "
	"return redis.call('del', KEYS[1]) else return 0 end";

static int fail(struct target *t, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Keeps the first reason: later failures are its consequences. */
static int fail(struct target *t, int err, const char *fmt, ...)
{
	va_list ap;

	if (!t->why[0]) {
		va_start(ap, fmt);
		vsnprintf(t->why, sizeof(t->why), fmt, ap);
		va_end(ap);
	}
	return err;
}

/* The names of targets.h, each NAME_LEN bytes plus a NUL. */
static void key_name(char *out, uint32_t i)
{
	snprintf(out, NAME_LEN + 1, "k:%010u", i % TARGET_KEYS);
}

static void ctr_name(char *out, const struct target *t, uint32_t i)
{
	snprintf(out, NAME_LEN + 1, "c%d:%09u", t->digit, i % TARGET_KEYS);
}

static void lock_name(char *out, char kind, const struct target *t, uint32_t i)
{
	snprintf(out, NAME_LEN + 1, "%c%d.%09u", kind, t->digit,
		 i % TARGET_LOCKS);
}

static void value_of(char *out, uint32_t i)
{
	snprintf(out, TARGET_VLEN + 1, "v:%014u", i % TARGET_KEYS);
}

int target_has(int bare, enum target_op op)
{
	if (!bare)
		return op != OP_RAWLOCK;
	return op != OP_SAFE && op != OP_PATTERN;
}

/*
 * Bare hiredis.
 */

/* One command on node @n; *@rep is NULL unless a reply came. Return: 0,
 * or -EIO (connection error: the reason is in t->why). */
static int raw_call(struct target *t, int n, redisReply **rep, int argc,
		    const char **argv, const size_t *len)
{
	redisContext *c = t->node[n];

	*rep = redisCommandArgv(c, argc, argv, len);
	if (*rep)
		return 0;
	return fail(t, -EIO, "node %d: %s", n, c->errstr);
}

static redisContext *raw_connect(struct target *t, const char *path,
				 const char *host, int port)
{
	struct timeval tv = { .tv_sec = TIMEOUT_S };
	redisContext *c = path ? redisConnectUnixWithTimeout(path, tv)
			       : redisConnectWithTimeout(host, port, tv);

	if (!c || c->err) {
		fail(t, -ECONNREFUSED, "connect %s%s%d: %s", path ? path : host,
		     path ? "" : ":", path ? 0 : port,
		     c ? c->errstr : "out of memory");
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, tv);
	return c;
}

/* Adds the master at @host:@port unless known. Return: its index, or -1
 * (the reason in t->why). */
static int raw_node(struct target *t, const char *host, int port,
		    char addrs[][64])
{
	char a[64];
	int n;

	snprintf(a, sizeof(a), "%s:%d", host, port);
	for (n = 0; n < t->nnodes; n++)
		if (strcmp(addrs[n], a) == 0)
			return n;
	if (n == TARGET_NODES_MAX) {
		fail(t, -E2BIG, "more than %d masters", TARGET_NODES_MAX);
		return -1;
	}
	t->node[n] = raw_connect(t, NULL, host, port);
	if (!t->node[n])
		return -1;
	memcpy(addrs[n], a, sizeof(a));
	t->nnodes++;
	return n;
}

/* CLUSTER SLOTS through node 0 into @owner (node index per slot), each
 * master connected. Return: 0 or a negative errno. */
static int raw_slots(struct target *t, uint8_t *owner, char addrs[][64])
{
	const char *argv[] = { "CLUSTER", "SLOTS" };
	redisReply *r;
	int err = raw_call(t, 0, &r, 2, argv, NULL);

	if (err)
		return err;
	memset(owner, 0xff, SLOTS);
	for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements;
	     i++) {
		redisReply *e = r->element[i], *m;
		int n;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    (m = e->element[2])->type != REDIS_REPLY_ARRAY ||
		    m->elements < 2)
			continue;
		n = raw_node(t, m->element[0]->str, (int)m->element[1]->integer,
			     addrs);
		if (n < 0) {
			freeReplyObject(r);
			return -EIO;
		}
		for (long long s = e->element[0]->integer;
		     s <= e->element[1]->integer && s < SLOTS; s++)
			owner[s] = (uint8_t)n;
	}
	freeReplyObject(r);
	return 0;
}

/* The node index of @name by CLUSTER KEYSLOT, or -1. */
static int raw_owner(struct target *t, const uint8_t *owner, const char *name)
{
	const char *argv[] = { "CLUSTER", "KEYSLOT", name };
	redisReply *r;
	int n = -1;

	if (raw_call(t, 0, &r, 3, argv, NULL))
		return -1;
	if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0 &&
	    r->integer < SLOTS && owner[r->integer] != 0xff)
		n = owner[r->integer];
	else
		fail(t, -EPROTO, "no master holds the slot of %s", name);
	freeReplyObject(r);
	return n;
}

/* Node 0 is the seed; the masters found are added after it (the seed is
 * one of them, so it is connected twice: harmless). */
static int raw_map(struct target *t)
{
	static uint8_t owner[SLOTS];
	char addrs[TARGET_NODES_MAX][64] = { "seed" };
	char name[NAME_LEN + 1];
	int n, err = raw_slots(t, owner, addrs);

	for (uint32_t i = 0; i < TARGET_KEYS && !err; i++) {
		key_name(name, i);
		err = (n = raw_owner(t, owner, name)) < 0 ? -EPROTO : 0;
		t->key_node[i] = (uint8_t)n;
		ctr_name(name, t, i);
		err = err				    ? err
		      : (n = raw_owner(t, owner, name)) < 0 ? -EPROTO
							    : 0;
		t->ctr_node[i] = (uint8_t)n;
	}
	for (uint32_t i = 0; i < TARGET_LOCKS && !err; i++) {
		lock_name(name, 'r', t, i);
		err = (n = raw_owner(t, owner, name)) < 0 ? -EPROTO : 0;
		t->lock_node[i] = (uint8_t)n;
	}
	return err;
}

/* SCRIPT LOAD on every node (a cluster's scripts are per node). */
static int raw_load(struct target *t)
{
	const char *argv[] = { "SCRIPT", "LOAD", delifeq_lua };

	for (int n = 0; n < t->nnodes; n++) {
		redisReply *r;
		int err = raw_call(t, n, &r, 3, argv, NULL);

		if (err)
			return err;
		if (r->type != REDIS_REPLY_STRING || r->len >= sizeof(t->sha))
			err = fail(t, -EPROTO, "SCRIPT LOAD: %s",
				   r->type == REDIS_REPLY_ERROR ? r->str
								: "no sha");
		else
			memcpy(t->sha, r->str, r->len + 1);
		freeReplyObject(r);
		if (err)
			return err;
	}
	return 0;
}

static void raw_do(struct target *t, enum target_op op, uint32_t i);

int target_hiredis(struct target *t, const char *name, const char *tag,
		   int digit, const char *path, int port, int cluster)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->name = name, t->tag = tag, t->digit = digit;
	t->node[0] = raw_connect(t, path, "127.0.0.1", port);
	if (!t->node[0])
		return -ECONNREFUSED;
	t->nnodes = 1;
	if ((cluster && (err = raw_map(t))) || (err = raw_load(t)))
		return err;
	/* The values GET checks, and the counters' values now. */
	for (uint32_t i = 0; i < TARGET_KEYS; i++) {
		raw_do(t, OP_SET, i);
		if ((err = target_check(t, OP_SET, i)))
			return err;
		raw_do(t, OP_INCR, i);
		if (t->rc)
			return t->rc;
		t->count[i] = t->incr;
	}
	return 0;
}

static int raw_expect(struct target *t, redisReply *r, int type,
		      const char *what)
{
	if (r->type == type)
		return 0;
	return fail(t, -EPROTO, "%s: %s", what,
		    r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
}

/* SET NX PX of a token, then the compare-and-delete: the minimal Redis
 * lock, two round trips, as bench_lock's Redis kind. */
static int raw_lock(struct target *t, uint32_t i)
{
	char name[NAME_LEN + 1], px[16];
	const char *set[] = { "SET", name, "1", "NX", "PX", px };
	const char *del[] = { "EVALSHA", t->sha, "1", name, "1" };
	int n = t->lock_node[i % TARGET_LOCKS], err;
	redisReply *r;

	lock_name(name, 'r', t, i);
	snprintf(px, sizeof(px), "%d", TARGET_LEASE_MS);
	if ((err = raw_call(t, n, &r, 6, set, NULL)))
		return err;
	err = raw_expect(t, r, REDIS_REPLY_STATUS, "SET NX PX");
	freeReplyObject(r);
	if (err || (err = raw_call(t, n, &r, 5, del, NULL)))
		return err;
	err = raw_expect(t, r, REDIS_REPLY_INTEGER, "EVALSHA");
	if (!err && r->integer != 1)
		err = fail(t, -ENOLCK, "EVALSHA deleted nothing");
	freeReplyObject(r);
	return err;
}

static void raw_do(struct target *t, enum target_op op, uint32_t i)
{
	char name[NAME_LEN + 1], val[TARGET_VLEN + 1];
	const char *argv[3] = { NULL, name, val };
	size_t len[3] = { 0, NAME_LEN, TARGET_VLEN };
	int n, argc = 2;
	redisReply *r;

	t->rc = 0;
	if (op == OP_RAWLOCK) {
		t->rc = raw_lock(t, i);
		return;
	}
	if (op == OP_INCR) {
		ctr_name(name, t, i);
		argv[0] = "INCR", len[0] = 4, n = t->ctr_node[i % TARGET_KEYS];
	} else {
		key_name(name, i);
		n = t->key_node[i % TARGET_KEYS];
		argv[0] = op == OP_GET ? "GET" : "SET", len[0] = 3;
		if (op == OP_SET) {
			value_of(val, i);
			argc = 3;
		}
	}
	if ((t->rc = raw_call(t, n, &r, argc, argv, len)))
		return;
	if (op == OP_GET &&
	    !(t->rc = raw_expect(t, r, REDIS_REPLY_STRING, "GET"))) {
		t->out_len = r->len < sizeof(t->out) ? r->len : sizeof(t->out);
		memcpy(t->out, r->str, t->out_len);
		t->rc = 1;
	} else if (op == OP_SET) {
		t->rc = raw_expect(t, r, REDIS_REPLY_STATUS, "SET");
		t->rc = t->rc ? t->rc : 1;
	} else if (op == OP_INCR &&
		   !(t->rc = raw_expect(t, r, REDIS_REPLY_INTEGER, "INCR"))) {
		t->incr = r->integer;
	}
	freeReplyObject(r);
}

/*
 * shmkv's API.
 */
static int shmkv_fail(struct target *t, const char *call, int err)
{
	return fail(t, err, "%s: %s", call, shmkv_strerror(err));
}

static void api_do(struct target *t, enum target_op op, uint32_t i)
{
	struct shmkv_value out = { .buf = t->out, .cap = sizeof(t->out) };
	char name[NAME_LEN + 1], val[TARGET_VLEN + 1];
	uint32_t l = i % TARGET_LOCKS;
	int64_t expiry;

	switch (op) {
	case OP_GET:
		key_name(name, i);
		t->rc = shmkv_get(t->kv, name, NAME_LEN, &out);
		t->out_len = out.len;
		break;
	case OP_SET:
		key_name(name, i);
		value_of(val, i);
		t->rc = shmkv_set(t->kv, name, NAME_LEN, val, TARGET_VLEN, 0, 0,
				  NULL);
		break;
	case OP_INCR:
		ctr_name(name, t, i);
		t->rc = shmkv_incr(t->kv, name, NAME_LEN, &t->incr);
		break;
	case OP_SAFE:
		t->rc = shmkv_lock_try_acquire(&t->lk[l], TARGET_LEASE_MS);
		if (t->rc == 0)
			t->rc = shmkv_lock_release(&t->lk[l]);
		t->rc = t->rc == 0 ? CYCLE_DONE : t->rc;
		break;
	case OP_PATTERN:
		t->rc = shmkv_pattern_acquire(&t->pl[l], TARGET_LEASE_MS, 0,
					      &expiry);
		if (t->rc == 0)
			t->rc = shmkv_pattern_release(&t->pl[l], expiry);
		t->rc = t->rc == 0 ? CYCLE_DONE : t->rc;
		break;
	default:
		t->rc = -EINVAL;
	}
}

int target_shmkv(struct target *t, const char *name, const char *tag, int digit,
		 shmkv_t *kv)
{
	int err;

	memset(t, 0, sizeof(*t));
	t->name = name, t->tag = tag, t->digit = digit, t->kv = kv;
	for (uint32_t i = 0; i < TARGET_KEYS; i++) {
		api_do(t, OP_SET, i);
		if ((err = target_check(t, OP_SET, i)))
			return err;
		api_do(t, OP_INCR, i);
		if (t->rc)
			return shmkv_fail(t, "shmkv_incr", t->rc);
		t->count[i] = t->incr;
	}
	return 0;
}

int target_locks(struct target *t, enum target_op op)
{
	char name[NAME_LEN + 1];
	int err;

	for (uint32_t i = 0; i < TARGET_LOCKS; i++) {
		lock_name(name, op == OP_SAFE ? 's' : 'p', t, i);
		if (op == OP_SAFE &&
		    (err = shmkv_lock_init(t->kv, &t->lk[i], name)))
			return shmkv_fail(t, "shmkv_lock_init", err);
		if (op == OP_PATTERN &&
		    (err = shmkv_pattern_init(t->kv, &t->pl[i], name)))
			return shmkv_fail(t, "shmkv_pattern_init", err);
	}
	return 0;
}

void target_close(struct target *t)
{
	for (int n = 0; n < t->nnodes; n++)
		redisFree(t->node[n]);
	t->nnodes = 0;
}

void target_do(struct target *t, enum target_op op, uint32_t i)
{
	if (t->kv)
		api_do(t, op, i);
	else
		raw_do(t, op, i);
}

/* What a lock cycle's rc says: the acquire's code, or the release's
 * (CYCLE_DONE: both returned 0). */
static int check_cycle(struct target *t, enum target_op op)
{
	const char *acq = op == OP_SAFE ? "shmkv_lock_try_acquire"
					: "shmkv_pattern_acquire";
	const char *rel = op == OP_SAFE ? "shmkv_lock_release"
					: "shmkv_pattern_release";

	if (t->rc == CYCLE_DONE)
		return 0;
	if (t->rc > 0)
		return fail(t, -EPROTO, "%s of a free lock gave %d", acq,
			    t->rc);
	/* A release's error and an acquire's are told apart by neither
	 * code alone: name both. */
	return fail(t, t->rc, "%s or %s: %s", acq, rel, shmkv_strerror(t->rc));
}

int target_check(struct target *t, enum target_op op, uint32_t i)
{
	const char *call = t->kv ? target_op_tag[op] : "hiredis";
	char want[TARGET_VLEN + 1];
	uint32_t k = i % TARGET_KEYS;

	if (op == OP_SAFE || op == OP_PATTERN)
		return check_cycle(t, op);
	if (t->rc < 0)
		return t->kv ? shmkv_fail(t, call, t->rc) : t->rc;
	switch (op) {
	case OP_GET:
		value_of(want, i);
		if (t->rc != 1 || t->out_len != TARGET_VLEN ||
		    memcmp(t->out, want, TARGET_VLEN) != 0)
			return fail(t, -EBADMSG,
				    "GET k:%010u gave %d, %zu bytes, not %s", k,
				    t->rc, t->out_len, want);
		return 0;
	case OP_SET:
		return t->rc == 1
			       ? 0
			       : fail(t, -EBADMSG, "SET gave %d, not 1", t->rc);
	case OP_INCR:
		if (t->incr != t->count[k] + 1)
			return fail(t, -EBADMSG,
				    "INCR gave %" PRId64 " after %" PRId64,
				    t->incr, t->count[k]);
		t->count[k] = t->incr;
		return 0;
	default:
		return 0; /* OP_RAWLOCK: raw_lock checked its replies */
	}
}
