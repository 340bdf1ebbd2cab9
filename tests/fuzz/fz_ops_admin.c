/*
 * fz_ops_admin.c - the script's inspection, maintenance, lock and
 * shmkv_exec steps (see fz_ops.h for the encoding, fz_ops.c for the rest).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fz_ops_impl.h"
#include "internal.h"
#include "shmkv_exec.h"

/*
 * Maintenance and inspection.
 */

static int scan_key(const void *key, size_t klen, void *arg)
{
	struct ctx *c = arg;
	unsigned char *copy;

	FZ_ASSERT(klen <= c->cfg.key_max, "scan: key of %zu bytes", klen);
	if (c->nkeys == KEYS_MAX || (copy = malloc(klen + 1)) == NULL)
		return 0;
	memcpy(copy, key, klen);
	c->own[c->nkeys] = copy;
	c->keys[c->nkeys].b = copy;
	c->keys[c->nkeys++].len = klen;
	return 0;
}

/* Is @next a cursor shmkv_scan may give: 0, or (generation << 32) with a
 * position within the live tables of that generation (T(e), and T(e + 1)
 * after it while one grows), which a growing store's tables double? */
static bool scan_cursor_ok(const struct ctx *c, uint64_t next)
{
	const struct shmkv_geometry *g = &c->kv->geo;
	uint64_t gen = next >> 32, e = gen >> 1, total;

	if (next == 0)
		return true;
	if (e + (gen & 1) > g->epoch_max)
		return false;
	total = (uint64_t)g->slot_count << e;
	if (gen & 1)
		total *= 3;
	return (uint32_t)next <= total;
}

void fz__scan_from(struct ctx *c, uint64_t cursor, uint32_t count)
{
	uint64_t next = 0;

	for (int i = 0; i < CURSOR_CALLS; i++) {
		int rc = shmkv_scan(c->kv, cursor, count, scan_key, c, &next);

		fz__check_rc(c, rc, "scan");
		FZ_ASSERT(scan_cursor_ok(c, next), "scan: cursor %" PRIu64,
			  next);
		if (rc != 0 || next == 0)
			break;
		cursor = next;
	}
}

void fz__op_scan(struct ctx *c)
{
	uint64_t cursor = fz_u8(c->in) & 1 ? fz_u64(c->in) : 0;

	fz__scan_from(c, cursor, fz_u8(c->in));
}

/* Counts one more whole-store pass. Return: whether it is within the
 * run's PASSES_MAX (else the caller skips it). */
static bool pass_in_budget(struct ctx *c)
{
	return c->passes++ < PASSES_MAX;
}

void fz__op_stats(struct ctx *c)
{
	struct shmkv_stats st;
	int rc;

	if (!pass_in_budget(c))
		return;
	rc = shmkv_stats(c->kv, &st);
	fz__check_rc(c, rc, "stats");
	if (rc != 0)
		return;
	/* A table the store may grow to: T(0) doubled up to epoch_max. */
	FZ_ASSERT(st.slots >= c->kv->geo.slot_count &&
			  st.slots <= (uint64_t)c->kv->geo.slot_count
					      << c->kv->geo.epoch_max &&
			  (st.slots & (st.slots - 1)) == 0 &&
			  st.live_keys <= st.slots && st.classes <= 24 &&
			  st.pages_free <= st.pages,
		  "stats: slots %" PRIu64 " live %" PRIu64 " classes %u",
		  st.slots, st.live_keys, st.classes);
	for (uint32_t i = 0; i < st.classes; i++)
		FZ_ASSERT(st.cls[i].used <= st.cls[i].blocks,
			  "stats: class %u: %u used of %u", i, st.cls[i].used,
			  st.cls[i].blocks);
	/* One process, every command finished: nothing can be half done. */
	FZ_ASSERT(!c->r->sound || (st.corrupt == 0 && st.pending == 0),
		  "stats: %" PRIu64 " corrupt, %" PRIu64 " pending slots",
		  st.corrupt, st.pending);
}

struct problems {
	int calls;
	char first[256]; /* for the failure message */
};

static void count_problem(const char *problem, void *arg)
{
	struct problems *p = arg;

	FZ_ASSERT(problem != NULL && problem[0] != '\0', "check: no text");
	/* A dead process's leftover is described, not counted. */
	if (strncmp(problem, "leftover: ", 10) == 0)
		return;
	if (p->calls++ == 0)
		snprintf(p->first, sizeof(p->first), "%s", problem);
}

