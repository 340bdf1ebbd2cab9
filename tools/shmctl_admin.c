/*
 * shmctl_admin.c - "shmctl create" and "shmctl destroy".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "shmctl.h"

/* Checks one numeric option against [lo, hi]; reports a usage error. */
static int opt_number(const struct ctl_cmd *cmd, const char *opt,
		      const char *arg, uint64_t lo, uint64_t hi, uint64_t *v)
{
	if (ctl_parse_size(arg, v) != 0 || *v < lo || *v > hi)
		return ctl_usage(cmd,
				 "--%s '%s': expected a number from %" PRIu64
				 " to %" PRIu64 " (k, m, g suffixes allowed)",
				 opt, arg, lo, hi);
	return CTL_OK;
}

static int opt_mode(const struct ctl_cmd *cmd, const char *arg, uint32_t *mode)
{
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(arg, &end, 8);
	/* 0 means "the default, 0600" to shmkv_create(): not expressible. */
	if (arg[0] < '0' || arg[0] > '7' || *end != '\0' || m > 0777 ||
	    m == 0 || errno)
		return ctl_usage(cmd,
				 "--mode '%s': expected octal permission bits "
				 "from 1 to 0777, e.g. 0660",
				 arg);
	*mode = (uint32_t)m;
	return CTL_OK;
}

static int opt_slots(const struct ctl_cmd *cmd, const char *arg,
		     uint32_t *slots)
{
	uint64_t v;

	if (ctl_parse_size(arg, &v) != 0 || v < SHMKV_SLOTS_MIN ||
	    v > SHMKV_SLOTS_MAX || (v & (v - 1)) != 0)
		return ctl_usage(cmd,
				 "--slots '%s': expected a power of two from "
				 "%u to %u",
				 arg, SHMKV_SLOTS_MIN, SHMKV_SLOTS_MAX);
	*slots = (uint32_t)v;
	return CTL_OK;
}

/* A geometry field from 1 to @max (at most UINT32_MAX). */
static int opt_u32(const struct ctl_cmd *cmd, const char *opt, const char *arg,
		   uint32_t max, uint32_t *field)
{
	uint64_t v = 0;
	int rc = opt_number(cmd, opt, arg, 1, max, &v);

	*field = (uint32_t)v;
	return rc;
}

/* An eviction policy by its Redis name (any case). */
static int opt_policy(const struct ctl_cmd *cmd, const char *arg,
		      uint32_t *policy)
{
	int p = shmkv_evict_policy_parse(arg);

	if (p < 0) {
		char list[CTL_POLICY_LIST_CAP];

		return ctl_usage(cmd,
				 "--maxmemory-policy '%s': expected one of %s",
				 arg, ctl_policy_list(list, sizeof(list)));
	}
	*policy = (uint32_t)p;
	return CTL_OK;
}

/* One create option into @cfg. Return: CTL_OK or a usage error. */
static int create_opt(const struct ctl_cmd *cmd, int c, const char *arg,
		      struct shmkv_config *cfg)
{
	switch (c) {
	case 's':
		return opt_slots(cmd, arg, &cfg->slots);
	case 'k':
		return opt_u32(cmd, "key-max", arg, SHMKV_KEY_MAX_LIMIT,
			       &cfg->key_max);
	case 'v':
		return opt_u32(cmd, "value-max", arg, SHMKV_VALUE_MAX_LIMIT,
			       &cfg->value_max);
	case 'p':
		return opt_u32(cmd, "probe-limit", arg, SHMKV_SLOTS_MAX,
			       &cfg->probe_limit);
	case 'm':
		return opt_number(cmd, "memory", arg, 1, (uint64_t)1 << 42,
				  &cfg->value_memory);
	case 'X':
		return opt_number(cmd, "max-memory", arg, 1, (uint64_t)1 << 42,
				  &cfg->max_memory);
	case 'E':
		return opt_policy(cmd, arg, &cfg->evict_policy);
	case 'M':
		return opt_mode(cmd, arg, &cfg->mode);
	case 'H':
		cfg->flags |= SHMKV_CONFIG_HUGE_PAGES;
		return CTL_OK;
	default:
		return CTL_USAGE;
	}
}

