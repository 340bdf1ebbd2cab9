/*
 * exec_run.h - running shmkv_exec() in the unit tests and asserting on
 * its replies (test_exec.c, test_exec_options.c).
 *
 * The last reply is kept in ex_reply and freed by the next command (or
 * when the test's process ends: Criterion runs each test in its own);
 * shmkv_exec()'s return code is in ex_rc.
 */
#ifndef SHMKV_EXEC_RUN_H
#define SHMKV_EXEC_RUN_H

#include "helpers/testutil.h"
#include "shmkv_exec.h"

#define EXEC_ARGS_MAX 16

extern struct shmkv_reply ex_reply;
extern int ex_rc;

/* Runs a command given as (pointer, length) pairs, ended by NULL. */
const struct shmkv_reply *ex_runb(shmkv_t *kv, ...);
/* Runs a command given as C strings, ended by NULL. */
const struct shmkv_reply *ex_run(shmkv_t *kv, ...);

/* "status", "error", ... for a failure message. */
const char *ex_type_name(enum shmkv_reply_type t);

/* The arguments are C strings; the sentinel is added here. */
#define RUN(...) ex_run(tu_kv, __VA_ARGS__, (const char *)NULL)
/* The arguments are LIT() pairs. */
#define RUNB(...) ex_runb(tu_kv, __VA_ARGS__, (const char *)NULL)

#define assert_type(r, t)                                                      \
	cr_assert_eq((r)->type, (t), "reply is %s \"%.*s\", expected %s",      \
		     ex_type_name((r)->type), (int)(r)->len,                   \
		     (r)->str ? (r)->str : "", ex_type_name(t))

/* The reply is exactly @n bytes at @p, of type @t. */
#define assert_str(r, t, p, n)                                                 \
	do {                                                                   \
		const struct shmkv_reply *r_ = (r);                            \
		size_t n_ = (n);                                               \
		assert_type(r_, t);                                            \
		cr_assert_eq(r_->len, n_,                                      \
			     "reply \"%.*s\" has %zu bytes, "                  \
			     "expected %zu",                                   \
			     (int)r_->len, r_->str, r_->len, n_);              \
		cr_assert(n_ == 0 || memcmp(r_->str, (p), n_) == 0,            \
			  "reply is \"%.*s\", expected \"%.*s\"",              \
			  (int)r_->len, r_->str, (int)n_, (const char *)(p));  \
	} while (0)

/* A Redis error is a reply, and shmkv_exec still returns 0. */
#define assert_error(r, text)                                                  \
	do {                                                                   \
		assert_str(r, SHMKV_REPLY_ERROR, text, strlen(text));          \
		tu_assert_rc(ex_rc, 0);                                        \
	} while (0)
#define assert_status(r, text)                                                 \
	assert_str(r, SHMKV_REPLY_STATUS, text, strlen(text))
#define assert_bulk(r, text) assert_str(r, SHMKV_REPLY_BULK, text, strlen(text))
#define assert_int(r, v)                                                       \
	do {                                                                   \
		const struct shmkv_reply *ri_ = (r);                           \
		assert_type(ri_, SHMKV_REPLY_INTEGER);                         \
		cr_assert_eq(ri_->integer, (long long)(v),                     \
			     "integer %lld, expected %lld", ri_->integer,      \
			     (long long)(v));                                  \
	} while (0)
#define assert_nil(r) assert_type(r, SHMKV_REPLY_NIL)

/* A TTL of @secs just set: TTL rounds to the nearest second, and a busy
 * machine may let half a second or so pass before the TTL is read. */
#define assert_ttl(r, secs)                                                    \
	do {                                                                   \
		const struct shmkv_reply *rt_ = (r);                           \
		assert_type(rt_, SHMKV_REPLY_INTEGER);                         \
		cr_assert(rt_->integer <= (secs) && rt_->integer >= (secs)-5,  \
			  "TTL %lld, expected %d or a little less",            \
			  rt_->integer, (secs));                               \
	} while (0)

#endif /* SHMKV_EXEC_RUN_H */
