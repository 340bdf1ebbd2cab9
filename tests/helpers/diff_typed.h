/*
 * diff_typed.h - one command of the differential stream (diff_gen.h) as
 * the typed call of shmkv.h it names (GET as shmkv_get, SET with its
 * options as shmkv_set's flags, EXPIRE NX as shmkv_expire's ...), run on
 * a handle, its return and outputs kept for comparison: diff_redis's
 * --backend mode runs each on a shm store and on a Redis handle and
 * compares them.
 *
 * A command whose arguments the typed call cannot express (a wrong arity,
 * an integer that is not one, an unknown or repeated option) is not
 * mapped: the caller sends it through shmkv_exec instead. No Criterion.
 */
#ifndef SHMKV_DIFF_TYPED_H
#define SHMKV_DIFF_TYPED_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "helpers/diff_gen.h"
#include "shmkv.h"

/* What a typed call gave. */
struct dt_result {
	int ret;     /* the call's return */
	int64_t num; /* an integer output (INCR's, PTTL's ...) */
	int has_num;
	size_t len;	/* a value output's length (1 or -ENOBUFS) */
	char buf[4096]; /* its bytes, when ret is 1 */
	int ttl;	/* num is a TTL (1: seconds, 2: ms): compared loosely */
};

/*
 * Runs @c on @kv as its typed call, with a value buffer of @cap bytes
 * (at most sizeof buf; a small one reaches -ENOBUFS). Return: 1 when it
 * ran (the result in @r), 0 when @c has no typed form.
 */
int dt_run(shmkv_t *kv, const struct dg_cmd *c, size_t cap,
	   struct dt_result *r);

/* Are @a and @b the same answer? (TTLs within the time between them.) */
int dt_equal(const struct dt_result *a, const struct dt_result *b);

/* @r on one line, after @who. */
void dt_print(FILE *f, const char *who, const struct dt_result *r);

#endif
