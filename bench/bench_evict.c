/*
 * bench_evict.c - hit rates of eviction on a cache workload, shmkv beside
 * redis-server holding the same number of keys (issue 13: "hit rate of
 * allkeys-lru on a zipfian workload within a few points of Redis's own").
 *
 * The workload: keys drawn from a zipfian distribution (s = 0.99, as
 * YCSB) over a keyspace (100k keys), from a fixed seed, so every store
 * sees the identical sequence. Each op is a GET; a GET that misses is
 * followed by a SET of its key with a 100-byte value (a value block in
 * shmkv). Ops go in batches of BATCH: the batch's GETs, then the SETs of
 * its misses, in order; Redis gets each half as one pipeline, shmkv the
 * same commands one by one, so both stores see the same commands in the
 * same order. Hits are counted after a warm-up.
 *
 * Capacity is what eviction policies are compared at, so it is made
 * equal: the shmkv store's max_memory holds a number of value pages; the
 * keys it holds once evictions run (stats live_keys at the end of the
 * run) are its capacity. (The values fill the 128-byte class's pages, then
 * the 192-byte class's page before the first eviction; evictions sample
 * the 128-byte class only, so the keys in that page stay.) Redis gets a
 * maxmemory that holds as many: the used_memory of that many keys SET
 * without a limit, then corrected by the DBSIZE it holds at the end of a
 * run of the workload (up to CALIBRATIONS runs).
 * Rows: shmkv and redis for allkeys-lru, -lfu and -random, and an exact
 * LRU of the same capacity, simulated in-process (the ceiling sampled LRU
 * approximates). Beside each: the capacity in keys and the memory per key
 * (shmkv's memory_bytes, Redis's used_memory, over the keys held).
 *
 * Hit rates are counted, not timed (--runs is ignored), and depend on
 * nothing but the sequence and the policies' random draws, with one
 * exception: Redis's LRU clock has a resolution of 1 s, so keys used in
 * the same second look equally old to it, and its LRU hit rate depends on
 * how many ops a second the run makes (the seconds column): near its
 * random's at full speed, near exact LRU's once the clock ticks many
 * times per turnover of the cache (--redis-pace N: Redis's measured runs
 * make at most N ops a second; ~2000 for the full size).
 *
 * --check POINTS: a test (tests/run-tests.sh): allkeys-lru only, fewer
 * ops; exits 1 if shmkv's hit rate is more than POINTS percentage points
 * below Redis's (or, with --check-exact POINTS, below exact LRU's), 77 if
 * redis-server cannot be started. On this workload LRU and random differ
 * by ~4 points, and Redis's LRU, clocked in seconds, is near its random
 * in a run of seconds: only the band against exact LRU, which depends on
 * nothing but the sequence, is narrow enough to catch an LRU that has
 * decayed into random.
 */
#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "lib/kv.h"

#define SKEW	  0.99
#define SEED	  0x5eedc0ffee15ull
#define VALUE_LEN 100u
#define VALUE_MAX 128u /* classes 32, 64, 128, 192: a value is a 128 block */
#define BATCH	  256u
/* Blocks of the values' class in a page (64 KiB pages of 128 bytes). */
#define CLASS_BLOCKS 512u
#define CLASSES	     4u
#define PAGE	     (64u << 10)
#define CALIBRATIONS 4u

/* Sizes: the full run (~35 s), --quick, and --check (~6 s). */
struct size {
	uint32_t keys;	 /* keyspace */
	uint32_t pages;	 /* value pages of shmkv's store beyond one a class */
	unsigned log2;	 /* log2 of the ops, warm-up included */
	unsigned warmup; /* log2 of the warm-up ops */
};
static const struct size full_size = { 100000, 23, 22, 20 };
static const struct size quick_size = { 10000, 2, 17, 15 };
static const struct size check_size = { 100000, 23, 21, 19 };

enum store { ST_SHMKV, ST_REDIS, ST_EXACT, ST_N };
static const char *const store_name[ST_N] = { "shmkv", "redis", "exact-lru" };

static const int policies[] = { SHMKV_EVICT_ALLKEYS_LRU,
				SHMKV_EVICT_ALLKEYS_LFU,
				SHMKV_EVICT_ALLKEYS_RANDOM };
#define POLICIES (sizeof(policies) / sizeof(policies[0]))

