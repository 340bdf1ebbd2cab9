/*
 * test_exec_table.c - the command table (shmkv_command_*) says what
 * shmkv_exec() does: every row's arity is the one exec enforces, with
 * Redis's error text; READONLY rows run on a read-only handle and WRITE
 * rows are refused there with -EROFS; lookups ignore case but not length.
 * That the rows agree with Redis's own COMMAND INFO is checked against a
 * live redis-server by tests/programs/diff_redis.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "helpers/exec_run.h"
#include "helpers/testutil.h"

TestSuite(exec_table, .init = tu_setup, .fini = tu_teardown);

#define MAX_ARGC 6

/* A command line of @argc arguments for @c: its name, "k" at key
 * positions, "1" elsewhere (a valid time, integer or value). */
struct line {
	int argc;
	const char *argv[MAX_ARGC];
	size_t len[MAX_ARGC];
};

static bool is_key(const struct shmkv_command *c, int i)
{
	int last = c->last_key < 0 ? INT32_MAX : c->last_key;

	return c->first_key > 0 && i >= c->first_key && i <= last &&
	       (i - c->first_key) % c->key_step == 0;
}

static struct line make_line(const struct shmkv_command *c, int argc)
{
	struct line l = { .argc = argc };

	cr_assert(argc <= MAX_ARGC);
	for (int i = 0; i < argc; i++) {
		l.argv[i] = i == 0 ? c->name : is_key(c, i) ? "k" : "1";
		l.len[i] = strlen(l.argv[i]);
	}
	return l;
}

static int exec_line(shmkv_t *kv, const struct line *l)
{
	shmkv_reply_free(&ex_reply);
	ex_rc = shmkv_exec(kv, l->argc, l->argv, l->len, &ex_reply);
	return ex_rc;
}

static bool is_arity_error(const struct shmkv_command *c)
{
	char want[128];

	snprintf(want, sizeof(want),
		 "ERR wrong number of arguments for '%s' command", c->name);
	return ex_reply.type == SHMKV_REPLY_ERROR &&
	       ex_reply.len == strlen(want) &&
	       memcmp(ex_reply.str, want, ex_reply.len) == 0;
}

/* The fewest arguments the row allows. */
static int min_argc(const struct shmkv_command *c)
{
	return c->arity < 0 ? -c->arity : c->arity;
}

Test(exec_table, every_row_is_named_counted_and_found_ignoring_case)
{
	size_t n = shmkv_command_count();
	char upper[32];

	cr_assert_gt(n, 0);
	cr_assert_null(shmkv_command_at(n));
	for (size_t i = 0; i < n; i++) {
		const struct shmkv_command *c = shmkv_command_at(i);
		size_t len = strlen(c->name);

		cr_assert_lt(len, sizeof(upper));
		for (size_t k = 0; k <= len; k++)
			upper[k] = (char)(c->name[k] & ~0x20);
		cr_assert_eq(shmkv_command_find(upper, len), c, "%s", upper);
		cr_assert_eq(shmkv_command_find(c->name, len), c);
		/* The whole length counts: a prefix or a NUL tail is not it. */
		cr_assert_null(shmkv_command_find(c->name, len - 1));
		cr_assert_null(shmkv_command_find(c->name, len + 1));
		cr_assert(strncmp(c->syntax, upper, len) == 0 &&
				  (c->syntax[len] == ' ' ||
				   c->syntax[len] == '\0'),
			  "syntax \"%s\" names another command", c->syntax);
		cr_assert(!((c->flags & SHMKV_CMD_READONLY) &&
			    (c->flags & SHMKV_CMD_WRITE)),
			  "%s both reads only and writes", c->name);
	}
	cr_assert_null(shmkv_command_find("nosuch", 6));
	cr_assert_null(shmkv_command_find(NULL, 0));
}

Test(exec_table, every_row_arity_is_the_one_exec_enforces)
{
	for (size_t i = 0; i < shmkv_command_count(); i++) {
		const struct shmkv_command *c = shmkv_command_at(i);
		int min = min_argc(c);
		struct line l;

		if (min > 1) {
			l = make_line(c, min - 1);
			exec_line(tu_kv, &l);
			cr_assert(is_arity_error(c), "%s with %d arguments: %s",
				  c->name, min - 1, ex_reply.str);
		}
		l = make_line(c, min);
		exec_line(tu_kv, &l);
		cr_assert(!is_arity_error(c), "%s with %d arguments: %s",
			  c->name, min, ex_reply.str);
		if (c->arity > 0) {
			l = make_line(c, min + 1);
			exec_line(tu_kv, &l);
			cr_assert(is_arity_error(c), "%s with %d arguments: %s",
				  c->name, min + 1, ex_reply.str);
		}
	}
}

Test(exec_table, readonly_rows_run_on_a_readonly_handle_and_write_rows_do_not)
{
	shmkv_t *ro = tu_open(tu_name, SHMKV_OPEN_READONLY);
	const char *erofs = shmkv_strerror(-EROFS);
	int writes = 0, reads = 0;

	for (size_t i = 0; i < shmkv_command_count(); i++) {
		const struct shmkv_command *c = shmkv_command_at(i);
		struct line l = make_line(c, min_argc(c));
		int rc;

		/* The key exists, holding an integer: every command has
		 * something to do (a write on a missing key may be a no-op). */
		RUN("SET", "k", "1");
		rc = exec_line(ro, &l);
		bool refused;

		refused = ex_reply.type == SHMKV_REPLY_ERROR &&
			  strstr(ex_reply.str, erofs) != NULL;

		if (c->flags & SHMKV_CMD_WRITE) {
			cr_assert(rc == -EROFS && refused,
				  "%s on a read-only handle: %d, %s", c->name,
				  rc, ex_reply.str ? ex_reply.str : "");
			writes++;
		} else {
			cr_assert(rc == 0 && ex_reply.type != SHMKV_REPLY_ERROR,
				  "%s on a read-only handle: %d, %s", c->name,
				  rc, ex_reply.str ? ex_reply.str : "");
			reads += (c->flags & SHMKV_CMD_READONLY) != 0;
		}
	}
	cr_assert(writes > 0 && reads > 0);
	shmkv_close(ro);
}
