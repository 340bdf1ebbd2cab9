/*
 * test_shmctl_redact.c - no byte of a Redis URI's password in anything
 * shmctl prints: errors, prompts, "locks", "info", "keys", JSON, for
 * well-formed URIs and for ones the parser refuses (a password with a raw
 * '/', '?', '#' or '@').
 *
 * The passwords are made of the pairs QZ, XJ and KV, which no other part
 * of these runs prints.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "helpers/redis_test.h"
#include "helpers/shmctl_run.h"

static void assert_no_password(struct run r, const char *uri)
{
	static const char *const parts[] = { "QZ", "XJ", "KV" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		cr_assert_null(strstr(r.out, parts[i]),
			       "%s: stdout shows the password:\n%s", uri,
			       r.out);
		cr_assert_null(strstr(r.err, parts[i]),
			       "%s: stderr shows the password:\n%s", uri,
			       r.err);
	}
}

/* Every verb that takes a store name, on @uri. */
static void assert_no_verb_shows_it(const char *uri)
{
	assert_no_password(RUN("locks", uri), uri);
	assert_no_password(RUN("locks", "--json", uri), uri);
	assert_no_password(RUN(uri, "get", "k"), uri);
	assert_no_password(RUN(uri, "set", "k", "v"), uri);
	assert_no_password(RUN("info", uri), uri);
	assert_no_password(RUN("info", "--json", uri), uri);
	assert_no_password(RUN("keys", uri), uri);
	assert_no_password(RUN("keys", "--json", uri), uri);
	assert_no_password(RUN("scan", uri, "0"), uri);
	assert_no_password(RUN("config", uri, "get", "*"), uri);
	assert_no_password(RUN("create", uri), uri);
	assert_no_password(RUN("destroy", "--force", uri), uri);
	assert_no_password(RUN("check", uri), uri);
	assert_no_password(RUN("restore", uri, "/nonexistent"), uri);
	assert_no_password(RUN("help", uri), uri);
	assert_no_password(RUN_STDIN("get k\n", uri), uri);
}

/* Port 1: nothing listens, every open fails at once. */
Test(shmctl_redact, an_unreachable_servers_password_never_shows)
{
	assert_no_verb_shows_it("redis://:QZXJ@127.0.0.1:1");
	assert_no_verb_shows_it("redis://app:QZXJ@127.0.0.1:1/0");
	assert_no_verb_shows_it("redis+cluster://:QZXJ@127.0.0.1:1");
	assert_no_verb_shows_it("redis+unix://:QZXJ@/nonexistent/sock");
}

Test(shmctl_redact, a_password_with_raw_separators_never_shows)
{
	static const char *const uris[] = {
		"redis://:QZ/XJ@127.0.0.1:1",
		"redis://:QZ?XJ@127.0.0.1:1",
		"redis://:QZ#XJ@127.0.0.1:1",
		"redis://u:QZ@XJ@127.0.0.1:1",
		"redis://u:QZ/XJ?KV#QZ@127.0.0.1:1/0",
		"redis+unix://:QZ/XJ@/nonexistent/sock",
		"redis+cluster://:QZ,XJ@127.0.0.1:1",
		"redis://u:QZXJ",
		"redis://127.0.0.1:1?password=QZXJ",
		"redis:/:QZXJ@127.0.0.1:1",
		"redis::QZXJ@127.0.0.1", /* a shm name to shmctl */
	};

	for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++)
		assert_no_verb_shows_it(uris[i]);
}

/* A server that wants the password: the opens succeed, and what the
 * verbs print on success names the store too. */
static struct redis_server srv;

static void start_with_password(void)
{
	static const char *const extra[] = { "--requirepass", "QZ/XJ", NULL };
	struct rt_opts o = { "QZ/XJ", extra };
	int rc = rt_start(&srv, "shmctl-redact", &o);

	if (rc == -2)
		cr_skip_test("no redis-server (apt-get install redis-server)");
	cr_assert_eq(rc, 0, "redis-server did not start (%s)", srv.log_path);
}

static void stop(void)
{
	redis_server_cleanup(&srv);
}

TestSuite(shmctl_redact_server, .init = start_with_password, .fini = stop);

Test(shmctl_redact_server, what_a_verb_prints_on_success_shows_no_password)
{
	char uri[128], shown[128];
	struct run r;

	snprintf(uri, sizeof(uri), "redis://:QZ%%2FXJ@127.0.0.1:%d", srv.port);
	snprintf(shown, sizeof(shown), "redis://:***@127.0.0.1:%d", srv.port);
	r = RUN("locks", uri);
	assert_code(r, 0);
	assert_has(r.out, shown);
	assert_has(r.out, "no locks");
	assert_no_password(r, uri);
	r = RUN("locks", "--json", uri);
	assert_code(r, 0);
	assert_has(r.out, shown);
	assert_no_password(r, uri);
	r = RUN(uri, "set", "k", "v");
	assert_reply(r, 0, "OK\n");
	r = RUN("keys", "--json", uri);
	assert_code(r, 0);
	assert_no_password(r, uri);
	r = RUN("info", uri);
	assert_code(r, 0);
	assert_no_password(r, uri);
	r = RUN_STDIN("get k\n", uri);
	assert_code(r, 0);
	assert_no_password(r, uri);
	assert_no_verb_shows_it(uri);
}

Test(shmctl_redact_server, the_raw_password_the_parser_refuses_never_shows)
{
	char uri[128];

	snprintf(uri, sizeof(uri), "redis://:QZ/XJ@127.0.0.1:%d", srv.port);
	assert_no_verb_shows_it(uri);
}
