/*
 * redis_policy.c - what a Redis store's servers may evict (redis.h), for
 * the locks: a lock's keys live on the server, and a server that evicts
 * under memory pressure can drop a held grant's record (it has a PX, so
 * volatile-* policies may take it) or the token counter (allkeys-*: any
 * key), which hands the lock to a second holder or a token that goes
 * back. The lock calls ask here before each acquire (redis_lock_keys.c).
 *
 * Each master is asked CONFIG GET maxmemory-policy; where CONFIG is
 * renamed or disabled (managed services do both) or the ACL user may not
 * run it, INFO memory's maxmemory_policy line; where neither answers, the
 * master is UNKNOWN, which the locks treat as evicting (they cannot show
 * it does not). The reading is kept until one of the handle's
 * connections is to be made again (a restarted server, a failover, a new
 * master: each may run another configuration; reading_holds) or a minute
 * has passed, so a CONFIG SET on a live server is seen within a minute,
 * at the cost of one or two round trips per master a minute. An acquire
 * in flight when a connection drops and is made again is not covered:
 * the check and the grant are two requests.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "redis.h"

#define REREAD_MS	   60000
#define UNREACHED_RETRY_MS 1000

/* A policy's name as what it may evict. A name this file does not know
 * (a future policy) is taken as evicting anything. */
static int evicts_of(const char *p, size_t n)
{
	if (n == 10 && memcmp(p, "noeviction", 10) == 0)
		return SHMKV_REDIS_EVICTS_NONE;
	if (n > 9 && memcmp(p, "volatile-", 9) == 0)
		return SHMKV_REDIS_EVICTS_TTL;
	return SHMKV_REDIS_EVICTS_ALL;
}

/* One command of string arguments on master @i. */
static int on_master(struct shmkv_redis *r, int i, int argc, const char **argv,
		     redisReply **rep)
{
	size_t len[3];

	for (int a = 0; a < argc && a < 3; a++)
		len[a] = strlen(argv[a]);
	*rep = NULL;
	if (r->cluster != NULL)
		return shmkv__redis_cluster_call_master(r, i, argc, argv, len,
							rep);
	return shmkv__redis_link_call(&r->link, argc, argv, len, rep);
}

/* CONFIG GET's answer: {"maxmemory-policy", value}. Return: 0 and
 * *@evicts (-1: no answer, an error reply), or a link error. */
static int from_config(struct shmkv_redis *r, int i, int *evicts)
{
	const char *av[3] = { "CONFIG", "GET", "maxmemory-policy" };
	redisReply *rep;
	int err = on_master(r, i, 3, av, &rep);

	if (err || rep == NULL)
		return err ? err : -EPROTO;
	*evicts = -1;
	if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
	    rep->element[1]->type == REDIS_REPLY_STRING)
		*evicts = evicts_of(rep->element[1]->str, rep->element[1]->len);
	freeReplyObject(rep);
	return 0;
}

/* INFO memory's "maxmemory_policy:<name>\r\n". Return: as from_config. */
static int from_info(struct shmkv_redis *r, int i, int *evicts)
{
	static const char field[] = "\nmaxmemory_policy:";
	const char *av[2] = { "INFO", "memory" };
	redisReply *rep;
	int err = on_master(r, i, 2, av, &rep);
	const char *at;

	if (err || rep == NULL)
		return err ? err : -EPROTO;
	*evicts = -1;
	/* The field is never the first line ("# Memory" is). */
	at = rep->type == REDIS_REPLY_STRING ? strstr(rep->str, field) : NULL;
	if (at != NULL) {
		at += sizeof(field) - 1;
		*evicts = evicts_of(at, strcspn(at, "\r\n"));
	}
	freeReplyObject(rep);
	return 0;
}

static struct shmkv_redis_link *link_of(struct shmkv_redis *r, int i)
{
	return r->cluster != NULL ? shmkv__redis_cluster_master_link(r, i)
				  : &r->link;
}

/* Master @i's enum shmkv_redis_evicts, or a link error. */
static int master_evicts(struct shmkv_redis *r, int i)
{
	struct shmkv_redis_link *l;
	int evicts;
	int err = from_config(r, i, &evicts);

	if (err == 0 && evicts < 0)
		err = from_info(r, i, &evicts);
	if (err)
		return err;
	/* The connection both questions went on (a new one clears it). */
	l = link_of(r, i);
	if (l != NULL)
		l->policy_read = true;
	return evicts < 0 ? SHMKV_REDIS_EVICTS_UNKNOWN : evicts;
}

/*
 * May the last reading stand? Not after any connect of the handle's, nor
 * a minute after, nor once a master would connect anew (its server may
 * be another now: a restart, a failover at the same address): the poll
 * per master lets the acquire that follows a dropped connection read
 * first, not the one after it. A cluster's master that could not be
 * reached is tried again at most once a second, not at every acquire (a
 * black-holed node costs a connect timeout); a lone server is always
 * tried, as the acquire itself would be.
 */
static bool reading_holds(struct shmkv_redis *r, int64_t now, int n)
{
	int64_t age = now - r->policy.read_ms;

	if (!r->policy.known || r->policy.connects != r->connects ||
	    age >= REREAD_MS)
		return false;
	for (int i = 0; i < n; i++) {
		const struct shmkv_redis_link *l = link_of(r, i);

		if (l == NULL || !shmkv__redis_link_would_connect(l))
			continue;
		if (l->policy_read || r->cluster == NULL ||
		    age >= UNREACHED_RETRY_MS)
			return false;
	}
	return true;
}

int shmkv__redis_policy(struct shmkv_redis *r)
{
	int64_t now = shmkv__mono_ms();
	int n = r->cluster != NULL ? shmkv__redis_cluster_masters(r) : 1;
	int worst = SHMKV_REDIS_EVICTS_NONE, answered = 0;
	int err = -EHOSTUNREACH; /* a cluster map with no master */

	if (reading_holds(r, now, n))
		return r->policy.evicts;
	for (int i = 0; i < n; i++) {
		int e = master_evicts(r, i);

		if (e < 0) {
			err = e;
			continue;
		}
		answered++;
		if (e > worst)
			worst = e;
	}
	if (answered == 0)
		return err;
	/* After the asking: the connects it made were to the servers it
	 * asked, and are counted in. */
	r->policy.known = true;
	r->policy.connects = r->connects;
	r->policy.read_ms = now;
	r->policy.evicts = worst;
	return worst;
}
