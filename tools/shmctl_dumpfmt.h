/*
 * shmctl_dumpfmt.h - the dump format of "shmctl dump" and "shmctl
 * restore", as one unit: its records, a writer and a parser.
 *
 * Format 1, one item per line, every byte outside printable ASCII escaped
 * (as redis-cli quotes, read back by ctl_split) so a line never holds a
 * raw newline:
 *
 *   SHMKV-DUMP 1 slots=N key_max=N value_max=N probe_limit=N \
 *       value_memory=N mode=0600  the header, on one line; optional
 *                                 fields: max_memory=N,
 *                                 evict_policy=allkeys-lru (Redis's
 *                                 name; absent: noeviction),
 *                                 huge_pages=1
 *   "key" "value\x00\n" -1        a record: key, value, then the PTTL:
 *   "k2" "v" 59977                -1 for none, else milliseconds left
 *   "k3" "v" 0                    (0: the key was in its last millisecond)
 *   END 2                         the number of records: a truncated file
 *                                 is refused
 *
 * Nothing here touches a store: dump and restore do (shmctl_dump.c,
 * shmctl_restore.c), and the fuzzer drives this file alone.
 */
#ifndef SHMCTL_DUMPFMT_H
#define SHMCTL_DUMPFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shmkv.h"

/* One key of a dump. */
struct dump_record {
	char *key, *val; /* parsed: malloc'd, the caller's (dump_record_free) */
	size_t klen, vlen;
	int64_t pttl; /* -1: no TTL; else >= 0 milliseconds left */
};

/* Frees a parsed record's key and value; @r is empty again. */
void dump_record_free(struct dump_record *r);

/*
 * Writer. Each returns 0, or -EIO once @f has an error (stdio's; the
 * caller says which with errno or ferror).
 */
int dump_write_header(FILE *f, const struct shmkv_config *cfg);
int dump_write_record(FILE *f, const struct dump_record *r);
int dump_write_end(FILE *f, uint64_t records);

/*
 * Parser over a whole file in memory. dump_parse_header() first, then
 * dump_parse_next() until it returns 0 (the END line, with the right
 * count and nothing after it) or an error.
 */
struct dump_parser {
	const char *buf;
	size_t len;
	size_t pos;		 /* offset of the next line */
	size_t line;		 /* 1-based number of the line last read */
	size_t line_start;	 /* its offset */
	uint64_t records;	 /* records returned so far */
	struct shmkv_config cfg; /* the header's, once parsed */
	bool ended;
	/* After an error: what, where (line, and byte offset in the file). */
	const char *error;
	size_t error_line, error_offset;
	char error_text[96]; /* where an error that names numbers is written */
};

void dump_parse_init(struct dump_parser *p, const char *buf, size_t len);
/* The header line into p->cfg (mode 0 when absent).
 * Return: 0, or -EBADMSG (p->error says why) or -ENOMEM. */
int dump_parse_header(struct dump_parser *p);
/* The next record into @r (the caller's, to free). Keys and values longer
 * than the header's key_max and value_max are refused.
 * Return: 1 a record, 0 the end, or -EBADMSG (p->error) or -ENOMEM. */
int dump_parse_next(struct dump_parser *p, struct dump_record *r);

/* A whole dump in memory: the header and every record with its line. */
struct dump_entry {
	struct dump_record rec;
	size_t line;
};
struct dump_file {
	struct shmkv_config cfg;
	struct dump_entry *e;
	size_t n, cap;
};

/* Parses all of @buf into @f (zeroed by the caller; freed with
 * dump_file_free whatever the result), with @p as the parser, whose error
 * fields tell what went wrong. Return: 0, -EBADMSG or -ENOMEM. */
int dump_parse_all(struct dump_parser *p, const char *buf, size_t len,
		   struct dump_file *f);
void dump_file_free(struct dump_file *f);

#endif /* SHMCTL_DUMPFMT_H */
