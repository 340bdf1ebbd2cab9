/*
 * shmctl_rinfo.c - "shmctl info redis://...": what a store on a Redis
 * server is, honestly: the backend's mode (one server or a cluster) and
 * its masters, each master's version, role and memory in use (from its
 * INFO), and the keys the handle sees (its prefix's, or the db's). None
 * of the shared-memory store's table, pages or size classes: a server
 * has none of them.
 *
 * The one file of the tool that reaches into the library's internals
 * (src/redis.h, for INFO on each master: shmkv_exec speaks only the
 * string commands); shmctl links the static library, which has them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"
#include "shmctl.h"

/* What one master's INFO says. */
struct master_info {
	char addr[SHMKV_REDIS_HOST_MAX + 8];
	char version[32];
	char role[16];
	uint64_t used_memory;
};

/* The value of "@field:" in INFO text @s (up to its line's end). */
static void info_field(const char *s, const char *field, char *out, size_t cap)
{
	size_t flen = strlen(field);
	const char *p = s;

	out[0] = '\0';
	while ((p = strstr(p, field)) != NULL) {
		if ((p == s || p[-1] == '\n') && p[flen] == ':') {
			size_t n = strcspn(p + flen + 1, "\r\n");

			snprintf(out, cap, "%.*s", (int)n, p + flen + 1);
			return;
		}
		p += flen;
	}
}

static int master_take(struct shmkv_redis *r, int m, struct master_info *mi)
{
	static const char *argv[] = { "INFO" };
	static const size_t len[] = { 4 };
	char num[32];
	redisReply *rep;
	redisReply *none = NULL;
	int err;

	rep = none;
	err = shmkv__redis_call_master(r, m, 1, argv, len, &rep);
	if (err)
		return err;
	if (rep == NULL)
		return -EPROTO;
	if (rep->type != REDIS_REPLY_STRING && rep->type != 9 /* VERB */) {
		err = rep->type == REDIS_REPLY_ERROR ? shmkv__redis_err(rep)
						     : -EPROTO;
		freeReplyObject(rep);
		return err;
	}
	info_field(rep->str, "redis_version", mi->version, sizeof(mi->version));
	info_field(rep->str, "role", mi->role, sizeof(mi->role));
	info_field(rep->str, "used_memory", num, sizeof(num));
	mi->used_memory = strtoull(num, NULL, 10);
	/* The node's own words for where it listens (cluster: as the map
	 * names it). */
	info_field(rep->str, "tcp_port", num, sizeof(num));
	snprintf(mi->addr, sizeof(mi->addr), "port %s", num);
	freeReplyObject(rep);
	return 0;
}

static void print_human(const char *shown, const struct shmkv_redis *r,
			const struct master_info *mi, int masters,
			uint64_t keys)
{
	char h[32];

	printf("store:        %s\n", shown);
	printf("backend:      Redis, %s\n",
	       r->cluster != NULL ? "cluster" : "one server");
	printf("masters:      %d\n", masters);
	for (int m = 0; m < masters; m++)
		printf("  master %d:   %s, redis %s, role %s, used memory %s\n",
		       m, mi[m].addr, mi[m].version, mi[m].role,
		       ctl_human_bytes(mi[m].used_memory, h, sizeof(h)));
	if (r->uri.prefix_len > 0)
		printf("keys:         %" PRIu64 " (under prefix '%s')\n", keys,
		       r->uri.prefix);
	else
		printf("keys:         %" PRIu64 " (db %d)\n", keys, r->uri.db);
	printf("note:         tables, value pages and eviction are the "
	       "server's own (redis-cli INFO)\n");
}

static void print_json(const char *shown, const struct shmkv_redis *r,
		       const struct master_info *mi, int masters, uint64_t keys)
{
	struct ctl_json j;

	cj_open(&j, stdout);
	cj_cstr(&j, "name", shown);
	cj_cstr(&j, "backend", "redis");
	cj_cstr(&j, "mode", r->cluster != NULL ? "cluster" : "single");
	cj_cstr(&j, "prefix", r->uri.prefix);
	cj_i64(&j, "db", r->uri.db);
	cj_u64(&j, "keys", keys);
	cj_arr(&j, "masters");
	for (int m = 0; m < masters; m++) {
		cj_obj(&j, NULL);
		cj_cstr(&j, "addr", mi[m].addr);
		cj_cstr(&j, "version", mi[m].version);
		cj_cstr(&j, "role", mi[m].role);
		cj_u64(&j, "used_memory", mi[m].used_memory);
		cj_end(&j, '}');
	}
	cj_end(&j, ']');
	cj_close(&j);
}

int ctl_redis_info(const char *name, bool json)
{
	char shown[CTL_SHOWN_CAP];
	struct master_info *mi = NULL;
	struct shmkv_stats st;
	struct shmkv_redis *r;
	shmkv_t *kv;
	int masters, err;

	ctl_shown(name, shown, sizeof(shown));
	err = shmkv_open(name, SHMKV_OPEN_READONLY, &kv);
	if (err)
		return ctl_store_err(name, NULL, err);
	r = shmkv__redis_of(kv);
	masters = shmkv__redis_masters(r);
	err = masters > 0 ? 0 : masters < 0 ? masters : -EIO;
	if (err == 0 && (mi = calloc((size_t)masters, sizeof(*mi))) == NULL)
		err = -ENOMEM;
	for (int m = 0; err == 0 && m < masters; m++)
		err = master_take(r, m, &mi[m]);
	if (err == 0)
		err = shmkv_stats(kv, &st);
	if (err == 0 && json)
		print_json(shown, r, mi, masters, st.live_keys);
	else if (err == 0)
		print_human(shown, r, mi, masters, st.live_keys);
	free(mi);
	shmkv_close(kv);
	return err ? ctl_store_err(name, "info", err) : CTL_OK;
}
