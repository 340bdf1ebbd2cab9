/*
 * lock_list.c - shmkv_lock_list(): every safe lock of a store, as a
 * snapshot for inspection (shmctl locks). Reads only: works on a
 * read-only handle.
 */
#include <errno.h>
#include <string.h>

#include "engine.h"
#include "fault.h"
#include "lock_record.h"
#include "redis_lock.h"

struct list_ctx {
	struct shmkv *kv;
	shmkv_lock_list_fn fn;
	void *arg;
	int64_t now;
	int count;
};

/* One read of a lock key: its value as a record, whatever its encoding. */
struct read_op {
	struct shmkv_op op;
	const struct shmkv *kv;
	struct shmkv_lock_rec *rec;
	unsigned char buf[sizeof(struct shmkv_lock_rec) + 16];
};

static int read_decide(struct shmkv_op *op, const struct shmkv_cur *cur)
{
	struct read_op *ro = op->ctx;
	int err;

	if (!cur->exists) {
		op->result = -ENOENT;
		return SHMKV_ACT_KEEP;
	}
	if (cur->is_int) {
		SHMKV_PAUSE_POINT("lock_read_cell");
		err = shmkv__lock_rec_from_int(ro->kv, cur->word_at, cur->word,
					       ro->rec, NULL);
	} else
		err = cur->len > op->cap
			      ? -EEXIST
			      : shmkv__lock_rec_parse(cur->bytes, cur->len,
						      ro->rec);
	/* A cell that changed under a moved value: a release raced us, read
	 * the value again (the engine does, and says -EEXIST only if the
	 * value did not move: then it is no lock). */
	if (err == -ESTALE)
		return SHMKV_ACT_STALE;
	op->result = err;
	return SHMKV_ACT_KEEP;
}

/* As shmkv__lock_read(), on a prepared key (its slot is left in @ref). */
static int lock_read_ref(shmkv_t *kv, struct shmkv_keyref *ref,
			 struct shmkv_lock_rec *rec)
{
	struct read_op ro = { .kv = kv, .rec = rec };

	ro.op.decide = read_decide;
	ro.op.ctx = &ro;
	ro.op.read_only = true;
	ro.op.want_bytes = true;
	ro.op.buf = ro.buf;
	ro.op.cap = sizeof(ro.buf);
	return shmkv__run_ref(kv, ref, &ro.op);
}

int shmkv__lock_read(shmkv_t *kv, const void *key, size_t klen,
		     struct shmkv_lock_rec *rec)
{
	struct shmkv_keyref ref;
	int err = shmkv_key_prepare(kv, &ref, key, klen);

	return err ? err : lock_read_ref(kv, &ref, rec);
}

static void fill_info(const struct list_ctx *c, const struct shmkv_lock_rec *r,
		      struct shmkv_lock_info *info)
{
	bool held = r->state == SHMKV_LOCK_HELD;

	info->held = held && r->deadline_ms > c->now;
	info->alive = held ? !shmkv__proc_dead(r->pid, r->start) &&
				      !shmkv__proc_unmarked(c->kv, r->pid)
			   : -1;
	/* A free lock keeps only its token; a FREE record (past 2^46
	 * grants) still carries the last holder's pid: not reported, so
	 * both encodings read alike. */
	info->pid = held ? r->pid : 0;
	info->token = r->token;
	info->held_for_ms = held ? c->now - r->acquired_ms : 0;
	info->lease_left_ms = held ? r->deadline_ms - c->now : 0;
}

static int list_visit(const void *key, size_t klen, void *arg)
{
	struct list_ctx *c = arg;
	struct shmkv_lock_info info = { 0 };
	struct shmkv_lock_rec rec;
	struct shmkv_keyref ref;

	if (klen <= SHMKV_LOCK_PREFIX_LEN ||
	    memcmp(key, SHMKV_LOCK_PREFIX, SHMKV_LOCK_PREFIX_LEN) != 0)
		return 0;
	/* Gone since the scan saw it, or not a lock: skip. (A lock whose
	 * cell a release changed under us is read again, never skipped.) */
	if (shmkv_key_prepare(c->kv, &ref, key, klen) != 0 ||
	    lock_read_ref(c->kv, &ref, &rec) != 0)
		return 0;
	info.name = (const char *)key + SHMKV_LOCK_PREFIX_LEN;
	info.name_len = klen - SHMKV_LOCK_PREFIX_LEN;
	fill_info(c, &rec, &info);
	/* The slot's futex word: 1 while a waiter may sleep on it. */
	info.waiters = shmkv__wait_marked(
		shmkv__wait_slot(c->kv, shmkv__kref(&ref)->slot));
	c->count++;
	return c->fn(&info, c->arg) ? 1 : 0;
}

int shmkv_lock_list(shmkv_t *kv, shmkv_lock_list_fn fn, void *arg)
{
	struct list_ctx c = { .kv = kv, .fn = fn, .arg = arg };
	uint64_t cursor = 0;

	if (kv == NULL || fn == NULL)
		return -EINVAL;
	if (shmkv__lock_remote(kv))
		return shmkv__redis_lock_list(kv, fn, arg);
	c.now = shmkv__mono_ms();
	do {
		int rc = shmkv_scan(kv, cursor, 1024, list_visit, &c, &cursor);

		if (rc < 0)
			return rc;
		if (rc > 0)
			break;
	} while (cursor != 0);
	return c.count;
}