void fz__op_check(struct ctx *c)
{
	struct problems p = { 0 };
	int rc;

	if (!pass_in_budget(c))
		return;
	rc = shmkv_check(c->kv, count_problem, &p);
	fz__check_rc(c, rc, "check");
	FZ_ASSERT(rc < 0 || rc == p.calls, "check: %d problems, %d reported",
		  rc, p.calls);
	FZ_ASSERT(!c->r->sound || rc == 0,
		  "check: %d problems on a sound store, the first: %s", rc,
		  p.first);
}

void fz__op_recover(struct ctx *c)
{
	struct shmkv_recover_report rep;
	int rc;

	if (!pass_in_budget(c))
		return;
	rc = shmkv_recover(c->kv, &rep);
	fz__check_rc(c, rc, "recover");
	if (rc >= 0)
		FZ_ASSERT((uint64_t)rc == rep.stale_claims + rep.stuck_inserts +
						  rep.collided +
						  rep.dead_slots +
						  rep.leaked_blocks,
			  "recover: %d repairs, report differs", rc);
}

void fz__op_sweep(struct ctx *c)
{
	uint64_t cursor = fz_u8(c->in) & 1 ? fz_u64(c->in) : 0;
	uint32_t max = fz_u8(c->in);

	for (int i = 0; i < CURSOR_CALLS; i++) {
		int rc = shmkv_sweep(c->kv, &cursor, max);

		fz__check_rc(c, rc, "sweep");
		if (rc < 0 || cursor == 0)
			break;
	}
}

/* A policy, or (8) an unknown one: refused with -EINVAL, which changes
 * nothing. Later writes that find no room evict under it. */
void fz__op_evict_policy(struct ctx *c)
{
	int policy = fz_u8(c->in) % 9;
	int rc = shmkv_set_evict_policy(c->kv, policy);
	struct shmkv_stats st;

	fz__check_rc(c, rc, "evict_policy");
	FZ_ASSERT(policy < 8 || rc == -EINVAL,
		  "evict_policy: unknown policy %d not refused", policy);
	if (rc == 0 && c->r->sound && shmkv_stats(c->kv, &st) == 0)
		FZ_ASSERT(st.evict_policy == (uint32_t)policy,
			  "evict_policy: set %d, stats say %u", policy,
			  st.evict_policy);
}

/*
 * Locks. Only calls that never sleep: a try, or a wait of 0.
 */

static const char *take_lock_name(struct ctx *c)
{
	uint8_t b = fz_u8(c->in);
	size_t n;
	const uint8_t *p;

	if (b < 0x80)
		return b & 1 ? FZ_PLOCK_NAME : FZ_LOCK_NAME;
	if (b == 0xff) {
		memset(c->lname, 'n', SHMKV_LOCK_NAME_MAX + 1);
		c->lname[SHMKV_LOCK_NAME_MAX + 1] = '\0';
		return c->lname;
	}
	p = fz_bytes(c->in, b & 0x1f, &n);
	memcpy(c->lname, p, n);
	c->lname[n] = '\0'; /* an inner NUL just shortens it */
	return c->lname;
}

static int lock_step(struct ctx *c, struct shmkv_lock *lk)
{
	uint8_t sub = fz_u8(c->in) % 6;
	enum shmkv_lock_extend_mode mode;
	int rc;

	if (sub == 0)
		return shmkv_lock_try_acquire(lk, fz__take_num(c));
	if (sub == 1)
		return shmkv_lock_timed_acquire(lk, fz__take_num(c), 0);
	if (sub == 2) {
		rc = shmkv_lock_held(lk);
		FZ_ASSERT(rc == 0 || rc == 1, "lock_held: %d", rc);
		return rc;
	}
	if (sub == 3)
		return shmkv_lock_release(lk);
	if (sub == 4) {
		/* Taken one by one: argument evaluation order is unspecified,
		 * and a corpus must mean the same under every compiler. */
		mode = (enum shmkv_lock_extend_mode)(fz_u8(c->in) % 3);
		return shmkv_lock_extend(lk, mode, fz__take_num(c));
	}
	(void)shmkv_lock_token(lk);
	return 0;
}

