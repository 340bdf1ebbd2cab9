/*
 * ops_instr - CALLS calls of one command by one implementation, for
 * callgrind: bench/instr.sh runs it with --toggle-collect=ops_instr_call,
 * so only the calls under test are counted (not the bookkeeping between
 * them, nor the helper commands that put the key back), for CALLS and
 * 2 x CALLS; (total at 2N - total at N) / N is one call's cost, and the
 * set-up and first-call costs (lazy binding, first touches) cancel out.
 *
 *   ops_instr IMPL OP CALLS   one measurement; exit 3 if IMPL lacks OP
 *   ops_instr --quick         every IMPL and OP, a few calls each, every
 *                             reply checked (the test suite's smoke run)
 *
 * IMPL: the benchmarks' implementations (lib/kv.h), each running the
 * same command the same way: shmkv (plain API), prepared (shmkv_key_*),
 * mutex (the robust-mutex map), rculfhash.
 * OP, 12-byte keys, each store holding KEYS keys at 50% load as in
 * bench_core (one hot key, id KEYS/2, or keys drawn uniformly):
 *   get_int    GET of an inline integer, hot key
 *   set_int    SET of an integer (the other of two values each time), hot
 *   setnx      SETNX on the absent hot key (a helper DEL follows each)
 *   del        DEL of the present hot key (a helper SETNX follows each)
 *   setnx_del  the lock cycle: SETNX then DEL, both counted (per cycle)
 *   incr       INCR, hot key
 *   set_16b    SET of a 16-byte string, uniform keys
 *   get_16b    GET of a 16-byte string, uniform keys
 *   set_16b_2l, get_16b_2l  the same in slots of two lines (key_max 64,
 *              the default; the others use bench_core's key_max 16:
 *              one-line slots, room for one 16-byte value beside the key)
 *   get_4k     GET of a 4 KiB string, uniform keys (bench_core's "GET,
 *              4KiB, uniform": the copy of the value is most of it)
 *   del_16b    DEL of a 16-byte string, uniform keys (a helper SETNX
 *              puts it back), as bench_core's uniform DEL
 *   delifeq_16b  DELIFEQ of a 16-byte string with its value (a token's
 *              release), uniform keys, put back the same way
 * The string ops count a store that has been running: CHURN_PER_KEY
 * uncounted SETs a key first (churn()), so that the mix of values in the
 * slot and in blocks, and the allocator's state, are the steady ones.
 * A reply other than the expected one stops the run (exit 1): a count of
 * failing calls would be a count of something else.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "lib/workload.h"

#define KEYS_FULL (1u << 15)
/* Uncounted SETs per key before a string op's count (churn()). */
#define CHURN_PER_KEY 4u
#define KEYS_QUICK    (1u << 11)
#define QUICK_CALLS   64u

enum impl { I_SHMKV, I_PREP, I_MUTEX, I_URCU, I_N };
static const char *const impl_name[I_N] = { "shmkv", "prepared", "mutex",
					    "rculfhash" };

enum op {
	OP_GET_INT,
	OP_SET_INT,
	OP_SETNX,
	OP_DEL,
	OP_CYCLE,
	OP_INCR,
	OP_SET_16,
	OP_GET_16,
	OP_SET_16_2L,
	OP_GET_16_2L,
	OP_GET_4K,
	OP_DEL_16,
	OP_DELIFEQ_16,
	OP_N
};
static const struct {
	const char *name;
	enum bench_vkind vk;
	int uniform;
	uint32_t key_max; /* 0: bench_store_config's */
} ops[OP_N] = {
	[OP_GET_INT] = { "get_int", BV_INT, 0 },
	[OP_SET_INT] = { "set_int", BV_INT, 0 },
	[OP_SETNX] = { "setnx", BV_INT, 0 },
	[OP_DEL] = { "del", BV_INT, 0 },
	[OP_CYCLE] = { "setnx_del", BV_INT, 0 },
	[OP_INCR] = { "incr", BV_INT, 0 },
	[OP_SET_16] = { "set_16b", BV_16, 1 },
	[OP_GET_16] = { "get_16b", BV_16, 1 },
	[OP_SET_16_2L] = { "set_16b_2l", BV_16, 1, SHMKV_KEY_MAX_DEFAULT },
	[OP_GET_16_2L] = { "get_16b_2l", BV_16, 1, SHMKV_KEY_MAX_DEFAULT },
	[OP_GET_4K] = { "get_4k", BV_4K, 1 },
	[OP_DEL_16] = { "del_16b", BV_16, 1 },
	[OP_DELIFEQ_16] = { "delifeq_16b", BV_16, 1 },
};

