/*
 * mp_worker - a process for the SIGKILL tests of
 * tests/unit/processes/test_mp_kill.c to kill.
 *
 * usage: mp_worker NAME SEED ITERATIONS KEYS [READY_FD [MODE]]
 *
 * Runs ITERATIONS random SET/SETNX/GETSET/INCR/DEL/GET commands on the
 * keys "w000".."w<KEYS-1>" of store NAME, with inline-integer and block
 * values, a quarter of the SETs with a TTL of an hour (nothing expires
 * during a test, but those keys hold a block). MODE "inserts" does only
 * SET and DEL, half each, so that most SETs insert a key; the default,
 * "mixed", does every command. Once the store is open, one byte is
 * written to READY_FD (if given and not -1) and it is closed, so that the
 * test can time its kill from when commands start. Every reply is checked
 * against what the command may return, and every value read must be one
 * some worker could have written: a canonical integer, or a self-checking
 * string (helpers/selfcheck.h) that a torn or recycled block would fail.
 *
 * The test SIGKILLs it at random moments. If it exits by itself, the
 * status says why: 0 all iterations done, 2 usage, 3 open failed, 4 a
 * command returned what it must not, 5 a value read was never written.
 * The cause goes to stderr.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmkv.h"
#include "helpers/args.h"
#include "helpers/rng.h"
#include "helpers/selfcheck.h"
#include "helpers/worker_exit.h"

#define KEYS_MAX    1000
#define TTL_SECONDS 3600

struct worker {
	shmkv_t *kv;
	uint64_t rng;
	unsigned keys;
	bool inserts_only;
	unsigned long iter;
	char key[16];
	size_t klen;
	char val[SC_STRING_MAX];
	size_t vlen;
	char old[SHMKV_VALUE_MAX_DEFAULT];
};

static int bad_reply(const struct worker *w, const char *cmd, int rc)
{
	fprintf(stderr, "mp_worker: iteration %lu: %s %s returned %d (%s)\n",
		w->iter, cmd, w->key, rc, shmkv_strerror(rc));
	return WORKER_REPLY;
}

static int check_value(const struct worker *w, const char *cmd, size_t len)
{
	if (sc_value_ok(w->old, len))
		return WORKER_DONE;
	fprintf(stderr,
		"mp_worker: iteration %lu: %s %s read \"%.*s\", "
		"which no worker wrote\n",
		w->iter, cmd, w->key, (int)(len > 120 ? 120 : len), w->old);
	return WORKER_VALUE;
}

/* Picks a key and a value: an integer or a self-checking string. */
static void pick(struct worker *w)
{
	uint64_t r = rng_next(&w->rng);

	w->klen = (size_t)sprintf(w->key, "w%03u", (unsigned)(r % w->keys));
	r >>= 16;
	if (r & 1)
		w->vlen = (size_t)sprintf(w->val, "%d",
					  (int)((r >> 1) % 200000) - 1000);
	else
		w->vlen = sc_make_string(w->val, (uint32_t)(r >> 1));
}

static int do_set(struct worker *w, bool with_ttl)
{
	unsigned flags = with_ttl ? SHMKV_SET_EX : 0;
	int rc = shmkv_set(w->kv, w->key, w->klen, w->val, w->vlen, flags,
			   TTL_SECONDS, NULL);

	return rc == 1 ? WORKER_DONE : bad_reply(w, "SET", rc);
}

static int do_setnx(struct worker *w)
{
	int rc = shmkv_setnx(w->kv, w->key, w->klen, w->val, w->vlen);

	return rc == 0 || rc == 1 ? WORKER_DONE : bad_reply(w, "SETNX", rc);
}

static int do_getset(struct worker *w)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = shmkv_getset(w->kv, w->key, w->klen, w->val, w->vlen, &o);

	if (rc == 1)
		return check_value(w, "GETSET", o.len);
	return rc == 0 ? WORKER_DONE : bad_reply(w, "GETSET", rc);
}

static int do_get(struct worker *w)
{
	struct shmkv_value o = { w->old, sizeof(w->old), 0 };
	int rc = shmkv_get(w->kv, w->key, w->klen, &o);

	if (rc == 1)
		return check_value(w, "GET", o.len);
	return rc == 0 ? WORKER_DONE : bad_reply(w, "GET", rc);
}

static int do_incr(struct worker *w)
{
	int64_t n;
	int rc = shmkv_incr(w->kv, w->key, w->klen, &n);

	/* -EDOM: the key holds a string; values stay far from overflow. */
	return rc == 0 || rc == -EDOM ? WORKER_DONE : bad_reply(w, "INCR", rc);
}

static int do_del(struct worker *w)
{
	int rc = shmkv_del(w->kv, w->key, w->klen);

	return rc == 0 || rc == 1 ? WORKER_DONE : bad_reply(w, "DEL", rc);
}

static int step(struct worker *w)
{
	unsigned op = (unsigned)(rng_next(&w->rng) % 100);

	pick(w);
	if (w->inserts_only)
		return op < 50 ? do_set(w, op < 10) : do_del(w);
	/* A quarter are deletes, so that many of the writes insert a key
	 * and a kill often lands in the middle of an insert. */
	if (op < 18)
		return do_set(w, false);
	if (op < 25)
		return do_set(w, true);
	if (op < 35)
		return do_setnx(w);
	if (op < 47)
		return do_getset(w);
	if (op < 60)
		return do_incr(w);
	if (op < 85)
		return do_del(w);
	return do_get(w);
}

static int parse_args(int argc, char **argv, struct worker *w, uint64_t *iters,
		      int *ready_fd)
{
	uint64_t seed, keys, fd = (uint64_t)-1;

	if (argc < 5 || argc > 7 || arg_seed(argv[2], &seed) ||
	    arg_u64(argv[3], UINT64_MAX, iters) ||
	    arg_u64(argv[4], KEYS_MAX, &keys) || keys == 0)
		return -1;
	if (argc > 5 && strcmp(argv[5], "-1") && arg_u64(argv[5], INT_MAX, &fd))
		return -1;
	if (argc > 6 && strcmp(argv[6], "mixed") && strcmp(argv[6], "inserts"))
		return -1;
	w->rng = seed;
	w->keys = (unsigned)keys;
	w->inserts_only = argc > 6 && !strcmp(argv[6], "inserts");
	*ready_fd = (int)fd;
	return 0;
}

int main(int argc, char **argv)
{
	struct worker w;
	uint64_t iters;
	int rc, ready_fd;

	memset(&w, 0, sizeof(w));
	if (parse_args(argc, argv, &w, &iters, &ready_fd)) {
		fprintf(stderr,
			"usage: mp_worker NAME SEED ITERATIONS KEYS "
			"[READY_FD [mixed|inserts]] (1 <= KEYS <= %d)\n",
			KEYS_MAX);
		return WORKER_USAGE;
	}
	rc = shmkv_open(argv[1], 0, &w.kv);
	if (rc) {
		fprintf(stderr, "mp_worker: open %s: %s\n", argv[1],
			shmkv_strerror(rc));
		return WORKER_OPEN;
	}
	if (ready_fd >= 0) {
		/* A test that stopped listening needs nothing more. */
		ssize_t n = write(ready_fd, "r", 1);

		(void)n;
		close(ready_fd);
	}
	for (rc = WORKER_DONE; rc == WORKER_DONE && w.iter < iters; w.iter++)
		rc = step(&w);
	shmkv_close(w.kv);
	return rc;
}
