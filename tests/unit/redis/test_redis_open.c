/*
 * test_redis_open.c - opening a store on a Redis server
 * (src/redis_backend.c, redis_link.c): each way it can fail gives its own
 * errno at the open, not at the first command; what the URI selects (the
 * database, the prefix, read-only) keeps handles apart. Each test starts
 * its own redis-server on a loopback port and kills it at the end.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/redis_test.h"
#include "internal.h"
#include "shmkv.h"
#include "shmkv_exec.h"

static struct redis_server srv;

static void stop(void)
{
	redis_server_cleanup(&srv);
}

TestSuite(redis_open, .fini = stop);

static void start(const struct rt_opts *o)
{
	int rc = rt_start(&srv, "redis-open", o);

	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0, "redis-server did not start (%s)", srv.log_path);
}

/* shmkv_exec of @line's words (space-separated), its reply's text or
 * integer into @out. Return: shmkv_exec's. */
static int run(shmkv_t *kv, const char *line, char *out, size_t n)
{
	char buf[256], *save = NULL;
	const char *argv[16];
	size_t len[16];
	struct shmkv_reply r;
	int argc = 0, rc;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *w = strtok_r(buf, " ", &save); w && argc < 16;
	     w = strtok_r(NULL, " ", &save)) {
		argv[argc] = w;
		len[argc++] = strlen(w);
	}
	rc = shmkv_exec(kv, argc, argv, len, &r);
	if (r.type == SHMKV_REPLY_INTEGER)
		snprintf(out, n, ":%lld", r.integer);
	else if (r.type == SHMKV_REPLY_NIL)
		snprintf(out, n, "(nil)");
	else
		snprintf(out, n, "%c%.*s",
			 r.type == SHMKV_REPLY_ERROR ? '-' : '+', (int)r.len,
			 r.str ? r.str : "");
	shmkv_reply_free(&r);
	return rc;
}

#define ASSERT_RUN(kv, line, want)                                             \
	do {                                                                   \
		char got_[256];                                                \
		run(kv, line, got_, sizeof(got_));                             \
		cr_assert_str_eq(got_, want, "%s", line);                      \
	} while (0)

static shmkv_t *open_ok(const char *tail, unsigned flags)
{
	char uri[256];
	shmkv_t *kv = NULL;
	int rc;

	rt_uri(uri, sizeof(uri), &srv, tail);
	rc = shmkv_open(uri, flags, &kv);
	cr_assert_eq(rc, 0, "%s: %s", uri, shmkv_strerror(rc));
	return kv;
}

static int open_rc(const char *tail)
{
	char uri[256];
	shmkv_t *kv = NULL;
	int rc;

	rt_uri(uri, sizeof(uri), &srv, tail);
	rc = shmkv_open(uri, 0, &kv);
	if (rc == 0)
		shmkv_close(kv);
	else
		cr_assert_null(kv, "a failed open wrote the handle");
	return rc;
}

Test(redis_open, a_port_nobody_listens_on_is_econnrefused_at_open)
{
	start(NULL);
	redis_server_stop(&srv);
	cr_assert_eq(open_rc(""), -ECONNREFUSED);
}

/* A listener whose accept queue is full (backlog 0, never accepting)
 * drops further SYNs: a connect there can only time out. */
Test(redis_open, a_connect_that_is_never_answered_times_out_at_open)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int l = socket(AF_INET, SOCK_STREAM, 0), c[4];
	char uri[128];
	shmkv_t *kv = NULL;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_geq(l, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(l, 0), 0);
	cr_assert_eq(getsockname(l, (struct sockaddr *)&a, &alen), 0);
	for (int i = 0; i < 4; i++) {
		c[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		connect(c[i], (struct sockaddr *)&a, sizeof(a));
	}
	snprintf(uri, sizeof(uri), "redis://127.0.0.1:%d?connect_timeout=100",
		 ntohs(a.sin_port));
	cr_assert_eq(shmkv_open(uri, 0, &kv), -ETIMEDOUT);
	cr_assert_null(kv);
	for (int i = 0; i < 4; i++)
		close(c[i]);
	close(l);
}

