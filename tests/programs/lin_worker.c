/*
 * lin_worker - records a history for test_linearizability.
 *
 * usage: lin_worker NAME LOG_FD SLOT GO_FD SEED OPS KEYS PREFIX [broken]
 *
 * Opens store NAME, maps the memfd LOG_FD (struct lin_log number SLOT in
 * it is this process's log), then blocks reading GO_FD until end of file:
 * the test closes the write end once every worker is started, so they all
 * begin at once. Then it runs OPS random commands (SET SETNX GETSET GET DEL
 * DELIFEQ INCR GETDEL) on the keys PREFIX0..PREFIX<KEYS-1>, each recorded
 * with the CLOCK_MONOTONIC times taken just before and just after it.
 *
 * Values are unique per (process, operation): half integers, which the
 * store keeps inline, half strings of 9 bytes or more, which it keeps in a
 * value block (tests/helpers/lincheck.c has the format). DELIFEQ compares
 * with the value this process last saw in the key, so it sometimes hits.
 *
 * "broken" replaces SETNX by GET then SET, and GETSET by GET then SET,
 * with a sched_yield() between the two: not atomic, which the checker
 * must find.
 *
 * Exit status: 0 done, 2 usage, 3 open or map failed, 4 a command
 * returned an error it must not (the log's why says which).
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shmkv.h"
#include "helpers/args.h"
#include "helpers/clock.h"
#include "helpers/journal.h"
#include "helpers/lincheck.h"
#include "helpers/rng.h"
#include "helpers/worker_exit.h"

#define KEYS_MAX   16
#define PREFIX_MAX 32
/* Keeps integer values of different processes and operations apart, with
 * room for the INCRs that follow them: < 2^47, so all stay inline. */
#define INT_PROC_STRIDE 10000000ll
#define INT_SEQ_STRIDE	1000ll

struct worker {
	shmkv_t *kv;
	struct lin_log *log;
	uint64_t rng;
	unsigned slot, keys;
	bool broken;
	const char *prefix;
	struct lin_val last[KEYS_MAX]; /* what this process last saw */
	char key[PREFIX_MAX + 8];
	size_t klen;
	char val[LIN_VAL_BYTES_MAX];
	size_t vlen;
	char buf[SHMKV_VALUE_MAX_LIMIT];
};

static uint64_t now_ns(void)
{
	return (uint64_t)clock_ns(CLOCK_MONOTONIC);
}

/*
 * The invoke time. The vDSO reads the TSC after an LFENCE, so the return
 * time is taken after the command's loads completed (and its CAS, a locked
 * instruction, drained the store buffer); but nothing stops the command's
 * first loads from running before that RDTSC. Without the fence a GET could
 * read the store before its recorded invoke time, and the checker would
 * blame the store for a value that was current then. Not a shared atomic:
 * it orders this thread's instructions against the clock read.
 */
static uint64_t call_ns(void)
{
	uint64_t t = now_ns();

#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_lfence(); /* later loads wait for the RDTSC */
#else
	atomic_thread_fence(memory_order_seq_cst); /* best effort */
#endif
	return t;
}

/* A value nobody else writes: from this process's slot and @seq. */
static struct lin_val fresh_value(const struct worker *w, uint32_t seq,
				  bool as_int)
{
	if (as_int)
		return lin_int(INT_PROC_STRIDE * (w->slot + 1) +
			       INT_SEQ_STRIDE * seq);
	return lin_str(((int64_t)w->slot << 24) | seq);
}

static int fail(struct worker *w, struct lin_op *op, int rc)
{
	w->log->err = rc;
	snprintf(w->log->why, sizeof(w->log->why), "op %u: %s %s: %s", op->seq,
		 lin_cmd_name(op->cmd), w->key, shmkv_strerror(rc));
	return WORKER_REPLY;
}

/* A reply that carries a value: 1 and bytes in w->buf, or 0 for nil. */
static int take_value(struct worker *w, struct lin_op *op, int rc, size_t len)
{
	if (rc < 0 || rc > 1)
		return fail(w, op, rc < 0 ? rc : -EPROTO);
	op->out = rc ? lin_val_parse(w->buf, len) : lin_nil();
	if (rc)
		w->last[op->key] = op->out;
	return WORKER_DONE;
}

/* A reply that is 0 or 1. */
static int take_flag(struct worker *w, struct lin_op *op, int rc)
{
	if (rc != 0 && rc != 1)
		return fail(w, op, rc < 0 ? rc : -EPROTO);
	op->out = lin_int(rc);
	return WORKER_DONE;
}

