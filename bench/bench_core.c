/*
 * bench_core.c - microbenchmarks of the core store, with baselines.
 *
 * Every figure is ns per operation, the median of --runs timed runs (min
 * and max beside it). The runs are taken in rounds: round r runs every
 * benchmark once, so a noisy spell on the shared machine spreads over all
 * figures instead of skewing one, and the ratios between them stay fair.
 *
 * Parts:
 * - hot key: one key (or 256 for the batched ones) that stays in cache:
 *   the cost of the operation itself;
 * - random keys: 524288 keys (half integer values, half 16-byte strings)
 *   in a table of 2^20 slots, keys drawn by xorshift ahead of time into a
 *   sequential stream so neither the PRNG nor formatting is timed;
 * - baselines on shared memory from shm_open, like the store's: a bare
 *   CAS, a bare exchange, a robust process-shared mutex lock+unlock, and a
 *   dependent random load over as many bytes as the store's table (the
 *   floor for a random GET, which must miss the cache at least once).
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <urcu/uatomic.h>

#include "shmkv.h"

#define RAND_SLOTS (1u << 20)
#define RAND_KEYS  (RAND_SLOTS / 2) /* 50% load */
#define KEY_LEN	   12		    /* "key:%08x" */
#define KEY_STRIDE 16		    /* stream entries, aligned */
#define BATCH	   256		    /* keys per batched timing */
#define NODE	   64		    /* pointer-chase node: a cache line */

enum section { SEC_HOT, SEC_RANDOM, SEC_BASE };

struct core;
typedef int (*run_fn)(struct core *c, uint64_t ops, uint64_t *ns);

struct bench {
	const char *name;  /* CSV name */
	const char *label; /* table label */
	enum section sec;
	run_fn run;
};

/* What the runs of one bench gave. */
struct result {
	uint64_t ops;	 /* per run, from calibration */
	double *samples; /* ns/op of each run */
	struct bench_stats st;
};

/* A stream of precomputed keys, read sequentially and wrapping around. */
struct keystream {
	char *keys; /* len entries of KEY_STRIDE bytes */
	uint64_t mask;
	uint64_t pos;
};

struct core {
	shmkv_t *kv;
	struct shmkv_config cfg;
	/* baselines, in one shm segment */
	unsigned char *base;
	size_t base_len;
	uint64_t *cas_word;
	uint64_t *xchg_word;
	pthread_mutex_t *mutex;
	unsigned char *chase;
	size_t chase_bytes;
	uint64_t chase_pos;
	/* random keys */
	struct keystream hit_int, hit_str, miss;
	/* values and buffers */
	char str64[2][64];
	char out[64];
	char batch_keys[BATCH][16];
	size_t batch_len[BATCH];
};

/* The store's name, for the exit and signal handlers. */
static char store_name[64];
static char base_name[64];
static volatile sig_atomic_t store_made;
static struct core the_core;
/* The CSV being written, whose temporary file an exit must remove. */
static struct bench_csv the_csv;
static volatile sig_atomic_t csv_open;

static int unexpected(const char *what, int rc, int want)
{
	fprintf(stderr, "bench_core: %s returned %d (%s), expected %d\n", what,
		rc, shmkv_strerror(rc), want);
	return -EPROTO;
}

/*
 * Hot-key operations.
 */

/* A string literal as the (pointer, length) pair the API takes. */
#define K(s) (s), (sizeof(s) - 1)

static void out_reset(struct core *c, struct shmkv_value *v)
{
	v->buf = c->out;
	v->cap = sizeof(c->out);
	v->len = 0;
}

