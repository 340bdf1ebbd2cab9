/*
 * shmctl_data.c - Redis commands on a store: "shmctl NAME get k".
 *
 * The store is opened read-only for a command the library's table says
 * does not write, so a user with read permission only can run it; the
 * command and its reply go through ctl_exec() (shmctl_reply.c). Without a
 * command, the prompt (shmctl_repl.c). A command given without a store
 * name ("shmctl get k") runs on the default store (ctl_default_store()).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "shmctl.h"

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
	ctl_shown_in_place(name); /* the prompt and messages show it */
	if (readonly)
		ctl_err(name, "no write permission: opened read-only, writes "
			      "will fail");
	rc = ctl_repl(kv, name);
	shmkv_close(kv);
	return rc;
}

/* Where the store came from, for the message when it is missing. */
enum store_from {
	STORE_GIVEN,   /* "shmctl NAME CMD" */
	STORE_DEFAULT, /* "shmctl CMD": the default store */
};

/* A missing store: a name without a slash may be a mistyped command
 * ("shmctl inof x"), and a default store may not have been made. */
static int missing_store(const char *arg, const char *name,
			 enum store_from from, int err)
{
	char near[CTL_SUGGEST_CAP], shown[CTL_SHOWN_CAP];

	arg = ctl_shown(arg, shown, sizeof(shown));
	if (from == STORE_DEFAULT)
		ctl_err(name,
			"%s (the default store, for commands given without "
			"a store name: set SHMKV_STORE to another, or name "
			"one: shmctl NAME CMD)",
			shmkv_strerror(err));
	else if (ctl_suggest(arg, CTL_SUGGEST_TOOL | CTL_SUGGEST_DATA, near,
			     sizeof(near)))
		ctl_err(name,
			"%s (and '%s' is not a shmctl command: did you "
			"mean %s?)",
			shmkv_strerror(err), arg, near);
	else
		ctl_err(name,
			"%s (and '%s' is not a shmctl command: see "
			"shmctl --help)",
			shmkv_strerror(err), arg);
	return CTL_STORE;
}

/* Opens store @arg for the one-shot command @cmd. */
static int open_for_command(const char *arg, const char *cmd,
			    enum store_from from, shmkv_t **kv,
			    char name[SHMKV_NAME_MAX + 1])
{
	unsigned flags = ctl_cmd_is_read_only(cmd, strlen(cmd))
				 ? SHMKV_OPEN_READONLY
				 : 0;
	int err = ctl_store_name(arg, name);

	if (err)
		return ctl_open(arg, flags, kv, name); /* reports it */
	err = shmkv_open(name, flags, kv);
	if (err == -ENOENT && (from == STORE_DEFAULT || arg[0] != '/'))
		return missing_store(arg, name, from, err);
	if (err)
		return ctl_store_err(name, NULL, err);
	ctl_shown_in_place(name); /* the command's messages show it */
	return CTL_OK;
}

/* Runs @argv (CMD ARGS...) on store @arg. */
static int run_on(const char *arg, enum store_from from, int argc, char **argv)
{
	char name[SHMKV_NAME_MAX + 1];
	size_t *len;
	shmkv_t *kv;
	int rc = open_for_command(arg, argv[0], from, &kv, name);

	if (rc != CTL_OK)
		return rc;
	len = malloc((size_t)argc * sizeof(*len));
	if (len == NULL) {
		shmkv_close(kv);
		return ctl_store_err(name, NULL, -ENOMEM);
	}
	for (int i = 0; i < argc; i++)
		len[i] = strlen(argv[i]);
	rc = ctl_exec(kv, name, argc, (const char *const *)argv, len);
	free(len);
	shmkv_close(kv);
	if (rc == CTL_REPLY)
		ctl_hint_unknown(argv[0], strlen(argv[0]));
	return rc;
}

int ctl_data_main(int argc, char **argv)
{
	if (argc <= 1)
		return open_for_prompt(argv[0]);
	return run_on(argv[0], STORE_GIVEN, argc - 1, argv + 1);
}

int ctl_data_default(int argc, char **argv)
{
	return run_on(ctl_default_store(), STORE_DEFAULT, argc, argv);
}
