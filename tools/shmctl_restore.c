/*
 * shmctl_restore.c - "shmctl restore NAME FILE": loads a dump written by
 * "shmctl dump" (format in shmctl_dump.c).
 *
 * The whole file is parsed and checked before anything is touched: a
 * malformed line is reported with its number and nothing is created or
 * written. Then the store is created with the dump's geometry and mode if
 * it does not exist, or opened if it does (its keys not in the dump stay;
 * keys in both take the dump's value and TTL). TTLs are restored as the
 * time that was left when the dump was taken.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shmctl.h"

struct entry {
	char *key, *val;
	size_t klen, vlen;
	int64_t pttl; /* -1: none */
	size_t line;
};

struct restore {
	const char *file; /* for messages: the path, or "(stdin)" */
	struct shmkv_config cfg;
	struct entry *e;
	size_t n, cap;
	bool ended;
};

static int bad(const struct restore *r, size_t line, const char *what)
{
	ctl_err(NULL, "%s:%zu: %s", r->file, line, what);
	return CTL_INPUT;
}

/* The whole of @path ("-": stdin) in a malloc'd buffer.
 * Return: 0 or a negative errno. */
static int slurp(const char *path, char **buf, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	size_t cap = 0, n = 0, got;
	char *p = NULL, *grown;
	int err = 0;

	if (f == NULL)
		return -errno;
	do {
		if (cap - n < 4096) {
			cap = cap ? 2 * cap : 65536;
			grown = realloc(p, cap);
			if (grown == NULL) {
				err = -ENOMEM;
				break;
			}
			p = grown;
		}
		got = fread(p + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	if (err == 0 && ferror(f))
		err = -EIO;
	if (f != stdin)
		fclose(f);
	if (err) {
		free(p);
		return err;
	}
	*buf = p;
	*len = n;
	return 0;
}

/* One "field=value" of the header into @cfg. Return: false if unknown
 * or malformed. */
static bool header_field(struct shmkv_config *cfg, const char *tok)
{
	static const char *const names[] = { "slots", "key_max", "value_max",
					     "probe_limit" };
	uint32_t *fields[] = { &cfg->slots, &cfg->key_max, &cfg->value_max,
			       &cfg->probe_limit };
	const char *eq = strchr(tok, '=');
	size_t kl = eq ? (size_t)(eq - tok) : 0;
	uint64_t v;

	if (eq == NULL || ctl_parse_u64(eq + 1, &v) != 0)
		return false;
	if (kl == 4 && strncmp(tok, "mode", 4) == 0) {
		/* Octal: re-read the digits as such. */
		cfg->mode = (uint32_t)strtoul(eq + 1, NULL, 8);
		return strspn(eq + 1, "01234567") == strlen(eq + 1) &&
		       cfg->mode <= 0777;
	}
	if (kl == 12 && strncmp(tok, "value_memory", 12) == 0) {
		cfg->value_memory = v;
		return true;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i]) != kl || strncmp(tok, names[i], kl) != 0)
			continue;
		*fields[i] = (uint32_t)v;
		return v <= UINT32_MAX;
	}
	return false;
}

static int parse_header(struct restore *r, const struct ctl_args *a)
{
	if (a->argc < 2 || strcmp(a->argv[0], "SHMKV-DUMP") != 0)
		return bad(r, 1, "not a shmkv dump (no SHMKV-DUMP header)");
	if (strcmp(a->argv[1], "1") != 0)
		return bad(r, 1, "unsupported dump format version");
	for (int i = 2; i < a->argc; i++)
		if (!header_field(&r->cfg, a->argv[i]))
			return bad(r, 1, "malformed header field");
	/* mode may be absent (or 0): the store then gets the default. */
	if (r->cfg.slots == 0 || r->cfg.key_max == 0 || r->cfg.value_max == 0 ||
	    r->cfg.probe_limit == 0 || r->cfg.value_memory == 0)
		return bad(r, 1, "header lacks a geometry field");
	return CTL_OK;
}

static int parse_pttl(const char *s, int64_t *pttl)
{
	uint64_t v;

	if (strcmp(s, "-1") == 0) {
		*pttl = -1;
		return 0;
	}
	if (ctl_parse_u64(s, &v) != 0 || v == 0 || v > INT64_MAX)
		return -EINVAL;
	*pttl = (int64_t)v;
	return 0;
}

/* Takes the key and value of a 3-field line into a new entry. */
static int add_entry(struct restore *r, struct ctl_args *a, size_t line)
{
	struct entry *e;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		struct entry *grown = realloc(r->e, cap * sizeof(*grown));

		if (grown == NULL)
			return bad(r, line, "out of memory");
		r->e = grown;
		r->cap = cap;
	}
	e = &r->e[r->n];
	if (parse_pttl(a->argv[2], &e->pttl) != 0)
		return bad(r, line, "PTTL must be -1 or a positive number");
	if (a->len[0] > r->cfg.key_max || a->len[1] > r->cfg.value_max)
		return bad(r, line,
			   "key or value longer than the header's "
			   "key_max or value_max");
	e->key = a->argv[0], e->klen = a->len[0];
	e->val = a->argv[1], e->vlen = a->len[1];
	e->line = line;
	a->argv[0] = a->argv[1] = NULL; /* now the entry's */
	r->n++;
	return CTL_OK;
}

static int parse_end(struct restore *r, const struct ctl_args *a, size_t line)
{
	uint64_t n;

	if (a->argc != 2 || ctl_parse_u64(a->argv[1], &n) != 0)
		return bad(r, line, "malformed END line");
	if (n != r->n)
		return bad(r, line,
			   "END count differs from the number of keys");
	r->ended = true;
	return CTL_OK;
}

