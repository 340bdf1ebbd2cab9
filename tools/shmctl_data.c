/*
 * shmctl_data.c - Redis commands on a store: "shmctl NAME get k".
 *
 * The store is opened read-only for a command the library's table says
 * does not write, so a user with read permission only can run it; the
 * command and its reply go through ctl_exec() (shmctl_reply.c). Without a
 * command, the prompt (shmctl_repl.c).
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