/* The commands each op calls: counted ones, then the helper, if any. */
static const struct {
	enum bench_cmd counted[2];
	unsigned ncounted;
	int helper; /* enum bench_cmd, or -1 */
} op_cmds[OP_N] = {
	[OP_GET_INT] = { { BCMD_GET }, 1, -1 },
	[OP_SET_INT] = { { BCMD_SET }, 1, -1 },
	[OP_SETNX] = { { BCMD_SETNX }, 1, BCMD_DEL },
	[OP_DEL] = { { BCMD_DEL }, 1, BCMD_SETNX },
	[OP_CYCLE] = { { BCMD_SETNX, BCMD_DEL }, 2, -1 },
	[OP_INCR] = { { BCMD_INCR }, 1, -1 },
	[OP_SET_16] = { { BCMD_SET }, 1, -1 },
	[OP_GET_16] = { { BCMD_GET }, 1, -1 },
	[OP_SET_16_2L] = { { BCMD_SET }, 1, -1 },
	[OP_GET_16_2L] = { { BCMD_GET }, 1, -1 },
	[OP_GET_4K] = { { BCMD_GET }, 1, -1 },
	[OP_DEL_16] = { { BCMD_DEL }, 1, BCMD_SETNX },
	[OP_DELIFEQ_16] = { { BCMD_DELIFEQ }, 1, BCMD_SETNX },
};

int ops_instr_call(struct bench_kv *kv, enum bench_cmd c, uint32_t id,
		   const void *val, size_t vlen);

/*
 * The calls under test, and only they, run in here: instr.sh counts
 * inside this function alone. noinline, and called through a volatile
 * pointer, so it stays one function of this name (no inlined or cloned
 * copy outside the count).
 */
__attribute__((noinline)) int ops_instr_call(struct bench_kv *kv,
					     enum bench_cmd c, uint32_t id,
					     const void *val, size_t vlen)
{
	return kv->ops->fn[c](kv, id, val, vlen);
}

static int (*volatile counted_call)(struct bench_kv *, enum bench_cmd, uint32_t,
				    const void *, size_t) = ops_instr_call;

/*
 * The store takes its hash seed from getrandom(), so where the hot key's
 * probe run starts, and how far it goes, would change from run to run: a
 * hot GET costs ~80 instructions more when its key sits one slot past its
 * home. This program's getrandom() (the linker takes it before libc's for
 * the statically linked library) gives the same bytes in every run, so the
 * runs at N and 2N calls, and every run of instr.sh, see the same table.
 * Only the store's seed and a temporary file name's nonce come from it.
 */
ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
	static uint64_t state = 0x2545f4914f6cdd1dull;

	(void)flags;
	for (size_t i = 0; i < len; i++)
		((unsigned char *)buf)[i] = (unsigned char)bench_xorshift64(
			&state);
	return (ssize_t)len;
}

/* A store for one implementation and value kind, and its key set. */
struct setup {
	uint32_t n;
	char *keys;
	shmkv_t *store;
	char store_name[64];
	struct bench_dataset ds;
	uint32_t *stream;
	uint64_t mask;
};

static int fail(const char *what, enum impl im, enum op op, int err)
{
	fprintf(stderr, "ops_instr %s %s: %s: %s\n", impl_name[im],
		ops[op].name, what, err < 0 ? shmkv_strerror(err) : "");
	return 1;
}

