/*
 * shmctl_json.c - a small streaming JSON writer for --json output.
 *
 * One object per run, on one line, keys in a fixed order, so scripts can
 * rely on the schema documented in shmctl.1. Keys and values are byte
 * strings: each byte is written as one code point (Latin-1), ASCII as
 * itself and everything else as \u00XX, so the output is valid JSON (and
 * valid UTF-8) for any key, and decoding a string and encoding it back as
 * Latin-1 gives the original bytes.
 */
#include <inttypes.h>
#include <string.h>

#include "shmctl.h"

static void raw_str(FILE *f, const void *s, size_t len)
{
	const unsigned char *p = s;

	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] == '\n')
			fputs("\\n", f);
		else if (p[i] == '\t')
			fputs("\\t", f);
		else if (p[i] >= 0x20 && p[i] < 0x7f)
			fputc(p[i], f);
		else
			fprintf(f, "\\u%04x", p[i]);
	}
	fputc('"', f);
}

/* Comma and key before a member (key NULL inside arrays). */
static void member(struct ctl_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (key != NULL) {
		raw_str(j->f, key, strlen(key));
		fputc(':', j->f);
	}
}

static void open_nested(struct ctl_json *j, const char *key, char opener)
{
	member(j, key);
	fputc(opener, j->f);
	if (j->depth + 1 < CTL_JSON_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

void cj_open(struct ctl_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->first[0] = true;
	fputc('{', f);
	j->depth = 1;
	j->first[1] = true;
}

void cj_close(struct ctl_json *j)
{
	fputs("}\n", j->f);
	j->depth = 0;
}

void cj_obj(struct ctl_json *j, const char *key)
{
	open_nested(j, key, '{');
}

void cj_arr(struct ctl_json *j, const char *key)
{
	open_nested(j, key, '[');
}

void cj_end(struct ctl_json *j, char closer)
{
	fputc(closer, j->f);
	if (j->depth > 1)
		j->depth--;
}

void cj_str(struct ctl_json *j, const char *key, const void *s, size_t len)
{
	member(j, key);
	raw_str(j->f, s, len);
}

void cj_cstr(struct ctl_json *j, const char *key, const char *s)
{
	cj_str(j, key, s, strlen(s));
}

void cj_u64(struct ctl_json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void cj_i64(struct ctl_json *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void cj_bool(struct ctl_json *j, const char *key, bool v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void cj_num(struct ctl_json *j, const char *key, double v)
{
	member(j, key);
	fprintf(j->f, "%.4f", v);
}

void cj_null(struct ctl_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}
