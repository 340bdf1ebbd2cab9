/*
 * expire.h - turning Redis's expire arguments into deadlines.
 */
#ifndef SHMKV_EXPIRE_H
#define SHMKV_EXPIRE_H

#include <stdbool.h>
#include <stdint.h>

/* A deadline already past when it is set: the key is to be deleted. */
#define SHMKV__DEADLINE_PAST INT64_MIN

/*
 * Redis's keyIsExpired: a key is expired once now has passed its deadline
 * (now > when); during the deadline's own millisecond it is still there,
 * with a PTTL of 0. @deadline 0: none. Every judgement of a stored
 * deadline (lazy expiry, sweep, stats, scan) uses this.
 */
static inline bool shmkv__expired(int64_t deadline, int64_t now)
{
	return deadline != 0 && now > deadline;
}

/* Whose rules shmkv__deadline() applies (Redis 7's, command by command). */
enum shmkv__deadline_rule {
	/* Any t, only overflow is invalid; a deadline at or before now
	 * deletes at once (checkAlreadyExpired: when <= now). */
	SHMKV__RULE_EXPIRE,
	/* t <= 0 is invalid; otherwise as EXPIRE. */
	SHMKV__RULE_GETEX,
	/* t <= 0 is invalid; an absolute deadline of exactly now is stored,
	 * and expires once now passes it (SET does not check for the past:
	 * only keyIsExpired judges the key). */
	SHMKV__RULE_SET,
};

/*
 * Converts @t (seconds if @seconds, else ms; a Unix time if @absolute, else
 * relative to now) to a CLOCK_BOOTTIME deadline in ms, or
 * SHMKV__DEADLINE_PAST, by the rules of @rule.
 * Return: 0, or -EINVAL where Redis says "invalid expire time".
 */
struct shmkv;
int shmkv__deadline(struct shmkv *kv, int64_t t, bool seconds, bool absolute,
		    enum shmkv__deadline_rule rule, int64_t *deadline);

#endif