static int open_impl(struct setup *s, enum impl im, enum op op)
{
	enum bench_vkind vk = ops[op].vk;
	uint32_t vmax = bench_vkind_max[vk];
	struct bench_kv *kv = &s->ds.kv;
	int err;

	if (im == I_SHMKV || im == I_PREP) {
		struct shmkv_config cfg = bench_store_config(vk, s->n);

		if (ops[op].key_max != 0)
			cfg.key_max = ops[op].key_max;

		err = bench_store_create("instr", &cfg, &s->store,
					 s->store_name);
		if (err)
			return err;
		return im == I_SHMKV
			       ? bench_kv_shmkv(kv, s->store, s->keys, s->n,
						vmax)
			       : bench_kv_shmkv_prepared(kv, s->store, s->keys,
							 s->n, vmax);
	}
	if (im == I_MUTEX)
		return bench_kv_mutex_map(kv, 2 * s->n, s->keys, s->n, vmax);
	return bench_kv_rculfhash(kv, s->keys, s->n, vmax);
}

static void close_impl(struct setup *s)
{
	bench_dataset_free(&s->ds);
	if (s->store)
		bench_store_destroy(s->store, s->store_name);
	free(s->stream);
	free(s->keys);
	memset(s, 0, sizeof(*s));
}

/* The argument of a command on @id: the value it should store next. */
struct arg {
	const void *val;
	size_t len;
	char num[24];
};

static void int_arg(struct arg *a, int64_t v)
{
	a->len = (size_t)snprintf(a->num, sizeof(a->num), "%lld", (long long)v);
	a->val = a->num;
}

/*
 * Runs @calls of @op, checking every reply. Return: 0, or 1 after
 * printing what was unexpected.
 */
static int run(struct setup *s, enum impl im, enum op op, uint64_t calls)
{
	struct bench_dataset *ds = &s->ds;
	struct bench_kv *kv = &ds->kv;
	uint32_t hot = s->n / 2;
	int helper = op_cmds[op].helper;
	struct arg a;
	int rc;

	/* SETNX (alone or in the cycle) starts on an absent key. */
	if (op == OP_SETNX || op == OP_CYCLE) {
		rc = kv->ops->fn[BCMD_DEL](kv, hot, NULL, 0);
		if (rc != 1)
			return fail("first DEL", im, op, rc);
	}
	for (uint64_t i = 0; i < calls; i++) {
		uint32_t id = ops[op].uniform ? s->stream[i & s->mask] : hot;

		for (unsigned k = 0; k < op_cmds[op].ncounted; k++) {
			enum bench_cmd c = op_cmds[op].counted[k];
			int want = c == BCMD_INCR ? 0 : 1;

			/* The value to store next, chosen outside the count. */
			if (ops[op].vk != BV_INT) {
				if (c == BCMD_SET)
					ds->which[id] ^= 1;
				a.val = ds->sval[ds->which[id]];
				a.len = ds->slen;
			} else if (op == OP_SET_INT) {
				int_arg(&a, ds->ival[id] ^= 1);
			} else {
				int_arg(&a, ds->ival[id]);
			}
			kv->out.len = 0;
			rc = counted_call(kv, c, id, a.val, a.len);
			if (rc != want)
				return fail(bench_cmd_name[c], im, op, rc);
			if (c == BCMD_INCR && kv->incr_result != ++ds->ival[id])
				return fail("INCR result", im, op, 0);
			if (c == BCMD_GET && kv->out.len != a.len)
				return fail("GET length", im, op, 0);
		}
		if (helper >= 0) {
			/* The key as it was: its string, or its integer. */
			if (ops[op].vk != BV_INT) {
				a.val = ds->sval[ds->which[id]];
				a.len = ds->slen;
			} else {
				int_arg(&a, ds->ival[id]);
			}
			rc = kv->ops->fn[helper](kv, id, a.val, a.len);
			if (rc != 1)
				return fail(bench_cmd_name[helper], im, op, rc);
		}
	}
	return 0;
}