/* SETNX as GET then SET: another process may set the key in between. */
static int broken_setnx(struct worker *w)
{
	int rc = shmkv_get(w->kv, w->key, w->klen, NULL);

	if (rc != 0)
		return rc;
	sched_yield();
	rc = shmkv_set(w->kv, w->key, w->klen, w->val, w->vlen, 0, 0, NULL);
	return rc == 1 ? 1 : (rc < 0 ? rc : -EPROTO);
}

/* GETSET as GET then SET: two may return the same old value. */
static int broken_getset(struct worker *w, struct shmkv_value *old)
{
	int rc = shmkv_get(w->kv, w->key, w->klen, old);
	int set;

	if (rc < 0)
		return rc;
	sched_yield();
	set = shmkv_set(w->kv, w->key, w->klen, w->val, w->vlen, 0, 0, NULL);
	return set == 1 ? rc : (set < 0 ? set : -EPROTO);
}

static int run_incr(struct worker *w, struct lin_op *op)
{
	int64_t n = 0;
	int rc;

	op->call = call_ns();
	rc = shmkv_incr(w->kv, w->key, w->klen, &n);
	op->ret = now_ns();
	if (rc == -EDOM || rc == -EOVERFLOW) {
		op->out = (struct lin_val){ .kind = LIN_ERR };
		return WORKER_DONE;
	}
	if (rc != 0)
		return fail(w, op, rc);
	op->out = lin_int(n);
	w->last[op->key] = op->out;
	return WORKER_DONE;
}

static int run_set(struct worker *w, struct lin_op *op)
{
	int rc;

	op->call = call_ns();
	rc = shmkv_set(w->kv, w->key, w->klen, w->val, w->vlen, 0, 0, NULL);
	op->ret = now_ns();
	if (rc != 1)
		return fail(w, op, rc < 0 ? rc : -EPROTO);
	op->out = (struct lin_val){ .kind = LIN_OK };
	return WORKER_DONE;
}

static int run_flag(struct worker *w, struct lin_op *op)
{
	int rc;

	op->call = call_ns();
	if (op->cmd == LIN_DEL)
		rc = shmkv_del(w->kv, w->key, w->klen);
	else if (op->cmd == LIN_DELIFEQ)
		rc = shmkv_delifeq(w->kv, w->key, w->klen, w->val, w->vlen);
	else if (w->broken)
		rc = broken_setnx(w);
	else
		rc = shmkv_setnx(w->kv, w->key, w->klen, w->val, w->vlen);
	op->ret = now_ns();
	return take_flag(w, op, rc);
}

static int run_read(struct worker *w, struct lin_op *op)
{
	struct shmkv_value o = { w->buf, sizeof(w->buf), 0 };
	int rc;

	op->call = call_ns();
	if (op->cmd == LIN_GET)
		rc = shmkv_get(w->kv, w->key, w->klen, &o);
	else if (op->cmd == LIN_GETDEL)
		rc = shmkv_getdel(w->kv, w->key, w->klen, &o);
	else if (w->broken)
		rc = broken_getset(w, &o);
	else
		rc = shmkv_getset(w->kv, w->key, w->klen, w->val, w->vlen, &o);
	op->ret = now_ns();
	return take_value(w, op, rc, o.len);
}

/* The command mix, in percent: reads and writes about even, every
 * command frequent enough to meet each of the others on a key. */
static enum lin_cmd pick_cmd(uint64_t r)
{
	static const struct {
		unsigned below;
		enum lin_cmd cmd;
	} mix[] = {
		{ 14, LIN_SET },  { 28, LIN_SETNX },   { 42, LIN_GETSET },
		{ 60, LIN_GET },  { 68, LIN_DEL },     { 80, LIN_DELIFEQ },
		{ 92, LIN_INCR }, { 100, LIN_GETDEL },
	};
	unsigned p = (unsigned)(r % 100);
	size_t i = 0;

	while (p >= mix[i].below)
		i++;
	return mix[i].cmd;
}

/* Chooses and prepares operation @seq; the times are taken around the
 * call itself, after all of this. */
