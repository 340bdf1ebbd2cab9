/*
 * bench_memory.c - bytes of memory per key: 12-byte keys with 16-byte
 * values, in shmkv stores at their normal load (LOAD_PCT of the slots,
 * the most shmctl info takes without a warning) and in redis-server
 * (the growth of INFO memory's used_memory for the same keys and values).
 *
 * Two shmkv geometries: "fitted" (key_max 16: one-line slots of 64 bytes,
 * each holding its 16-byte value; value_max 16 and the least value
 * storage a store may have) and "default" (shmkv_config_init's, with the
 * same slot count: 128-byte slots, values in them too), and each again
 * "grown": created small (fitted: 2^10 slots; default: the default count)
 * and doubled online by the same keys' SETs (the memory of the tables
 * it outgrew given back), for the memory of a store that was not sized
 * for its keys. For each, two figures per key:
 *   segment  the memory the store has allocated (header, slots, the
 *            page-table words and pages of its value storage: its file is
 *            a larger sparse reservation);
 *   in use   header, slot array, page table and the value pages given to
 *            size classes: what the keys actually take, i.e. the segment
 *            of a store whose value storage was sized exactly.
 * Memory is counted, not timed: the figures are exact, --runs is ignored.
 */
#include <hiredis/hiredis.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "lib/kv.h"

#define LOAD_PCT   75u
#define LOG2	   20u
#define LOG2_QUICK 16u
#define VALUE_LEN  16u
#define BATCH	   1000u
/* Value storage of the fitted store: the values live in their slots, so
 * only the minimum, a page for each of its two size classes, and room. */
#define MEMORY_FITTED (256u << 10)

/* Grown: the same geometry created small (fitted: 2^10 slots; default:
 * the default slot count), the table doubling online as the keys come. */
enum store { ST_FITTED, ST_DEFAULT, ST_FITTED_GROWN, ST_DEFAULT_GROWN, ST_N };
static const char *const store_name[ST_N] = { "shmkv_fitted", "shmkv_default",
					      "shmkv_fitted_grown",
					      "shmkv_default_grown" };
#define GROWN_LOG2 10u

struct figure {
	const char *what;
	double segment_per_key, in_use_per_key; /* shmkv; -1 for redis */
	uint64_t keys;
	uint64_t slots_start, slots; /* shmkv: at creation, at the end */
};

static void value_of(char *out, uint32_t id)
{
	snprintf(out, VALUE_LEN + 1, "v:%014u", id);
}

static int fill_store(shmkv_t *kv, uint32_t n)
{
	char key[BENCH_KEY_STRIDE], val[VALUE_LEN + 1];

	for (uint32_t id = 0; id < n; id++) {
		int rc;

		bench_key_format(key, id);
		value_of(val, id);
		rc = shmkv_set(kv, key, BENCH_KEY_LEN, val, VALUE_LEN, 0, 0,
			       NULL);
		if (rc != 1)
			return rc < 0 ? rc : -EPROTO;
	}
	return 0;
}

static int measure_store(enum store which, unsigned log2, uint32_t n,
			 struct figure *f)
{
	struct shmkv_config cfg;
	struct shmkv_stats st;
	char name[64];
	shmkv_t *kv;
	int err;

	shmkv_config_init(&cfg);
	cfg.slots = which == ST_FITTED_GROWN	? 1u << GROWN_LOG2
		    : which == ST_DEFAULT_GROWN ? SHMKV_SLOTS_DEFAULT
						: 1u << log2;
	if (which == ST_FITTED || which == ST_FITTED_GROWN) {
		cfg.key_max = 16;
		cfg.value_max = VALUE_LEN;
		cfg.value_memory = MEMORY_FITTED;
	}
	err = bench_store_create("memory", &cfg, &kv, name);
	if (err)
		return err;
	err = fill_store(kv, n);
	if (!err) /* a growth the last keys started: moved by now */
		err = shmkv_maintain(kv);
	if (!err)
		err = shmkv_stats(kv, &st);
	if (!err) {
		uint64_t free_bytes = (uint64_t)st.pages_free * st.page_size;

		f->what = store_name[which];
		f->keys = n;
		f->slots_start = cfg.slots;
		f->slots = st.slots;
		f->segment_per_key = (double)st.memory_bytes / n;
		f->in_use_per_key = (double)(st.memory_bytes - free_bytes) / n;
	}
	bench_store_destroy(kv, name);
	return err;
}

/* used_memory of INFO memory; 0 if unreadable. */
static uint64_t used_memory(redisContext *c)
{
	redisReply *r = redisCommand(c, "INFO memory");
	uint64_t v = 0;
	const char *p;

	if (r && r->type == REDIS_REPLY_STRING &&
	    (p = strstr(r->str, "used_memory:")) != NULL)
		v = strtoull(p + strlen("used_memory:"), NULL, 10);
	freeReplyObject(r);
	return v;
}

