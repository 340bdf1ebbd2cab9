/*
 * shmctl_config.c - a store's settings that may change while it is in use,
 * as Redis's CONFIG GET and CONFIG SET show and change them:
 * "shmctl config NAME get [PARAMETER]", "shmctl config NAME set PARAMETER
 * VALUE". The parameters: maxmemory (shmkv_set_max_memory) and
 * maxmemory-policy (shmkv_set_evict_policy).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "shmctl.h"

/* Longest value get prints: a decimal uint64_t or a policy's name. */
#define VALUE_CAP 32

/* A parameter: how to read it (as text, as CONFIG GET replies) and how to
 * change it. */
struct param {
	const char *name;
	int (*get)(shmkv_t *kv, char *buf, size_t cap);
	/* On -EINVAL for @arg, says why into @why (else leaves it empty). */
	int (*set)(shmkv_t *kv, const char *arg, char *why, size_t cap);
};

static int get_maxmemory(shmkv_t *kv, char *buf, size_t cap)
{
	struct shmkv_config cfg;
	int err = shmkv_get_config(kv, &cfg);

	if (err)
		return err;
	snprintf(buf, cap, "%" PRIu64, cfg.max_memory);
	return 0;
}

static int set_maxmemory(shmkv_t *kv, const char *arg, char *why, size_t cap)
{
	uint64_t v;
	int err;

	if (ctl_parse_size(arg, &v) != 0) {
		snprintf(why, cap,
			 "expected a size in bytes (k, m, g: powers of 1024), "
			 "or 0 for the store's whole reservation");
		return -EINVAL;
	}
	err = shmkv_set_max_memory(kv, v);
	if (err == -EINVAL)
		snprintf(why, cap,
			 "below the store's initial size, or beyond what it "
			 "reserved at creation (shmctl info: max_memory, "
			 "reserved)");
	return err;
}

static int get_policy(shmkv_t *kv, char *buf, size_t cap)
{
	struct shmkv_config cfg;
	int err = shmkv_get_config(kv, &cfg);

	if (err)
		return err;
	snprintf(buf, cap, "%s", ctl_policy_name(cfg.evict_policy));
	return 0;
}

static int set_policy(shmkv_t *kv, const char *arg, char *why, size_t cap)
{
	int policy = shmkv_evict_policy_parse(arg);

	if (policy < 0) {
		char list[CTL_POLICY_LIST_CAP];

		snprintf(why, cap, "expected one of %s",
			 ctl_policy_list(list, sizeof(list)));
		return -EINVAL;
	}
	return shmkv_set_evict_policy(kv, policy);
}

static const struct param params[] = {
	{ "maxmemory", get_maxmemory, set_maxmemory },
	{ "maxmemory-policy", get_policy, set_policy },
};
#define NPARAMS (sizeof(params) / sizeof(params[0]))

static const struct param *param_find(const char *name)
{
	for (size_t i = 0; i < NPARAMS; i++)
		if (strcasecmp(params[i].name, name) == 0)
			return &params[i];
	return NULL;
}

/* A usage error naming every parameter known. */
static int unknown_param(const struct ctl_cmd *cmd, const char *arg)
{
	char known[64];
	size_t n = 0;

	known[0] = '\0';
	for (size_t i = 0; i < NPARAMS && n < sizeof(known); i++)
		n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s",
				      i ? ", " : "", params[i].name);
	return ctl_usage(cmd, "unknown parameter '%s' (known: %s)", arg, known);
}

/* Does @pat, a Redis glob matched in any case as CONFIG GET matches it,
 * match parameter @name (lower case)? NULL matches every one. */
