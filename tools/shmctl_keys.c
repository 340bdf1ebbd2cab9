/*
 * shmctl_keys.c - "shmctl keys" (every key matching a glob), "shmctl
 * scan" (one step of a cursor, as Redis SCAN) and "shmctl dbsize".
 *
 * Both walk the store with shmkv_scan(), which visits slots in order: a key
 * present for the whole walk is listed (at least once, as shmkv_scan()
 * promises), keys added or deleted meanwhile may or may not be. MATCH
 * filters after the walk, as in Redis: --count bounds the slots visited,
 * not the keys returned.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shmctl.h"

/* Slots per shmkv_scan() call while listing every key. */
#define KEYS_STEP 4096

struct lister {
	const char *pat; /* NULL: every key */
	size_t plen;
	bool json;
	const char *indent; /* before the numbers of a nested list */
	struct ctl_json j;
	uint64_t n;
};

static int emit(const void *key, size_t klen, void *arg)
{
	struct lister *l = arg;

	if (l->pat != NULL && !ctl_glob(l->pat, l->plen, key, klen))
		return 0;
	l->n++;
	if (l->json) {
		cj_str(&l->j, NULL, key, klen);
	} else if (ctl_opt.raw) {
		fwrite(key, 1, klen, stdout);
		putchar('\n');
	} else {
		printf("%s%" PRIu64 ") ", l->n > 1 ? l->indent : "", l->n);
		ctl_repr(stdout, key, klen);
		putchar('\n');
	}
	return 0;
}

static void list_end(struct lister *l)
{
	if (l->json)
		cj_end(&l->j, ']');
	else if (l->n == 0 && !ctl_opt.raw)
		puts("(empty array)");
}

static int walk_all(shmkv_t *kv, struct lister *l)
{
	uint64_t cursor = 0, next = 0;
	int err;

	do {
		err = shmkv_scan(kv, cursor, KEYS_STEP, emit, l, &next);
		cursor = next;
	} while (err == 0 && cursor != 0);
	return err;
}

/* Options shared by keys and scan.
 * Return: CTL_CONTINUE, or the exit code to end with. */
struct list_opts {
	bool json;
	const char *match;
	uint64_t count;
};

static int list_getopt(const struct ctl_cmd *cmd, int argc, char **argv,
		       struct list_opts *o, bool scan)
{
	static const struct option opts[] = {
		{ "match", required_argument, NULL, 'm' },
		{ "count", required_argument, NULL, 'c' },
		CTL_OPT_JSON,
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = ctl_getopt(cmd, argc, argv, scan ? "hjm:c:" : "hj",
			       scan ? opts : opts + 2)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		if (c == 'j')
			o->json = true;
		else if (c == 'm')
			o->match = optarg;
		else if (ctl_parse_u64(optarg, &o->count) != 0 ||
			 o->count < 1 || o->count > UINT32_MAX)
			return ctl_usage(cmd,
					 "--count '%s': expected a number "
					 "from 1 to 4294967295",
					 optarg);
	}
	return CTL_CONTINUE;
}

/* NAME [PATTERN|CURSOR]: opens NAME read-only. Return: a CTL_* code. */
static int open_operand(const struct ctl_cmd *cmd, int argc, char **argv,
			shmkv_t **kv, char name[SHMKV_NAME_MAX + 1])
{
	int rc = ctl_operands(cmd, argc - optind, 1, 2);

	return rc == CTL_OK
		       ? ctl_open(argv[optind], SHMKV_OPEN_READONLY, kv, name)
		       : rc;
}