struct row {
	enum store store;
	int policy;
	uint64_t gets, hits; /* measured GETs (after the warm-up) */
	uint64_t capacity;   /* keys held at the end */
	uint64_t memory;     /* bytes: memory_bytes, used_memory; 0: - */
	uint64_t empty;	     /* Redis: used_memory with no keys */
	uint64_t evicted;
	uint64_t set_failed; /* SETs that found no room */
	double seconds;
};

struct workload {
	uint64_t pace;	     /* ops a second at most (0: no limit) */
	uint64_t redis_pace; /* the pace of Redis's measured runs */
	const char *keys;
	const uint32_t *stream;
	uint64_t ops, warmup;
	uint32_t n;
	char value[VALUE_LEN];
};

/*
 * @n commands @cmd on keys @ids, with the workload's value: one pipeline
 * (Redis), or one by one. Replies as kv.h's, into @replies. Return: 0 or
 * a negative errno (the connection failed).
 */
static int commands(struct bench_kv *kv, const struct workload *w,
		    enum bench_cmd cmd, const uint32_t *ids, unsigned n,
		    int *replies)
{
	static const void *vals[BATCH];
	static size_t vlens[BATCH];

	if (!kv->ops->batch) {
		for (unsigned i = 0; i < n; i++)
			replies[i] = kv->ops->fn[cmd](kv, ids[i], w->value,
						      VALUE_LEN);
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		vals[i] = w->value;
		vlens[i] = VALUE_LEN;
	}
	return kv->ops->batch(kv, cmd, ids, vals, vlens, n, replies);
}

/* Sleeps until @done ops since @t0 are no faster than @pace a second. */
static void pace_to(uint64_t t0, uint64_t done, uint64_t pace)
{
	uint64_t due = t0 + done * 1000000000ull / pace, now = bench_now_ns();
	struct timespec ts;

	if (due <= now)
		return;
	ts.tv_sec = (time_t)((due - now) / 1000000000ull);
	ts.tv_nsec = (long)((due - now) % 1000000000ull);
	nanosleep(&ts, NULL);
}

/*
 * The driver: the first @ops of the workload against @kv (shmkv or Redis
 * through kv.h), counted into @r. A SET that finds no room (shmkv's
 * -ENOMEM or -ENOSPC, Redis's OOM error) is counted, not fatal. Return: 0
 * or a negative errno.
 */
static int drive(struct bench_kv *kv, const struct workload *w, uint64_t ops,
		 struct row *r)
{
	uint32_t miss[BATCH];
	int replies[BATCH];
	uint64_t t0 = bench_now_ns();

	for (uint64_t at = 0; at < ops; at += BATCH) {
		unsigned n = ops - at < BATCH ? (unsigned)(ops - at) : BATCH;
		unsigned m = 0;
		int err = commands(kv, w, BCMD_GET, w->stream + at, n, replies);

		for (unsigned i = 0; i < n && !err; i++) {
			bool counted = at + i >= w->warmup;

			if (replies[i] < 0)
				return replies[i];
			if (replies[i] == 0)
				miss[m++] = w->stream[at + i];
			r->hits += counted && replies[i] == 1;
			r->gets += counted;
		}
		if (!err && m > 0)
			err = commands(kv, w, BCMD_SET, miss, m, replies);
		for (unsigned i = 0; i < m && !err; i++) {
			if (replies[i] == -ENOMEM || replies[i] == -ENOSPC ||
			    replies[i] == -EPROTO)
				r->set_failed++;
			else if (replies[i] < 0)
				return replies[i];
		}
		if (err)
			return err;
		if (w->pace)
			pace_to(t0, at + n, w->pace);
	}
	r->seconds = (double)(bench_now_ns() - t0) / 1e9;
	return 0;
}

/*
 * shmkv.
 */

/* A store of 2^@log2 slots whose value memory is one page for each class
 * and @pages more, max_memory exactly that, under @policy. */
static int store_open(unsigned log2, uint32_t pages, int policy, shmkv_t **kv,
		      char *name)
{
	struct shmkv_config cfg;
	struct shmkv_stats st;
	int err;

	shmkv_config_init(&cfg);
	cfg.slots = 1u << log2;
	cfg.key_max = 16; /* 64-byte slots: the keys are 12 bytes */
	cfg.value_max = VALUE_MAX;
	cfg.value_memory = (uint64_t)(CLASSES + pages) * PAGE;
	cfg.evict_policy = (uint32_t)policy;
	err = bench_store_create("evict", &cfg, kv, name);
	if (err)
		return err;
	err = shmkv_stats(*kv, &st);
	if (!err)
		err = shmkv_set_max_memory(*kv, st.memory_bytes);
	if (err)
		bench_store_destroy(*kv, name);
	return err;
}

