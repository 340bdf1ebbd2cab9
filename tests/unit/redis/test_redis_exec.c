/*
 * test_redis_exec.c - shmkv_exec on a Redis handle (src/redis_exec.c)
 * replies as on a shared-memory store: the same commands, run on both,
 * give equal replies (type, integer, bytes), errors included.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helpers/redis_test.h"
#include "helpers/testutil.h"
#include "shmkv.h"
#include "shmkv_exec.h"

static struct redis_server srv;

static void stop(void)
{
	redis_server_cleanup(&srv);
	tu_teardown();
}

TestSuite(redis_exec, .fini = stop);

struct run {
	int rc;
	struct shmkv_reply r;
};

static struct run run(shmkv_t *kv, const char *line)
{
	char buf[256], *save = NULL;
	const char *argv[16];
	size_t len[16];
	struct run out;
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *w = strtok_r(buf, " ", &save); w && argc < 16;
	     w = strtok_r(NULL, " ", &save)) {
		/* "_" is an empty argument. */
		argv[argc] = strcmp(w, "_") == 0 ? "" : w;
		len[argc] = strlen(argv[argc]);
		argc++;
	}
	out.rc = shmkv_exec(kv, argc, argv, len, &out.r);
	return out;
}

static const char *const script[] = {
	"PING",
	"PING hello",
	"GET k",
	"SET k v",
	"GET k",
	"SET k v2 NX",
	"SET k v3 XX GET",
	"SET k v4 NX XX",
	"SET k v EX 0",
	"SET k v EX abc",
	"SET k v PX 100 EX 100",
	"SET k v KEEPTTL",
	"SETNX k x",
	"SETNX k2 x",
	"GETSET k v5",
	"GETDEL k2",
	"GETDEL k2",
	"GETEX k",
	"GETEX k PERSIST",
	"GETEX k EX -1",
	"GETEX missing EX 10",
	"INCR n",
	"INCRBY n 41",
	"DECR n",
	"DECRBY n 2",
	"INCR k",
	"INCRBY n x",
	"INCRBY n 9223372036854775807",
	"DECRBY n -9223372036854775808",
	"EXISTS k n missing k",
	"TTL k",
	"TTL missing",
	"PTTL missing",
	"EXPIRE k 1000",
	"EXPIRE k 1000 NX",
	"EXPIRE k 1000 NX XX",
	"EXPIRE k 1000 GT LT",
	"EXPIRE k abc",
	"PERSIST k",
	"PERSIST k",
	"TTL k",
	"EXPIREAT missing 1",
	"PEXPIRE k 0",
	"GET k",
	"SET k _",
	"GET k",
	"DELIFEQ k x",
	"DELIFEQ k _",
	"DELIFEQ k _",
	"DEL n k missing",
	"GET",
	"SET k",
	"HSET h f v",
	"get n",
	"FLUSHALL",
};

Test(redis_exec, replies_equal_the_shared_memory_stores)
{
	char uri[256], name[TU_NAME_CAP];
	shmkv_t *shm, *rds;
	int rc = rt_start(&srv, "redis-exec", NULL);

	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0, "redis-server did not start (%s)", srv.log_path);
	shm = tu_create(NULL, name);
	rt_uri(uri, sizeof(uri), &srv, "/3?prefix=exec:");
	cr_assert_eq(shmkv_open(uri, 0, &rds), 0);
	for (size_t i = 0; i < sizeof(script) / sizeof(script[0]); i++) {
		struct run a = run(shm, script[i]), b = run(rds, script[i]);

		cr_assert_eq(b.rc, a.rc, "%s: rc %d, shm's %d", script[i], b.rc,
			     a.rc);
		cr_assert_eq(b.r.type, a.r.type, "%s: type %d, shm's %d (%s)",
			     script[i], b.r.type, a.r.type,
			     b.r.str ? b.r.str : "");
		cr_assert_eq(b.r.integer, a.r.integer, "%s", script[i]);
		cr_assert_eq(b.r.len, a.r.len, "%s: '%s', shm's '%s'",
			     script[i], b.r.str ? b.r.str : "",
			     a.r.str ? a.r.str : "");
		cr_assert(a.r.len == 0 ||
				  memcmp(a.r.str, b.r.str, a.r.len) == 0,
			  "%s: '%s', shm's '%s'", script[i], b.r.str, a.r.str);
		shmkv_reply_free(&a.r);
		shmkv_reply_free(&b.r);
	}
	shmkv_close(rds);
	shmkv_close(shm);
}

Test(redis_exec, a_dropped_connection_is_an_error_reply_with_its_errno)
{
	char uri[256];
	shmkv_t *rds;
	struct run a;
	int rc = rt_start(&srv, "redis-exec", NULL);

	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0);
	rt_uri(uri, sizeof(uri), &srv, "");
	cr_assert_eq(shmkv_open(uri, 0, &rds), 0);
	redis_server_stop(&srv);
	a = run(rds, "GET k");
	cr_assert_eq(a.rc, -ECONNREFUSED);
	cr_assert_eq(a.r.type, SHMKV_REPLY_ERROR);
	cr_assert_not_null(strstr(a.r.str, "refused"), "%s", a.r.str);
	shmkv_reply_free(&a.r);
	shmkv_close(rds);
}
