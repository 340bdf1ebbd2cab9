/*
 * workload.h - the timed loops of bench_core: one command at a time on a
 * key stream, each command timed alone into a latency histogram.
 *
 * A data set is one implementation (kv.h) holding the key set with values
 * of one kind: inline-size integers, or strings of 16 B, 256 B or 4 KiB
 * (two strings per size, 'a'... and 'b'..., written in turn so no SET
 * stores what is already there). The bench keeps track of the value each
 * key holds, outside the timed region, so DELIFEQ can be given the right
 * one and every reply can be checked.
 *
 * Workloads on a stream of key ids:
 *   GET, SET, GETSET, INCR   one command per stream entry;
 *   DEL                      batches of distinct keys: DEL each (timed),
 *                            then SETNX each back (timed: the SETNX row,
 *                            a SETNX that finds the key absent);
 *   DELIFEQ                  batches of distinct keys: DELIFEQ each with
 *                            its value (timed), then SETNX back (untimed).
 * Both halves of a batch see their key's slot as it was left one batch
 * (up to BENCH_BATCH keys) earlier. A batch takes BENCH_BATCH stream
 * entries and keeps the first occurrence of each key, so the hot stream
 * gives one key per batch: SETNX/DEL in turn, the lock cycle.
 * An implementation with a batch hook (pipelined Redis) runs each half as
 * one pipeline of up to BENCH_PIPE commands; each command is then charged
 * the pipeline's time divided by its length.
 */
#ifndef SHMKV_BENCH_WORKLOAD_H
#define SHMKV_BENCH_WORKLOAD_H

#include "kv.h"

#define BENCH_BATCH 1024u
#define BENCH_PIPE  64u

enum bench_vkind { BV_INT, BV_16, BV_256, BV_4K, BV_N };
extern const char *const bench_vkind_name[BV_N];
extern const uint32_t bench_vkind_max[BV_N]; /* value_max for the kind */

enum bench_work {
	BW_GET,
	BW_SET,
	BW_GETSET,
	BW_INCR,
	BW_DEL,
	BW_DELIFEQ,
	BW_N
};
extern const char *const bench_work_name[BW_N];

struct bench_dataset {
	struct bench_kv kv;
	enum bench_vkind vk;
	unsigned char *which; /* strings: 0 or 1, the value each key holds */
	int64_t *ival;	      /* integers: each key's value */
	char *sval[2];	      /* the two strings of the kind's size */
	uint32_t slen;
	uint32_t *stamp; /* per key: the last batch that took it */
	uint32_t epoch;
};

/* The geometry of a store for @n keys with values of kind @vk: 2n slots
 * (50% load), 16-byte keys at most; bench_core and ops_instr alike. */
struct shmkv_config bench_store_config(enum bench_vkind vk, uint32_t n);

/* Sets up the bookkeeping for @ds->kv (already constructed) and, with
 * @store, stores every key's first value through the kv (without: the
 * values are already there, stored by another data set on the same
 * backing store). Return: 0 or a negative errno. */
int bench_dataset_fill(struct bench_dataset *ds, enum bench_vkind vk,
		       int store);
void bench_dataset_free(struct bench_dataset *ds);

/* A stream of key ids, read in order and wrapping around. */
struct bench_stream {
	const uint32_t *ids;
	uint64_t mask; /* length - 1 */
};

/* What one run gives: a histogram of the workload's main command and, for
 * BW_DEL, one of its SETNX half. Units: 1/BENCH_TICK_FRAC tick. */
struct bench_run_out {
	struct bench_hist *main;
	struct bench_hist *second; /* BW_DEL only, else unused */
};

/*
 * Runs @w on @ds for at least @ops timed commands of the main kind,
 * reading @s from *@pos on. @overhead (bench_timer.overhead, 1/BENCH_TICK_FRAC
 * ticks) is taken off each sample.
 * Return: 0, or a negative errno after printing what went wrong (an
 * unexpected reply: the figures would be of something else).
 */
int bench_work_run(struct bench_dataset *ds, enum bench_work w,
		   const struct bench_stream *s, uint64_t *pos, uint64_t ops,
		   uint64_t overhead, struct bench_run_out *out);

/* 1 if @w makes sense on values of kind @vk (INCR wants an integer). */
int bench_work_applies(enum bench_work w, enum bench_vkind vk);

#endif /* SHMKV_BENCH_WORKLOAD_H */
