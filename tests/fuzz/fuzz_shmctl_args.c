/*
 * fuzz_shmctl_args.c - libFuzzer harness: shmctl's argument parsing,
 * called directly (the tool's files are linked in; shmctl.c's main is
 * renamed by the build).
 *
 * Input: [selector u8][bytes]; the selector (mod 7) picks the target:
 *   0 ctl_split: argv is NULL-terminated, each argument NUL-terminated at
 *     its length, and quoting the arguments again with ctl_repr() splits
 *     back to the same arguments.
 *   1 ctl_repr then ctl_split: any bytes come back as one argument.
 *   2 ctl_glob ([pattern length u8][pattern][string]) against a port of
 *     Redis's stringmatchlen (below), the behaviour it claims.
 *   3 ctl_parse_u64, 4 ctl_parse_size: against plain re-statements.
 *   5 ctl_store_name: accepts exactly what the library's name check
 *     accepts once the slash is added, and a URI as it is.
 *   6 a prompt line: split as the prompt does, run with ctl_exec() on a
 *     tiny store; a command the tool calls read-only also runs on a
 *     read-only handle without -EROFS.
 *
 * FUZZ_SEEDS_OUT=dir: write the seed corpus there and exit.
 */
#include <errno.h>
#include <string.h>

#include "fz_script.h"
#include "internal.h"
#include "shmctl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char name[SHMKV_NAME_MAX + 1];
static shmkv_t *kv, *kv_ro;
static struct fz_snapshot snap;

/* Quotes @a's arguments with ctl_repr(), separated by spaces. */
static char *requote(const struct ctl_args *a, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	FZ_ASSERT(f != NULL, "open_memstream");
	for (int i = 0; i < a->argc; i++) {
		if (i > 0)
			fputc(' ', f);
		ctl_repr(f, a->argv[i], a->len[i]);
	}
	FZ_ASSERT(fclose(f) == 0, "memstream");
	return buf;
}

static void check_args(const struct ctl_args *a)
{
	FZ_ASSERT(a->argc == 0 || a->argv[a->argc] == NULL,
		  "split: argv not NULL-terminated");
	for (int i = 0; i < a->argc; i++)
		FZ_ASSERT(a->argv[i][a->len[i]] == '\0',
			  "split: argument %d not NUL-terminated", i);
}

static bool args_equal(const struct ctl_args *a, const struct ctl_args *b)
{
	if (a->argc != b->argc)
		return false;
	for (int i = 0; i < a->argc; i++)
		if (a->len[i] != b->len[i] ||
		    memcmp(a->argv[i], b->argv[i], a->len[i]) != 0)
			return false;
	return true;
}

static void fuzz_split(const uint8_t *p, size_t n)
{
	struct ctl_args a, b;
	size_t at = 0, qlen = 0;
	char *q;
	int err = ctl_split((const char *)p, n, &a, &at);

	if (err != 0) {
		FZ_ASSERT(err == -EINVAL || err == -ENOMEM, "split: %d", err);
		FZ_ASSERT(at <= n, "split: fault at %zu of %zu", at, n);
		return;
	}
	check_args(&a);
	q = requote(&a, &qlen);
	err = ctl_split(q, qlen, &b, &at);
	FZ_ASSERT(err == 0, "split: its own quoting fails at %zu: %.*s", at,
		  (int)qlen, q);
	FZ_ASSERT(args_equal(&a, &b), "split: re-quoted arguments differ");
	ctl_args_free(&b);
	ctl_args_free(&a);
	free(q);
}

static void fuzz_repr(const uint8_t *p, size_t n)
{
	struct ctl_args a;
	size_t at = 0, qlen = 0;
	char *q = NULL;
	FILE *f = open_memstream(&q, &qlen);

	FZ_ASSERT(f != NULL, "open_memstream");
	ctl_repr(f, p, n);
	FZ_ASSERT(fclose(f) == 0, "memstream");
	FZ_ASSERT(ctl_split(q, qlen, &a, &at) == 0,
		  "repr: its output does not split (at %zu)", at);
	FZ_ASSERT(a.argc == 1 && a.len[0] == n &&
			  (n == 0 || memcmp(a.argv[0], p, n) == 0),
		  "repr: split gives %d arguments, not the bytes", a.argc);
	ctl_args_free(&a);
	free(q);
}

/*
 * Redis 7's stringmatchlen_impl (util.c), case-sensitive, as the
 * reference. Three departures, each one ctl_glob makes on purpose:
 * bytes compare unsigned in [a-z] ranges (Redis compares signed chars),
 * the pattern is never read past its length (Redis relies on the NUL of
 * its sds), and nesting has no limit (Redis gives up at 1000 stars).
 */
