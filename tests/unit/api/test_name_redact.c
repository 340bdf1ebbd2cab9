/*
 * test_name_redact.c - shmkv_name_redact: a shared-memory name unchanged,
 * a URI's password never shown, well-formed or not.
 *
 * The passwords here are made of the letters QZXJKV (and raw separators);
 * no other part of these names has one of those letters, so any of them
 * in the output is a byte of the password.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shmkv.h"

#define SECRET_LETTERS "QZXJKV"

static const char *shown(const char *name)
{
	static char buf[1024];
	int n = shmkv_name_redact(name, buf, sizeof(buf));

	cr_assert_eq(n, (int)strlen(buf), "%s: %d", name, n);
	return buf;
}

static void assert_shown(const char *name, const char *want)
{
	cr_assert_str_eq(shown(name), want, "%s", name);
}

static void assert_no_secret(const char *name)
{
	const char *s = shown(name);

	cr_assert_eq(strpbrk(s, SECRET_LETTERS), NULL, "%s shown as %s", name,
		     s);
	cr_assert_not_null(strstr(s, "***"), "%s shown as %s", name, s);
}

Test(name_redact, a_shared_memory_name_is_shown_unchanged)
{
	assert_shown("/jobs", "/jobs");
	assert_shown("jobs", "jobs");
	assert_shown("/jobs@2:x", "/jobs@2:x");
	assert_shown("/redis:cache", "/redis:cache");
	assert_shown("", "");
}

Test(name_redact, a_well_formed_uri_shows_all_but_its_password)
{
	assert_shown("redis://:QZ@127.0.0.1:1", "redis://:***@127.0.0.1:1");
	assert_shown("redis://app:QZ@h:1/2?prefix=a%20b:&timeout=9",
		     "redis://app:***@h:1/2?prefix=a%20b:&timeout=9");
	assert_shown("redis+unix://:QZ@/tmp/s?db=4",
		     "redis+unix://:***@/tmp/s?db=4");
	assert_shown("redis+cluster://u:QZ@a:1,[::1]:2?connect_timeout=5",
		     "redis+cluster://u:***@a:1,[::1]:2?connect_timeout=5");
	assert_shown("redis://:QZ@h?locks_on_evicting_server=1&timeout=9",
		     "redis://:***@h?locks_on_evicting_server=1&timeout=9");
	assert_shown("redis://h", "redis://h");
	assert_shown("redis://h:6379/0", "redis://h:6379/0");
	assert_shown("redis+unix:///tmp/s", "redis+unix:///tmp/s");
	assert_shown("redis+cluster://a:1,b:2", "redis+cluster://a:1,b:2");
}

Test(name_redact, a_password_with_raw_separators_is_hidden_whole)
{
	static const char *const names[] = {
		"redis://:Q/Z@h",
		"redis://:Q?Z@h",
		"redis://:Q#Z@h",
		"redis://:Q@Z@h",
		"redis://:Q:Z@h",
		"redis://:Q&Z=X@h",
		"redis://u:Q/Z?K#J@h:1/0?prefix=a",
		"redis://:Q/../Z@h/0",
		"redis+unix://:Q/Z@/tmp/s",
		"redis+cluster://:Q,Z@a:1,b:2",
		"redis://u%3AQZ@h",
		"redis://:Q%ZZ@h",
		"redis://:Q%00Z@h",
		"redis://:Q Z@h",
		"redis://:Q\tZ\n@h",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_no_secret(names[i]);
	assert_shown("redis://:Q/Z@h", "redis://:***@h");
	assert_shown("redis://u:Q/Z?K#J@h:1/0?prefix=a",
		     "redis://u:***@h:1/0?prefix=a");
}

Test(name_redact, a_name_the_parser_reads_otherwise_shows_no_password)
{
	/* Parsed as host u, port 12, prefix "x@h": the writer likely meant
	 * the password "12?prefix=x"; with letters, it is never shown. */
	assert_no_secret("redis://u:QZ?prefix=x@h");
	assert_no_secret("redis://QZ@h:1?prefix=a@b");
	assert_no_secret("redis://QZ@h/x:y@z");
	assert_no_secret("redis://QZ@h");
	assert_shown("redis://QZ@h", "redis://***@h");
}

