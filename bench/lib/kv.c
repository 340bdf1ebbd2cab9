/*
 * kv.c - what every implementation of the benchmarks' command interface
 * (kv.h) shares: setting a kv up, its output buffer, closing it.
 */
#include "kv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_cmd_name[BCMD_N] = {
	"GET", "SET", "SETNX", "GETSET", "DEL", "DELIFEQ", "INCR",
};

int bench_kv_out_init(struct bench_kv *kv, uint32_t value_max)
{
	/* Room for a formatted INCR result too. */
	size_t cap = value_max < 32 ? 32 : value_max;

	kv->out.buf = malloc(cap);
	kv->out.cap = cap;
	kv->out.len = 0;
	return kv->out.buf ? 0 : -ENOMEM;
}

int bench_kv_give(struct bench_kv *kv, const void *val, size_t len)
{
	kv->out.len = len;
	if (len > kv->out.cap)
		return -ENOBUFS;
	memcpy(kv->out.buf, val, len);
	return 1;
}

void bench_kv_init(struct bench_kv *kv, const struct bench_kv_ops *ops,
		   const char *keys, uint32_t n, void *impl)
{
	memset(kv, 0, sizeof(*kv));
	kv->ops = ops;
	kv->keys = keys;
	kv->n = n;
	kv->impl = impl;
}

void bench_kv_close(struct bench_kv *kv)
{
	if (kv->impl && kv->ops && kv->ops->close) {
		kv->ops->close(kv);
		free(kv->impl);
	}
	free(kv->out.buf);
	memset(kv, 0, sizeof(*kv));
}