static int run_keys(const struct ctl_cmd *cmd, int argc, char **argv)
{
	struct list_opts o = { 0 };
	struct lister l = { .indent = "" };
	char name[SHMKV_NAME_MAX + 1];
	shmkv_t *kv;
	int rc = list_getopt(cmd, argc, argv, &o, false), err;

	if (rc != CTL_CONTINUE)
		return rc;
	rc = open_operand(cmd, argc, argv, &kv, name);
	if (rc != CTL_OK)
		return rc;
	l.json = o.json;
	if (argc - optind == 2 && strcmp(argv[optind + 1], "*") != 0) {
		l.pat = argv[optind + 1];
		l.plen = strlen(l.pat);
	}
	if (l.json) {
		cj_open(&l.j, stdout);
		cj_cstr(&l.j, "name", name);
		cj_arr(&l.j, "keys");
	}
	err = walk_all(kv, &l);
	list_end(&l);
	if (l.json) {
		cj_u64(&l.j, "count", l.n);
		cj_close(&l.j);
	}
	shmkv_close(kv);
	return err ? ctl_store_err(name, "scan", err) : CTL_OK;
}

const struct ctl_cmd ctl_cmd_keys = {
	.name = "keys",
	.synopsis = "NAME [PATTERN] [--json]",
	.summary = "list the keys matching a glob pattern (default *)",
	.help = "PATTERN is Redis's glob, binary-safe: * any bytes, ? one\n"
		"byte, [abc] [^a] [a-z] classes, \\x the byte x. Keys print\n"
		"as redis-cli prints KEYS's reply: quoted and numbered on a\n"
		"terminal, raw and one per line otherwise (--raw and --no-raw\n"
		"before the command choose). Exits 0 even when no key\n"
		"matches.\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"keys\":[...],\"count\":N}; "
		"keys "
		"are\n"
		"               byte strings, non-ASCII bytes as \\u00XX\n",
	.run = run_keys,
};

/* The keys one scan step found, kept until the cursor is known: redis-cli
 * prints the cursor first. */
struct found {
	const char *pat;
	size_t plen;
	char **key;
	size_t *len;
	size_t n, cap;
};

static int found_grow(struct found *f)
{
	size_t cap = f->cap ? 2 * f->cap : 16;
	char **k = realloc(f->key, cap * sizeof(*k));
	size_t *l;

	if (k == NULL)
		return -ENOMEM;
	f->key = k;
	l = realloc(f->len, cap * sizeof(*l));
	if (l == NULL)
		return -ENOMEM;
	f->len = l;
	f->cap = cap;
	return 0;
}

/* Keeps a matching key. Return: 0, or -ENOMEM, which stops the scan and
 * is what shmkv_scan() returns. */
static int collect(const void *key, size_t klen, void *arg)
{
	struct found *f = arg;

	if (f->pat != NULL && !ctl_glob(f->pat, f->plen, key, klen))
		return 0;
	if (f->n == f->cap && found_grow(f) != 0)
		return -ENOMEM;
	f->key[f->n] = malloc(klen ? klen : 1);
	if (f->key[f->n] == NULL)
		return -ENOMEM;
	if (klen > 0)
		memcpy(f->key[f->n], key, klen);
	f->len[f->n++] = klen;
	return 0;
}

static void print_step(const char *name, uint64_t next, const struct found *f,
		       bool json)
{
	struct lister l = { .json = json, .indent = "   " };
	char cur[24];

	snprintf(cur, sizeof(cur), "%" PRIu64, next);
	if (json) {
		cj_open(&l.j, stdout);
		cj_cstr(&l.j, "name", name);
		cj_u64(&l.j, "cursor", next);
		cj_arr(&l.j, "keys");
	} else if (ctl_opt.raw) {
		puts(cur);
	} else {
		printf("1) ");
		ctl_repr(stdout, cur, strlen(cur));
		printf("\n2) ");
	}
	for (size_t i = 0; i < f->n; i++)
		emit(f->key[i], f->len[i], &l);
	list_end(&l);
	if (json)
		cj_close(&l.j);
}

static void found_free(struct found *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->key[i]);
	free(f->key);
	free(f->len);
}

