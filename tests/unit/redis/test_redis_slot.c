/*
 * test_redis_slot.c - redis_slot.c: key slots equal the server's CLUSTER
 * KEYSLOT (random keys, hash tags, empty and unmatched braces, binary
 * bytes), and MOVED / ASK replies parsed, malformed ones refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/redis_cluster.h"
#include "helpers/redis_server.h"
#include "helpers/resp.h"
#include "helpers/rng.h"
#include "redis.h"

static unsigned slot_of(const char *s)
{
	return shmkv__redis_key_slot(s, strlen(s));
}

Test(redis_slot, matches_the_published_examples)
{
	/* CRC16-XMODEM's check value, and slots Redis's docs print. */
	cr_assert_eq(slot_of("123456789"), 0x31c3 & 16383);
	cr_assert_eq(slot_of("foo"), 12182);
	cr_assert_eq(slot_of("bar"), 5061);
	cr_assert_eq(slot_of(""), 0);
	cr_assert_eq(slot_of("{user1000}.following"),
		     slot_of("{user1000}.followers"));
	cr_assert_eq(slot_of("{user1000}.following"), slot_of("user1000"));
}

Test(redis_slot, a_tag_is_the_first_brace_pair_and_never_empty)
{
	cr_assert_eq(slot_of("a{b}c"), slot_of("b"));
	cr_assert_eq(slot_of("{}b"), shmkv__redis_key_slot("{}b", 3));
	cr_assert_neq(slot_of("{}b"), slot_of("b"), "an empty tag is no tag");
	cr_assert_eq(slot_of("{{b}}"), slot_of("{b"), "first { to first }");
	cr_assert_eq(slot_of("x{a}{b}"), slot_of("a"));
	cr_assert_eq(slot_of("}a{b"), shmkv__redis_key_slot("}a{b", 4));
	cr_assert_neq(slot_of("{b"), slot_of("b"), "an unmatched { is no tag");
	cr_assert_eq(shmkv__redis_key_slot("{a\0}z", 5),
		     shmkv__redis_key_slot("a\0", 2), "binary tags");
}

/* A key drawn to hit the tag rules often: bytes from a small alphabet
 * rich in braces, sometimes any byte (NUL included). */
static size_t random_key(uint64_t *rng, char *k)
{
	static const char abc[] = "{}{}ab:x";
	size_t n = rng_below(rng, 12), i;

	for (i = 0; i < n; i++)
		k[i] = rng_below(rng, 4) ? abc[rng_below(rng, sizeof(abc) - 1)]
					 : (char)rng_below(rng, 256);
	return n;
}

/* Keys at the corners of the tag rule (lengths given: some hold NULs). */
static const struct {
	const char *k;
	size_t len;
} fixed[] = {
	{ "", 0 },	  { "{}", 2 },	   { "{}a", 3 },      { "a{}", 3 },
	{ "{", 1 },	  { "}", 1 },	   { "}{", 2 },	      { "{a", 2 },
	{ "a}", 2 },	  { "{a}", 3 },	   { "{{a}}", 5 },    { "}{a}", 4 },
	{ "{a}{b}", 6 },  { "{}{a}", 5 },  { "a{b}c{d}", 8 }, { "{\0}", 3 },
	{ "\0{x}\0", 5 }, { "{\xff}", 3 }, { "{ }", 3 },      { "x{{}}", 5 },
};
#define NFIXED (int)(sizeof(fixed) / sizeof(fixed[0]))

Test(redis_slot, equals_cluster_keyslot_on_random_keys, .timeout = 120)
{
	struct redis_cluster c = { 0 };
	uint64_t rng = 15;
	char key[16], out[64];
	const char *argv[3] = { "CLUSTER", "KEYSLOT", key };
	size_t len[3] = { 7, 7, 0 };
	int i, port;

	if (!redis_server_find() || !redis_cluster_cli_find())
		cr_skip_test("no redis-server or redis-cli");
	cr_assert_eq(redis_cluster_start(&c, "slot"), 0);
	port = c.node[0].port;
	for (i = 0; i < 400 + NFIXED; i++) {
		if (i < NFIXED) { /* the tag rule's corners first */
			len[2] = fixed[i].len;
			memcpy(key, fixed[i].k, len[2]);
		} else {
			len[2] = random_key(&rng, key);
		}
		if (resp_commandv(port, 3, argv, len, out, sizeof(out)) != 0)
			break;
		if (strtoul(out + 1, NULL, 10) !=
		    shmkv__redis_key_slot(key, len[2]))
			break;
	}
	redis_cluster_cleanup(&c);
	cr_assert_eq(i, 400 + NFIXED, "key %d (%zu bytes): server %s", i,
		     len[2], out);
}