/* The creator of a huge-page store has faulted all of it in: what its
 * mapping got is what the store got. A refusal is not an error (the store
 * works on 4 KiB pages), but it is said, with the cure. */
static void print_huge(const char *name, shmkv_t *kv)
{
	struct ctl_info in;
	char line[96];

	if (ctl_info_take(kv, &in) != 0 ||
	    shmkv_huge_mapped(kv, &in.huge_bytes) != 0)
		return;
	in.huge_known = true;
	ctl_info_pages_line(&in, line, sizeof(line));
	printf("%s: %s\n", name, line);
	if (in.huge_bytes < in.st.memory_bytes)
		ctl_err(name,
			"the kernel gave %s: mount /dev/shm with "
			"huge=advise (see README, Huge pages); the store "
			"works on 4 KiB pages",
			in.huge_bytes ? "huge pages to part of it only"
				      : "it no huge pages");
}

static void print_created(const char *name, shmkv_t *kv)
{
	struct shmkv_config cfg;
	char mem[32], max[32];

	shmkv_get_config(kv, &cfg);
	printf("created %s: %" PRIu32 " slots, key_max %" PRIu32
	       ", value_max %" PRIu32 ", probe_limit %" PRIu32
	       ", %s of value storage growing to a max_memory of %s, "
	       "maxmemory-policy %s, mode %04o\n",
	       name, cfg.slots, cfg.key_max, cfg.value_max, cfg.probe_limit,
	       ctl_human_bytes(cfg.value_memory, mem, sizeof(mem)),
	       ctl_human_bytes(cfg.max_memory, max, sizeof(max)),
	       ctl_policy_name(cfg.evict_policy), (unsigned)cfg.mode);
	if (cfg.flags & SHMKV_CONFIG_HUGE_PAGES)
		print_huge(name, kv);
}

/* @n bytes as a creator wrote them: "384 KiB", "2 MiB", or bytes. */
static const char *exact_bytes(uint64_t n, char *buf, size_t cap)
{
	if (n != 0 && n % (1u << 30) == 0)
		snprintf(buf, cap, "%" PRIu64 " GiB", n >> 30);
	else if (n != 0 && n % (1u << 20) == 0)
		snprintf(buf, cap, "%" PRIu64 " MiB", n >> 20);
	else if (n != 0 && n % 1024 == 0)
		snprintf(buf, cap, "%" PRIu64 " KiB", n >> 10);
	else
		snprintf(buf, cap, "%" PRIu64 " bytes", n);
	return buf;
}

/*
 * shmkv_create() said -EINVAL, and every field was range-checked here:
 * what is left is the memory. Says which limit, with the library's own
 * numbers (shmkv_config_plan()). Return: CTL_USAGE.
 */
static int explain_memory(const struct ctl_cmd *cmd, const char *name,
			  const struct shmkv_config *cfg)
{
	struct shmkv_plan p;
	char a[32], b[32], c[32];

	if (shmkv_config_plan(cfg, &p) != 0)
		return ctl_usage(cmd, "%s: invalid geometry", name);
	if (p.value_memory < p.value_memory_min)
		return ctl_usage(
			cmd,
			"%s: --memory %s is below this geometry's minimum "
			"of %s: one %s page per size class, %" PRIu32
			" classes (value_max %" PRIu32 ")",
			name, exact_bytes(p.value_memory, a, sizeof(a)),
			exact_bytes(p.value_memory_min, b, sizeof(b)),
			exact_bytes(p.page_size, c, sizeof(c)), p.classes,
			cfg->value_max ? cfg->value_max
				       : SHMKV_VALUE_MAX_DEFAULT);
	if (p.value_memory > p.value_memory_max)
		return ctl_usage(
			cmd,
			"%s: --memory %s is above this geometry's "
			"maximum of %s (what its value blocks can be "
			"numbered in)",
			name, exact_bytes(p.value_memory, a, sizeof(a)),
			ctl_human_bytes(p.value_memory_max, b, sizeof(b)));
	if (cfg->max_memory != 0 && cfg->max_memory < p.memory_bytes)
		return ctl_usage(cmd,
				 "%s: --max-memory %s is below the %s this "
				 "store uses at creation (header, table and "
				 "%s of value storage)",
				 name,
				 exact_bytes(cfg->max_memory, a, sizeof(a)),
				 exact_bytes(p.memory_bytes, b, sizeof(b)),
				 exact_bytes(p.value_memory, c, sizeof(c)));
	return ctl_usage(cmd,
			 "%s: the store would be larger than a segment may "
			 "be (4 TiB)",
			 name);
}