/* SETs keys 0..n-1, pipelined in batches. Return: 0 or -EIO. */
static int fill_redis(redisContext *c, uint32_t n)
{
	char key[BENCH_KEY_STRIDE], val[VALUE_LEN + 1];

	for (uint32_t at = 0; at < n; at += BATCH) {
		uint32_t end = at + BATCH < n ? at + BATCH : n;

		for (uint32_t id = at; id < end; id++) {
			bench_key_format(key, id);
			value_of(val, id);
			redisAppendCommand(c, "SET %b %b", key,
					   (size_t)BENCH_KEY_LEN, val,
					   (size_t)VALUE_LEN);
		}
		for (uint32_t id = at; id < end; id++) {
			redisReply *r = NULL;

			if (redisGetReply(c, (void **)&r) != REDIS_OK ||
			    r == NULL || r->type == REDIS_REPLY_ERROR) {
				freeReplyObject(r);
				return -EIO;
			}
			freeReplyObject(r);
		}
	}
	return 0;
}

/* Return: 0, 1 (no redis-server: no figure), or a negative errno. */
static int measure_redis(uint32_t n, struct figure *f)
{
	struct bench_redis srv;
	redisContext *c;
	uint64_t before, after;
	int err;

	if (bench_redis_start(&srv) != 0)
		return 1;
	c = redisConnect("127.0.0.1", srv.port);
	err = c && !c->err ? 0 : -EIO;
	if (!err) {
		before = used_memory(c);
		err = fill_redis(c, n);
		after = used_memory(c);
		if (!err && (before == 0 || after <= before))
			err = -EPROTO;
	}
	if (!err) {
		f->what = "redis";
		f->keys = n;
		f->slots_start = f->slots = 0;
		f->segment_per_key = (double)(after - before) / n;
		f->in_use_per_key = f->segment_per_key;
	}
	redisFree(c);
	bench_redis_stop(&srv);
	return err;
}

static int write_csv(const char *path, const struct figure *f, int nf)
{
	struct bench_csv csv;
	int err = bench_csv_open(&csv, path,
				 "store,keys,key_bytes,value_bytes,load_pct,"
				 "segment_bytes_per_key,in_use_bytes_per_key,"
				 "slots_start,slots");

	for (int i = 0; i < nf && !err; i++)
		err = bench_csv_row(&csv,
				    "%s,%llu,%u,%u,%.0f,%.1f,%.1f,%llu,%llu",
				    f[i].what, (unsigned long long)f[i].keys,
				    BENCH_KEY_LEN, VALUE_LEN,
				    f[i].slots ? 100.0 * (double)f[i].keys /
							 (double)f[i].slots
					       : 0,
				    f[i].segment_per_key, f[i].in_use_per_key,
				    (unsigned long long)f[i].slots_start,
				    (unsigned long long)f[i].slots);
	return err ? err : bench_csv_close(&csv);
}

int main(int argc, char **argv)
{
	struct figure f[ST_N + 1];
	struct bench_opts o;
	unsigned log2;
	uint32_t n;
	int nf = 0, err = 0;

	bench_opts_parse(argc, argv,
			 "bytes of memory per key (12-byte keys, 16-byte "
			 "values): shmkv stores at their normal load beside "
			 "redis-server's used_memory.",
			 NULL, 0, &o);
	bench_begin(&o, 1, 1);
	bench_title("memory: bytes per key", o.quick);
	log2 = o.quick ? LOG2_QUICK : LOG2;
	n = (uint32_t)((1ull << log2) * LOAD_PCT / 100);
	printf("# %u keys of %u bytes with %u-byte values; shmkv stores of "
	       "2^%u slots (%u%% load)\n",
	       n, BENCH_KEY_LEN, VALUE_LEN, log2, LOAD_PCT);
	printf("  %-20s %14s %14s %18s\n", "store", "segment B/key",
	       "in use B/key", "slots");
	for (int s = 0; s < ST_N && !err; s++) {
		err = measure_store(s, log2, n, &f[nf]);
		if (!err) {
			printf("  %-20s %14.1f %14.1f %8llu->%-9llu\n",
			       f[nf].what, f[nf].segment_per_key,
			       f[nf].in_use_per_key,
			       (unsigned long long)f[nf].slots_start,
			       (unsigned long long)f[nf].slots);
			nf++;
		}
	}
	if (!err) {
		err = measure_redis(n, &f[nf]);
		if (err == 1)
			printf("# redis: skipped (redis-server could not be "
			       "started)\n");
		else if (!err)
			printf("  %-20s %14.1f %14s  (used_memory grew by "
			       "that much per key)\n",
			       "redis", f[nf].segment_per_key, "=");
		nf += err == 0;
		err = err == 1 ? 0 : err;
	}
	if (err) {
		fprintf(stderr, "bench_memory: %s\n", shmkv_strerror(err));
		return 1;
	}
	if (o.csv && (err = write_csv(o.csv, f, nf)) != 0) {
		fprintf(stderr, "bench_memory: %s: %s\n", o.csv,
			strerror(-err));
		return 1;
	}
	return 0;
}
