/*
 * lock_list.c - shmkv_lock_list(): every safe lock of a store, as a
 * snapshot for inspection (shmctl locks). Reads only: works on a
 * read-only handle.
 */
#include <errno.h>
#include <string.h>

#include "intconv.h"
#include "lock_record.h"

struct list_ctx {
	struct shmkv *kv;
	shmkv_lock_list_fn fn;
	void *arg;
	int64_t now;
	int count;
};

/* A value read with GET as a lock: an inline integer's decimal form or an
 * owner record. Return: 0, -EEXIST (not a lock), -ESTALE (read again). */
static int parse_value(const struct shmkv *kv, const unsigned char *buf,
		       size_t len, struct shmkv_lock_rec *rec)
{
	int64_t v;

	if (!shmkv__string2ll((const char *)buf, len, &v))
		return shmkv__lock_rec_parse(buf, len, rec);
	return shmkv__lock_rec_from_int(kv, v, rec);
}

static void fill_info(const struct list_ctx *c, const struct shmkv_lock_rec *r,
		      struct shmkv_lock_info *info)
{
	bool held = r->state == SHMKV_LOCK_HELD;

	info->held = held && r->deadline_ms > c->now;
	info->alive = held ? !shmkv__proc_dead(r->pid, r->start) : -1;
	/* A free lock keeps only its token; a FREE record (past 2^46
	 * grants) still carries the last holder's pid: not reported, so
	 * both encodings read alike. */
	info->pid = held ? r->pid : 0;
	info->token = r->token;
	info->held_for_ms = held ? c->now - r->acquired_ms : 0;
	info->lease_left_ms = held ? r->deadline_ms - c->now : 0;
}

int shmkv__lock_read(shmkv_t *kv, const void *key, size_t klen,
		     struct shmkv_lock_rec *rec)
{
	unsigned char buf[sizeof(struct shmkv_lock_rec) + 16];
	struct shmkv_value v = { .buf = buf, .cap = sizeof(buf) };
	int err = -ESTALE;

	/* A cell read can lose a race with a release: read the value again
	 * (a few times; a value that keeps naming a wrong cell is corrupt). */
	for (int n = 0; n < 8 && err == -ESTALE; n++) {
		int rc = shmkv_get(kv, key, klen, &v);

		if (rc < 0)
			return rc == -ENOBUFS ? -EEXIST : rc;
		if (rc == 0)
			return -ENOENT;
		err = parse_value(kv, buf, v.len, rec);
	}
	/* Still naming no such grant: an integer a plain SET wrote. */
	return err == -ESTALE ? -EEXIST : err;
}

static int list_visit(const void *key, size_t klen, void *arg)
{
	struct list_ctx *c = arg;
	struct shmkv_lock_info info = { 0 };
	struct shmkv_lock_rec rec;

	if (klen <= SHMKV_LOCK_PREFIX_LEN ||
	    memcmp(key, SHMKV_LOCK_PREFIX, SHMKV_LOCK_PREFIX_LEN) != 0)
		return 0;
	/* Gone since the scan saw it, too long, or not a lock: skip. */
	if (shmkv__lock_read(c->kv, key, klen, &rec) != 0)
		return 0;
	info.name = (const char *)key + SHMKV_LOCK_PREFIX_LEN;
	info.name_len = klen - SHMKV_LOCK_PREFIX_LEN;
	fill_info(c, &rec, &info);
	info.waiters = shmkv__lock_waiters(
		c->kv, shmkv__lock_wait_index(c->kv, key, klen));
	c->count++;
	return c->fn(&info, c->arg) ? 1 : 0;
}

int shmkv_lock_list(shmkv_t *kv, shmkv_lock_list_fn fn, void *arg)
{
	struct list_ctx c = { .kv = kv, .fn = fn, .arg = arg };
	uint64_t cursor = 0;

	if (kv == NULL || fn == NULL)
		return -EINVAL;
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