static void prepare(struct worker *w, struct lin_op *op, uint32_t seq)
{
	uint64_t r = rng_next(&w->rng);

	memset(op, 0, sizeof(*op));
	op->cmd = (uint8_t)pick_cmd(r);
	op->key = (uint8_t)((r >> 8) % w->keys);
	op->proc = (uint8_t)w->slot;
	op->seq = seq;
	op->arg = fresh_value(w, seq, (r >> 16) & 1);
	if (op->cmd == LIN_DELIFEQ && w->last[op->key].kind != LIN_NIL &&
	    w->last[op->key].kind != LIN_ERR && ((r >> 17) & 3))
		op->arg = w->last[op->key];
	if (op->cmd == LIN_GET || op->cmd == LIN_DEL || op->cmd == LIN_GETDEL ||
	    op->cmd == LIN_INCR)
		op->arg = lin_nil();
	w->klen = (size_t)snprintf(w->key, sizeof(w->key), "%s%u", w->prefix,
				   (unsigned)op->key);
	w->vlen = lin_val_format(op->arg, w->val);
}

static int run_one(struct worker *w, struct lin_op *op)
{
	switch (op->cmd) {
	case LIN_SET:
		return run_set(w, op);
	case LIN_SETNX:
	case LIN_DEL:
	case LIN_DELIFEQ:
		return run_flag(w, op);
	case LIN_INCR:
		return run_incr(w, op);
	default:
		return run_read(w, op);
	}
}

static int run(struct worker *w, uint32_t ops)
{
	int rc = WORKER_DONE;

	for (uint32_t i = 0; i < ops; i++) {
		struct lin_op *op = &w->log->ops[i];

		prepare(w, op, i);
		rc = run_one(w, op);
		if (rc != WORKER_DONE)
			break;
		if (op->cmd == LIN_SET || op->cmd == LIN_GETSET ||
		    (op->cmd == LIN_SETNX && op->out.n == 1))
			w->last[op->key] = op->arg;
		/* Only a completed operation is part of the history. */
		w->log->count = i + 1;
	}
	return rc;
}

struct args {
	uint64_t slot, go_fd, seed, ops, keys;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	if (argc < 9 || argc > 10 || arg_u64(argv[3], 255, &a->slot) ||
	    arg_u64(argv[4], INT_MAX, &a->go_fd) ||
	    arg_seed(argv[5], &a->seed) ||
	    arg_u64(argv[6], LIN_LOG_CAP, &a->ops) ||
	    arg_u64(argv[7], KEYS_MAX, &a->keys) || a->keys == 0 ||
	    strlen(argv[8]) > PREFIX_MAX)
		return -1;
	return argc == 10 && strcmp(argv[9], "broken") ? -1 : 0;
}

/* This process's log in the memfd whose descriptor is @fd_arg, or NULL
 * (a bad descriptor, or a file too small to hold it). */
static struct lin_log *map_log(const char *fd_arg, unsigned slot)
{
	struct lin_log *logs = journal_attach(
		fd_arg, (slot + 1) * sizeof(struct lin_log));

	return logs != NULL ? logs + slot : NULL;
}

/* Blocks until the test closes the other end (or dies). */
static void wait_go(int fd)
{
	char c;
	ssize_t n;

	do
		n = read(fd, &c, 1);
	while (n > 0 || (n < 0 && errno == EINTR));
	close(fd);
}

int main(int argc, char **argv)
{
	static struct worker w;
	struct args a;
	int rc;

	if (parse_args(argc, argv, &a)) {
		fprintf(stderr,
			"usage: lin_worker NAME LOG_FD SLOT GO_FD SEED "
			"OPS KEYS PREFIX [broken] (OPS <= %u, "
			"KEYS <= %d)\n",
			LIN_LOG_CAP, KEYS_MAX);
		return WORKER_USAGE;
	}
	w.log = map_log(argv[2], (unsigned)a.slot);
	rc = w.log ? shmkv_open(argv[1], 0, &w.kv) : -EBADF;
	if (rc) {
		fprintf(stderr, "lin_worker: %s: %s\n", argv[1],
			shmkv_strerror(rc));
		return WORKER_OPEN;
	}
	w.log->magic = LIN_LOG_MAGIC;
	w.log->cap = LIN_LOG_CAP;
	w.slot = (unsigned)a.slot;
	w.keys = (unsigned)a.keys;
	w.rng = a.seed;
	w.prefix = argv[8];
	w.broken = argc == 10;
	wait_go((int)a.go_fd);
	rc = run(&w, (uint32_t)a.ops);
	shmkv_close(w.kv);
	return rc;
}