Test(name_redact, a_password_without_its_at_sign_is_hidden)
{
	static const char *const names[] = {
		"redis://:QZ",	    "redis://u:QZ",    "redis://:QZ/K",
		"redis://u:QZ/KJ",  "redis://@:QZ",    "redis://:QZ@",
		"redis://[::1:QZ]", "redis://h:1,:QZ", "redis://h:1:QZ",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_no_secret(names[i]);
}

Test(name_redact, any_scheme_and_a_uri_without_its_slashes_are_redacted)
{
	assert_shown("/redis:QZ@h", "/redis:***@h");
	static const char *const names[] = {
		"REDIS://:QZ@h",  "rediss://:QZ@h",  "http://u:QZ@h",
		"redis:/:QZ@h",	  "redis::QZ@h",     "redis:QZ@h",
		"redis+unix:QZ@", "QZ@x://h",	     "://:QZ@h",
		"/redis:QZ@h",	  "/redis:/:QZ/X@h", "/REDIS+x:u:QZ",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_no_secret(names[i]);
}

Test(name_redact, secrets_in_the_query_or_fragment_are_hidden)
{
	assert_shown("redis://h?password=QZ", "redis://h?password=***");
	assert_shown("redis://h?QZ", "redis://h?***");
	assert_shown("redis://h#QZ", "redis://h#***");
	assert_shown("redis://h/0?timeout=1&auth=QZ#KJ",
		     "redis://h/0?timeout=1&auth=***#***");
	assert_no_secret("redis://h?Q%3DZ=1");
}

/* Passwords of random bytes from the separators and the secret letters,
 * in every place a writer might put one: no letter of them ever shows.
 * Each form bans what would make its name mean something else: where the
 * password is the whole userinfo, a ':' in it starts the password after a
 * user ("redis://u:p@h"); where the host is missing too, an '@' ends it
 * before a host ("redis://:a@b" is the password "a" of host b). */
Test(name_redact, random_passwords_in_any_position_never_show)
{
	static const char alphabet[] = SECRET_LETTERS "/?#@:%&=,[]. ";
	static const struct {
		const char *fmt, *banned;
	} forms[] = {
		{ "redis://:%s@h:1", "" },
		{ "redis://u:%s@h:1/0?prefix=a", "" },
		{ "redis+unix://:%s@/tmp/s", "" },
		{ "redis+cluster://u:%s@a:1,b:2", "" },
		{ "redis://%s@h", ":" },
		{ "redis:%s@h", ":" },
		{ "redis://u:%s", "@" },
		{ "redis://:%s", "@" },
	};
	char pw[16], name[128];

	srand(1);
	for (int i = 0; i < 40000; i++) {
		size_t f = (size_t)i % (sizeof(forms) / sizeof(forms[0]));
		size_t n = 1 + (size_t)rand() % (sizeof(pw) - 2);

		for (size_t k = 0; k < n; k++) {
			char c = alphabet[(size_t)rand() %
					  (sizeof(alphabet) - 1)];

			pw[k] = strchr(forms[f].banned, c) != NULL ? 'Z' : c;
		}
		pw[n] = '\0';
		pw[(size_t)rand() % n] = 'Q'; /* at least one letter */
		snprintf(name, sizeof(name), forms[f].fmt, pw);
		assert_no_secret(name);
	}
}

Test(name_redact, a_short_buffer_gets_a_cut_terminated_prefix_and_the_length)
{
	char buf[10];
	const char *name = "redis://:QZ@host:1234";

	cr_assert_eq(shmkv_name_redact(name, buf, sizeof(buf)),
		     (int)strlen("redis://:***@host:1234"));
	cr_assert_str_eq(buf, "redis://:");
	cr_assert_eq(shmkv_name_redact(name, NULL, 0),
		     (int)strlen("redis://:***@host:1234"));
	cr_assert_eq(shmkv_name_redact("/jobs", buf, 3), 5);
	cr_assert_str_eq(buf, "/j");
}

Test(name_redact, a_null_name_or_buffer_is_einval)
{
	char buf[8];

	cr_assert_eq(shmkv_name_redact(NULL, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(shmkv_name_redact("/jobs", NULL, 8), -EINVAL);
}
