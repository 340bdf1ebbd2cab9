/*
 * redis_lock_script.c - the safe lock's server-side scripts, and EVALSHA
 * with the reload a restarted server needs.
 *
 * Each script is one atomic step on the lock's two keys (KEYS[1] the
 * owner record, KEYS[2] the counter hash {t, r}; one slot: redis_lock.h).
 * Lua numbers are doubles: tokens are exact up to 2^53 (at a million
 * grants a second, 285 years of one lock), printed with %d.
 */
#include <errno.h>
#include <string.h>

#include "redis_lock_call.h"
#include "redis_lock.h"

/*
 * Each script first checks the counter: a field t or r that is not a
 * decimal number of at most 18 digits (written by someone else: no
 * script writes one) is refused with a BADCOUNTER error reply naming the
 * key and the field (shmkv__rl_err: -EBADMSG), rather than HINCRBY's "not
 * an integer" (which would read as a bad argument) or a comparison with
 * nil. A counter of another type is HGET's WRONGTYPE (-EEXIST).
 */
#define COUNTER_CHECK                                                          \
	"for _, f in ipairs({'t', 'r'}) do\n"                                  \
	"  local v = redis.call('HGET', KEYS[2], f)\n"                         \
	"  if v and (#v > 18 or not string.match(v, '^%d+$')) then\n"          \
	"    return redis.error_reply('BADCOUNTER lock token counter ' .. "    \
	"KEYS[2] .. ' field ' .. f .. ' is not a number')\n"                   \
	"  end\n"                                                              \
	"end\n"

/*
 * ACQUIRE: ARGV lease ms, "boot:ns:pid:start:nonce", host, the record to
 * take over ("" none), "1" if releases may be native DELIFEQs.
 * {1, record, grant kind} when granted: the token is the counter's INCR
 * (never expires, never goes back), the grant time the server's TIME.
 * Kind 1 (OWNER_DEAD): the exact record judged dead was replaced (a
 * compare-and-swap: if it changed meanwhile, busy). Kind 2
 * (LEASE_EXPIRED): the record is gone but the last grant was neither
 * released (r) nor replaced: only its PX can have removed it; unknowable
 * after a DELIFEQ release, which cannot write r. Busy: {0, record, PTTL}.
 */
#define ACQUIRE                                                                \
	COUNTER_CHECK                                                          \
	"local cur = redis.call('GET', KEYS[1])\n"                             \
	"local kind = 0\n"                                                     \
	"if cur then\n"                                                        \
	"  if ARGV[4] == '' or cur ~= ARGV[4] then\n"                          \
	"    return {0, cur, redis.call('PTTL', KEYS[1])}\n"                   \
	"  end\n"                                                              \
	"  kind = 1\n"                                                         \
	"end\n"                                                                \
	"local t = redis.call('HINCRBY', KEYS[2], 't', 1)\n"                   \
	"if kind == 0 and t > 1 and ARGV[5] == '0' and "                       \
	"redis.call('HGET', KEYS[2], 'r') ~= string.format('%d', t - 1) "      \
	"then\n"                                                               \
	"  kind = 2\n"                                                         \
	"end\n"                                                                \
	"local now = redis.call('TIME')\n"                                     \
	"local ms = tonumber(now[1]) * 1000 + "                                \
	"math.floor(tonumber(now[2]) / 1000)\n"                                \
	"local rec = string.format('%d', t) .. ':' .. ARGV[2] .. ':' .. "      \
	"string.format('%d', ms) .. ':' .. ARGV[3]\n"                          \
	"redis.call('SET', KEYS[1], rec, 'PX', ARGV[1])\n"                     \
	"return {1, rec, kind}\n"

/* Whose is it, when the record is not ours: 1 NOT_OWNER (another record,
 * or a grant after ours: ARGV[2] our token, "0" if we hold none), 2
 * NOT_HELD. */
#define NOT_MINE                                                               \
	"  if cur then return 1 end\n"                                         \
	"  local t = tonumber(redis.call('HGET', KEYS[2], 't') or '0')\n"      \
	"  if ARGV[2] ~= '0' and t > tonumber(ARGV[2]) then return 1 end\n"    \
	"  return 2\n"

/* RELEASE: ARGV our record, our token. Compare-and-delete; r marks the
 * token released (ACQUIRE's LEASE_EXPIRED). 0 released, else NOT_MINE. */
#define RELEASE                                                                \
	COUNTER_CHECK                                                          \
	"local cur = redis.call('GET', KEYS[1])\n"                             \
	"if ARGV[1] == '' or cur ~= ARGV[1] then\n" NOT_MINE "end\n"           \
	"redis.call('DEL', KEYS[1])\n"                                         \
	"redis.call('HSET', KEYS[2], 'r', ARGV[2])\n"                          \
	"return 0\n"