static int parse_line(struct restore *r, const char *s, size_t len, size_t line)
{
	struct ctl_args a;
	size_t at = 0;
	int rc;

	if (r->ended)
		return bad(r, line, "text after the END line");
	if (ctl_split(s, len, &a, &at) != 0)
		return bad(r, line, "malformed quoting or a NUL byte");
	if (line == 1)
		rc = parse_header(r, &a);
	else if (a.argc >= 1 && strcmp(a.argv[0], "END") == 0 && a.len[0] == 3)
		rc = parse_end(r, &a, line);
	else if (a.argc != 3)
		rc = bad(r, line, "expected \"KEY\" \"VALUE\" PTTL");
	else
		rc = add_entry(r, &a, line);
	ctl_args_free(&a);
	return rc;
}

static int parse_all(struct restore *r, const char *buf, size_t len)
{
	size_t line = 0, pos = 0;
	int rc = CTL_OK;

	if (len == 0)
		return bad(r, 1, "empty file: not a shmkv dump");
	while (rc == CTL_OK && pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - buf) : len;

		rc = parse_line(r, buf + pos, end - pos, ++line);
		pos = end + 1;
	}
	if (rc == CTL_OK && !r->ended)
		rc = bad(r, line + 1, "no END line: the dump is truncated");
	return rc;
}

/* Nothing is written unless every entry fits the target store. */
static int check_fits(const struct restore *r, shmkv_t *kv, const char *name)
{
	struct shmkv_config cfg;

	shmkv_get_config(kv, &cfg);
	for (size_t i = 0; i < r->n; i++) {
		if (r->e[i].klen <= cfg.key_max &&
		    r->e[i].vlen <= cfg.value_max)
			continue;
		ctl_err(NULL,
			"%s:%zu: key or value longer than %s allows "
			"(key_max %" PRIu32 ", value_max %" PRIu32 ")",
			r->file, r->e[i].line, name, cfg.key_max,
			cfg.value_max);
		return CTL_INPUT;
	}
	return CTL_OK;
}

static int load(const struct restore *r, shmkv_t *kv, const char *name)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct entry *e = &r->e[i];
		int rc = shmkv_set(kv, e->key, e->klen, e->val, e->vlen,
				   e->pttl > 0 ? SHMKV_SET_PX : 0, e->pttl,
				   NULL);

		if (rc < 0) {
			ctl_err(name, "%s:%zu: %s (%zu of %zu keys restored)",
				r->file, e->line, shmkv_strerror(rc), i, r->n);
			return CTL_STORE;
		}
	}
	return CTL_OK;
}

static int open_target(const struct restore *r, const char *name, shmkv_t **kv,
		       bool *created)
{
	int err = shmkv_open(name, 0, kv);

	*created = false;
	if (err == -ENOENT) {
		err = shmkv_create(name, &r->cfg, kv);
		*created = err == 0;
		if (err == -EINVAL) {
			ctl_err(NULL, "%s:1: the header's geometry is invalid",
				r->file);
			return CTL_INPUT;
		}
	}
	return err ? ctl_store_err(name, NULL, err) : CTL_OK;
}

static int restore_into(struct restore *r, const char *name)
{
	bool created;
	shmkv_t *kv;
	int rc = open_target(r, name, &kv, &created);

	if (rc != CTL_OK)
		return rc;
	rc = check_fits(r, kv, name);
	if (rc == CTL_OK)
		rc = load(r, kv, name);
	if (rc == CTL_OK)
		printf("restored %zu keys into %s%s\n", r->n, name,
		       created ? " (created)" : "");
	shmkv_close(kv);
	return rc;
}

static int restore(const char *arg, const char *path)
{
	struct restore r = { .file = strcmp(path, "-") ? path : "(stdin)" };
	char name[SHMKV_NAME_MAX + 1];
	char *buf = NULL;
	size_t len = 0;
	int rc, err;

	if (ctl_store_name(arg, name) != 0)
		return ctl_usage(&ctl_cmd_restore, "invalid store name '%s'",
				 arg);
	err = slurp(path, &buf, &len);
	if (err) {
		ctl_err(r.file, "%s", strerror(-err));
		return CTL_STORE;
	}
	rc = parse_all(&r, buf, len);
	free(buf);
	if (rc == CTL_OK)
		rc = restore_into(&r, name);
	for (size_t i = 0; i < r.n; i++) {
		free(r.e[i].key);
		free(r.e[i].val);
	}
	free(r.e);
	return rc;
}

static int run_restore(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = ctl_getopt(cmd, argc, argv, "h", opts)) != -1)
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
	c = ctl_operands(cmd, argc - optind, 2, 2);
	if (c != CTL_OK)
		return c;
	return restore(argv[optind], argv[optind + 1]);
}

const struct ctl_cmd ctl_cmd_restore = {
	.name = "restore",
	.synopsis = "NAME FILE",
	.summary =
		"load a dump (creating the store from its header if missing)",
	.help = "FILE is a dump written by shmctl dump, or - for stdin. It is\n"
		"parsed and checked whole first: a malformed line is reported\n"
		"with its number (exit 6) and nothing is changed. A missing\n"
		"store is created with the dump's geometry and mode; an\n"
		"existing one keeps its other keys. TTLs restart from the "
		"time\n"
		"that was left when the dump was taken.\n\n"
		"Options:\n",
	.run = run_restore,
};
