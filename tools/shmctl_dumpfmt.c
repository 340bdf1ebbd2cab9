/*
 * shmctl_dumpfmt.c - the dump format (shmctl_dumpfmt.h): writing records
 * with ctl_repr() and parsing them back with ctl_split(), which reads
 * exactly what ctl_repr() writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "shmctl.h"
#include "shmctl_dumpfmt.h"

#define MAGIC	"SHMKV-DUMP"
#define VERSION "1"

void dump_record_free(struct dump_record *r)
{
	free(r->key);
	free(r->val);
	memset(r, 0, sizeof(*r));
}

/*
 * Writer.
 */

static int write_status(FILE *f)
{
	return ferror(f) ? -EIO : 0;
}

int dump_write_header(FILE *f, const struct shmkv_config *cfg)
{
	fprintf(f,
		MAGIC " " VERSION " slots=%" PRIu32 " key_max=%" PRIu32
		      " value_max=%" PRIu32 " probe_limit=%" PRIu32
		      " value_memory=%" PRIu64,
		cfg->slots, cfg->key_max, cfg->value_max, cfg->probe_limit,
		cfg->value_memory);
	if (cfg->max_memory != 0)
		fprintf(f, " max_memory=%" PRIu64, cfg->max_memory);
	/* Only when set, as huge_pages below: a noeviction store's dump
	 * reads as it always has, in shmctls that predate eviction too. */
	if (cfg->evict_policy != SHMKV_EVICT_NOEVICTION)
		fprintf(f, " evict_policy=%s",
			ctl_policy_name(cfg->evict_policy));
	fprintf(f, " mode=%04o", (unsigned)cfg->mode);
	/* Only when set: a plain store's dump reads as it always has. */
	if (cfg->flags & SHMKV_CONFIG_HUGE_PAGES)
		fprintf(f, " huge_pages=1");
	fputc('\n', f);
	return write_status(f);
}

/* A PTTL of 0 is written as 0: the key was live in the millisecond of its
 * deadline (as in Redis); restore, later, finds it expired. */
int dump_write_record(FILE *f, const struct dump_record *r)
{
	ctl_repr(f, r->key, r->klen);
	fputc(' ', f);
	ctl_repr(f, r->val, r->vlen);
	fprintf(f, " %" PRId64 "\n", r->pttl < 0 ? (int64_t)-1 : r->pttl);
	return write_status(f);
}

int dump_write_end(FILE *f, uint64_t records)
{
	fprintf(f, "END %" PRIu64 "\n", records);
	return write_status(f);
}

/*
 * Parser.
 */

void dump_parse_init(struct dump_parser *p, const char *buf, size_t len)
{
	memset(p, 0, sizeof(*p));
	p->buf = buf;
	p->len = len;
}

/* Records the error @what at byte @at of the current line. */
static int fail(struct dump_parser *p, size_t at, const char *what)
{
	p->error = what;
	p->error_line = p->line;
	p->error_offset = p->line_start + at;
	return -EBADMSG;
}

/* Moves to the next line: p->line and p->line_start name it, *@n gets
 * its length (without the newline). Return: false at the end. */
static bool advance(struct dump_parser *p, size_t *n)
{
	const char *s, *nl;

	p->line++;
	p->line_start = p->pos;
	if (p->pos >= p->len)
		return false;
	s = p->buf + p->pos;
	nl = memchr(s, '\n', p->len - p->pos);
	*n = nl ? (size_t)(nl - s) : p->len - p->pos;
	/* A last line without its newline ends at the buffer's end. */
	p->pos += *n + (nl != NULL);
	return true;
}

/* The next line split into @a. Return: 1, 0 at the end of the buffer,
 * -EBADMSG or -ENOMEM. */
static int next_line(struct dump_parser *p, struct ctl_args *a)
{
	size_t n = 0, at = 0;
	int err;

	if (!advance(p, &n))
		return 0;
	err = ctl_split(p->buf + p->line_start, n, a, &at);
	if (err == -ENOMEM)
		return err;
	if (err)
		return fail(p, at, "malformed quoting or a NUL byte");
	return 1;
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

	if (kl == 12 && strncmp(tok, "evict_policy", 12) == 0) {
		/* A name, not a number: Redis's, as the writer spells it. */
		int policy = shmkv_evict_policy_parse(eq + 1);

		cfg->evict_policy = policy < 0 ? 0 : (uint32_t)policy;
		return policy >= 0;
	}
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
	if (kl == 10 && strncmp(tok, "max_memory", 10) == 0) {
		cfg->max_memory = v;
		return true;
	}
	if (kl == 10 && strncmp(tok, "huge_pages", 10) == 0) {
		cfg->flags = v ? SHMKV_CONFIG_HUGE_PAGES : 0;
		return v <= 1;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i]) != kl || strncmp(tok, names[i], kl) != 0)
			continue;
		*fields[i] = (uint32_t)v;
		return v <= UINT32_MAX;
	}
	return false;
}

