/*
 * shmctl_data.c - Redis commands on a store: "shmctl NAME get k".
 *
 * Arguments go to shmkv_exec() untouched, which parses them as Redis 7
 * does; the reply is printed as redis-cli prints it on a terminal (OK,
 * (nil), (integer) 1, "quoted\x00value", (error) ERR ...), or raw with
 * --raw. The exit code tells scripts what the reply meant (shmctl.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmctl.h"

/* Commands that only read: they run on a read-only handle, so a user with
 * read permission only can use them. */
static const char *const read_only_cmds[] = {
	"get", "exists", "ttl", "pttl", "ping",
};

/* Commands whose integer reply is a yes/no or a count of changes: 0 is
 * "nothing happened", which exits CTL_NIL as a nil does. */
static const char *const boolean_cmds[] = {
	"del",	    "exists",	 "setnx",   "expire",  "pexpire",
	"expireat", "pexpireat", "persist", "delifeq",
};

static bool in_list(const char *const *list, size_t n, const char *cmd,
		    size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len &&
		    strncasecmp(list[i], cmd, len) == 0)
			return true;
	return false;
}

/* Commands whose reply -2 means "no such key". */
static const char *const ttl_cmds[] = { "ttl", "pttl" };

#define IN_LIST(list, cmd, len)                                                \
	in_list((list), sizeof(list) / sizeof((list)[0]), (cmd), (len))

bool ctl_cmd_is_read_only(const char *cmd, size_t len)
{
	return IN_LIST(read_only_cmds, cmd, len);
}

/* What the reply means for the exit code. */
static int reply_exit(const char *cmd, size_t len, const struct shmkv_reply *r)
{
	switch (r->type) {
	case SHMKV_REPLY_ERROR:
		return CTL_REPLY;
	case SHMKV_REPLY_NIL:
		return CTL_NIL;
	case SHMKV_REPLY_INTEGER:
		if (r->integer == 0 && IN_LIST(boolean_cmds, cmd, len))
			return CTL_NIL;
		if (r->integer == -2 && IN_LIST(ttl_cmds, cmd, len))
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
	if (err) {
		/* The store failed (full, corrupted...): not a Redis reply. */
		rc = ctl_store_err(name, NULL, err);
	} else {
		print_reply(&reply);
		rc = reply_exit(argv[0], len[0], &reply);
	}
	shmkv_reply_free(&reply);
	fflush(stdout);
	return rc;
}

/* The prompt: read-write if we may, else read-only with a notice. */
static int open_for_prompt(const char *arg)
{
	char name[SHMKV_NAME_MAX + 1];
	bool readonly = false;
	shmkv_t *kv;
	int rc, err = ctl_store_name(arg, name);

	if (err)
		return ctl_open(arg, 0, &kv, name); /* reports the bad name */
	err = shmkv_open(name, 0, &kv);
	if (err == -EACCES) {
		err = shmkv_open(name, SHMKV_OPEN_READONLY, &kv);
		readonly = err == 0;
	}
	if (err)
		return ctl_store_err(name, NULL, err);
	if (readonly)
		ctl_err(name, "no write permission: opened read-only, writes "
			      "will fail");
	rc = ctl_repl(kv, name);
	shmkv_close(kv);
	return rc;
}

/* Opens the store of a one-shot command. A missing store may be a
 * mistyped tool command ("shmctl inof x"): say so. */
static int open_for_command(char **argv, shmkv_t **kv,
			    char name[SHMKV_NAME_MAX + 1])
{
	unsigned flags = ctl_cmd_is_read_only(argv[1], strlen(argv[1]))
				 ? SHMKV_OPEN_READONLY
				 : 0;
	int err = ctl_store_name(argv[0], name);

	if (err)
		return ctl_open(argv[0], flags, kv, name); /* reports it */
	err = shmkv_open(name, flags, kv);
	if (err == -ENOENT && argv[0][0] != '/') {
		ctl_err(name,
			"%s (and '%s' is not a shmctl command: see "
			"shmctl --help)",
			shmkv_strerror(err), argv[0]);
		return CTL_STORE;
	}
	return err ? ctl_store_err(name, NULL, err) : CTL_OK;
}

int ctl_data_main(int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	size_t *len;
	shmkv_t *kv;
	int rc;

	if (argc <= 1)
		return open_for_prompt(argv[0]);
	rc = open_for_command(argv, &kv, name);
	if (rc != CTL_OK)
		return rc;
	len = malloc((size_t)(argc - 1) * sizeof(*len));
	if (len == NULL) {
		shmkv_close(kv);
		return ctl_store_err(name, NULL, -ENOMEM);
	}
	for (int i = 1; i < argc; i++)
		len[i - 1] = strlen(argv[i]);
	rc = ctl_exec(kv, name, argc - 1, (const char *const *)argv + 1, len);
	free(len);
	shmkv_close(kv);
	return rc;
}