/* The slots for @pages: the values' blocks at most 3/4 of them, so the
 * table is at its normal load when value memory is full. */
static unsigned slots_log2(uint32_t pages)
{
	uint64_t blocks = (uint64_t)(pages + 1) * CLASS_BLOCKS;
	unsigned log2 = 10;

	while ((1ull << log2) * 3 / 4 < blocks)
		log2++;
	return log2;
}

static int run_shmkv(const struct workload *w, uint32_t pages, int policy,
		     struct row *r)
{
	struct bench_kv kv;
	struct shmkv_stats st;
	char name[64];
	shmkv_t *store;
	int err;

	memset(r, 0, sizeof(*r));
	r->store = ST_SHMKV;
	r->policy = policy;
	err = store_open(slots_log2(pages), pages, policy, &store, name);
	if (err)
		return err;
	err = bench_kv_shmkv(&kv, store, w->keys, w->n, VALUE_MAX);
	if (!err) {
		err = drive(&kv, w, w->ops, r);
		bench_kv_close(&kv);
	}
	if (!err)
		err = shmkv_stats(store, &st);
	if (!err) {
		r->capacity = st.live_keys;
		r->memory = st.memory_bytes;
		r->evicted = st.evicted;
	}
	bench_store_destroy(store, name);
	return err;
}

/*
 * Exact LRU: a list of the keys held, most recent first, evicting the
 * tail, under the same batched commands as the stores.
 */
static int run_exact(const struct workload *w, uint64_t capacity, struct row *r)
{
	uint32_t *prev = malloc(((size_t)w->n + 1) * sizeof(*prev));
	uint32_t *next = malloc(((size_t)w->n + 1) * sizeof(*next));
	unsigned char *held = calloc(w->n, 1);
	uint32_t head = w->n; /* the list's sentinel */
	uint32_t miss[BATCH];
	uint64_t count = 0;

	memset(r, 0, sizeof(*r));
	r->store = ST_EXACT;
	r->policy = SHMKV_EVICT_ALLKEYS_LRU;
	r->capacity = capacity;
	if (!prev || !next || !held) {
		free(prev);
		free(next);
		free(held);
		return -ENOMEM;
	}
	prev[head] = next[head] = head;
#define UNLINK(x) (next[prev[x]] = next[x], prev[next[x]] = prev[x])
#define PUSH(x)                                                                \
	(next[x] = next[head], prev[x] = head, prev[next[head]] = (x),         \
	 next[head] = (x))
	for (uint64_t at = 0; at < w->ops; at += BATCH) {
		unsigned n = w->ops - at < BATCH ? (unsigned)(w->ops - at)
						 : BATCH;
		unsigned m = 0;

		for (unsigned i = 0; i < n; i++) {
			uint32_t id = w->stream[at + i];

			if (held[id]) {
				UNLINK(id);
				PUSH(id);
				r->hits += at + i >= w->warmup;
			} else {
				miss[m++] = id;
			}
			r->gets += at + i >= w->warmup;
		}
		for (unsigned i = 0; i < m; i++) {
			uint32_t id = miss[i];

			if (held[id]) {
				UNLINK(id);
			} else if (count == capacity) {
				uint32_t old = prev[head];

				UNLINK(old);
				held[old] = 0;
				r->evicted++;
			} else {
				count++;
			}
			held[id] = 1;
			PUSH(id);
		}
	}
#undef UNLINK
#undef PUSH
	free(prev);
	free(next);
	free(held);
	return 0;
}

/*
 * Redis.
 */

/* An integer field of INFO @section ("used_memory:"); 0 if unreadable. */
static uint64_t info_field(redisContext *c, const char *section,
			   const char *field)
{
	redisReply *r = redisCommand(c, "INFO %s", section);
	uint64_t v = 0;
	const char *p;

	if (r && r->type == REDIS_REPLY_STRING &&
	    (p = strstr(r->str, field)) != NULL)
		v = strtoull(p + strlen(field), NULL, 10);
	freeReplyObject(r);
	return v;
}

/* A command whose reply must not be an error. Return: 0 or -EIO. */
static int redis_ok(redisContext *c, const char *fmt, ...)
{
	redisReply *r;
	va_list ap;
	int ok;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	ok = r && r->type != REDIS_REPLY_ERROR;
	if (r && !ok)
		fprintf(stderr, "# redis: %s\n", r->str);
	freeReplyObject(r);
	return ok ? 0 : -EIO;
}