static int do_create(const struct ctl_cmd *cmd, const char *arg,
		     struct shmkv_config *cfg)
{
	char name[SHMKV_NAME_MAX + 1], shown[CTL_SHOWN_CAP];
	shmkv_t *kv;
	int err = ctl_store_name(arg, name);

	ctl_shown(arg, shown, sizeof(shown));
	if (err)
		return ctl_usage(cmd, "invalid store name '%s'", shown);
	ctl_shown(name, shown, sizeof(shown)); /* what is printed below */
	err = shmkv_create(name, cfg, &kv);
	if (err == -EINVAL)
		return explain_memory(cmd, shown, cfg);
	if (err)
		return ctl_store_err(name, NULL, err);
	print_created(shown, kv);
	shmkv_close(kv);
	return CTL_OK;
}

static int run_create(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "slots", required_argument, NULL, 's' },
		{ "key-max", required_argument, NULL, 'k' },
		{ "value-max", required_argument, NULL, 'v' },
		{ "probe-limit", required_argument, NULL, 'p' },
		{ "memory", required_argument, NULL, 'm' },
		{ "max-memory", required_argument, NULL, 'X' },
		{ "maxmemory-policy", required_argument, NULL, 'E' },
		{ "mode", required_argument, NULL, 'M' },
		{ "huge-pages", no_argument, NULL, 'H' },
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct shmkv_config cfg;
	int c, rc;

	shmkv_config_init(&cfg);
	while ((c = ctl_getopt(cmd, argc, argv, "hs:k:v:p:m:X:E:M:H", opts)) !=
	       -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		rc = create_opt(cmd, c, optarg, &cfg);
		if (rc != CTL_OK)
			return rc;
	}
	rc = ctl_operands(cmd, argc - optind, 1, 1);
	if (rc != CTL_OK)
		return rc;
	return do_create(cmd, argv[optind], &cfg);
}

const struct ctl_cmd ctl_cmd_create = {
	.name = "create",
	.synopsis = "NAME [--slots N] [--key-max B] [--value-max B] "
		    "[--memory SIZE] [--max-memory SIZE] "
		    "[--maxmemory-policy POLICY] [--probe-limit N] "
		    "[--mode MODE] [--huge-pages]",
	.summary = "create a store (exclusively: an existing NAME is an error)",
	.help = "Options (sizes take k, m, g suffixes, powers of 1024):\n"
		"  -s, --slots N        hash slots, a power of two "
		"(default 65536)\n"
		"  -k, --key-max B      longest key in bytes (default 64, "
		"at most 4096)\n"
		"  -v, --value-max B    longest value in bytes (default 1024, "
		"at most 1m)\n"
		"  -m, --memory SIZE    value storage at creation, in pages "
		"of\n"
		"                       64 KiB or more (default 256 bytes per\n"
		"                       slot, at least a page per size class)\n"
		"  -X, --max-memory SIZE  the most shared memory the store "
		"may\n"
		"                       use: value storage grows online up to\n"
		"                       it (default: the size of /dev/shm)\n"
		"  -E, --maxmemory-policy POLICY  what a write that finds no\n"
		"                       room does, by Redis's names: "
		"noeviction\n"
		"                       (fail; the default), allkeys-lru,\n"
		"                       allkeys-lfu, allkeys-random,\n"
		"                       volatile-lru, volatile-lfu,\n"
		"                       volatile-random, volatile-ttl (shmctl\n"
		"                       config changes it later)\n"
		"  -p, --probe-limit N  longest probe run (default 1024)\n"
		"  -M, --mode MODE      octal permission bits (default 0600); "
		"the umask\n"
		"                       does not apply\n"
		"  -H, --huge-pages     ask for 2 MiB pages (recorded: every\n"
		"                       process maps the store so); needs\n"
		"                       /dev/shm mounted huge=advise, else\n"
		"                       the store works on 4 KiB pages, and\n"
		"                       create says so\n",
	.run = run_create,
};