static bool ref_class(const unsigned char **pp, int *plen, unsigned char c)
{
	const unsigned char *p = *pp + 1;
	int n = *plen - 1, match = 0, not = n > 0 && p[0] == '^';

	if (not ) {
		p++;
		n--;
	}
	for (;; p++, n--) {
		if (n >= 2 && p[0] == '\\') {
			p++;
			n--;
			match |= p[0] == c;
		} else if (n == 0) {
			p--; /* unclosed: the class ends with the pattern */
			n++;
			break;
		} else if (p[0] == ']') {
			break;
		} else if (n >= 3 && p[1] == '-') {
			unsigned char lo = p[0] < p[2] ? p[0] : p[2];
			unsigned char hi = p[0] < p[2] ? p[2] : p[0];

			match |= c >= lo && c <= hi;
			p += 2;
			n -= 2;
		} else {
			match |= p[0] == c;
		}
	}
	*pp = p;
	*plen = n;
	return not ? !match : match;
}

static bool ref_match(const unsigned char *p, int plen, const unsigned char *s,
		      int slen, bool *skip)
{
	while (plen > 0 && slen > 0) {
		if (p[0] == '*') {
			while (plen > 1 && p[1] == '*')
				p++, plen--;
			if (plen == 1)
				return true;
			for (; slen > 0; s++, slen--) {
				if (ref_match(p + 1, plen - 1, s, slen, skip))
					return true;
				if (*skip)
					return false;
			}
			*skip = true;
			return false;
		} else if (p[0] == '[') {
			if (!ref_class(&p, &plen, s[0]))
				return false;
		} else if (p[0] != '?') {
			if (p[0] == '\\' && plen >= 2)
				p++, plen--;
			if (p[0] != s[0])
				return false;
		}
		s++, slen--, p++, plen--;
		if (slen == 0)
			while (plen > 0 && p[0] == '*')
				p++, plen--;
	}
	/* Redis: "" matches nothing but "" (its KEYS and SCAN special-case
	 * "*"); ctl_glob lets any run of stars match "": a fourth departure,
	 * applied here too. */
	while (slen == 0 && plen > 0 && p[0] == '*')
		p++, plen--;
	return plen == 0 && slen == 0;
}

static void fuzz_glob(const uint8_t *p, size_t n)
{
	struct fz_in in = { p, n };
	size_t plen, slen;
	const uint8_t *pat = fz_bytes(&in, fz_u8(&in), &plen);
	const uint8_t *str = fz_bytes(&in, in.n, &slen);
	bool skip = false;
	bool want = ref_match(pat, (int)plen, str, (int)slen, &skip);
	bool got = ctl_glob((const char *)pat, plen, str, slen);

	FZ_ASSERT(got == want, "glob: '%.*s' on '%.*s': %d, Redis says %d",
		  (int)plen, pat, (int)slen, str, got, want);
}

/* A NUL-terminated copy of the input (up to its first NUL). */
static char *cstr(const uint8_t *p, size_t n)
{
	char *s = strndup((const char *)p, n);

	FZ_ASSERT(s != NULL, "out of memory");
	return s;
}

/* Decimal digits only, at least one, within 64 bits. */
static int ref_u64(const char *s, uint64_t *v)
{
	uint64_t n = 0;
	bool over = false;

	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		unsigned d = (unsigned char)*s - '0';

		if (d > 9)
			return -EINVAL;
		over |= n > (UINT64_MAX - d) / 10;
		n = n * 10 + d;
	}
	if (over)
		return -ERANGE;
	*v = n;
	return 0;
}

typedef int number_parser(const char *s, uint64_t *v);

/* @parse (shmctl's, named @what) and @ref agree on the input as a string:
 * the same result, and the same number when it is 0. */
static void compare_parsers(const uint8_t *p, size_t n, const char *what,
			    number_parser *parse, number_parser *ref)
{
	char *s = cstr(p, n);
	uint64_t got = 0, want = 0;
	int rc = parse(s, &got), rc_ref = ref(s, &want);

	FZ_ASSERT(rc == rc_ref && (rc != 0 || got == want),
		  "%s '%s': %d %llu, want %d %llu", what, s, rc,
		  (unsigned long long)got, rc_ref, (unsigned long long)want);
	free(s);
}

static void fuzz_u64(const uint8_t *p, size_t n)
{
	compare_parsers(p, n, "parse_u64", ctl_parse_u64, ref_u64);
}

/* Digits, then at most one of b k m g t (any case), each x1024. */
static int ref_size(const char *s, uint64_t *v)
{
	static const char units[] = "bkmgt";
	size_t len = strlen(s);
	char *unit, digits[32];
	int shift = 0, err;
	uint64_t n;

	if (len == 0 || len >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, len + 1);
	unit = len > 1 ? strchr(units, s[len - 1] | 0x20) : NULL;
	if (unit != NULL) {
		shift = (int)(unit - units) * 10;
		digits[len - 1] = '\0';
	}
	err = ref_u64(digits, &n);
	if (err)
		return err;
	if (shift > 0 && n > UINT64_MAX >> shift)
		return -ERANGE;
	*v = n << shift;
	return 0;
}

static void fuzz_size(const uint8_t *p, size_t n)
{
	compare_parsers(p, n, "parse_size", ctl_parse_size, ref_size);
}

/* shmctl and the library take the same names, "x" and "/x" alike, and
 * make the same shm name of them. */