/* EXTEND: ARGV our record, our token, "a" (add) or "r" (replace), ms,
 * the longest lease. Compare-and-PEXPIRE: {0, new PTTL}, {1|2} NOT_MINE,
 * {3} past the longest lease. Our record present means its lease runs. */
#define EXTEND                                                                 \
	COUNTER_CHECK                                                          \
	"local cur = redis.call('GET', KEYS[1])\n"                             \
	"if ARGV[1] == '' or cur ~= ARGV[1] then\n"                            \
	"  return {(function()\n" NOT_MINE "  end)()}\n"                       \
	"end\n"                                                                \
	"local ms = tonumber(ARGV[4])\n"                                       \
	"if ARGV[3] == 'a' then\n"                                             \
	"  local left = redis.call('PTTL', KEYS[1])\n"                         \
	"  if left > 0 then ms = ms + left end\n"                              \
	"end\n"                                                                \
	"if ms > tonumber(ARGV[5]) then return {3} end\n"                      \
	"redis.call('PEXPIRE', KEYS[1], ms)\n"                                 \
	"return {0, ms}\n"

const char *const shmkv__rl_script_body[SHMKV__RL_SCRIPTS] = {
	[SHMKV__RL_ACQUIRE] = ACQUIRE,
	[SHMKV__RL_RELEASE] = RELEASE,
	[SHMKV__RL_EXTEND] = EXTEND,
};

/* SHA1s of the bodies (tests/unit/redis/test_redis_lock.c checks them
 * against SCRIPT LOAD; a wrong one costs a reload per call, not a wrong
 * answer: the retry uses the SHA the server gave). */
const char *const shmkv__rl_script_sha[SHMKV__RL_SCRIPTS] = {
	[SHMKV__RL_ACQUIRE] = "86c579a10c756fd4a752ba477d7878252c9792c2",
	[SHMKV__RL_RELEASE] = "faec87f3011b9f170ed4313930fbd873bd0db43c",
	[SHMKV__RL_EXTEND] = "70e6d401cd1a55d87a6d48bb757824780c60a2dc",
};

#define ARGS_MAX 8

static bool is_noscript(const redisReply *rep)
{
	return rep->type == REDIS_REPLY_ERROR && rep->len >= 8 &&
	       memcmp(rep->str, "NOSCRIPT", 8) == 0;
}

/* SCRIPT LOAD of @s on the node of @k; its SHA into @sha. */
static int load(struct shmkv_redis *r, enum shmkv__rl_script s,
		const struct shmkv__rl_keys *k, char sha[41])
{
	const char *argv[3] = { "SCRIPT", "LOAD", shmkv__rl_script_body[s] };
	size_t lens[3] = { 6, 4, strlen(shmkv__rl_script_body[s]) };
	redisReply *rep;
	int rc = shmkv__rl_call(r, k->rec, k->rec_len, 3, argv, lens, &rep);

	if (rc)
		return rc;
	if (rep->type == REDIS_REPLY_ERROR)
		rc = shmkv__rl_err(rep);
	else if (rep->type != REDIS_REPLY_STRING || rep->len != 40)
		rc = -EPROTO;
	else
		memcpy(sha, rep->str, 41);
	freeReplyObject(rep);
	return rc;
}

static int evalsha(struct shmkv_redis *r, const char *sha,
		   const struct shmkv__rl_keys *k, int argc, const char **argv,
		   const size_t *argvlen, redisReply **rep)
{
	const char *av[5 + ARGS_MAX] = { "EVALSHA", sha, "2", k->rec, k->ctr };
	size_t al[5 + ARGS_MAX] = { 7, 40, 1, k->rec_len, k->ctr_len };

	for (int i = 0; i < argc; i++) {
		av[5 + i] = argv[i];
		al[5 + i] = argvlen[i];
	}
	return shmkv__rl_call(r, k->rec, k->rec_len, 5 + argc, av, al, rep);
}

int shmkv__rl_eval(struct shmkv_redis *r, enum shmkv__rl_script s,
		   const struct shmkv__rl_keys *k, int argc, const char **argv,
		   const size_t *argvlen, redisReply **rep)
{
	int rc;

	if (argc > ARGS_MAX)
		return -EINVAL;
	rc = evalsha(r, shmkv__rl_script_sha[s], k, argc, argv, argvlen, rep);
	if (rc == 0 && is_noscript(*rep)) {
		/* The server lost its script cache (a restart, SCRIPT FLUSH,
		 * a failover to a node that never saw it): load, once more. */
		char sha[41];

		freeReplyObject(*rep);
		*rep = NULL;
		rc = load(r, s, k, sha);
		if (rc == 0)
			rc = evalsha(r, sha, k, argc, argv, argvlen, rep);
	}
	if (rc)
		return rc;
	if ((*rep)->type == REDIS_REPLY_ERROR) {
		rc = shmkv__rl_err(*rep);
		freeReplyObject(*rep);
		*rep = NULL;
		return rc;
	}
	return 0;
}
