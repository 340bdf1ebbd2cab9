/*
 * shmctl_config.c - a store's settings that may change while it is in use,
 * as Redis's CONFIG GET and CONFIG SET show and change them:
 * "shmctl config NAME get [PARAMETER]", "shmctl config NAME set PARAMETER
 * VALUE". Today one parameter, maxmemory (shmkv_set_max_memory).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

#include "shmctl.h"

/* A parameter: how to read it and how to change it. */
struct param {
	const char *name;
	int (*get)(shmkv_t *kv, uint64_t *v);
	int (*set)(shmkv_t *kv, const char *arg, const char **why);
};

static int get_maxmemory(shmkv_t *kv, uint64_t *v)
{
	struct shmkv_config cfg;
	int err = shmkv_get_config(kv, &cfg);

	*v = cfg.max_memory;
	return err;
}

static int set_maxmemory(shmkv_t *kv, const char *arg, const char **why)
{
	uint64_t v;
	int err;

	if (ctl_parse_size(arg, &v) != 0) {
		*why = "expected a size in bytes (k, m, g: powers of 1024), or "
		       "0 for the store's whole reservation";
		return -EINVAL;
	}
	err = shmkv_set_max_memory(kv, v);
	if (err == -EINVAL)
		*why = "below the store's initial size, or beyond what it "
		       "reserved at creation (shmctl info: max_memory, "
		       "reserved)";
	return err;
}

static const struct param params[] = {
	{ "maxmemory", get_maxmemory, set_maxmemory },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const struct param *param_find(const char *name)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (strcasecmp(params[i].name, name) == 0)
			return &params[i];
	return NULL;
}

/* Prints name and value on two lines each, as redis-cli prints CONFIG GET. */
static int do_get(const char *name, shmkv_t *kv, const char *only)
{
	for (size_t i = 0; i < NPARAMS; i++) {
		uint64_t v;
		int err;

		if (only != NULL && strcasecmp(only, params[i].name) != 0)
			continue;
		err = params[i].get(kv, &v);
		if (err)
			return ctl_store_err(name, params[i].name, err);
		printf("%s\n%" PRIu64 "\n", params[i].name, v);
	}
	return CTL_OK;
}

static int do_set(const char *name, shmkv_t *kv, const struct param *p,
		  const char *arg)
{
	const char *why = NULL;
	int err = p->set(kv, arg, &why);

	if (err == -EINVAL && why != NULL) {
		ctl_err(name, "%s '%s': %s", p->name, arg, why);
		return CTL_USAGE;
	}
	if (err)
		return ctl_store_err(name, p->name, err);
	printf("OK\n");
	return CTL_OK;
}

static int run_config(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	char name[SHMKV_NAME_MAX + 1];
	const struct param *p = NULL;
	const char *verb;
	bool set;
	shmkv_t *kv;
	int c, rc, n;

	while ((c = ctl_getopt(cmd, argc, argv, "h", opts)) != -1)
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
	n = argc - optind;
	rc = ctl_operands(cmd, n, 2, 4);
	if (rc != CTL_OK)
		return rc;
	verb = argv[optind + 1];
	set = strcasecmp(verb, "set") == 0;
	if (!set && strcasecmp(verb, "get") != 0)
		return ctl_usage(cmd, "'%s': expected get or set", verb);
	if (set ? n != 4 : n > 3)
		return ctl_usage(cmd, set ? "set takes a parameter and a value"
					  : "get takes at most a parameter");
	if (n >= 3 && (p = param_find(argv[optind + 2])) == NULL)
		return ctl_usage(cmd, "unknown parameter '%s' (known: %s)",
				 argv[optind + 2], params[0].name);
	rc = ctl_open(argv[optind], set ? 0 : SHMKV_OPEN_READONLY, &kv, name);
	if (rc != CTL_OK)
		return rc;
	rc = set ? do_set(name, kv, p, argv[optind + 3])
		 : do_get(name, kv, p ? p->name : NULL);
	shmkv_close(kv);
	return rc;
}

const struct ctl_cmd ctl_cmd_config = {
	.name = "config",
	.synopsis = "NAME get [PARAMETER] | NAME set PARAMETER VALUE",
	.summary = "show or change a setting of a store in use (as Redis's "
		   "CONFIG GET/SET)",
	.help = "Parameters:\n"
		"  maxmemory  the most shared memory the store may use, in\n"
		"             bytes (set takes k, m, g suffixes, powers of\n"
		"             1024; 0: all it reserved at creation). Value\n"
		"             storage grows online within it; lowering it\n"
		"             below what is in use stops growth, nothing\n"
		"             shrinks.\n"
		"get prints each parameter and its value on two lines, as\n"
		"redis-cli does; set prints OK.\n",
	.run = run_config,
};
