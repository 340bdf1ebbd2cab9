/*
 * exec_run.c - running shmkv_exec() in the unit tests (see exec_run.h).
 */
#include "helpers/exec_run.h"

#include <stdarg.h>

struct shmkv_reply ex_reply;
int ex_rc;

static const struct shmkv_reply *ex_exec(shmkv_t *kv, int argc,
					 const char **argv, const size_t *lens)
{
	shmkv_reply_free(&ex_reply);
	ex_rc = shmkv_exec(kv, argc, argv, lens, &ex_reply);
	return &ex_reply;
}

static const struct shmkv_reply *ex_runv(shmkv_t *kv, va_list ap)
{
	const char *argv[EXEC_ARGS_MAX];
	size_t lens[EXEC_ARGS_MAX];
	int argc = 0;
	const char *p;

	while ((p = va_arg(ap, const char *)) != NULL) {
		cr_assert_lt(argc, EXEC_ARGS_MAX, "too many arguments");
		argv[argc] = p;
		lens[argc++] = va_arg(ap, size_t);
	}
	return ex_exec(kv, argc, argv, lens);
}

const struct shmkv_reply *ex_runb(shmkv_t *kv, ...)
{
	const struct shmkv_reply *r;
	va_list ap;

	va_start(ap, kv);
	r = ex_runv(kv, ap);
	va_end(ap);
	return r;
}

const struct shmkv_reply *ex_run(shmkv_t *kv, ...)
{
	const char *argv[EXEC_ARGS_MAX];
	size_t lens[EXEC_ARGS_MAX];
	int argc = 0;
	const char *p;
	va_list ap;

	va_start(ap, kv);
	while ((p = va_arg(ap, const char *)) != NULL) {
		cr_assert_lt(argc, EXEC_ARGS_MAX, "too many arguments");
		argv[argc] = p;
		lens[argc++] = strlen(p);
	}
	va_end(ap);
	return ex_exec(kv, argc, argv, lens);
}

const char *ex_type_name(enum shmkv_reply_type t)
{
	static const char *const names[] = { "?",	"status", "error",
					     "integer", "nil",	  "bulk" };

	return names[(unsigned)t <= 5 ? t : 0];
}