static uint64_t dbsize(redisContext *c)
{
	redisReply *r = redisCommand(c, "DBSIZE");
	uint64_t v = r && r->type == REDIS_REPLY_INTEGER ? (uint64_t)r->integer
							 : 0;

	freeReplyObject(r);
	return v;
}

/* An empty database with maxmemory @bytes (0: none) under @policy. */
static int redis_reset(redisContext *c, uint64_t bytes, int policy)
{
	int err = redis_ok(c, "FLUSHALL SYNC");

	if (!err)
		err = redis_ok(c, "CONFIG SET maxmemory %llu",
			       (unsigned long long)bytes);
	if (!err)
		err = redis_ok(c, "CONFIG SET maxmemory-policy %s",
			       shmkv_evict_policy_name(policy));
	if (!err) /* the default, as SHMKV_EVICT_SAMPLES */
		err = redis_ok(c, "CONFIG SET maxmemory-samples %u",
			       SHMKV_EVICT_SAMPLES);
	if (!err)
		err = redis_ok(c, "CONFIG RESETSTAT");
	return err;
}

/* Keys 0..@n-1 SET with the workload's value, pipelined. */
static int redis_fill(struct bench_kv *kv, const struct workload *w, uint64_t n)
{
	uint32_t ids[BATCH];
	int replies[BATCH];

	for (uint64_t at = 0; at < n; at += BATCH) {
		unsigned b = n - at < BATCH ? (unsigned)(n - at) : BATCH;
		int err;

		for (unsigned i = 0; i < b; i++)
			ids[i] = (uint32_t)(at + i);
		err = commands(kv, w, BCMD_SET, ids, b, replies);
		for (unsigned i = 0; i < b && !err; i++)
			if (replies[i] != 1)
				err = replies[i] < 0 ? replies[i] : -EPROTO;
		if (err)
			return err;
	}
	return 0;
}

/*
 * The maxmemory at which Redis holds @keys keys at steady state: the
 * used_memory of that many keys, then corrected by the DBSIZE a warm-up
 * run under allkeys-lru settles at (client buffers count in used_memory
 * too). Return: 0 or a negative errno.
 */
static int redis_calibrate(redisContext *c, struct bench_kv *kv,
			   const struct workload *w, uint64_t keys,
			   uint64_t *maxmemory, uint64_t *empty_out)
{
	struct workload warm = *w;
	uint64_t empty, full, held;
	double per_key;
	struct row r;
	int err = redis_reset(c, 0, SHMKV_EVICT_ALLKEYS_LRU);

	if (err)
		return err;
	empty = info_field(c, "memory", "used_memory:");
	err = redis_fill(kv, w, keys);
	if (err)
		return err;
	full = info_field(c, "memory", "used_memory:");
	if (empty == 0 || full <= empty)
		return -EPROTO;
	per_key = (double)(full - empty) / (double)keys;
	*empty_out = empty;
	*maxmemory = full;
	warm.ops = w->ops;
	for (unsigned i = 0; i < CALIBRATIONS; i++) {
		memset(&r, 0, sizeof(r));
		err = redis_reset(c, *maxmemory, SHMKV_EVICT_ALLKEYS_LRU);
		if (!err)
			err = drive(kv, &warm, warm.ops, &r);
		if (err)
			return err;
		held = dbsize(c);
		printf("# redis calibration %u: maxmemory %llu holds %llu "
		       "keys (target %llu)\n",
		       i + 1, (unsigned long long)*maxmemory,
		       (unsigned long long)held, (unsigned long long)keys);
		if ((held * 1000 >= keys * 995 && held * 1000 <= keys * 1005) ||
		    i + 1 == CALIBRATIONS)
			break;
		*maxmemory = (uint64_t)((double)*maxmemory +
					((double)keys - (double)held) *
						per_key);
	}
	return 0;
}

static int run_redis(redisContext *c, struct bench_kv *kv,
		     const struct workload *w, uint64_t maxmemory, int policy,
		     struct row *r)
{
	struct workload paced = *w;
	int err = redis_reset(c, maxmemory, policy);

	memset(r, 0, sizeof(*r));
	r->store = ST_REDIS;
	r->policy = policy;
	paced.pace = w->redis_pace;
	if (!err)
		err = drive(kv, &paced, w->ops, r);
	if (!err) {
		r->capacity = dbsize(c);
		r->memory = info_field(c, "memory", "used_memory:");
		r->evicted = info_field(c, "stats", "evicted_keys:");
	}
	return err;
}