void fz__op_lock(struct ctx *c)
{
	struct shmkv_lock lk;
	int rc = shmkv_lock_init(c->kv, &lk, take_lock_name(c));

	fz__check_rc(c, rc, "lock_init");
	for (int n = 1 + fz_u8(c->in) % 4; rc == 0 && n > 0; n--) {
		rc = lock_step(c, &lk);
		fz__check_rc(c, rc, "lock");
		FZ_ASSERT(rc <= SHMKV_LOCK_LEASE_EXPIRED, "lock: %d", rc);
		rc = rc < 0 ? rc : 0;
	}
}

void fz__op_pattern_lock(struct ctx *c)
{
	struct shmkv_pattern pl;
	int rc = shmkv_pattern_init(c->kv, &pl, take_lock_name(c));
	int64_t timeout_ms = fz__take_num(c), expiry = 0;

	fz__check_rc(c, rc, "pattern_init");
	/* A handle whose init failed is refused (-EINVAL) by both calls. */
	rc = shmkv_pattern_acquire(&pl, timeout_ms, 0, &expiry);
	fz__check_rc(c, rc, "pattern_acquire");
	if (fz_u8(c->in) & 1)
		expiry = fz__take_num(c);
	if (rc == 0 || (fz_u8(c->in) & 1))
		fz__check_rc(c, shmkv_pattern_release(&pl, expiry),
			     "pattern_release");
}

static int list_lock(const struct shmkv_lock_info *info, void *arg)
{
	const struct ctx *c = arg;

	FZ_ASSERT(info->name_len + SHMKV_LOCK_PREFIX_LEN <= c->cfg.key_max,
		  "lock_list: name of %zu bytes", info->name_len);
	return 0;
}

void fz__op_lock_list(struct ctx *c)
{
	fz__check_rc(c, shmkv_lock_list(c->kv, list_lock, c), "lock_list");
}

/*
 * shmkv_exec: argument vectors built from a table of words and input.
 */

static const char *const words[] = {
	"get",
	"set",
	"setnx",
	"getset",
	"getdel",
	"getex",
	"del",
	"exists",
	"expire",
	"pexpire",
	"expireat",
	"pexpireat",
	"ttl",
	"pttl",
	"persist",
	"incr",
	"incrby",
	"decr",
	"decrby",
	"delifeq",
	"ping",
	"NX",
	"XX",
	"GT",
	"LT",
	"GET",
	"EX",
	"PX",
	"EXAT",
	"PXAT",
	"KEEPTTL",
	"PERSIST",
	"0",
	"1",
	"-1",
	"100",
	"1.5",
	"",
	"9223372036854775807",
	"-9223372036854775808",
	"140737488355328",
	"str",
	"int",
	"ttl-int",
};
#define NWORDS	 (sizeof(words) / sizeof(words[0]))
#define ARGS_MAX 6

static void take_arg(struct ctx *c, const char **a, size_t *len)
{
	uint8_t b = fz_u8(c->in);

	if (b < 0xc0) {
		*a = words[b % NWORDS];
		*len = strlen(*a);
		return;
	}
	*a = (const char *)fz_bytes(c->in, b & 0x3f, len);
}

void fz__op_exec(struct ctx *c)
{
	const char *argv[ARGS_MAX];
	size_t len[ARGS_MAX];
	struct shmkv_reply reply;
	int argc = 1 + fz_u8(c->in) % ARGS_MAX, rc;

	for (int i = 0; i < argc; i++)
		take_arg(c, &argv[i], &len[i]);
	memset(&reply, 0, sizeof(reply));
	rc = shmkv_exec(c->kv, argc, argv, len, &reply);
	fz__check_rc(c, rc, "exec");
	FZ_ASSERT(reply.type >= SHMKV_REPLY_STATUS &&
			  reply.type <= SHMKV_REPLY_BULK,
		  "exec: reply type %d", (int)reply.type);
	FZ_ASSERT(reply.len == 0 || reply.str != NULL, "exec: no text");
	FZ_ASSERT(rc == 0 || reply.type == SHMKV_REPLY_ERROR,
		  "exec: failure %d with a non-error reply", rc);
	shmkv_reply_free(&reply);
}
