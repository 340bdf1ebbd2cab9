/*
 * test_backend.c - store names that are URIs ("scheme://..."): routed to
 * the backend of their scheme (src/backend.h): redis, redis+unix and
 * redis+cluster (tests/unit/redis/); any other scheme answers
 * -EAFNOSUPPORT at each entry point and writes no handle; names that only
 * look like URIs stay shm names, judged as before.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "shmkv.h"

TestSuite(backend, .fini = tu_teardown);

static void assert_no_backend(const char *uri)
{
	struct shmkv_config cfg;
	shmkv_t *kv = (shmkv_t *)&cfg; /* must stay untouched */

	shmkv_config_init(&cfg);
	cr_assert_eq(shmkv_open(uri, 0, &kv), -EAFNOSUPPORT, "open %s", uri);
	cr_assert_eq(shmkv_open(uri, SHMKV_OPEN_READONLY, &kv), -EAFNOSUPPORT);
	cr_assert_eq(shmkv_create(uri, &cfg, &kv), -EAFNOSUPPORT);
	cr_assert_eq(shmkv_open_or_create(uri, NULL, &kv), -EAFNOSUPPORT);
	cr_assert_eq(shmkv_unlink(uri), -EAFNOSUPPORT);
	cr_assert_eq((void *)kv, (void *)&cfg, "the handle was written");
}

Test(backend, a_uri_of_a_scheme_without_backend_is_eafnosupport)
{
	assert_no_backend("rediss://127.0.0.1:6379/0"); /* TLS: not built */
	assert_no_backend("memcached://10.0.0.1:11211");
	assert_no_backend("VALKEY://localhost");
	assert_no_backend("x-y.z://");
}

Test(backend, the_error_names_the_scheme_as_the_cause)
{
	const char *s = shmkv_strerror(-EAFNOSUPPORT);

	cr_assert(strstr(s, "scheme") != NULL, "%s", s);
	cr_assert(strstr(s, "backend") != NULL, "%s", s);
}

/* The Redis schemes route to their backend, in any case: a malformed
 * URI of theirs is the backend's -EINVAL (no connection is tried), and
 * unlink is -ENOTSUP (never a FLUSHDB). */
Test(backend, the_redis_schemes_have_a_backend)
{
	static const char *const uris[] = {
		"redis://h:0",
		"REDIS+UNIX://",
		"Redis+Cluster://a,,b",
	};
	shmkv_t *kv = NULL;

	for (size_t i = 0; i < sizeof(uris) / sizeof(uris[0]); i++) {
		cr_assert_eq(shmkv_open(uris[i], 0, &kv), -EINVAL, "%s",
			     uris[i]);
		cr_assert_eq(shmkv_unlink(uris[i]), -ENOTSUP, "%s", uris[i]);
	}
	cr_assert_null(kv);
}

/* Not URIs (RFC 3986: a scheme starts with a letter and holds letters,
 * digits, + - .; then "://"): judged as shm names, so -EINVAL, since each
 * has a slash past the leading one. */
Test(backend, what_only_looks_like_a_uri_is_a_bad_shm_name)
{
	static const char *const names[] = {
		"1redis://x", "redis:/x",   "://x",
		"re dis://x", "redis_://x", "redis//x",
	};
	shmkv_t *kv = NULL;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cr_assert_eq(shmkv_open(names[i], 0, &kv), -EINVAL, "%s",
			     names[i]);
		cr_assert_eq(shmkv_unlink(names[i]), -EINVAL, "%s", names[i]);
	}
	cr_assert_null(kv);
}

/* A name without a slash or "://" is a shm name, the slash added: "redis:x"
 * is the store "/redis:x" (none here), not a URI. */
Test(backend, a_colon_without_slashes_is_part_of_a_shm_name)
{
	char name[TU_NAME_CAP], bare[64];
	shmkv_t *kv = NULL;

	snprintf(bare, sizeof(bare), "redis:shmkv-test-%ld", (long)getpid());
	snprintf(name, sizeof(name), "/%s", bare);
	tu_track(name);
	cr_assert_eq(shmkv_open(bare, 0, &kv), -ENOENT, "%s", bare);
	tu_assert_ok(shmkv_create(bare, NULL, &kv));
	shmkv_close(kv);
	kv = tu_open(name, 0);
	shmkv_close(kv);
	tu_assert_ok(shmkv_unlink(bare));
}
