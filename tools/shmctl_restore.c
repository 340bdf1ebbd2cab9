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
 *
 * All or nothing: whether a dump fits a store (its probe windows, its
 * pages per size class, its growth within max_memory) is known only by
 * writing it, so a write that fails undoes the others. A store restore
 * created is removed; in an existing one, each key the dump names was
 * read first (value and TTL), and the keys written are put back as they
 * were, last first (a key that was absent is deleted). Keys other
 * processes write meanwhile are theirs; keys an evicting store evicted to
 * make room are not brought back.
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
		const struct dump_record *e = &r->d.e[i].rec;
		bool key = e->klen > cfg.key_max;

		if (!key && e->vlen <= cfg.value_max)
			continue;
		/* The length and the limit, as shmkv_exec says them. */
		ctl_err(NULL,
			"%s:%zu: %s is %zu bytes, %s's %s is %" PRIu32
			": nothing restored",
			r->file, r->d.e[i].line, key ? "key" : "value",
			key ? e->klen : e->vlen, name,
			key ? "key_max" : "value_max",
			key ? cfg.key_max : cfg.value_max);
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

/* A key as it was before the restore, to put back if it fails. */
struct before {
	bool existed;
	char *val;
	size_t vlen;
	int64_t pttl; /* -1: none; >= 0 milliseconds left */
};

static void befores_free(struct before *b, size_t n)
{
	for (size_t i = 0; b != NULL && i < n; i++)
		free(b[i].val);
	free(b);
}

/* Reads the key of @e into @b, through @scratch (value_max bytes); keeps
 * a copy of the value's own length. Return: 0 or a negative errno. */
static int read_before(shmkv_t *kv, const struct dump_record *e,
		       struct shmkv_value *scratch, struct before *b)
{
	int rc = shmkv_pttl(kv, e->key, e->klen, &b->pttl);

	if (rc == 0)
		rc = shmkv_get(kv, e->key, e->klen, scratch);
	if (rc != 1)
		return rc < 0 ? rc : 0;
	b->val = malloc(scratch->len ? scratch->len : 1);
	if (b->val == NULL)
		return -ENOMEM;
	memcpy(b->val, scratch->buf, scratch->len);
	b->vlen = scratch->len;
	b->existed = true;
	return 0;
}

/* Every key of the dump as the store holds it now (an existing store's).
 * Return: 0 or a negative errno (*@out NULL). */
static int read_befores(const struct restore *r, shmkv_t *kv,
			struct before **out)
{
	struct shmkv_config cfg;
	struct shmkv_value scratch = { 0 };
	struct before *b = calloc(r->d.n ? r->d.n : 1, sizeof(*b));
	int err = shmkv_get_config(kv, &cfg);

	*out = NULL;
	if (err == 0) {
		scratch.cap = cfg.value_max ? cfg.value_max : 1;
		scratch.buf = malloc(scratch.cap);
	}
	if (b == NULL || (err == 0 && scratch.buf == NULL))
		err = -ENOMEM;
	for (size_t i = 0; err == 0 && i < r->d.n; i++)
		err = read_before(kv, &r->d.e[i].rec, &scratch, &b[i]);
	free(scratch.buf);
	if (err) {
		befores_free(b, r->d.n);
		return err;
	}
	*out = b;
	return 0;
}

/* Puts one key back as @b says it was. Return: 0 or a negative errno. */
static int put_back(shmkv_t *kv, const struct dump_record *e,
		    const struct before *b)
{
	struct dump_record was = *e;

	if (!b->existed) {
		int rc = shmkv_del(kv, e->key, e->klen);

		return rc < 0 ? rc : 0;
	}
	was.val = b->val;
	was.vlen = b->vlen;
	was.pttl = b->pttl;
	return load_one(kv, &was) < 0 ? -EIO : 0;
}

/* Undoes the first @n writes, last first. Return: the keys that could
 * not be put back. */
static size_t undo(const struct restore *r, shmkv_t *kv, const struct before *b,
		   size_t n)
{
	size_t failed = 0;

	while (n-- > 0)
		failed += put_back(kv, &r->d.e[n].rec, &b[n]) != 0;
	return failed;
}

/*
 * Writes every record; on the first failure, undoes what it wrote: puts
 * back @b's keys (an existing store) or leaves the created store to the
 * caller, which removes it (@b NULL). Return: CTL_OK or CTL_STORE.
 */
static int load(const struct restore *r, shmkv_t *kv, const char *name,
		const struct before *b)
{
	for (size_t i = 0; i < r->d.n; i++) {
		int rc = load_one(kv, &r->d.e[i].rec);
		size_t failed;

		if (rc >= 0)
			continue;
		if (b == NULL) {
			ctl_err(name,
				"%s:%zu: %s: nothing restored (the dump does "
				"not fit; the store restore created is "
				"removed)",
				r->file, r->d.e[i].line, shmkv_strerror(rc));
			return CTL_STORE;
		}
		failed = undo(r, kv, b, i);
		if (failed == 0)
			ctl_err(name,
				"%s:%zu: %s: nothing restored (the dump does "
				"not fit; the %zu keys written before are as "
				"they were)",
				r->file, r->d.e[i].line, shmkv_strerror(rc), i);
		else
			ctl_err(name,
				"%s:%zu: %s; of the %zu keys written before, "
				"%zu could not be put back as they were",
				r->file, r->d.e[i].line, shmkv_strerror(rc), i,
				failed);
		return CTL_STORE;
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
	char shown[CTL_SHOWN_CAP];

	printf("restored %zu keys into %s%s", r->d.n,
	       ctl_shown(name, shown, sizeof(shown)),
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
	struct before *was = NULL;
	bool created, counted;
	shmkv_t *kv;
	int rc = open_target(r, name, &kv, &created), rc2, err;

	if (rc != CTL_OK)
		return rc;
	/* A store just created under noeviction evicts nothing. */
	counted = !created && evicted(kv, &before);
	rc = check_fits(r, kv, name);
	if (rc == CTL_OK && !created) {
		err = read_befores(r, kv, &was);
		if (err)
			rc = ctl_store_err(name, "reading the keys to restore",
					   err);
	}
	if (rc == CTL_OK)
		rc = load(r, kv, name, was);
	befores_free(was, r->d.n);
	if (rc != CTL_OK && created) {
		/* Nothing of the dump may stay: the store was its. */
		shmkv_close(kv);
		err = shmkv_unlink(name);
		if (err)
			ctl_store_err(name, "removing it", err);
		return rc;
	}
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

	if (ctl_store_name(arg, name) != 0) {
		char shown[CTL_SHOWN_CAP];

		return ctl_usage(&ctl_cmd_restore, "invalid store name '%s'",
				 ctl_shown(arg, shown, sizeof(shown)));
	}
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
		"is restored expired, so it is gone).\n"
		"All or nothing: when a key does not fit (exit 3), what was\n"
		"written is undone: a store restore created is removed, and\n"
		"in an existing one the dump's keys are put back as they\n"
		"were (value and TTL; keys an evicting store evicted\n"
		"meanwhile are not brought back).\n\n"
		"Options:\n",
	.run = run_restore,
};