static int scan_step(shmkv_t *kv, const char *name, const char *arg,
		     const struct list_opts *o)
{
	struct found f = { .pat = o->match };
	uint64_t cursor = 0, next = 0;
	int err;

	if (arg != NULL && ctl_parse_u64(arg, &cursor) != 0)
		return ctl_usage(&ctl_cmd_scan, "invalid cursor '%s'", arg);
	f.plen = f.pat ? strlen(f.pat) : 0;
	err = shmkv_scan(kv, cursor, (uint32_t)(o->count ? o->count : 10),
			 collect, &f, &next);
	if (err == 0)
		print_step(name, next, &f, o->json);
	found_free(&f);
	return err ? ctl_store_err(name, "scan", err) : CTL_OK;
}

static int run_scan(const struct ctl_cmd *cmd, int argc, char **argv)
{
	struct list_opts o = { 0 };
	char name[SHMKV_NAME_MAX + 1];
	shmkv_t *kv;
	int rc = list_getopt(cmd, argc, argv, &o, true);

	if (rc != CTL_CONTINUE)
		return rc;
	rc = open_operand(cmd, argc, argv, &kv, name);
	if (rc != CTL_OK)
		return rc;
	rc = scan_step(kv, name, argc - optind == 2 ? argv[optind + 1] : NULL,
		       &o);
	shmkv_close(kv);
	return rc;
}

const struct ctl_cmd ctl_cmd_scan = {
	.name = "scan",
	.synopsis = "NAME [CURSOR] [--match GLOB] [--count N] [--json]",
	.summary = "one step of a SCAN cursor (start at 0, done when 0 again)",
	.help = "Visits --count slots (default 10) from CURSOR and prints\n"
		"the next cursor and the live keys found there that match\n"
		"GLOB, as redis-cli prints SCAN's reply. A key present from\n"
		"the first step to the last is returned at least once.\n\n"
		"Options:\n"
		"  -m, --match GLOB  only keys matching GLOB (see keys "
		"--help)\n"
		"  -c, --count N     slots to visit in this step\n"
		"  -j, --json        "
		"{\"name\":...,\"cursor\":N,\"keys\":[...]}\n",
	.run = run_scan,
};

/* DBSIZE: the live keys of one shmkv_stats() pass (expired ones not yet
 * deleted are not counted, as Redis's DBSIZE does not count them once
 * they are gone; the count is not a snapshot of a store in use). */
static int run_dbsize(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		CTL_OPT_JSON,
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	char name[SHMKV_NAME_MAX + 1];
	struct shmkv_stats st;
	struct ctl_json j;
	bool json = false;
	shmkv_t *kv;
	int c, err;

	while ((c = ctl_getopt(cmd, argc, argv, "hj", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		json = true;
	}
	c = ctl_operands(cmd, argc - optind, 1, 1);
	if (c == CTL_OK)
		c = ctl_open(argv[optind], SHMKV_OPEN_READONLY, &kv, name);
	if (c != CTL_OK)
		return c;
	err = shmkv_stats(kv, &st);
	shmkv_close(kv);
	if (err)
		return ctl_store_err(name, NULL, err);
	if (json) {
		cj_open(&j, stdout);
		cj_cstr(&j, "name", name);
		cj_u64(&j, "keys", st.live_keys);
		cj_close(&j);
	} else {
		printf(ctl_opt.raw ? "%" PRIu64 "\n"
				   : "(integer) %" PRIu64 "\n",
		       st.live_keys);
	}
	return CTL_OK;
}

const struct ctl_cmd ctl_cmd_dbsize = {
	.name = "dbsize",
	.synopsis = "NAME [--json]",
	.summary = "the number of live keys (Redis's DBSIZE)",
	.help = "Printed as redis-cli prints DBSIZE's reply: (integer) N on\n"
		"a terminal, N alone otherwise. Counted in one pass over the\n"
		"store while it runs (keys expired but not yet deleted are\n"
		"not counted).\n\n"
		"Options:\n"
		"  -j, --json   {\"name\":...,\"keys\":N}\n",
	.run = run_dbsize,
};
