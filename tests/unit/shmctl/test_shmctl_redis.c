/*
 * test_shmctl_redis.c - shmctl on a store that is a Redis server: a URI
 * where a store name goes (data commands, keys, scan, dbsize, the prompt),
 * info's view of the backend, the segment verbs refused, and a URI's
 * password never printed. Each test runs its own redis-server.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers/redis_handle.h"
#include "helpers/shmctl_run.h"

static struct rh_server srv;

static void setup(void)
{
	int r = rh_start(&srv, "shmctl_redis");

	if (r == 1)
		cr_skip_test("redis-server is not installed");
	cr_assert_eq(r, 0, "redis-server would not start");
}

static void teardown(void)
{
	rh_stop(&srv);
}

TestSuite(shmctl_redis, .init = setup, .fini = teardown);

Test(shmctl_redis, data_commands_take_a_uri)
{
	struct run r;

	r = RUN(srv.uri, "set", "k", "v");
	assert_reply(r, 0, "OK\n");
	r = RUN(srv.uri, "get", "k");
	assert_reply(r, 0, "v\n");
	r = RUN(srv.uri, "incr", "n");
	assert_reply(r, 0, "1\n");
	r = RUN(srv.uri, "ttl", "k");
	assert_reply(r, 0, "-1\n");
	r = RUN(srv.uri, "get", "nope");
	assert_code(r, 1);
}

Test(shmctl_redis, keys_scan_and_dbsize_see_the_prefix_only)
{
	char u[200];
	struct run r;

	rh_uri(&srv, "?prefix=p:", u, sizeof(u));
	assert_code(RUN(u, "set", "a", "1"), 0);
	assert_code(RUN(u, "set", "b", "2"), 0);
	assert_code(RUN(srv.uri, "set", "outside", "3"), 0);
	r = RUN("keys", u);
	assert_code(r, 0);
	assert_has(r.out, "a\n");
	assert_has(r.out, "b\n");
	assert_lacks(r.out, "p:");
	assert_lacks(r.out, "outside");
	r = RUN(u, "dbsize");
	assert_reply(r, 0, "2\n");
	r = RUN(srv.uri, "dbsize");
	assert_reply(r, 0, "3\n");
	r = RUN("scan", u, "0");
	assert_code(r, 0);
	assert_has(r.out, "a\n");
}

Test(shmctl_redis, info_shows_the_backend)
{
	struct run r = RUN("info", srv.uri);

	assert_code(r, 0);
	assert_has(r.out, "backend:      Redis, one server");
	assert_has(r.out, "role master");
	assert_has(r.out, "keys:         0 (db 0)");
	r = RUN("info", "--json", srv.uri);
	assert_code(r, 0);
	assert_has(r.out, "\"backend\":\"redis\"");
	assert_has(r.out, "\"mode\":\"single\"");
}

Test(shmctl_redis, segment_verbs_refuse_a_uri)
{
	static const char *const verbs[] = { "create",	"destroy", "check",
					     "recover", "sweep",   "maintain",
					     "dump",	"watch" };

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		struct run r = RUN(verbs[i], srv.uri);

		assert_code(r, 2);
		assert_has(r.err, "is for shared-memory stores");
	}
	/* The verb after the store, as for a shm store. */
	assert_code(RUN(srv.uri, "check"), 2);
}

Test(shmctl_redis, a_password_never_shows)
{
	char u[200];
	struct run r;

	snprintf(u, sizeof(u), "redis://user:s3cret@127.0.0.1:%d", srv.s.port);
	r = RUN(u, "get", "k"); /* no such user: AUTH refused */
	assert_code(r, 3);
	assert_has(r.err, "redis://user:***@127.0.0.1");
	assert_lacks(r.err, "s3cret");
	r = RUN("check", u);
	assert_code(r, 2);
	assert_lacks(r.err, "s3cret");
	r = RUN("info", u);
	assert_lacks(r.err, "s3cret");
	assert_lacks(r.out, "s3cret");
}

Test(shmctl_redis, locks_lists_the_servers_locks)
{
	struct run r = RUN("locks", srv.uri);

	assert_code(r, 0);
	assert_has(r.out, "no locks");
}

Test(shmctl_redis, the_prompt_runs_on_a_uri)
{
	struct run r = RUN_STDIN("set k 42\nincr k\nget k\n", srv.uri);

	assert_code(r, 0);
	assert_has(r.out, "43");
}
