/*
 * workload.c - the timed loops of bench_core (see workload.h).
 *
 * Everything that is not the command itself (choosing the value, building
 * the batch, checking replies, bookkeeping) happens outside the timed
 * region: a batch is prepared, run with each command timed, then checked.
 */
#include "workload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_vkind_name[BV_N] = { "int", "16B", "256B", "4KiB" };
const uint32_t bench_vkind_max[BV_N] = { 16, 16, 256, 4096 };
const char *const bench_work_name[BW_N] = { "GET",  "SET", "GETSET",
					    "INCR", "DEL", "DELIFEQ" };

static const enum bench_cmd work_cmd[BW_N] = {
	BCMD_GET, BCMD_SET, BCMD_GETSET, BCMD_INCR, BCMD_DEL, BCMD_DELIFEQ,
};

/* One batch of commands, prepared before it is timed. */
struct batch {
	unsigned n;
	uint32_t ids[BENCH_BATCH];
	const void *vals[BENCH_BATCH];
	size_t vlens[BENCH_BATCH];
	size_t want_len[BENCH_BATCH];  /* GET, GETSET: the value's length */
	int64_t want_int[BENCH_BATCH]; /* INCR: its result */
	int replies[BENCH_BATCH];
	size_t got_len[BENCH_BATCH];
	int64_t got_int[BENCH_BATCH];
	char num[BENCH_BATCH][24];
};

static struct batch bt;

int bench_work_applies(enum bench_work w, enum bench_vkind vk)
{
	return w != BW_INCR || vk == BV_INT;
}

/* Points slot @i of the batch at the value key @id holds now. */
static void current_value(struct bench_dataset *ds, struct batch *b, unsigned i,
			  uint32_t id)
{
	if (ds->vk == BV_INT) {
		int len = snprintf(b->num[i], sizeof(b->num[i]), "%lld",
				   (long long)ds->ival[id]);

		b->vals[i] = b->num[i];
		b->vlens[i] = (size_t)len;
	} else {
		b->vals[i] = ds->sval[ds->which[id]];
		b->vlens[i] = ds->slen;
	}
}

/* Fills the arguments and expectations of slot @i for command @c, and
 * updates the bookkeeping as if the command had run. */
static void prepare_one(struct bench_dataset *ds, struct batch *b, unsigned i,
			enum bench_cmd c)
{
	uint32_t id = b->ids[i];

	current_value(ds, b, i, id);
	b->want_len[i] = b->vlens[i];
	if (c == BCMD_SET || c == BCMD_GETSET) {
		if (ds->vk == BV_INT)
			ds->ival[id] ^= 1; /* same digit count */
		else
			ds->which[id] ^= 1;
		current_value(ds, b, i, id);
	} else if (c == BCMD_INCR) {
		b->want_int[i] = ++ds->ival[id];
	}
}

static void prepare(struct bench_dataset *ds, struct batch *b, enum bench_cmd c)
{
	for (unsigned i = 0; i < b->n; i++)
		prepare_one(ds, b, i, c);
}

/* The next @n stream entries as they come. */
static void take_steady(struct batch *b, const struct bench_stream *s,
			uint64_t *pos, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		b->ids[i] = s->ids[(*pos)++ & s->mask];
	b->n = n;
}

/* The first occurrence of each key among the next @n stream entries. */
static void take_distinct(struct bench_dataset *ds, struct batch *b,
			  const struct bench_stream *s, uint64_t *pos,
			  unsigned n)
{
	uint32_t epoch = ++ds->epoch;

	b->n = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t id = s->ids[(*pos)++ & s->mask];

		if (ds->stamp[id] == epoch)
			continue;
		ds->stamp[id] = epoch;
		b->ids[b->n++] = id;
	}
}

/* Runs the batch, each command timed alone (@h NULL: untimed). */
static void run_each(struct bench_dataset *ds, struct batch *b,
		     enum bench_cmd c, uint64_t ovh, struct bench_hist *h)
{
	struct bench_kv *kv = &ds->kv;
	bench_kv_fn fn = kv->ops->fn[c];

	for (unsigned i = 0; i < b->n; i++) {
		uint64_t t0 = bench_tick_begin();
		int rc = fn(kv, b->ids[i], b->vals[i], b->vlens[i]);
		uint64_t t = bench_tick_end() - t0;

		if (h)
			bench_hist_add(h, bench_sample(t, ovh, 1), 1);
		b->replies[i] = rc;
		b->got_len[i] = kv->out.len;
		b->got_int[i] = kv->incr_result;
	}
}

/* Runs the batch as pipelines of BENCH_PIPE, each charged to its
 * commands evenly. Lengths and INCR results are not checked. */
static int run_piped(struct bench_dataset *ds, struct batch *b,
		     enum bench_cmd c, struct bench_hist *h)
{
	for (unsigned at = 0; at < b->n; at += BENCH_PIPE) {
		unsigned n = b->n - at < BENCH_PIPE ? b->n - at : BENCH_PIPE;
		uint64_t t0 = bench_tick_begin(), t;
		int err = ds->kv.ops->batch(&ds->kv, c, b->ids + at,
					    b->vals + at, b->vlens + at, n,
					    b->replies + at);

		t = bench_tick_end() - t0;
		if (err)
			return err;
		if (h)
			bench_hist_add(h, bench_sample(t, 0, n), n);
		for (unsigned i = at; i < at + n; i++) {
			b->got_len[i] = b->want_len[i];
			b->got_int[i] = b->want_int[i];
		}
	}
	return 0;
}

