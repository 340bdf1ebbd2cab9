/*
 * fuzz_restore.c - libFuzzer harness: shmctl's dump format.
 *
 * The input is a dump file. It is parsed with the format's own parser
 * (tools/shmctl_dumpfmt.c) and goes through "shmctl restore" (the tool's
 * command, linked in) into a store A: created by restore from the input's
 * header when that geometry is small (or invalid: restore must then
 * refuse it), else a tiny store made beforehand. When the input is
 * accepted:
 *  - the format's writer and parser agree: the records written back and
 *    parsed again are the same, PTTLs of 0 included;
 *  - A holds exactly the dump's keys (the last line of a key wins), with
 *    its values, and a TTL where the line had one;
 *  - the round trip: A dumped and restored into a store B that restore
 *    creates from that dump's header is accepted, and B has A's geometry,
 *    mode, keys and values, and a TTL exactly where A has one;
 *  - the same keys in the reverse order are accepted too, into a store C
 *    of A's geometry, with the same result: what fits in a store does not
 *    depend on the order of the lines.
 * A key with a TTL may expire meanwhile: it may then be missing. B and C
 * may refuse with a full table (-ENOSPC): each store hashes with its own
 * seed, so with a short probe limit which keys fit depends on the seed.
 *
 * FUZZ_SEEDS_OUT=dir: write the seed corpus there and exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fz_script.h"
#include "internal.h"
#include "shmctl.h"
#include "shmctl_dumpfmt.h"

/* Largest store restore may create from an input's header. */
#define FRESH_BYTES_MAX (1u << 20)
#define FRESH_SLOTS_MAX 1024u

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char name_a[SHMKV_NAME_MAX + 1], name_b[SHMKV_NAME_MAX + 1];
static char path_in[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
static char path_out[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
static struct shmkv_config tiny;
static unsigned char *vbuf;
/* What the last restore_quiet() printed, for the failure message. */
static char last_msg[512];

/* Parses @len bytes at @buf into @f. Return: 0, or the parser's error,
 * which must say what and where. */
static int parse_all(struct dump_file *f, const char *buf, size_t len)
{
	struct dump_parser p;
	int rc = dump_parse_all(&p, buf, len, f);

	FZ_ASSERT(rc != -EBADMSG || p.error != NULL, "an error without text");
	FZ_ASSERT(rc != -EBADMSG || p.error_offset <= len,
		  "error offset %zu past the input (%zu)", p.error_offset, len);
	return rc;
}

/* Runs shmctl command @cmd with the NULL-terminated @argv, as the entry
 * point does (getopt starts afresh). */
static int run_tool(const struct ctl_cmd *cmd, char **argv)
{
	int argc = 0;

	while (argv[argc] != NULL)
		argc++;
	optind = 0;
	return cmd->run(cmd, argc, argv);
}

static int restore(const char *name, const char *path)
{
	char *argv[] = { "restore", (char *)name, (char *)path, NULL };

	return run_tool(&ctl_cmd_restore, argv);
}

static void write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	FZ_ASSERT(fd >= 0, "%s: %s", path, strerror(errno));
	FZ_ASSERT(n == 0 || write(fd, p, n) == (ssize_t)n, "%s: write", path);
	close(fd);
}

/* The value and PTTL of @key in @kv: 1 if present (in *@v, *@pttl). */
static int lookup(shmkv_t *kv, const void *key, size_t klen,
		  struct shmkv_value *v, int64_t *pttl)
{
	int rc;

	v->buf = vbuf;
	v->cap = SHMKV_VALUE_MAX_LIMIT; /* any store's value_max */
	rc = shmkv_get(kv, key, klen, v);
	FZ_ASSERT(rc >= 0, "get: %s", shmkv_strerror(rc));
	if (rc == 0)
		return 0;
	FZ_ASSERT(shmkv_pttl(kv, key, klen, pttl) == 0, "pttl");
	return *pttl == -2 ? 0 : 1; /* expired between the two */
}

/* The entry that decides @key: the last line naming it. */
static const struct dump_entry *last_entry(const struct dump_file *r,
					   const void *key, size_t klen)
{
	for (size_t i = r->n; i-- > 0;)
		if (r->e[i].rec.klen == klen &&
		    !memcmp(r->e[i].rec.key, key, klen))
			return &r->e[i];
	return NULL;
}

/* Every key of A comes from the dump (A was fresh). */
static int key_in_dump(const void *key, size_t klen, void *arg)
{
	FZ_ASSERT(last_entry(arg, key, klen) != NULL,
		  "restore: A holds a key not in the dump");
	return 0;
}

/* Every line's key is in A with its value and TTL, unless it expired. */
static void check_restored(const struct dump_file *r, shmkv_t *a)
{
	uint64_t cursor = 0, next = 0;

	for (size_t i = 0; i < r->n; i++) {
		const struct dump_entry *e = last_entry(r, r->e[i].rec.key,
							r->e[i].rec.klen);
		const struct dump_record *d = &e->rec;
		struct shmkv_value v;
		int64_t pttl = 0;

		if (!lookup(a, d->key, d->klen, &v, &pttl)) {
			/* A PTTL of 0 is restored as the deadline "now". */
			FZ_ASSERT(d->pttl >= 0,
				  "restore: line %zu's key is missing",
				  e->line);
			continue;
		}
		FZ_ASSERT(v.len == d->vlen && !memcmp(vbuf, d->val, v.len),
			  "restore: line %zu's value differs", e->line);
		FZ_ASSERT((d->pttl >= 0) == (pttl >= 0),
			  "restore: line %zu: PTTL %lld, A has %lld", e->line,
			  (long long)d->pttl, (long long)pttl);
	}
	do {
		FZ_ASSERT(shmkv_scan(a, cursor, 1024, key_in_dump, (void *)r,
				     &next) == 0,
			  "scan");
		cursor = next;
	} while (cursor != 0);
}

/* Both stores hold @key with one value, and a TTL in both or neither;
 * a key with a TTL may have expired on either side. */
static void same_key(shmkv_t *x, shmkv_t *y, const void *key, size_t klen)
{
	struct shmkv_value vx, vy;
	int64_t tx = 0, ty = 0;
	unsigned char *copy;

	if (!lookup(x, key, klen, &vx, &tx))
		return; /* expired since the scan saw it */
	copy = malloc(vx.len + 1);
	FZ_ASSERT(copy != NULL, "out of memory");
	memcpy(copy, vbuf, vx.len);
	if (!lookup(y, key, klen, &vy, &ty)) {
		FZ_ASSERT(tx >= 0, "round trip: a key without TTL is lost");
	} else {
		FZ_ASSERT(vx.len == vy.len && !memcmp(copy, vbuf, vx.len),
			  "round trip: a value differs");
		FZ_ASSERT((tx >= 0) == (ty >= 0),
			  "round trip: PTTL %lld became %lld", (long long)tx,
			  (long long)ty);
	}
	free(copy);
}

struct pair {
	shmkv_t *from, *to;
};

static int pair_key(const void *key, size_t klen, void *arg)
{
	struct pair *p = arg;

	same_key(p->from, p->to, key, klen);
	return 0;
}

/* Every key of @from is in @to, alike. */
static void contained(shmkv_t *from, shmkv_t *to)
{
	struct pair p = { from, to };
	uint64_t cursor = 0, next = 0;

	do {
		FZ_ASSERT(shmkv_scan(from, cursor, 1024, pair_key, &p, &next) ==
				  0,
			  "scan");
		cursor = next;
	} while (cursor != 0);
}

/* restore() with its messages kept from stderr. *@full: it failed only
 * because a key found no free slot in its probe window. */
static int restore_quiet(const char *name, const char *path, bool *full)
{
	FILE *saved = stderr, *f;
	char *msg = NULL;
	size_t len = 0;
	int rc;

	f = open_memstream(&msg, &len);
	FZ_ASSERT(f != NULL, "open_memstream");
	stderr = f;
	rc = restore(name, path);
	stderr = saved;
	FZ_ASSERT(fclose(f) == 0, "memstream");
	*full = rc == CTL_STORE && strstr(msg, shmkv_strerror(-ENOSPC));
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	free(msg);
	return rc;
}

/* The dump of store @name, as "shmctl dump" writes it, into path_out. */
static void write_dump(const char *name)
{
	char *argv[] = { "dump", (char *)name, "--output", path_out, NULL };
	int rc = run_tool(&ctl_cmd_dump, argv);

	FZ_ASSERT(rc == CTL_OK, "dump: exit %d", rc);
}

/* @r's keys, each with the line that decides it, last key first, under
 * a header of @a's geometry, into path_out. */
static void write_reversed(const struct dump_file *r, shmkv_t *a)
{
	FILE *f = fopen(path_out, "w");
	struct shmkv_config cfg;
	size_t n = 0;

	FZ_ASSERT(f != NULL, "%s: %s", path_out, strerror(errno));
	shmkv_get_config(a, &cfg);
	dump_write_header(f, &cfg);
	for (size_t i = r->n; i-- > 0;) {
		const struct dump_entry *e = &r->e[i];

		if (last_entry(r, e->rec.key, e->rec.klen) != e)
			continue;
		dump_write_record(f, &e->rec);
		n++;
	}
	FZ_ASSERT(dump_write_end(f, n) == 0 && fclose(f) == 0, "%s: write",
		  path_out);
}

/* The format's writer and parser agree: @r's header and records written
 * and parsed again are @r's. */
static void rewrite_equal(const struct dump_file *r)
{
	struct dump_file again = { 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	FZ_ASSERT(f != NULL, "open_memstream");
	dump_write_header(f, &r->cfg);
	for (size_t i = 0; i < r->n; i++)
		dump_write_record(f, &r->e[i].rec);
	FZ_ASSERT(dump_write_end(f, r->n) == 0 && fclose(f) == 0, "memstream");
	FZ_ASSERT(parse_all(&again, text, len) == 0,
		  "the parser refuses what the writer wrote");
	FZ_ASSERT(again.n == r->n &&
			  !memcmp(&again.cfg, &r->cfg, sizeof(r->cfg)),
		  "rewritten: %zu records, not %zu, or another header", again.n,
		  r->n);
	for (size_t i = 0; i < r->n; i++) {
		const struct dump_record *x = &r->e[i].rec,
					 *y = &again.e[i].rec;

		FZ_ASSERT(x->klen == y->klen && x->vlen == y->vlen &&
				  x->pttl == y->pttl &&
				  !memcmp(x->key, y->key, x->klen) &&
				  !memcmp(x->val, y->val, x->vlen),
			  "rewritten: line %zu reads back differently",
			  r->e[i].line);
	}
	dump_file_free(&again);
	free(text);
}

/* path_out restored into a new store B (created from its header) gives
 * what @a holds, unless B's table is full. */
static void reload_equal(shmkv_t *a, const char *what)
{
	struct shmkv_config ca, cb;
	bool full;
	shmkv_t *b;
	int rc = restore_quiet(name_b, path_out, &full);

	if (!full) {
		FZ_ASSERT(rc == CTL_OK, "%s: refused (exit %d): %s", what, rc,
			  last_msg);
		rc = shmkv_open(name_b, 0, &b);
		FZ_ASSERT(rc == 0, "open B: %s", shmkv_strerror(rc));
		shmkv_get_config(a, &ca);
		shmkv_get_config(b, &cb);
		FZ_ASSERT(memcmp(&ca, &cb, sizeof(ca)) == 0,
			  "%s: B's geometry or mode differs from A's", what);
		contained(a, b);
		contained(b, a);
		shmkv_close(b);
	}
	shmkv_unlink(name_b);
}

/* May restore create A from this header? Small ones, and invalid ones
 * (which restore must refuse). */
static bool fresh_header(const struct shmkv_config *cfg)
{
	struct shmkv_geometry g;

	if (shmkv__geometry_from_config(cfg, 0, &g) != 0)
		return true;
	return g.segment_size <= FRESH_BYTES_MAX &&
	       g.slot_count <= FRESH_SLOTS_MAX;
}

static void check_accepted(const struct dump_file *r)
{
	shmkv_t *a;
	int err = shmkv_open(name_a, 0, &a);

	FZ_ASSERT(err == 0, "open A: %s", shmkv_strerror(err));
	check_restored(r, a);
	write_dump(name_a);
	reload_equal(a, "round trip");
	write_reversed(r, a);
	reload_equal(a, "reversed lines");
	shmkv_close(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dump_file r = { 0 };
	int parsed = parse_all(&r, (const char *)data, size), rc;
	bool full;

	if (parsed == 0)
		rewrite_equal(&r);
	if (parsed != 0 || !fresh_header(&r.cfg))
		shmkv_close(fz_create(name_a, &tiny));
	write_file(path_in, data, size);
	rc = restore_quiet(name_a, path_in, &full);
	FZ_ASSERT(rc == CTL_OK || rc == CTL_INPUT || rc == CTL_STORE,
		  "restore: exit %d", rc);
	FZ_ASSERT(parsed == 0 || rc == CTL_INPUT,
		  "restore: accepted what the parser refuses");
	if (rc == CTL_OK)
		check_accepted(&r);
	dump_file_free(&r);
	shmkv_unlink(name_a);
	return 0;
}

/*
 * Seeds: hand-written dumps, valid and not, and a real one.
 */

#define HEADER                                                                 \
	"SHMKV-DUMP 1 slots=16 key_max=16 value_max=64 probe_limit=16 "        \
	"value_memory=196608 mode=0600\n"

static void seed_text(const char *dir, const char *file, const char *text)
{
	struct fz_buf in = { 0 };

	fz_put(&in, text, strlen(text));
	fz_write_seed(dir, file, &in);
	fz_buf_free(&in);
}

static void seed_real(const char *dir)
{
	struct fz_buf in = { 0 };
	char *text = NULL;
	size_t len = 0;
	shmkv_t *kv = fz_create(name_a, &tiny);
	FILE *f;

	fz_populate(kv, FZ_FILL_KEYS | FZ_FILL_TTLS | FZ_FILL_LOCKS);
	write_dump(name_a);
	shmkv_close(kv);
	f = fopen(path_out, "r");
	FZ_ASSERT(f != NULL && getdelim(&text, &len, '\0', f) > 0, "dump");
	fclose(f);
	fz_put(&in, text, strlen(text));
	fz_write_seed(dir, "real", &in);
	fz_buf_free(&in);
	free(text);
	shmkv_unlink(name_a);
}

static void write_seeds(const char *dir)
{
	seed_text(dir, "empty", HEADER "END 0\n");
	seed_text(dir, "keys",
		  HEADER "\"str\" \"hello\" -1\n\"bin\\x00\" \"\\x00\\xff\\n"
			 "\\\"q\\\"\" -1\n\"ttl\" \"soon\" 3600000\n"
			 "\"int\" \"42\" -1\n\"\" \"empty key\" -1\nEND 5\n");
	seed_text(dir, "duplicates",
		  HEADER "k v1 -1\nk 'v 2' 5000\n'k' \"v3\" -1\nEND 3\n");
	seed_text(dir, "blanks", HEADER "\t'a'   'b'\t-1\r\nEND 1\n");
	seed_text(dir, "policy",
		  "SHMKV-DUMP 1 slots=16 key_max=16 value_max=64 "
		  "probe_limit=16 value_memory=196608 "
		  "evict_policy=volatile-ttl mode=0600\n"
		  "a b -1\nc d 5000\nEND 2\n");
	seed_text(dir, "bad-policy",
		  "SHMKV-DUMP 1 slots=16 key_max=16 value_max=64 "
		  "probe_limit=16 value_memory=196608 evict_policy=lru "
		  "mode=0600\na b -1\nEND 1\n");
	seed_text(dir, "bad-count", HEADER "a b -1\nEND 2\n");
	seed_text(dir, "bad-pttl", HEADER "a b -2\nEND 1\n");
	seed_text(dir, "zero-pttl", HEADER "a b 0\nEND 1\n");
	seed_text(dir, "bad-quote", HEADER "\"a b -1\nEND 1\n");
	seed_text(dir, "no-end", HEADER "a b -1\n");
	seed_text(dir, "too-long",
		  HEADER "a "
			 "\"0123456789012345678901234567890"
			 "12345678901234567890123456789012"
			 "3456789\" -1\nEND 1\n");
	seed_real(dir);
}

static void drop_files(void)
{
	unlink(path_in);
	unlink(path_out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FUZZ_SEEDS_OUT");

	(void)argc;
	(void)argv;
	/* The target store of every input. A page for each of its 4 size
	 * classes, each page holding more blocks than there are slots: then
	 * any content of A fits B whatever the order of the keys. With
	 * fewer pages it need not: which classes get a page depends on the
	 * order values arrive in (see the report in tests/fuzz/README). */
	tiny = fz_tiny_config(64, 32, 200, 4);
	fz_name(name_a, "restore", "a");
	fz_name(name_b, "restore", "b");
	snprintf(path_in, sizeof(path_in), "%s%s-in", SHMKV_SHM_DIR, name_a);
	snprintf(path_out, sizeof(path_out), "%s%s-out", SHMKV_SHM_DIR, name_a);
	vbuf = malloc(SHMKV_VALUE_MAX_LIMIT);
	FZ_ASSERT(vbuf != NULL, "out of memory");
	if (seeds != NULL) {
		write_seeds(seeds);
		exit(0);
	}
	fz_silence();
	atexit(drop_files);
	return 0;
}