static bool matches(const char *pat, const char *name)
{
	char *low;
	bool yes;

	if (pat == NULL)
		return true;
	low = strdup(pat);
	if (low == NULL)
		return strcasecmp(pat, name) == 0;
	for (char *c = low; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	yes = ctl_glob(low, strlen(low), name, strlen(name));
	free(low);
	return yes;
}

/* A parameter of get with glob characters is a pattern, as in Redis. */
static bool is_pattern(const char *s)
{
	return strpbrk(s, "*?[\\") != NULL;
}

/* Prints name and value on two lines each, as redis-cli prints CONFIG GET
 * (nothing when @pat matches no parameter, as Redis's empty array). */
static int do_get(const char *name, shmkv_t *kv, const char *pat)
{
	for (size_t i = 0; i < NPARAMS; i++) {
		char v[VALUE_CAP];
		int err;

		if (!matches(pat, params[i].name))
			continue;
		err = params[i].get(kv, v, sizeof(v));
		if (err)
			return ctl_store_err(name, params[i].name, err);
		printf("%s\n%s\n", params[i].name, v);
	}
	return CTL_OK;
}

static int do_set(const char *name, shmkv_t *kv, const struct param *p,
		  const char *arg)
{
	char why[CTL_POLICY_LIST_CAP + 64] = "";
	int err = p->set(kv, arg, why, sizeof(why));

	if (err == -EINVAL && why[0] != '\0') {
		ctl_err(name, "%s '%s': %s", p->name, arg, why);
		return CTL_USAGE;
	}
	if (err)
		return ctl_store_err(name, p->name, err);
	printf("OK\n");
	return CTL_OK;
}

/*
 * Checks CONFIG's words @w[0..@n) (get|set, then its operands): *@set and
 * *@p (NULL: get with no parameter, or a pattern). Return: CTL_OK, or a
 * usage error already reported.
 */
static int config_words(const struct ctl_cmd *cmd, int n, char **w,
			bool *set, const struct param **p)
{
	*set = strcasecmp(w[0], "set") == 0;
	*p = NULL;
	if (!*set && strcasecmp(w[0], "get") != 0)
		return ctl_usage(cmd, "'%s': expected get or set", w[0]);
	if (*set ? n != 3 : n > 2)
		return ctl_usage(cmd, *set ? "set takes a parameter and a value"
					   : "get takes at most a parameter");
	if (n >= 2 && (*set || !is_pattern(w[1])) &&
	    (*p = param_find(w[1])) == NULL)
		return unknown_param(cmd, w[1]);
	return CTL_OK;
}

/* The checked words on store @kv (@name). */
static int config_do(const char *name, shmkv_t *kv, int n, char **w,
		     bool set, const struct param *p)
{
	/* config_words found the parameter of every set. */
	if (set && p != NULL)
		return do_set(name, kv, p, w[2]);
	return do_get(name, kv, n >= 2 ? w[1] : NULL);
}

int ctl_config_prompt(shmkv_t *kv, const char *name, int argc, char **argv)
{
	const struct param *p;
	bool set;
	int rc;

	if (argc < 2)
		return ctl_usage(&ctl_cmd_config, "expected get or set");
	rc = config_words(&ctl_cmd_config, argc - 1, argv + 1, &set, &p);
	return rc != CTL_OK ? rc : config_do(name, kv, argc - 1, argv + 1, set, p);
}

static int run_config(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	char name[SHMKV_NAME_MAX + 1];
	const struct param *p;
	bool set;
	shmkv_t *kv;
	int c, rc, n;

	while ((c = ctl_getopt(cmd, argc, argv, "h", opts)) != -1)
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
	n = argc - optind;
	rc = ctl_operands(cmd, n, 2, 4);
	if (rc == CTL_OK)
		rc = config_words(cmd, n - 1, argv + optind + 1, &set, &p);
	if (rc != CTL_OK)
		return rc;
	rc = ctl_open(argv[optind], set ? 0 : SHMKV_OPEN_READONLY, &kv, name);
	if (rc != CTL_OK)
		return rc;
	rc = config_do(name, kv, n - 1, argv + optind + 1, set, p);
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
		"  maxmemory-policy\n"
		"             what a write that finds no room does, by\n"
		"             Redis's names (any case): noeviction (the\n"
		"             write fails: out of memory, table full; the\n"
		"             default), allkeys-lru, allkeys-lfu,\n"
		"             allkeys-random (evict any key), volatile-lru,\n"
		"             volatile-lfu, volatile-random, volatile-ttl\n"
		"             (evict only keys with a TTL). Every process\n"
		"             follows a change from its next command.\n"
		"get prints each parameter and its value on two lines, as\n"
		"redis-cli does: all of them, or the one named, or those a\n"
		"Redis glob matches (maxmemory*), in any case; set prints "
		"OK.\n",
	.run = run_config,
};
