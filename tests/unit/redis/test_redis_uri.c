/*
 * test_redis_uri.c - the Redis store names (src/redis_uri.c): every part
 * parsed, and anything malformed refused with a reason and nothing left
 * in the struct (how a name is shown: test_name_redact.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "redis.h"

static struct shmkv_redis_uri parse_ok(const char *s)
{
	struct shmkv_redis_uri u;
	const char *why = NULL;
	int err = shmkv__redis_uri_parse(s, &u, &why);

	cr_assert_eq(err, 0, "%s: %s", s, why ? why : "?");
	return u;
}

Test(redis_uri, a_plain_host_gets_port_6379_db_0_and_the_default_timeouts)
{
	struct shmkv_redis_uri u = parse_ok("redis://localhost");

	cr_assert_eq(u.kind, SHMKV_REDIS_TCP);
	cr_assert_eq(u.nseeds, 1);
	cr_assert_str_eq(u.seeds[0].host, "localhost");
	cr_assert_eq(u.seeds[0].port, 6379);
	cr_assert_eq(u.db, 0);
	cr_assert_eq(u.prefix_len, 0);
	cr_assert_str_eq(u.password, "");
	cr_assert_eq(u.connect_timeout_ms, 2000);
	cr_assert_eq(u.command_timeout_ms, 5000);
}

Test(redis_uri, every_part_of_a_tcp_uri_is_read)
{
	struct shmkv_redis_uri u = parse_ok(
		"REDIS://app%40x:p%40ss%3Aw@10.1.2.3:7000/5?prefix=app%3A1:&"
		"timeout=250&connect_timeout=40");

	cr_assert_eq(u.kind, SHMKV_REDIS_TCP);
	cr_assert_str_eq(u.user, "app@x");
	cr_assert_str_eq(u.password, "p@ss:w");
	cr_assert_str_eq(u.seeds[0].host, "10.1.2.3");
	cr_assert_eq(u.seeds[0].port, 7000);
	cr_assert_eq(u.db, 5);
	cr_assert_str_eq(u.prefix, "app:1:");
	cr_assert_eq(u.prefix_len, 6);
	cr_assert_eq(u.command_timeout_ms, 250);
	cr_assert_eq(u.connect_timeout_ms, 40);
}

Test(redis_uri, a_password_alone_is_written_with_an_empty_user)
{
	struct shmkv_redis_uri u = parse_ok("redis://:secret@h:1");

	cr_assert_str_eq(u.user, "");
	cr_assert_str_eq(u.password, "secret");
}

Test(redis_uri, ipv6_literals_are_in_brackets_with_or_without_a_port)
{
	struct shmkv_redis_uri u = parse_ok("redis://[::1]:6380/1");

	cr_assert_str_eq(u.seeds[0].host, "::1");
	cr_assert_eq(u.seeds[0].port, 6380);
	cr_assert_eq(u.db, 1);
	u = parse_ok("redis://[fe80::1]");
	cr_assert_str_eq(u.seeds[0].host, "fe80::1");
	cr_assert_eq(u.seeds[0].port, 6379);
}

Test(redis_uri, a_unix_socket_takes_its_db_and_prefix_in_the_query)
{
	struct shmkv_redis_uri u = parse_ok(
		"redis+unix://:pw@/run/redis/r.sock?db=3&prefix=p");

	cr_assert_eq(u.kind, SHMKV_REDIS_UNIX);
	cr_assert_str_eq(u.path, "/run/redis/r.sock");
	cr_assert_eq(u.db, 3);
	cr_assert_str_eq(u.prefix, "p");
	cr_assert_str_eq(u.password, "pw");
	cr_assert_eq(u.nseeds, 0);
}

Test(redis_uri, a_cluster_takes_a_list_of_seeds)
{
	struct shmkv_redis_uri u = parse_ok(
		"redis+cluster://a:7000,[::1]:7001,c?prefix=x");

	cr_assert_eq(u.kind, SHMKV_REDIS_CLUSTER);
	cr_assert_eq(u.nseeds, 3);
	cr_assert_str_eq(u.seeds[0].host, "a");
	cr_assert_eq(u.seeds[0].port, 7000);
	cr_assert_str_eq(u.seeds[1].host, "::1");
	cr_assert_eq(u.seeds[1].port, 7001);
	cr_assert_str_eq(u.seeds[2].host, "c");
	cr_assert_eq(u.seeds[2].port, 6379);
	cr_assert_eq(u.db, 0);
}

Test(redis_uri, timeout_zero_means_none_and_db_may_be_large)
{
	struct shmkv_redis_uri u = parse_ok("redis://h/2147483647?timeout=0");

	cr_assert_eq(u.command_timeout_ms, 0);
	cr_assert_eq(u.db, 2147483647);
}

static void assert_bad(const char *s)
{
	struct shmkv_redis_uri u;
	const char *why = NULL;
	static const struct shmkv_redis_uri zero;

	memset(&u, 0x5a, sizeof(u));
	cr_assert_eq(shmkv__redis_uri_parse(s, &u, &why), -EINVAL, "%s", s);
	cr_assert_not_null(why, "%s: no reason", s);
	cr_assert(strlen(why) > 5, "%s", s);
	cr_assert_eq(memcmp(&u, &zero, sizeof(u)), 0,
		     "%s: the struct keeps what was parsed", s);
}

Test(redis_uri, anything_malformed_is_einval_with_a_reason)
{
	static const char *const bad[] = {
		"redis://",		       /* no host */
		"redis://:pw@",		       /* no host */
		"redis://h:0",		       /* port range */
		"redis://h:65536",	       /* port range */
		"redis://h:",		       /* empty port */
		"redis://h:12x",	       /* port not a number */
		"redis://h/x",		       /* db not a number */
		"redis://h/-1",		       /* db range */
		"redis://h/2147483648",	       /* db range */
		"redis://h/1/2",	       /* a path past the db */
		"redis://h?db=1",	       /* db in the query, TCP */
		"redis://h?foo=1",	       /* unknown key */
		"redis://h?prefix",	       /* key without = */
		"redis://h?prefix=a&prefix=b", /* twice */
		"redis://h?timeout=-1",	       /* range */
		"redis://h?timeout=86400001",  /* range */
		"redis://h?connect_timeout=0", /* range */
		"redis://h?prefix=a&",	       /* trailing & */
		"redis://h#frag",	       /* fragment */
		"redis://user@h",	       /* user without password */
		"redis://user:@h",	       /* empty password */
		"redis://:p%zz@h",	       /* bad escape */
		"redis://:p%00@h",	       /* NUL */
		"redis://:p%4@h",	       /* short escape */
		"redis://h?prefix=%00",	       /* NUL */
		"redis://a,b",		       /* list outside a cluster */
		"redis://h h",		       /* bad host char */
		"redis://[::1",		       /* no ] */
		"redis://[::1]x",	       /* text after ] */
		"redis://[g::1]",	       /* not v6 */
		"redis+cluster://a,b/1",       /* db on a cluster */
		"redis+cluster://a,,b",	       /* empty seed */
		"redis+unix://",	       /* no path */
		"redis+unix://host/sock",      /* a host */
		"redis+unix:///s?db=x",	       /* db */
		"redis+unix:///s%20x",	       /* % in a path */
		"rediss://h",		       /* TLS: not built */
		"http://h",
		"redis:/h",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_bad(bad[i]);
}