/* Asks on the terminal. Return: true if the answer is y or yes. */
static bool confirm(const char *name, const char *what)
{
	char answer[16];

	fprintf(stderr, "destroy %s%s? [y/N] ", name, what);
	fflush(stderr);
	if (fgets(answer, sizeof(answer), stdin) == NULL)
		return false;
	answer[strcspn(answer, "\n")] = '\0';
	return strcasecmp(answer, "y") == 0 || strcasecmp(answer, "yes") == 0;
}

/* Opens @name to say what is about to go. A store too damaged to open is
 * still a store and may be destroyed; a missing or foreign one may not. */
static int describe(const char *name, char *what, size_t cap)
{
	struct shmkv_stats st;
	shmkv_t *kv;
	int err = shmkv_open(name, SHMKV_OPEN_READONLY, &kv);

	what[0] = '\0';
	if (err == -EBADMSG || err == -EPROTONOSUPPORT) {
		snprintf(what, cap, " (%s)", shmkv_strerror(err));
		return CTL_OK;
	}
	if (err)
		return ctl_store_err(name, NULL, err);
	if (shmkv_stats(kv, &st) == 0)
		snprintf(what, cap, " (%" PRIu64 " keys)", st.live_keys);
	shmkv_close(kv);
	return CTL_OK;
}

static int do_destroy(const struct ctl_cmd *cmd, const char *arg, bool force)
{
	char name[SHMKV_NAME_MAX + 1], what[96], users[96] = "";
	char shown[CTL_SHOWN_CAP];
	struct ctl_users u;
	int err = ctl_store_name(arg, name);

	ctl_shown(arg, shown, sizeof(shown));
	if (err)
		return ctl_usage(cmd, "invalid store name '%s'", shown);
	ctl_shown(name, shown, sizeof(shown)); /* what is printed below */
	err = describe(name, what, sizeof(what));
	if (err != CTL_OK)
		return err;
	if (!force && !isatty(STDIN_FILENO)) {
		ctl_err(name, "not destroyed: stdin is not a terminal to "
			      "confirm on; use --force");
		return CTL_USAGE;
	}
	/* Counted before the removal: the store's file is gone after it. */
	if (ctl_store_users(name, &u) == 0 && (u.count > 0 || u.unknown > 0))
		ctl_users_phrase(&u, users, sizeof(users));
	if (!force) {
		char prompt[200];

		snprintf(prompt, sizeof(prompt), "%s%s%s", what,
			 users[0] ? ", " : "", users);
		if (!confirm(shown, prompt)) {
			fprintf(stderr, "%s not destroyed\n", shown);
			return CTL_NIL;
		}
	}
	err = shmkv_unlink(name);
	if (err)
		return ctl_store_err(name, NULL, err);
	if (users[0])
		printf("destroyed %s%s; it was %s: their next command on it "
		       "fails with ESTALE\n",
		       shown, what, users);
	else
		printf("destroyed %s%s\n", shown, what);
	return CTL_OK;
}

static int run_destroy(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	bool force = false;
	int c, rc;

	while ((c = ctl_getopt(cmd, argc, argv, "fh", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		force = true;
	}
	rc = ctl_operands(cmd, argc - optind, 1, 1);
	if (rc != CTL_OK)
		return rc;
	return do_destroy(cmd, argv[optind], force);
}

const struct ctl_cmd ctl_cmd_destroy = {
	.name = "destroy",
	.synopsis = "NAME [--force]",
	.summary = "remove a store (processes that have it open are told: "
		   "ESTALE)",
	.help = "Asks for confirmation when stdin is a terminal; otherwise\n"
		"refuses (exit 2) unless --force is given. Only a file with\n"
		"the shmkv magic is removed. The store is marked removed\n"
		"first: every command of a process that still has it open\n"
		"fails with ESTALE from then on. Says how many processes\n"
		"had it open (read from /proc: this pid namespace's, and\n"
		"only those whose maps we may read).\n\n"
		"Options:\n"
		"  -f, --force  do not ask\n",
	.run = run_destroy,
};