static void fuzz_store_name(const uint8_t *p, size_t n)
{
	char *s = cstr(p, n), out[SHMKV_NAME_MAX + 1],
	     lib_out[SHMKV_NAME_MAX + 1];
	int rc = ctl_store_name(s, out), lib = shmkv__name_canon(s, lib_out);

	/* A URI ("redis://..."): kept as it is, for the library's backend
	 * to parse (its own fuzzing is the URI parser's); too long, refused. */
	if (ctl_is_uri(s)) {
		FZ_ASSERT(rc == (strlen(s) > SHMKV_NAME_MAX ? -ENAMETOOLONG : 0),
			  "URI '%s': shmctl says %d", s, rc);
		FZ_ASSERT(rc != 0 || strcmp(out, s) == 0,
			  "URI '%s' became '%s'", s, out);
		free(s);
		return;
	}
	FZ_ASSERT((rc == 0) == (lib == 0),
		  "store name '%s': shmctl says %d, the library %d", s, rc,
		  lib);
	FZ_ASSERT(rc != 0 || strcmp(out, lib_out) == 0,
		  "store name '%s': shmctl -> '%s', the library -> '%s'", s,
		  out, lib_out);
	free(s);
}

static void fuzz_prompt_line(const uint8_t *p, size_t n)
{
	struct shmkv_reply reply;
	struct ctl_args a;
	size_t at = 0;
	int rc;

	if (ctl_split((const char *)p, n, &a, &at) != 0)
		return;
	if (a.argc == 0)
		goto out;
	fz_snapshot_restore(&snap, kv);
	rc = ctl_exec(kv, name, a.argc, (const char *const *)a.argv, a.len);
	FZ_ASSERT(rc >= CTL_OK && rc <= CTL_REPLY, "ctl_exec: exit %d", rc);
	if (!ctl_cmd_is_read_only(a.argv[0], a.len[0]))
		goto out;
	memset(&reply, 0, sizeof(reply));
	rc = shmkv_exec(kv_ro, a.argc, (const char *const *)a.argv, a.len,
			&reply);
	FZ_ASSERT(rc != -EROFS, "'%s' is read-only for shmctl, not the store",
		  a.argv[0]);
	shmkv_reply_free(&reply);
out:
	ctl_args_free(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*const targets[])(const uint8_t *p, size_t n) = {
		fuzz_split, fuzz_repr,	     fuzz_glob,	       fuzz_u64,
		fuzz_size,  fuzz_store_name, fuzz_prompt_line,
	};
	struct fz_in in = { data, size };
	uint8_t sel = fz_u8(&in) % (sizeof(targets) / sizeof(targets[0]));

	targets[sel](in.p, in.n);
	return 0;
}

/*
 * Seeds: a few inputs per target.
 */

static void seed(const char *dir, const char *file, uint8_t sel, const void *p,
		 size_t n)
{
	struct fz_buf in = { 0 };

	fz_put8(&in, sel);
	fz_put(&in, p, n);
	fz_write_seed(dir, file, &in);
	fz_buf_free(&in);
}

#define SEED(file, sel, lit) seed(dir, file, sel, lit, sizeof(lit) - 1)

static void write_seeds(const char *dir)
{
	SEED("split-plain", 0, "set key value NX PX 100");
	SEED("split-quotes", 0, "set \"a b\" 'it\\'s' \"\\x00\\n\\t\\\\\"");
	SEED("split-bad", 0, "get \"unterminated");
	SEED("repr", 1, "a\"b\\c\n\r\t\a\b\x01\x7f\xff");
	SEED("glob-class", 2, "\x08h[ae]l*o?hello!");
	SEED("glob-escape", 2, "\x0a\\*[^a-c]*[x-\\]foo*dz]");
	SEED("glob-stars", 2, "\x05**?**abc");
	SEED("u64", 3, "18446744073709551615");
	SEED("u64-over", 3, "18446744073709551616");
	SEED("size", 4, "64k");
	SEED("size-over", 4, "17179869184G");
	SEED("name", 5, "/orders");
	SEED("name-bad", 5, "a/b");
	SEED("line-set", 6, "set str \"x y\" PX 60000");
	SEED("line-get", 6, "get str");
	SEED("line-incr", 6, "incrby int 9223372036854775807");
	SEED("line-unknown", 6, "frob 1 2");
}

static void drop_store(void)
{
	shmkv_close(kv_ro);
	shmkv_close(kv);
	shmkv_unlink(name);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FUZZ_SEEDS_OUT");
	struct shmkv_config cfg = fz_tiny_config(16, 16, 64, 3);
	int err;

	(void)argc;
	(void)argv;
	if (seeds != NULL) {
		write_seeds(seeds);
		exit(0);
	}
	fz_silence();
	fz_name(name, "args", "store");
	kv = fz_create(name, &cfg);
	fz_populate(kv, FZ_FILL_KEYS | FZ_FILL_TTLS);
	fz_snapshot_take(&snap, kv);
	err = shmkv_open(name, SHMKV_OPEN_READONLY, &kv_ro);
	FZ_ASSERT(err == 0, "open %s read-only: %s", name, shmkv_strerror(err));
	atexit(drop_store);
	return 0;
}