Test(redis_open, create_and_open_or_create_open_the_database)
{
	char uri[256];
	struct shmkv_config cfg;
	shmkv_t *kv;

	start(NULL);
	rt_uri(uri, sizeof(uri), &srv, "");
	shmkv_config_init(&cfg);
	cfg.slots = 1024; /* a sizing config: ignored there */
	cr_assert_eq(shmkv_create(uri, &cfg, &kv), 0);
	ASSERT_RUN(kv, "SET k v", "+OK");
	shmkv_close(kv);
	cr_assert_eq(shmkv_open_or_create(uri, NULL, &kv), 0);
	ASSERT_RUN(kv, "GET k", "+v");
	shmkv_close(kv);
	cfg.flags = 1u << 30; /* an option this build does not know */
	cr_assert_eq(shmkv_create(uri, &cfg, &kv), -EINVAL);
	cr_assert_eq(shmkv_open(uri, 1u << 30, &kv), -EINVAL);
	cr_assert_eq(shmkv_unlink(uri), -ENOTSUP);
}

Test(redis_open, requirepass_refuses_no_password_and_a_wrong_one)
{
	static const char *const extra[] = { "--requirepass", "s3cret", NULL };
	struct rt_opts o = { "s3cret", extra };
	shmkv_t *kv;

	start(&o);
	cr_assert_eq(open_rc(""), -EACCES);
	cr_assert_eq(open_rc(""), -EACCES);
	/* rt_uri puts the password in: "redis://:pw@127.0.0.1:port" is
	 * built by hand here. */
	{
		char uri[256];

		snprintf(uri, sizeof(uri), "redis://:wrong@127.0.0.1:%d",
			 srv.port);
		cr_assert_eq(shmkv_open(uri, 0, &kv), -EACCES);
		snprintf(uri, sizeof(uri), "redis://:s3cret@127.0.0.1:%d/1",
			 srv.port);
		cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
		/* The handle's name is the URI with the password masked. */
		cr_assert_null(strstr(((struct shmkv *)kv)->name, "s3cret"));
		cr_assert_not_null(strstr(((struct shmkv *)kv)->name, ":***@"));
		ASSERT_RUN(kv, "SET k v", "+OK");
		shmkv_close(kv);
	}
}

Test(redis_open, an_acl_user_logs_in_with_its_own_password)
{
	redisContext *admin;
	char uri[256];
	shmkv_t *kv;

	start(NULL);
	admin = rt_admin(&srv, NULL);
	cr_assert_not_null(admin);
	cr_assert_eq(rt_cmd_type(admin, REDIS_REPLY_STATUS,
				 "ACL SETUSER alice on >a%%pw ~app:* +@all"),
		     0);
	redisFree(admin);
	/* "a%pw", percent-encoded in the URI. */
	snprintf(uri, sizeof(uri), "redis://alice:a%%25pw@127.0.0.1:%d",
		 srv.port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0);
	/* Alice may touch app:* only: the server's NOPERM is a reply. */
	ASSERT_RUN(kv, "SET app:k v", "+OK");
	{
		char got[256];

		run(kv, "SET other v", got, sizeof(got));
		cr_assert_eq(strncmp(got, "-NOPERM", 7), 0, "%s", got);
	}
	shmkv_close(kv);
	snprintf(uri, sizeof(uri), "redis://alice:nope@127.0.0.1:%d", srv.port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -EACCES);
	snprintf(uri, sizeof(uri), "redis://bob:a%%25pw@127.0.0.1:%d",
		 srv.port);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -EACCES);
}

Test(redis_open, databases_are_apart_and_a_missing_one_is_enxio)
{
	shmkv_t *a, *b;

	start(NULL);
	a = open_ok("/1", 0);
	b = open_ok("/2", 0);
	ASSERT_RUN(a, "SET k one", "+OK");
	ASSERT_RUN(b, "SET k two", "+OK");
	ASSERT_RUN(a, "GET k", "+one");
	ASSERT_RUN(b, "GET k", "+two");
	shmkv_close(a);
	shmkv_close(b);
	cr_assert_eq(open_rc("/16"), -ENXIO); /* 16 databases: 0..15 */
}