/*
 * Brings a store of strings to the state a running program keeps it in:
 * @sets SETs of uniform keys, each to the other of its two values, so that
 * as many values as replacing puts there live in blocks (in a one-line
 * slot, where one 16-byte string fits beside the key, every other write
 * of a key goes to a block), and the allocator's caches and cursors are
 * where they stay. Not counted. Return: 0, or 1 after printing why.
 */
static int churn(struct setup *s, enum impl im, enum op op, uint64_t sets)
{
	struct bench_dataset *ds = &s->ds;
	uint64_t rng = 0x2545f4914f6cdd1dull;

	for (uint64_t i = 0; i < sets; i++) {
		uint32_t id = (uint32_t)(bench_xorshift64(&rng) % s->n);
		int rc;

		ds->which[id] ^= 1;
		rc = ds->kv.ops->fn[BCMD_SET](
			&ds->kv, id, ds->sval[ds->which[id]], ds->slen);
		if (rc != 1)
			return fail("warm-up SET", im, op, rc);
	}
	return 0;
}

/* Sets @im up for @op, runs @calls of it, tears down. Return: 0, 1 on
 * failure, 3 when @im lacks a command of @op. */
static int measure(enum impl im, enum op op, uint32_t n, uint64_t calls)
{
	struct setup s = { .n = n };
	uint64_t len = 1024;
	int rc, err;

	while (len < calls)
		len *= 2;
	s.keys = bench_keys_make(n);
	s.stream = bench_stream_make(BENCH_UNIFORM, len, n, 0, 0,
				     0x9e3779b97f4a7c15ull);
	s.mask = len - 1;
	if (!s.keys || !s.stream) {
		close_impl(&s);
		return fail("set-up", im, op, -ENOMEM);
	}
	err = open_impl(&s, im, op);
	if (!err) {
		for (unsigned k = 0; k < op_cmds[op].ncounted; k++)
			if (!s.ds.kv.ops->fn[op_cmds[op].counted[k]]) {
				close_impl(&s);
				return 3;
			}
		err = bench_dataset_fill(&s.ds, ops[op].vk, 1);
	}
	rc = err ? fail("set-up", im, op, err) : 0;
	if (rc == 0 && ops[op].vk != BV_INT)
		rc = churn(&s, im, op, CHURN_PER_KEY * (uint64_t)n);
	if (rc == 0)
		rc = run(&s, im, op, calls);
	close_impl(&s);
	return rc;
}

static int lookup(const char *name, const char *const *names, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: ops_instr IMPL OP CALLS | ops_instr --quick\n"
			"  IMPL: shmkv prepared mutex rculfhash\n"
			"  OP: get_int set_int setnx del setnx_del incr "
			"set_16b get_16b set_16b_2l get_16b_2l get_4k del_16b "
			"delifeq_16b\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *op_names[OP_N];
	long long calls;
	int im, op, rc;

	for (int i = 0; i < OP_N; i++)
		op_names[i] = ops[i].name;
	bench_cleanup_init();
	if (argc == 2 && strcmp(argv[1], "--quick") == 0) {
		for (im = 0; im < I_N; im++)
			for (op = 0; op < OP_N; op++) {
				rc = measure(im, op, KEYS_QUICK, QUICK_CALLS);
				if (rc == 1)
					return 1;
			}
		printf("ops_instr: %d implementations x %d ops ran\n", I_N,
		       OP_N);
		return 0;
	}
	if (argc != 4 || (im = lookup(argv[1], impl_name, I_N)) < 0 ||
	    (op = lookup(argv[2], op_names, OP_N)) < 0 ||
	    (calls = atoll(argv[3])) <= 0)
		return usage();
	return measure(im, op, KEYS_FULL, (uint64_t)calls);
}