Test(redis_uri, over_long_fields_are_refused)
{
	char s[2048];
	char longp[SHMKV_REDIS_PREFIX_MAX + 2];
	char longh[SHMKV_REDIS_HOST_MAX + 2];
	char longpath[SHMKV_REDIS_PATH_MAX + 2];
	char seeds[17 * 4 + 1] = "";

	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	snprintf(s, sizeof(s), "redis://h?prefix=%s", longp);
	assert_bad(s);
	longp[sizeof(longp) - 2] = '\0'; /* exactly the maximum: fine */
	snprintf(s, sizeof(s), "redis://h?prefix=%s", longp);
	cr_assert_eq(parse_ok(s).prefix_len, SHMKV_REDIS_PREFIX_MAX);

	memset(longh, 'h', sizeof(longh) - 1);
	longh[sizeof(longh) - 1] = '\0';
	snprintf(s, sizeof(s), "redis://%s", longh);
	assert_bad(s);

	memset(longpath, 'x', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	snprintf(s, sizeof(s), "redis+unix://%s", longpath);
	assert_bad(s);

	for (int i = 0; i < 17; i++)
		strcat(seeds, i ? ",h:1" : "h:1");
	snprintf(s, sizeof(s), "redis+cluster://%s", seeds);
	assert_bad(s);
}