Test(redis_open, prefixes_keep_handles_apart_on_one_database)
{
	redisContext *admin;
	redisReply *r;
	shmkv_t *a, *b;

	start(NULL);
	a = open_ok("?prefix=app%3A", 0);
	b = open_ok("?prefix=other:", 0);
	ASSERT_RUN(a, "SET k one", "+OK");
	ASSERT_RUN(b, "GET k", "(nil)");
	ASSERT_RUN(b, "SET k two", "+OK");
	ASSERT_RUN(a, "DEL k k2", ":1");
	ASSERT_RUN(b, "EXISTS k", ":1");
	ASSERT_RUN(a, "DELIFEQ k2 x", ":0");
	ASSERT_RUN(b, "DELIFEQ k two", ":1");
	ASSERT_RUN(a, "SET k three", "+OK");
	admin = rt_admin(&srv, NULL);
	cr_assert_not_null(admin);
	r = redisCommand(admin, "GET app:k");
	cr_assert(r && r->type == REDIS_REPLY_STRING);
	cr_assert_str_eq(r->str, "three");
	freeReplyObject(r);
	redisFree(admin);
	shmkv_close(a);
	shmkv_close(b);
}

Test(redis_open, a_read_only_handle_refuses_writes_as_shm_does)
{
	shmkv_t *rw, *ro;
	char got[256];

	start(NULL);
	rw = open_ok("", 0);
	ro = open_ok("", SHMKV_OPEN_READONLY);
	ASSERT_RUN(rw, "SET k v", "+OK");
	cr_assert_eq(run(ro, "SET k w", got, sizeof(got)), -EROFS);
	cr_assert_eq(run(ro, "DEL k", got, sizeof(got)), -EROFS);
	ASSERT_RUN(ro, "GET k", "+v");
	ASSERT_RUN(ro, "EXISTS k", ":1");
	shmkv_close(rw);
	shmkv_close(ro);
}

Test(redis_open, a_unix_socket_store_works)
{
	char sock[64], port[16], uri[128];
	const char *extra[] = { "--unixsocket", sock, "--unixsocketperm", "700",
				NULL };
	struct rt_opts o = { NULL, extra };
	shmkv_t *kv;

	snprintf(sock, sizeof(sock), "/tmp/shmkv-redis-test-%d.sock",
		 (int)getpid());
	(void)port;
	start(&o);
	snprintf(uri, sizeof(uri), "redis+unix://%s?db=3&prefix=u:", sock);
	cr_assert_eq(shmkv_open(uri, 0, &kv), 0, "%s", uri);
	ASSERT_RUN(kv, "SET k v", "+OK");
	ASSERT_RUN(kv, "GET k", "+v");
	shmkv_close(kv);
	snprintf(uri, sizeof(uri), "redis+unix://%s.none", sock);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -ECONNREFUSED);
	unlink(sock);
}

Test(redis_open, shm_only_calls_say_enotsup_and_the_life_word_is_remote)
{
	shmkv_t *kv;
	uint64_t bytes;

	start(NULL);
	kv = open_ok("", 0);
	cr_assert_eq(shmkv_huge_mapped(kv, &bytes), -ENOTSUP);
	/* (sweep, recover, check, stats: s15-typed's hooks in maint.c and
	 * check.c, tested by its test_audit.c.) */
	cr_assert_eq(shmkv_maintain(kv), -ENOTSUP);
	cr_assert_eq(shmkv_set_max_memory(kv, 1 << 20), -ENOTSUP);
	/* Every command's slow path answers SHMKV__REMOTE, with nothing of
	 * a segment read. */
	cr_assert_null(shmkv__table_now(kv));
	cr_assert_eq(shmkv__life_error(kv), SHMKV__REMOTE);
	cr_assert_eq(shmkv__live(kv), -EREMOTE);
	shmkv_close(kv);
}