/*
 * Output.
 */
static double hit_pct(const struct row *r)
{
	return r->gets ? 100.0 * (double)r->hits / (double)r->gets : 0;
}

static void print_row(const struct row *r)
{
	printf("  %-9s %-14s %8llu %8.2f", store_name[r->store],
	       shmkv_evict_policy_name(r->policy),
	       (unsigned long long)r->capacity, hit_pct(r));
	if (r->memory && r->capacity)
		printf(" %8.1f", (double)r->memory / (double)r->capacity);
	else
		printf(" %8s", "-");
	printf(" %9llu %6llu", (unsigned long long)r->evicted,
	       (unsigned long long)r->set_failed);
	if (r->store != ST_EXACT)
		printf(" %7.1f\n", r->seconds);
	else
		printf(" %7s\n", "-");
	fflush(stdout);
}

static int write_csv(const char *path, const struct workload *w,
		     const struct row *rows, unsigned nrows)
{
	struct bench_csv csv;
	int err = bench_csv_open(&csv, path,
				 "store,policy,keyspace,skew,ops,warmup,"
				 "value_bytes,capacity_keys,hit_pct,"
				 "bytes_per_key,empty_bytes,evicted,"
				 "set_failed,seconds");

	for (unsigned i = 0; i < nrows && !err; i++) {
		const struct row *r = &rows[i];
		double bpk = r->memory && r->capacity
				     ? (double)r->memory / (double)r->capacity
				     : 0;

		err = bench_csv_row(&csv,
				    "%s,%s,%u,%.2f,%llu,%llu,%u,%llu,%.2f,"
				    "%.1f,%llu,%llu,%llu,%.2f",
				    store_name[r->store],
				    shmkv_evict_policy_name(r->policy), w->n,
				    SKEW, (unsigned long long)w->ops,
				    (unsigned long long)w->warmup, VALUE_LEN,
				    (unsigned long long)r->capacity, hit_pct(r),
				    bpk, (unsigned long long)r->empty,
				    (unsigned long long)r->evicted,
				    (unsigned long long)r->set_failed,
				    r->store == ST_EXACT ? 0.0 : r->seconds);
	}
	return err ? err : bench_csv_close(&csv);
}

/* The Redis rows, after shmkv's (whose allkeys-lru capacity they match).
 * Return: 0, 1 (no redis-server), or a negative errno. */
static int redis_rows(const struct workload *w, unsigned npol,
		      uint64_t capacity, struct row *rows, unsigned *nrows)
{
	struct bench_redis srv;
	struct bench_kv kv;
	redisContext *c;
	uint64_t maxmemory = 0, empty = 0;
	int err;

	if (bench_redis_start(&srv) != 0)
		return 1;
	c = redisConnect("127.0.0.1", srv.port);
	err = c && !c->err ? 0 : -EIO;
	if (!err)
		err = bench_kv_redis(&kv, srv.port, 0, 1, w->keys, w->n,
				     VALUE_MAX);
	if (!err) {
		err = redis_calibrate(c, &kv, w, capacity, &maxmemory, &empty);
		if (!err)
			printf("# redis: used_memory %llu B with no keys, "
			       "maxmemory %llu\n",
			       (unsigned long long)empty,
			       (unsigned long long)maxmemory);
		for (unsigned p = 0; p < npol && !err; p++) {
			err = run_redis(c, &kv, w, maxmemory, policies[p],
					&rows[*nrows]);
			rows[*nrows].empty = empty;
			if (!err)
				print_row(&rows[(*nrows)++]);
		}
		bench_kv_close(&kv);
	}
	redisFree(c);
	bench_redis_stop(&srv);
	return err;
}