static void assert_redirect(const char *err, int kind, unsigned slot,
			    const char *host, int port)
{
	struct shmkv_redis_addr to;
	unsigned s = 99999;

	memset(&to, 0, sizeof(to));

	cr_assert_eq(shmkv__redis_redirect_parse(err, strlen(err), &s, &to),
		     kind, "%s", err);
	cr_assert_eq(s, slot, "%s", err);
	cr_assert_str_eq(to.host, host, "%s", err);
	cr_assert_eq(to.port, port, "%s", err);
}

Test(redis_slot, parses_moved_and_ask)
{
	assert_redirect("MOVED 3999 127.0.0.1:6381", 1, 3999, "127.0.0.1",
			6381);
	assert_redirect("ASK 0 10.0.0.2:7000", 2, 0, "10.0.0.2", 7000);
	assert_redirect("MOVED 16383 ::1:7000", 1, 16383, "::1", 7000);
	assert_redirect("ASK 12 [fe80::1]:7001", 2, 12, "fe80::1", 7001);
	assert_redirect("MOVED 5 redis-2.example.com:6379", 1, 5,
			"redis-2.example.com", 6379);
	assert_redirect("MOVED 5 :6380", 1, 5, "", 6380);
}

Test(redis_slot, other_errors_are_not_redirections)
{
	struct shmkv_redis_addr to;
	unsigned s;
	const char *e[] = { "ERR unknown command",
			    "MOVEDX 1 a:1",
			    "ASKING",
			    "TRYAGAIN Multiple keys request during rehashing",
			    "CLUSTERDOWN The cluster is down",
			    "" };
	size_t i;

	for (i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		cr_assert_eq(shmkv__redis_redirect_parse(e[i], strlen(e[i]), &s,
							 &to),
			     0, "%s", e[i]);
}

Test(redis_slot, malformed_redirections_are_eproto)
{
	struct shmkv_redis_addr to;
	unsigned s;
	const char *e[] = { "MOVED",
			    "MOVED ",
			    "MOVED 1",
			    "MOVED 1 ",
			    "MOVED x 1.2.3.4:5",
			    "MOVED 16384 a:1",
			    "MOVED -1 a:1",
			    "MOVED 1 a",
			    "MOVED 1 a:",
			    "MOVED 1 a:0",
			    "MOVED 1 a:65536",
			    "MOVED 1 a:1x",
			    "MOVED 1  a:1",
			    "MOVED 1 a:1 ",
			    "MOVED 1 a b:1",
			    "ASK 1 [::1:7000",
			    "ASK 1 []:7000",
			    "ASK 1 ::1]:7",
			    "ASK 123456 a:1",
			    "MOVED 1 a\tb:1" };
	char big[400];
	size_t i;

	for (i = 0; i < sizeof(e) / sizeof(e[0]); i++)
		cr_assert_eq(shmkv__redis_redirect_parse(e[i], strlen(e[i]), &s,
							 &to),
			     -EPROTO, "%s", e[i]);
	snprintf(big, sizeof(big), "MOVED 1 %0300d:1", 0);
	cr_assert_eq(shmkv__redis_redirect_parse(big, strlen(big), &s, &to),
		     -EPROTO, "a host over SHMKV_REDIS_HOST_MAX");
	/* @len bounds the parse: the bytes after it are not read. */
	cr_assert_eq(shmkv__redis_redirect_parse("MOVED 1 a:12", 11, &s, &to),
		     1);
	cr_assert_eq(to.port, 1);
}