static int header_fields(struct dump_parser *p, const struct ctl_args *a)
{
	struct shmkv_config *cfg = &p->cfg;

	if (a->argc < 2 || strcmp(a->argv[0], MAGIC) != 0)
		return fail(p, 0, "not a shmkv dump (no SHMKV-DUMP header)");
	if (strcmp(a->argv[1], VERSION) != 0)
		return fail(p, 0, "unsupported dump format version");
	for (int i = 2; i < a->argc; i++)
		if (!header_field(cfg, a->argv[i]))
			return fail(p, 0, "malformed header field");
	/* mode may be absent (or 0): the store then gets the default. */
	if (cfg->slots == 0 || cfg->key_max == 0 || cfg->value_max == 0 ||
	    cfg->probe_limit == 0 || cfg->value_memory == 0)
		return fail(p, 0, "header lacks a geometry field");
	return 0;
}

int dump_parse_header(struct dump_parser *p)
{
	struct ctl_args a;
	int rc;

	rc = next_line(p, &a);
	if (rc == 0)
		return fail(p, 0, "empty file: not a shmkv dump");
	if (rc < 0)
		return rc;
	rc = header_fields(p, &a);
	ctl_args_free(&a);
	return rc;
}

/* -1, or a number of milliseconds: 0 to INT64_MAX. */
static int parse_pttl(const char *s, int64_t *pttl)
{
	uint64_t v;

	if (strcmp(s, "-1") == 0) {
		*pttl = -1;
		return 0;
	}
	if (ctl_parse_u64(s, &v) != 0 || v > INT64_MAX)
		return -EINVAL;
	*pttl = (int64_t)v;
	return 0;
}

/* A 3-field line: takes its key and value into @r. */
static int take_record(struct dump_parser *p, struct ctl_args *a,
		       struct dump_record *r)
{
	if (parse_pttl(a->argv[2], &r->pttl) != 0)
		return fail(p, 0, "PTTL must be -1 or a number >= 0");
	if (a->len[0] > p->cfg.key_max || a->len[1] > p->cfg.value_max) {
		bool key = a->len[0] > p->cfg.key_max;

		/* The length and the limit, as shmkv_exec says them. */
		snprintf(p->error_text, sizeof(p->error_text),
			 "%s is %zu bytes, the header's %s is %" PRIu32,
			 key ? "key" : "value", a->len[key ? 0 : 1],
			 key ? "key_max" : "value_max",
			 key ? p->cfg.key_max : p->cfg.value_max);
		return fail(p, 0, p->error_text);
	}
	r->key = a->argv[0], r->klen = a->len[0];
	r->val = a->argv[1], r->vlen = a->len[1];
	a->argv[0] = a->argv[1] = NULL; /* now the record's */
	p->records++;
	return 1;
}

static int end_line(struct dump_parser *p, const struct ctl_args *a)
{
	uint64_t n;

	if (a->argc != 2 || ctl_parse_u64(a->argv[1], &n) != 0)
		return fail(p, 0, "malformed END line");
	if (n != p->records)
		return fail(p, 0, "END count differs from the number of keys");
	p->ended = true;
	return 0;
}

/* After END, only the end of the buffer. */
static int after_end(struct dump_parser *p)
{
	size_t n;

	if (!advance(p, &n))
		return 0;
	return fail(p, 0, "text after the END line");
}

int dump_parse_next(struct dump_parser *p, struct dump_record *r)
{
	struct ctl_args a;
	int rc;

	memset(r, 0, sizeof(*r));
	if (p->ended)
		return after_end(p);
	rc = next_line(p, &a);
	if (rc == 0)
		return fail(p, 0, "no END line: the dump is truncated");
	if (rc < 0)
		return rc;
	if (a.argc >= 1 && a.len[0] == 3 && strcmp(a.argv[0], "END") == 0)
		rc = end_line(p, &a);
	else if (a.argc != 3)
		rc = fail(p, 0, "expected \"KEY\" \"VALUE\" PTTL");
	else
		rc = take_record(p, &a, r);
	ctl_args_free(&a);
	if (rc == 0)
		return after_end(p);
	return rc;
}

/* Takes @rec (now @f's) into a new entry. Return: 0 or -ENOMEM. */
static int add_entry(struct dump_file *f, struct dump_record *rec, size_t line)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 256;
		struct dump_entry *grown = realloc(f->e, cap * sizeof(*grown));

		if (grown == NULL) {
			dump_record_free(rec);
			return -ENOMEM;
		}
		f->e = grown;
		f->cap = cap;
	}
	f->e[f->n].rec = *rec;
	f->e[f->n++].line = line;
	return 0;
}

int dump_parse_all(struct dump_parser *p, const char *buf, size_t len,
		   struct dump_file *f)
{
	struct dump_record rec;
	int rc;

	dump_parse_init(p, buf, len);
	for (rc = dump_parse_header(p); rc == 0;) {
		rc = dump_parse_next(p, &rec);
		if (rc <= 0)
			break;
		rc = add_entry(f, &rec, p->line);
	}
	f->cfg = p->cfg;
	return rc;
}

void dump_file_free(struct dump_file *f)
{
	for (size_t i = 0; i < f->n; i++)
		dump_record_free(&f->e[i].rec);
	free(f->e);
	memset(f, 0, sizeof(*f));
}
