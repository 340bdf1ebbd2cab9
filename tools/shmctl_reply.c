/*
 * shmctl_reply.c - one Redis command through shmkv_exec(), its reply
 * printed as redis-cli prints it on a terminal (OK, (nil), (integer) 1,
 * "quoted\x00value", (error) ERR ...) or raw with --raw, and the exit code
 * that tells scripts what it meant (shmctl.h). The facts about commands
 * (read-only, yes/no, TTL replies) come from the library's command table.
 * A utility: used by "shmctl NAME CMD" and by the prompt.
 */
#include <string.h>

#include "shmctl.h"

bool ctl_cmd_is_read_only(const char *cmd, size_t len)
{
	const struct shmkv_command *c = shmkv_command_find(cmd, len);

	return c != NULL && !(c->flags & SHMKV_CMD_WRITE);
}

/* What the reply means for the exit code: a nil, a yes/no command's 0 and
 * a TTL command's "no such key" are CTL_NIL. */
static int reply_exit(const char *cmd, size_t len, const struct shmkv_reply *r)
{
	const struct shmkv_command *c = shmkv_command_find(cmd, len);
	unsigned flags = c ? c->flags : 0;

	switch (r->type) {
	case SHMKV_REPLY_ERROR:
		return CTL_REPLY;
	case SHMKV_REPLY_NIL:
		return CTL_NIL;
	case SHMKV_REPLY_INTEGER:
		if (r->integer == 0 && (flags & SHMKV_CMD_YESNO))
			return CTL_NIL;
		if (r->integer == -2 && (flags & SHMKV_CMD_TTL_REPLY))
			return CTL_NIL;
		return CTL_OK;
	default:
		return CTL_OK;
	}
}

static void print_reply(const struct shmkv_reply *r)
{
	bool raw = ctl_opt.raw;

	switch (r->type) {
	case SHMKV_REPLY_STATUS:
		fwrite(r->str, 1, r->len, stdout);
		break;
	case SHMKV_REPLY_ERROR:
		printf("%s", raw ? "" : "(error) ");
		fwrite(r->str, 1, r->len, stdout);
		break;
	case SHMKV_REPLY_INTEGER:
		printf(raw ? "%lld" : "(integer) %lld", r->integer);
		break;
	case SHMKV_REPLY_NIL:
		printf("%s", raw ? "" : "(nil)");
		break;
	case SHMKV_REPLY_BULK:
		if (raw)
			fwrite(r->str, 1, r->len, stdout);
		else
			ctl_repr(stdout, r->str, r->len);
		break;
	}
	putchar('\n');
}

int ctl_exec(shmkv_t *kv, const char *name, int argc, const char *const *argv,
	     const size_t *len)
{
	struct shmkv_reply reply;
	int err, rc;

	memset(&reply, 0, sizeof(reply));
	err = shmkv_exec(kv, argc, argv, len, &reply);
	if (err && reply.type == SHMKV_REPLY_ERROR && reply.str != NULL) {
		/* The store failed (full, too long...): not a Redis reply,
		 * but its text may say more than the errno (a length error
		 * names the store's limit). */
		ctl_err(name, "%s",
			strncmp(reply.str, "ERR ", 4) == 0 ? reply.str + 4
							   : reply.str);
		rc = CTL_STORE;
	} else if (err) {
		rc = ctl_store_err(name, NULL, err);
	} else {
		print_reply(&reply);
		rc = reply_exit(argv[0], len[0], &reply);
	}
	shmkv_reply_free(&reply);
	fflush(stdout);
	return rc;
}

void ctl_print_syntax(FILE *f, const struct shmkv_command *c)
{
	const char *what = "reads and writes";

	if (c->flags & SHMKV_CMD_READONLY)
		what = "only reads: runs on a read-only store";
	else if (!(c->flags & SHMKV_CMD_WRITE))
		what = "touches no key";
	fprintf(f, "%s\n  (%s)\n", c->syntax, what);
}