int main(int argc, char **argv)
{
	unsigned check = 0, check_exact = 0, keys_opt = 0, pages_opt = 0,
		 pace = 0;
	const struct bench_extra_opt extra[] = {
		{ "check",
		  "test mode: allkeys-lru only, smaller; exit 1 if shmkv's "
		  "hit rate is more than this many points below Redis's",
		  1, 100, &check },
		{ "check-exact",
		  "with --check: also exit 1 if it is more than this many "
		  "points below exact LRU's",
		  1, 100, &check_exact },
		{ "keys", "keyspace (default 100000)", 1000, 10000000,
		  &keys_opt },
		{ "pages", "shmkv's value pages (64 KiB, 512 values each)", 1,
		  100000, &pages_opt },
		{ "redis-pace",
		  "Redis's measured runs make at most this many ops a second "
		  "(its LRU clock counts seconds)",
		  1, 100000000, &pace },
	};
	struct row rows[2 * POLICIES + 1];
	unsigned nrows = 0, npol;
	struct workload w;
	struct bench_opts o;
	const struct size *sz;
	uint32_t pages;
	uint32_t *stream;
	char *keys;
	int err = 0, rc;

	bench_opts_parse(argc, argv,
			 "hit rates of allkeys-lru, -lfu and -random on a "
			 "zipfian GET/SET-on-miss workload: shmkv beside "
			 "redis-server holding as many keys, and exact LRU.",
			 extra, sizeof(extra) / sizeof(extra[0]), &o);
	bench_begin(&o, 1, 1);
	bench_title("evict: hit rates", o.quick);
	sz = check ? &check_size : o.quick ? &quick_size : &full_size;
	npol = check ? 1 : POLICIES;
	memset(&w, 0, sizeof(w));
	w.n = keys_opt ? keys_opt : sz->keys;
	pages = pages_opt ? pages_opt : sz->pages;
	w.ops = 1ull << sz->log2;
	w.warmup = 1ull << sz->warmup;
	w.redis_pace = pace;
	memset(w.value, 'v', sizeof(w.value));
	keys = bench_keys_make(w.n);
	stream = bench_stream_make(BENCH_ZIPF, w.ops, w.n, SKEW, 0, SEED);
	if (!keys || !stream) {
		fprintf(stderr, "bench_evict: out of memory\n");
		return 1;
	}
	w.keys = keys;
	w.stream = stream;
	printf("# keyspace %u keys, zipf s=%.2f (seed %#llx), %llu GETs "
	       "(hits counted after the first %llu), a SET of a %u-byte "
	       "value on each miss, in batches of %u\n",
	       w.n, SKEW, (unsigned long long)SEED, (unsigned long long)w.ops,
	       (unsigned long long)w.warmup, VALUE_LEN, BATCH);
	printf("# shmkv: 2^%u slots, max_memory = %u value pages beyond one a "
	       "class; redis: maxmemory holding as many keys\n",
	       slots_log2(pages), pages);
	printf("  %-9s %-14s %8s %8s %8s %9s %6s %7s\n", "store", "policy",
	       "keys", "hit %", "B/key", "evicted", "failed", "seconds");
	for (unsigned p = 0; p < npol && !err; p++) {
		err = run_shmkv(&w, pages, policies[p], &rows[nrows]);
		if (!err)
			print_row(&rows[nrows++]);
	}
	if (!err)
		err = run_exact(&w, rows[0].capacity, &rows[nrows]);
	if (!err)
		print_row(&rows[nrows++]);
	rc = err ? err : redis_rows(&w, npol, rows[0].capacity, rows, &nrows);
	if (rc < 0) {
		fprintf(stderr, "bench_evict: %s\n", shmkv_strerror(rc));
		return 1;
	}
	if (rc == 1) {
		printf("# redis: skipped (redis-server could not be "
		       "started)\n");
		if (check)
			return 77;
	}
	if (o.csv && (err = write_csv(o.csv, &w, rows, nrows)) != 0) {
		fprintf(stderr, "bench_evict: %s: %s\n", o.csv, strerror(-err));
		return 1;
	}
	free(keys);
	free(stream);
	if (check && rc == 0) {
		/* Rows: shmkv, exact LRU, redis (allkeys-lru each). */
		double s = hit_pct(&rows[0]), x = hit_pct(&rows[1]),
		       r = hit_pct(&rows[2]);
		int fail = 0;

		printf("# check: shmkv %.2f%%; redis %.2f%% (at most %u "
		       "points below it); exact LRU %.2f%%",
		       s, r, check, x);
		if (check_exact)
			printf(" (at most %u points below it)", check_exact);
		printf("\n");
		if (s + check < r) {
			printf("# FAIL: shmkv's allkeys-lru hit rate is more "
			       "than %u points below Redis's\n",
			       check);
			fail = 1;
		}
		if (check_exact && s + check_exact < x) {
			printf("# FAIL: shmkv's allkeys-lru hit rate is more "
			       "than %u points below exact LRU's\n",
			       check_exact);
			fail = 1;
		}
		printf("# %s\n", fail ? "FAIL" : "PASS");
		return fail;
	}
	return 0;
}
