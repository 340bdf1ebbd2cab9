/*
 * shmctl_dump.c - "shmctl dump": every key, value and TTL of a store as
 * portable text that "shmctl restore" (shmctl_restore.c) reads back, in
 * the format of shmctl_dumpfmt.h.
 *
 * A dump is taken key by key while the store runs, not as a snapshot: a
 * key changed during the dump is written with one of its values. Each
 * value is read, then its PTTL; a key that expired or was deleted in
 * between is left out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmctl.h"
#include "shmctl_dumpfmt.h"

/* Slots per shmkv_scan() call. */
#define DUMP_STEP 4096

struct dump {
	shmkv_t *kv;
	FILE *out;
	struct shmkv_value val;
	uint64_t count;
};

/* Writes one key's line. Return: 0, or a negative errno (stops the scan). */
static int dump_key(const void *key, size_t klen, void *arg)
{
	struct dump *d = arg;
	/* The writer only reads the record: the cast drops no promise. */
	struct dump_record r = { .key = (char *)key, .klen = klen };
	int rc = shmkv_get(d->kv, key, klen, &d->val);

	if (rc == 1)
		rc = shmkv_pttl(d->kv, key, klen, &r.pttl);
	else if (rc == 0)
		return 0; /* deleted or expired since the scan saw it */
	if (rc < 0)
		return rc;
	if (r.pttl == -2)
		return 0;
	r.val = d->val.buf;
	r.vlen = d->val.len;
	d->count++;
	return dump_write_record(d->out, &r);
}

static int dump_store(struct dump *d)
{
	struct shmkv_config cfg;
	uint64_t cursor = 0, next = 0;
	int err = shmkv_get_config(d->kv, &cfg);

	if (err)
		return err;
	d->val.cap = cfg.value_max;
	d->val.buf = malloc(cfg.value_max);
	if (d->val.buf == NULL)
		return -ENOMEM;
	err = dump_write_header(d->out, &cfg);
	while (err == 0) {
		err = shmkv_scan(d->kv, cursor, DUMP_STEP, dump_key, d, &next);
		cursor = next;
		if (cursor == 0)
			break;
	}
	free(d->val.buf);
	return err ? err : dump_write_end(d->out, d->count);
}

/* Dumps to @path through a temporary file renamed into place, so the
 * file named is always a complete dump. */
static int dump_to_file(struct dump *d, const char *name, const char *path)
{
	char *tmp = NULL;
	int err;

	if (asprintf(&tmp, "%s.tmp-%ld", path, (long)getpid()) < 0)
		return ctl_store_err(name, NULL, -ENOMEM);
	d->out = fopen(tmp, "w");
	if (d->out == NULL) {
		ctl_err(path, "%s", strerror(errno));
		free(tmp);
		return CTL_STORE;
	}
	err = dump_store(d);
	/* File errors are the system's (ENOSPC is "no space left on device"
	 * here, not shmkv's "table full"): strerror, not shmkv_strerror. */
	if ((fclose(d->out) != 0 || rename(tmp, path) != 0) && err == 0) {
		ctl_err(path, "%s", strerror(errno));
		unlink(tmp);
		free(tmp);
		return CTL_STORE;
	}
	if (err)
		unlink(tmp);
	free(tmp);
	return err ? ctl_store_err(name, "dump", err) : CTL_OK;
}

static int run_dump(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	char name[SHMKV_NAME_MAX + 1];
	struct dump d = { 0 };
	const char *path = NULL;
	int c;

	while ((c = ctl_getopt(cmd, argc, argv, "ho:", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		path = optarg;
	}
	c = ctl_operands(cmd, argc - optind, 1, 1);
	if (c == CTL_OK)
		c = ctl_open(argv[optind], SHMKV_OPEN_READONLY, &d.kv, name);
	if (c != CTL_OK)
		return c;
	if (path != NULL) {
		c = dump_to_file(&d, name, path);
	} else {
		int err;

		d.out = stdout;
		err = dump_store(&d);
		/* A write error on stdout is reported once, by main. */
		c = err ? ctl_store_err(name, "dump", err) : CTL_OK;
	}
	shmkv_close(d.kv);
	return c;
}

const struct ctl_cmd ctl_cmd_dump = {
	.name = "dump",
	.synopsis = "NAME [--output FILE]",
	.summary = "write every key, value and TTL as portable text",
	.help = "The dump starts with a header line holding the format\n"
		"version and the store's geometry, has one line per key\n"
		"(\"key\" \"value\" PTTL, quoted and escaped as redis-cli "
		"does,\n"
		"PTTL -1 for no TTL) and ends with END and the key count. It "
		"is\n"
		"taken key by key while the store runs, not as a snapshot.\n\n"
		"Options:\n"
		"  -o, --output FILE  write FILE (complete or not at all)\n"
		"                     instead of stdout\n",
	.run = run_dump,
};