static int run_get_int(struct core *c, uint64_t ops, uint64_t *ns)
{
	struct shmkv_value v;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		out_reset(c, &v);
		int rc = shmkv_get(c->kv, K("hot:int"), &v);

		if (rc != 1)
			return unexpected("GET hot:int", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_get_str(struct core *c, uint64_t ops, uint64_t *ns)
{
	struct shmkv_value v;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		out_reset(c, &v);
		int rc = shmkv_get(c->kv, K("hot:str"), &v);

		if (rc != 1)
			return unexpected("GET hot:str", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/* Two values taken in turn, so no SET stores what is already there. */
static const char *const int_vals[2] = { "12345", "54321" };

static int run_set_int(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_set(c->kv, K("hot:set:int"), int_vals[i & 1], 5,
				   0, 0, NULL);

		if (rc != 1)
			return unexpected("SET hot:set:int", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_set_str(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_set(c->kv, K("hot:set:str"), c->str64[i & 1], 64,
				   0, 0, NULL);

		if (rc != 1)
			return unexpected("SET hot:set:str", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_setnx_present(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_setnx(c->kv, K("hot:int"), K("1"));

		if (rc != 0)
			return unexpected("SETNX hot:int (present)", rc, 0);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/* Acquire and release of a Redis-style lock: SETNX lock 1; DEL lock. */
static int run_lock_cycle(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_setnx(c->kv, K("hot:lock"), K("1"));

		if (rc != 1)
			return unexpected("SETNX hot:lock (absent)", rc, 1);
		rc = shmkv_del(c->kv, K("hot:lock"));
		if (rc != 1)
			return unexpected("DEL hot:lock", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/* The safe lock: the value is the owner's token, released by DELIFEQ. */
static int run_lock_cycle_token(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_setnx(c->kv, K("hot:lock:tok"),
				     K("owner:0000012345"));

		if (rc != 1)
			return unexpected("SETNX hot:lock:tok", rc, 1);
		rc = shmkv_delifeq(c->kv, K("hot:lock:tok"),
				   K("owner:0000012345"));
		if (rc != 1)
			return unexpected("DELIFEQ hot:lock:tok", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/*
 * SETNX of an absent key and DEL of a present key, each timed alone: the
 * other half runs untimed between batches of BATCH keys. Two clock reads
 * per batch add ~2 * 20 / 256 ns per op at most.
 */
static int batch_setnx(struct core *c, int want)
{
	for (unsigned k = 0; k < BATCH; k++) {
		int rc = shmkv_setnx(c->kv, c->batch_keys[k], c->batch_len[k],
				     K("1"));

		if (rc != want)
			return unexpected("SETNX hot:b:* (absent)", rc, want);
	}
	return 0;
}

static int batch_del(struct core *c, int want)
{
	for (unsigned k = 0; k < BATCH; k++) {
		int rc = shmkv_del(c->kv, c->batch_keys[k], c->batch_len[k]);

		if (rc != want)
			return unexpected("DEL hot:b:* (present)", rc, want);
	}
	return 0;
}

static int run_setnx_absent(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < ops; i += BATCH) {
		uint64_t t0 = bench_now_ns();
		int err = batch_setnx(c, 1);

		sum += bench_now_ns() - t0;
		if (err || (err = batch_del(c, 1)))
			return err;
	}
	*ns = sum;
	return 0;
}

static int run_del_present(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < ops; i += BATCH) {
		int err = batch_setnx(c, 1);
		uint64_t t0;

		if (err)
			return err;
		t0 = bench_now_ns();
		err = batch_del(c, 1);
		sum += bench_now_ns() - t0;
		if (err)
			return err;
	}
	*ns = sum;
	return 0;
}

static int run_set_del(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_set(c->kv, K("hot:setdel"), K("1"), 0, 0, NULL);

		if (rc != 1)
			return unexpected("SET hot:setdel", rc, 1);
		rc = shmkv_del(c->kv, K("hot:setdel"));
		if (rc != 1)
			return unexpected("DEL hot:setdel", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_del_absent(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_del(c->kv, K("hot:absent"));

		if (rc != 0)
			return unexpected("DEL hot:absent", rc, 0);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_getset(struct core *c, uint64_t ops, uint64_t *ns)
{
	struct shmkv_value v;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		out_reset(c, &v);
		int rc = shmkv_getset(c->kv, K("hot:getset"), int_vals[i & 1],
				      5, &v);

		if (rc != 1)
			return unexpected("GETSET hot:getset", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_incr(struct core *c, uint64_t ops, uint64_t *ns)
{
	int64_t r;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_incr(c->kv, K("hot:incr"), &r);

		if (rc != 0)
			return unexpected("INCR hot:incr", rc, 0);
	}
	*ns = bench_now_ns() - t0;
	bench_keep((uint64_t)r);
	return 0;
}

/*
 * Random keys.
 */

static const char *stream_next(struct keystream *s)
{
	const char *k = s->keys + (s->pos & s->mask) * KEY_STRIDE;

	s->pos++;
	return k;
}

static int run_rand_get(struct core *c, struct keystream *s, int want,
			uint64_t ops, uint64_t *ns)
{
	struct shmkv_value v;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		out_reset(c, &v);
		int rc = shmkv_get(c->kv, stream_next(s), KEY_LEN, &v);

		if (rc != want)
			return unexpected("GET key:* (random)", rc, want);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/*
 * The same GETs made latency-bound, like the pointer chase: the next key's
 * position adds this GET's value length shifted out of range (always 0),
 * a data dependency the CPU cannot predict away, so one GET's cache misses
 * cannot overlap the next's. The plain loop above lets them overlap.
 */
static int run_rand_get_dep(struct core *c, uint64_t ops, uint64_t *ns)
{
	struct keystream *s = &c->hit_int;
	struct shmkv_value v = { .len = 0 };
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		uint64_t at = (s->pos++ + (v.len >> 40)) & s->mask;
		int rc;

		out_reset(c, &v);
		rc = shmkv_get(c->kv, s->keys + at * KEY_STRIDE, KEY_LEN, &v);
		if (rc != 1)
			return unexpected("GET key:* (random, dependent)", rc,
					  1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_rand_get_int(struct core *c, uint64_t ops, uint64_t *ns)
{
	return run_rand_get(c, &c->hit_int, 1, ops, ns);
}

static int run_rand_get_str(struct core *c, uint64_t ops, uint64_t *ns)
{
	return run_rand_get(c, &c->hit_str, 1, ops, ns);
}

static int run_rand_get_miss(struct core *c, uint64_t ops, uint64_t *ns)
{
	return run_rand_get(c, &c->miss, 0, ops, ns);
}

/* Overwrites integer keys with integers, so GET hit (int) stays what it
 * says whichever round ran first. */
static int run_rand_set(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_set(c->kv, stream_next(&c->hit_int), KEY_LEN,
				   int_vals[i & 1], 5, 0, 0, NULL);

		if (rc != 1)
			return unexpected("SET key:* (random)", rc, 1);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/* SETNX must find the key live: on a string value that means reading its
 * block too (the expiry deadline lives there), on an integer it does not. */
static int run_rand_setnx(struct core *c, struct keystream *s, uint64_t ops,
			  uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = shmkv_setnx(c->kv, stream_next(s), KEY_LEN, K("1"));

		if (rc != 0)
			return unexpected("SETNX key:* (random, present)", rc,
					  0);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_rand_setnx_int(struct core *c, uint64_t ops, uint64_t *ns)
{
	return run_rand_setnx(c, &c->hit_int, ops, ns);
}

static int run_rand_setnx_str(struct core *c, uint64_t ops, uint64_t *ns)
{
	return run_rand_setnx(c, &c->hit_str, ops, ns);
}

/*
 * Baselines.
 */

static int run_cas(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t v = uatomic_read(c->cas_word);
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++, v++) {
		/* Full-barrier lock cmpxchg, as the store's linearization
		 * point; it always succeeds: nobody else writes the word. */
		if (uatomic_cmpxchg(c->cas_word, v, v + 1) != v)
			return unexpected("CAS", -EAGAIN, 0);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

static int run_xchg(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t acc = 0;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++)
		acc += uatomic_xchg(c->xchg_word, i);
	*ns = bench_now_ns() - t0;
	bench_keep(acc);
	return 0;
}

static int run_mutex(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++) {
		int rc = pthread_mutex_lock(c->mutex);

		if (rc != 0)
			return unexpected("pthread_mutex_lock", -rc, 0);
		pthread_mutex_unlock(c->mutex);
	}
	*ns = bench_now_ns() - t0;
	return 0;
}

/* Each load's address is the previous load's result: no overlap. */
static int run_chase(struct core *c, uint64_t ops, uint64_t *ns)
{
	uint64_t p = c->chase_pos;
	uint64_t t0 = bench_now_ns();

	for (uint64_t i = 0; i < ops; i++)
		p = *(const uint64_t *)(c->chase + p);
	*ns = bench_now_ns() - t0;
	c->chase_pos = p;
	bench_keep(p);
	return 0;
}

static const struct bench benches[] = {
	{ "hot_get_int", "GET, int value", SEC_HOT, run_get_int },
	{ "hot_get_str64", "GET, 64-byte string", SEC_HOT, run_get_str },
	{ "hot_set_int", "SET, int value", SEC_HOT, run_set_int },
	{ "hot_set_str64", "SET, 64-byte string", SEC_HOT, run_set_str },
	{ "hot_setnx_present", "SETNX, key present", SEC_HOT,
	  run_setnx_present },
	{ "hot_setnx_absent", "SETNX, key absent (batched)", SEC_HOT,
	  run_setnx_absent },
	{ "hot_del_present", "DEL, key present (batched)", SEC_HOT,
	  run_del_present },
	{ "hot_del_absent", "DEL, key absent", SEC_HOT, run_del_absent },
	{ "hot_setnx_del_cycle", "SETNX+DEL lock cycle", SEC_HOT,
	  run_lock_cycle },
	{ "hot_setnx_delifeq_cycle", "SETNX+DELIFEQ lock cycle, token", SEC_HOT,
	  run_lock_cycle_token },
	{ "hot_set_del_pair", "SET+DEL pair", SEC_HOT, run_set_del },
	{ "hot_getset", "GETSET, int value", SEC_HOT, run_getset },
	{ "hot_incr", "INCR", SEC_HOT, run_incr },
	{ "rand_get_hit_int", "GET hit, int value", SEC_RANDOM,
	  run_rand_get_int },
	{ "rand_get_hit_str16", "GET hit, 16-byte string", SEC_RANDOM,
	  run_rand_get_str },
	{ "rand_get_hit_int_dep", "GET hit, int, dependent chain", SEC_RANDOM,
	  run_rand_get_dep },
	{ "rand_get_miss", "GET miss", SEC_RANDOM, run_rand_get_miss },
	{ "rand_set_existing", "SET existing key, int", SEC_RANDOM,
	  run_rand_set },
	{ "rand_setnx_present_int", "SETNX, key present, int", SEC_RANDOM,
	  run_rand_setnx_int },
	{ "rand_setnx_present_str16", "SETNX, key present, 16-byte string",
	  SEC_RANDOM, run_rand_setnx_str },
	{ "base_cas", "bare CAS (uatomic_cmpxchg)", SEC_BASE, run_cas },
	{ "base_xchg", "bare exchange (uatomic_xchg)", SEC_BASE, run_xchg },
	{ "base_robust_mutex", "robust pshared mutex lock+unlock", SEC_BASE,
	  run_mutex },
	{ "base_dependent_load", "dependent random load", SEC_BASE, run_chase },
};

#define NBENCH (sizeof(benches) / sizeof(benches[0]))

static struct result results[NBENCH];

/* Median of the bench named @name (a name in benches[]). */
static double median_of(const char *name)
{
	for (size_t i = 0; i < NBENCH; i++)
		if (strcmp(benches[i].name, name) == 0)
			return results[i].st.median;
	abort();
}

/*
 * Setup and teardown.
 */

static void cleanup(void)
{
	if (csv_open) {
		csv_open = 0;
		bench_csv_abort(&the_csv);
	}
	if (!store_made)
		return;
	store_made = 0;
	shmkv_close(the_core.kv);
	shmkv_unlink(store_name);
}

/* shm_unlink is unlink() of a /dev/shm path: safe in a handler. */
static void on_signal(int sig)
{
	if (csv_open)
		unlink(the_csv.tmp);
	if (store_made)
		shm_unlink(store_name);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
}

static int set_str(shmkv_t *kv, const char *key, const void *val, size_t vlen)
{
	int rc = shmkv_set(kv, key, strlen(key), val, vlen, 0, 0, NULL);

	return rc == 1 ? 0 : unexpected(key, rc, 1);
}

/*
 * Keys that are read or overwritten go in first, into an empty table: their
 * probe runs are short, so those figures are the operations' own cost. The
 * keys the lock, SET+DEL and batched benches insert and delete are first
 * inserted by those benches, into the loaded table, as a new key would be.
 */
static int populate_hot(struct core *c)
{
	int err = 0;

	memset(c->str64[0], 'a', 64);
	memset(c->str64[1], 'b', 64);
	for (unsigned k = 0; k < BATCH; k++)
		c->batch_len[k] = (size_t)snprintf(c->batch_keys[k],
						   sizeof(c->batch_keys[k]),
						   "hot:b:%03x", k);
	if ((err = set_str(c->kv, "hot:int", "12345", 5)) ||
	    (err = set_str(c->kv, "hot:str", c->str64[0], 64)) ||
	    (err = set_str(c->kv, "hot:set:int", "12345", 5)) ||
	    (err = set_str(c->kv, "hot:set:str", c->str64[0], 64)) ||
	    (err = set_str(c->kv, "hot:getset", "12345", 5)) ||
	    (err = set_str(c->kv, "hot:incr", "0", 1)))
		return err;
	return 0;
}

/* Key i holds an integer if i is even, a 16-byte string if odd. */
static int populate_random(struct core *c)
{
	char key[16], val[32];

	for (uint32_t i = 0; i < RAND_KEYS; i++) {
		int vlen;

		snprintf(key, sizeof(key), "key:%08x", i);
		if (i % 2 == 0)
			vlen = snprintf(val, sizeof(val), "%u", i + 1000);
		else
			vlen = snprintf(val, sizeof(val), "val:%012x", i);
		int err = set_str(c->kv, key, val, (size_t)vlen);

		if (err)
			return err;
	}
	return 0;
}

/* Fills @s with @len keys "key:%08x", ids @lo + @step * (rand % @span). */
static int stream_fill(struct keystream *s, uint64_t len, uint64_t *rng,
		       uint32_t lo, uint32_t step, uint32_t span)
{
	s->keys = malloc(len * KEY_STRIDE);
	if (!s->keys)
		return -ENOMEM;
	s->mask = len - 1;
	s->pos = 0;
	for (uint64_t i = 0; i < len; i++) {
		uint32_t id = lo +
			      step * (uint32_t)(bench_xorshift64(rng) % span);

		snprintf(s->keys + i * KEY_STRIDE, KEY_STRIDE, "key:%08x", id);
	}
	return 0;
}

static int make_streams(struct core *c, uint64_t len)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	int err;

	if ((err = stream_fill(&c->hit_int, len, &rng, 0, 2, RAND_KEYS / 2)) ||
	    (err = stream_fill(&c->hit_str, len, &rng, 1, 2, RAND_KEYS / 2)))
		return err;
	return stream_fill(&c->miss, len, &rng, RAND_KEYS, 1, RAND_KEYS);
}

static int make_store(struct core *c)
{
	sigset_t block, old;
	int rc;

	snprintf(store_name, sizeof(store_name), "/shmkv-bench-core-%ld",
		 (long)getpid());
	shmkv_config_init(&c->cfg);
	c->cfg.slots = RAND_SLOTS;
	c->cfg.key_max = 32;
	c->cfg.value_max = 64;
	c->cfg.value_memory = 64ull << 20;
	/* No signal between the name appearing and store_made being set,
	 * or an interrupt would leave the segment behind. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	rc = shmkv_create(store_name, &c->cfg, &c->kv);
	if (rc == 0)
		store_made = 1;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		fprintf(stderr, "bench_core: create %s: %s\n", store_name,
			shmkv_strerror(rc));
		return rc;
	}
	return shmkv_get_config(c->kv, &c->cfg);
}

static int init_mutex(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc;

	pthread_mutexattr_init(&a);
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -rc;
}

/* Sattolo's shuffle: a random permutation that is one single cycle, so the
 * chase visits every node before it repeats. */
static int build_chase(struct core *c, uint64_t *rng)
{
	size_t n = c->chase_bytes / NODE;
	uint32_t *perm = malloc(n * sizeof(*perm));

	if (!perm)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = bench_xorshift64(rng) % i;
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(uint64_t *)(c->chase + i * NODE) = (uint64_t)perm[i] * NODE;
	free(perm);
	c->chase_pos = 0;
	return 0;
}

/*
 * The chase spans the store's memory less its value storage: the slot
 * array a random GET probes (the header is a rounding error). One page
 * before it holds the CAS word, the exchange word and the mutex, each on
 * its own cache line.
 */
static int make_baselines(struct core *c, uint64_t segment_bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t span = segment_bytes > c->cfg.value_memory
				? segment_bytes - c->cfg.value_memory
				: 0;
	uint64_t rng = 0x2545f4914f6cdd1dull;
	int fd;

	if (span < (uint64_t)c->cfg.slots * 8)
		span = (uint64_t)c->cfg.slots * 8;
	c->chase_bytes = span / NODE * NODE;
	c->base_len = (size_t)page + c->chase_bytes;
	snprintf(base_name, sizeof(base_name), "/shmkv-bench-base-%ld",
		 (long)getpid());
	fd = shm_open(base_name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	shm_unlink(base_name); /* mapped below; no name left to leak */
	if (ftruncate(fd, (off_t)c->base_len) != 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	c->base = mmap(NULL, c->base_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, 0);
	close(fd);
	if (c->base == MAP_FAILED)
		return -errno;
	c->cas_word = (uint64_t *)c->base;
	c->xchg_word = (uint64_t *)(c->base + 64);
	c->mutex = (pthread_mutex_t *)(c->base + 128);
	c->chase = c->base + page;
	int err = init_mutex(c->mutex);

	return err ? err : build_chase(c, &rng);
}

/*
 * Measurement.
 */

/*
 * Ops per run so one run lasts about @target_ns: grows a trial run until it
 * is long enough to time, then scales by the fastest of three trials of
 * that size, so one preempted trial cannot shrink the runs. Also warms the
 * benchmark up.
 */
static int calibrate(struct core *c, const struct bench *b, struct result *res,
		     uint64_t target_ns)
{
	uint64_t ops = BATCH, ns = 0, best;
	int err;

	for (;;) {
		err = b->run(c, ops, &ns);
		if (err)
			return err;
		if (ns >= target_ns / 8 || ops >= (1ull << 30))
			break;
		ops *= 4;
	}
	best = ns;
	for (int t = 0; t < 2; t++) {
		err = b->run(c, ops, &ns);
		if (err)
			return err;
		if (ns < best)
			best = ns;
	}
	if (best == 0)
		best = 1;
	ops = (uint64_t)((double)ops * (double)target_ns / (double)best);
	ops = (ops + BATCH - 1) / BATCH * BATCH;
	res->ops = ops < BATCH ? BATCH : ops;
	return 0;
}

static int measure_all(struct core *c, unsigned runs, uint64_t target_ns)
{
	for (size_t i = 0; i < NBENCH; i++) {
		int err = calibrate(c, &benches[i], &results[i], target_ns);

		if (err)
			return err;
		results[i].samples = calloc(runs, sizeof(double));
		if (!results[i].samples)
			return -ENOMEM;
	}
	for (unsigned r = 0; r < runs; r++) {
		for (size_t i = 0; i < NBENCH; i++) {
			struct result *res = &results[i];
			uint64_t ns;
			int err = benches[i].run(c, res->ops, &ns);

			if (err)
				return err;
			res->samples[r] = (double)ns / (double)res->ops;
		}
	}
	for (size_t i = 0; i < NBENCH; i++)
		bench_stats_compute(results[i].samples, runs, results[i].ops,
				    &results[i].st);
	return 0;
}

/*
 * Report.
 */

static const char *const section_title[] = {
	[SEC_HOT] = "hot key",
	[SEC_RANDOM] = "random keys (2^20 slots, 524288 keys)",
	[SEC_BASE] = "baselines (shm_open memory)",
};

static void print_table(const struct core *c)
{
	double cas = median_of("base_cas");
	int sec = -1;

	printf("\n%-36s %9s %9s %9s %7s %7s %10s\n", "op (ns/op)", "median",
	       "min", "max", "spread", "xCAS", "ops/run");
	for (size_t i = 0; i < NBENCH; i++) {
		const struct bench *b = &benches[i];
		const struct result *res = &results[i];

		if ((int)b->sec != sec) {
			sec = (int)b->sec;
			printf("%s\n", section_title[sec]);
		}
		printf("  %-34s %9.1f %9.1f %9.1f %6.0f%% %7.2f %10llu\n",
		       b->label, res->st.median, res->st.min, res->st.max,
		       bench_stats_spread(&res->st), res->st.median / cas,
		       (unsigned long long)res->ops);
	}
	printf("  (dependent load spans %.1f MiB in %zu-byte nodes)\n",
	       (double)c->chase_bytes / (1 << 20), (size_t)NODE);
}

static void print_ratio(const char *label, const char *num, const char *den,
			double goal)
{
	double r = median_of(num) / median_of(den);

	printf("  %-48s %6.2f  (goal <= %.1f: %s)\n", label, r, goal,
	       r <= goal ? "met" : "NOT MET");
}

static void print_ratios(void)
{
	printf("\nratios of medians\n");
	print_ratio("SETNX+DEL lock cycle / robust mutex cycle",
		    "hot_setnx_del_cycle", "base_robust_mutex", 1.0);
	print_ratio("SETNX+DELIFEQ lock cycle / robust mutex cycle",
		    "hot_setnx_delifeq_cycle", "base_robust_mutex", 1.0);
	print_ratio("random GET hit, int, dependent chain / dep. load",
		    "rand_get_hit_int_dep", "base_dependent_load", 1.5);
	print_ratio("random GET hit, int / dependent load", "rand_get_hit_int",
		    "base_dependent_load", 1.5);
	print_ratio("random GET hit, 16-byte string / dependent load",
		    "rand_get_hit_str16", "base_dependent_load", 1.5);
	print_ratio("random GET miss / dependent load", "rand_get_miss",
		    "base_dependent_load", 1.5);
}

/* Rows go to the file opened before the run, so a bad path fails first. */
static int write_csv(struct bench_csv *csv)
{
	int err = 0;

	for (size_t i = 0; i < NBENCH && !err; i++)
		err = bench_csv_row(csv, benches[i].name, &results[i].st);
	csv_open = 0;
	if (err) {
		bench_csv_abort(csv);
		return err;
	}
	return bench_csv_close(csv);
}

/*
 * Command line.
 */

struct options {
	int quick;
	unsigned runs;
	const char *csv;
};

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"usage: %s [--quick] [--runs N] [--csv PATH]\n"
		"Microbenchmarks of the shmkv core store, with baselines.\n"
		"  --quick     a smoke run of a few seconds (3 short runs)\n"
		"  --runs N    timed runs per figure, 1..1000 (default 11)\n"
		"  --csv PATH  also write name,median_ns,min_ns,max_ns,runs,"
		"ops_per_run\n"
		"  --help, --version\n",
		argv0);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "quick", no_argument, NULL, 'q' },
		{ "runs", required_argument, NULL, 'r' },
		{ "csv", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		char *end;
		unsigned long n;

		switch (opt) {
		case 'q':
			o->quick = 1;
			break;
		case 'r':
			errno = 0;
			n = strtoul(optarg, &end, 10);
			if (errno || *end || end == optarg || n < 1 ||
			    n > 1000) {
				fprintf(stderr,
					"%s: --runs wants 1..1000, got '%s'\n",
					argv[0], optarg);
				return 2;
			}
			o->runs = (unsigned)n;
			break;
		case 'c':
			o->csv = optarg;
			break;
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		case 'V':
			printf("bench_core (shmkv %s)\n", SHMKV_VERSION_STRING);
			exit(0);
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0],
			argv[optind]);
		usage(stderr, argv[0]);
		return 2;
	}
	return 0;
}

static void print_header(const struct options *o, unsigned runs,
			 uint64_t target_ns, const struct shmkv_stats *st)
{
	struct bench_machine m;

	bench_machine_describe(&m);
	printf("# shmkv %s core microbenchmarks%s\n", SHMKV_VERSION_STRING,
	       o->quick ? " (QUICK: smoke run, figures not meaningful)" : "");
	bench_machine_print(stdout, &m);
	printf("# clock: CLOCK_MONOTONIC, ~%.0f ns per pair of reads\n",
	       bench_clock_overhead_ns());
	printf("# method: median of %u runs of ~%.0f ms each, taken in "
	       "interleaved rounds\n",
	       runs, (double)target_ns / 1e6);
	printf("# store: %u slots, key_max %u, value_max %u, value memory "
	       "%.0f MiB, segment %.1f MiB, %llu keys, longest probe %u\n",
	       the_core.cfg.slots, the_core.cfg.key_max, the_core.cfg.value_max,
	       (double)the_core.cfg.value_memory / (1 << 20),
	       (double)st->segment_bytes / (1 << 20),
	       (unsigned long long)st->live_keys, st->longest_probe);
}

static int setup(struct core *c, uint64_t stream_len, struct shmkv_stats *st)
{
	int err;

	if ((err = make_store(c)) || (err = populate_hot(c)) ||
	    (err = populate_random(c)) || (err = shmkv_stats(c->kv, st)) ||
	    (err = make_streams(c, stream_len)) ||
	    (err = make_baselines(c, st->segment_bytes)))
		fprintf(stderr, "bench_core: setup failed: %s\n",
			shmkv_strerror(err));
	return err;
}

int main(int argc, char **argv)
{
	struct options o = { 0 };
	struct shmkv_stats st;
	unsigned runs;
	uint64_t target_ns;
	int err = parse_args(argc, argv, &o);

	if (err)
		return err;
	runs = o.runs ? o.runs : o.quick ? 3 : 11;
	target_ns = o.quick ? 1000000ull : 25000000ull;
	catch_signals();
	atexit(cleanup);
	if (o.csv && (err = bench_csv_open(&the_csv, o.csv))) {
		fprintf(stderr, "bench_core: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	csv_open = o.csv != NULL;
	if (setup(&the_core, o.quick ? 1u << 14 : 1u << 20, &st))
		return 1;
	print_header(&o, runs, target_ns, &st);
	fflush(stdout);
	err = measure_all(&the_core, runs, target_ns);
	if (err) {
		fprintf(stderr, "bench_core: a benchmark failed; no figures\n");
		return 1;
	}
	print_table(&the_core);
	print_ratios();
	if (o.csv && (err = write_csv(&the_csv))) {
		fprintf(stderr, "bench_core: cannot write %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