static int expected_reply(enum bench_cmd c)
{
	return c == BCMD_INCR ? 0 : 1;
}

static int complain(const struct bench_dataset *ds, enum bench_cmd c,
		    uint32_t id, const char *what, long long got,
		    long long want)
{
	fprintf(stderr,
		"bench: %s %s on %.*s (%s values): %s %lld, expected "
		"%lld%s%s\n",
		ds->kv.ops->name, bench_cmd_name[c], (int)BENCH_KEY_LEN,
		bench_key(ds->kv.keys, id), bench_vkind_name[ds->vk], what, got,
		want, got < 0 ? ": " : "",
		got < 0 ? shmkv_strerror((int)got) : "");
	return -EPROTO;
}

static int check(const struct bench_dataset *ds, const struct batch *b,
		 enum bench_cmd c)
{
	for (unsigned i = 0; i < b->n; i++) {
		uint32_t id = b->ids[i];

		if (b->replies[i] != expected_reply(c))
			return complain(ds, c, id, "reply", b->replies[i],
					expected_reply(c));
		if ((c == BCMD_GET || c == BCMD_GETSET) &&
		    b->got_len[i] != b->want_len[i])
			return complain(ds, c, id, "length",
					(long long)b->got_len[i],
					(long long)b->want_len[i]);
		if (c == BCMD_INCR && b->got_int[i] != b->want_int[i])
			return complain(ds, c, id, "result", b->got_int[i],
					b->want_int[i]);
	}
	return 0;
}

/* Prepares, runs (timed into @h unless NULL) and checks the batch. */
static int run_batch(struct bench_dataset *ds, struct batch *b,
		     enum bench_cmd c, uint64_t ovh, struct bench_hist *h)
{
	int err = 0;

	prepare(ds, b, c);
	if (ds->kv.ops->batch)
		err = run_piped(ds, b, c, h);
	else
		run_each(ds, b, c, ovh, h);
	return err ? err : check(ds, b, c);
}

int bench_work_run(struct bench_dataset *ds, enum bench_work w,
		   const struct bench_stream *s, uint64_t *pos, uint64_t ops,
		   uint64_t overhead, struct bench_run_out *out)
{
	enum bench_cmd c = work_cmd[w];
	unsigned span = ds->kv.ops->batch ? BENCH_PIPE : BENCH_BATCH;
	uint64_t done = 0;
	int err = 0;

	while (done < ops && !err) {
		if (w == BW_DEL || w == BW_DELIFEQ) {
			take_distinct(ds, &bt, s, pos, span);
			err = run_batch(ds, &bt, c, overhead, out->main);
			if (!err)
				err = run_batch(ds, &bt, BCMD_SETNX, overhead,
						w == BW_DEL ? out->second
							    : NULL);
		} else {
			uint64_t left = ops - done;

			take_steady(&bt, s, pos,
				    left < span ? (unsigned)left : span);
			err = run_batch(ds, &bt, c, overhead, out->main);
		}
		done += bt.n;
	}
	return err;
}

struct shmkv_config bench_store_config(enum bench_vkind vk, uint32_t n)
{
	struct shmkv_config cfg;
	uint32_t block = (bench_vkind_max[vk] + 24 + 7) & ~7u;
	uint64_t pages = (uint64_t)n * 5 / 2 / (65536 / block) + 16;

	shmkv_config_init(&cfg);
	cfg.slots = 2 * n;
	cfg.key_max = 16;
	cfg.value_max = bench_vkind_max[vk];
	/* Inline integers need no value storage; strings: every key's
	 * block, the blocks of writes in flight, and room to find them. */
	cfg.value_memory = (vk == BV_INT ? 16 : pages) * 65536;
	return cfg;
}

int bench_dataset_fill(struct bench_dataset *ds, enum bench_vkind vk, int store)
{
	uint32_t n = ds->kv.n;

	ds->vk = vk;
	ds->slen = vk == BV_INT ? 0 : bench_vkind_max[vk];
	ds->which = calloc(n, 1);
	ds->ival = calloc(n, sizeof(*ds->ival));
	ds->stamp = calloc(n, sizeof(*ds->stamp));
	for (int i = 0; i < 2; i++) {
		ds->sval[i] = malloc(ds->slen + 1);
		if (ds->sval[i])
			memset(ds->sval[i], 'a' + i, ds->slen + 1);
	}
	if (!ds->which || !ds->ival || !ds->stamp || !ds->sval[0] ||
	    !ds->sval[1])
		return -ENOMEM;
	for (uint32_t id = 0; id < n; id++)
		ds->ival[id] = 1000000 + 2 * (int64_t)id;
	for (uint32_t id = 0; id < n && store;) {
		int err;

		for (bt.n = 0; bt.n < BENCH_PIPE && id < n; bt.n++)
			bt.ids[bt.n] = id++;
		/* prepare() for SET flips the value: flip it back first. */
		for (unsigned i = 0; i < bt.n; i++)
			ds->which[bt.ids[i]] ^= 1, ds->ival[bt.ids[i]] ^= 1;
		err = run_batch(ds, &bt, BCMD_SET, 0, NULL);
		if (err)
			return err;
	}
	return 0;
}

void bench_dataset_free(struct bench_dataset *ds)
{
	bench_kv_close(&ds->kv);
	free(ds->which);
	free(ds->ival);
	free(ds->stamp);
	free(ds->sval[0]);
	free(ds->sval[1]);
	memset(ds, 0, sizeof(*ds));
}
