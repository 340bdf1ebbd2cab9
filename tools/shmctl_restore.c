/*
 * shmctl_restore.c - "shmctl restore NAME FILE": loads a dump written by
 * "shmctl dump" (format in shmctl_dumpfmt.h).
 *
 * The whole file is parsed and checked before anything is touched: a
 * malformed line is reported with its number and nothing is created or
 * written. Then the store is created with the dump's geometry and mode if
 * it does not exist, or opened if it does (its keys not in the dump stay;
 * keys in both take the dump's value and TTL). TTLs are restored as the
 * time that was left when the dump was taken: a PTTL of 0 (the key was in
 * the millisecond of its deadline, which has passed by the time anything
 * is restored) is restored expired: the key is gone, and its old value
 * replaced, never left behind.
 *
 * A store restore creates is loaded under noeviction and gets the dump's
 * eviction policy after: a dump that does not fit is an error, never its
 * own keys silently evicted. An existing store keeps its policy, and
 * restore says how many keys it evicted meanwhile.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shmctl.h"
#include "shmctl_dumpfmt.h"

struct restore {
	const char *file; /* for messages: the path, or "(stdin)" */
	struct dump_file d;
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

/* The whole dump into @r, or the first error, by line. */
static int parse_all(struct restore *r, const char *buf, size_t len)
{
	struct dump_parser p;
	int rc = dump_parse_all(&p, buf, len, &r->d);

	if (rc == -EBADMSG)
		return bad(r, p.error_line, p.error);
	return rc ? bad(r, p.line, "out of memory") : CTL_OK;
}

/* Nothing is written unless every entry fits the target store. */
static int check_fits(const struct restore *r, shmkv_t *kv, const char *name)
{
	struct shmkv_config cfg;

	shmkv_get_config(kv, &cfg);
	for (size_t i = 0; i < r->d.n; i++) {
		if (r->d.e[i].rec.klen <= cfg.key_max &&
		    r->d.e[i].rec.vlen <= cfg.value_max)
			continue;
		ctl_err(NULL,
			"%s:%zu: key or value longer than %s allows "
			"(key_max %" PRIu32 ", value_max %" PRIu32 ")",
			r->file, r->d.e[i].line, name, cfg.key_max,
			cfg.value_max);
		return CTL_INPUT;
	}
	return CTL_OK;
}

/* Sets one record: PX for the time left. A PTTL of 0, which PX refuses,
 * is a deadline already past: PXAT 1 (1970) replaces any value in one
 * step and leaves the key gone. Not "now" by the wall clock: the store's
 * clock converts it within a millisecond, which could give the key one
 * more. */
static int load_one(shmkv_t *kv, const struct dump_record *e)
{
	unsigned flags = e->pttl > 0 ? SHMKV_SET_PX : 0;
	int64_t t = e->pttl;

	if (e->pttl == 0) {
		flags = SHMKV_SET_PXAT;
		t = 1;
	}
	return shmkv_set(kv, e->key, e->klen, e->val, e->vlen, flags, t, NULL);
}

static int load(const struct restore *r, shmkv_t *kv, const char *name)
{
	for (size_t i = 0; i < r->d.n; i++) {
		int rc = load_one(kv, &r->d.e[i].rec);

		if (rc < 0) {
			ctl_err(name, "%s:%zu: %s (%zu of %zu keys restored)",
				r->file, r->d.e[i].line, shmkv_strerror(rc), i,
				r->d.n);
			return CTL_STORE;
		}
	}
	return CTL_OK;
}

static int open_target(const struct restore *r, const char *name, shmkv_t **kv,
		       bool *created)
{
	struct shmkv_config cfg = r->d.cfg;
	int err = shmkv_open(name, 0, kv);

	*created = false;
	if (err == -ENOENT) {
		/* The dump's policy comes after the load (restore_into). */
		cfg.evict_policy = SHMKV_EVICT_NOEVICTION;
		err = shmkv_create(name, &cfg, kv);
		*created = err == 0;
		if (err == -EINVAL) {
			ctl_err(NULL, "%s:1: the header's geometry is invalid",
				r->file);
			return CTL_INPUT;
		}
	}
	return err ? ctl_store_err(name, NULL, err) : CTL_OK;
}

/* The store's count of evictions into *@n. Return: false if it cannot be
 * read (the note it feeds is then left out). */
static bool evicted(shmkv_t *kv, uint64_t *n)
{
	struct shmkv_stats st;

	if (shmkv_stats(kv, &st) != 0)
		return false;
	*n = st.evicted;
	return true;
}

/* A store restore created gets the dump's policy, loaded or not: it is
 * the dump's store either way. */
static int set_policy(const struct restore *r, shmkv_t *kv, const char *name)
{
	int err = shmkv_set_evict_policy(kv, (int)r->d.cfg.evict_policy);

	return err ? ctl_store_err(name, "maxmemory-policy", err) : CTL_OK;
}

static void print_restored(const struct restore *r, shmkv_t *kv,
			   const char *name, bool created, uint64_t evictions)
{
	struct shmkv_config cfg;

	printf("restored %zu keys into %s%s", r->d.n, name,
	       created ? " (created)" : "");
	/* Counted store-wide: other writers' evictions meanwhile too. */
	if (evictions > 0 && shmkv_get_config(kv, &cfg) == 0)
		printf("; the store evicted %" PRIu64 " keys meanwhile "
		       "(maxmemory-policy %s)",
		       evictions, ctl_policy_name(cfg.evict_policy));
	putchar('\n');
}

static int restore_into(struct restore *r, const char *name)
{
	uint64_t before = 0, after = 0;
	bool created, counted;
	shmkv_t *kv;
	int rc = open_target(r, name, &kv, &created), rc2;

	if (rc != CTL_OK)
		return rc;
	/* A store just created under noeviction evicts nothing. */
	counted = !created && evicted(kv, &before);
	rc = check_fits(r, kv, name);
	if (rc == CTL_OK)
		rc = load(r, kv, name);
	rc2 = created ? set_policy(r, kv, name) : CTL_OK;
	if (rc == CTL_OK)
		rc = rc2;
	counted = counted && evicted(kv, &after) && after > before;
	if (rc == CTL_OK)
		print_restored(r, kv, name, created,
			       counted ? after - before : 0);
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
	dump_file_free(&r.d);
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
		"store is created with the dump's geometry, mode and\n"
		"maxmemory-policy (set once the keys are in, so that none is\n"
		"evicted by the restore); an existing one keeps its other\n"
		"keys and its policy, and restore says how many keys it\n"
		"evicted meanwhile. TTLs restart from the time\n"
		"that was left when the dump was taken (a PTTL of 0: the key\n"
		"is restored expired, so it is gone).\n\n"
		"Options:\n",
	.run = run_restore,
};
