/*
 * expire.h - turning Redis's expire arguments into deadlines.
 */
#ifndef SHMKV_EXPIRE_H
#define SHMKV_EXPIRE_H

#include <stdbool.h>
#include <stdint.h>

/* A deadline at or before now: the key is to be deleted. */
#define SHMKV__DEADLINE_PAST INT64_MIN

/*
 * Converts @t (seconds if @seconds, else ms; a Unix time if @absolute, else
 * relative to now) to a CLOCK_BOOTTIME deadline in ms, or
 * SHMKV__DEADLINE_PAST. @positive applies SET/GETEX rules (t <= 0 is
 * invalid); otherwise EXPIRE rules (any t, only overflow is invalid).
 * Return: 0, or -EINVAL where Redis says "invalid expire time".
 */
struct shmkv;
int shmkv__deadline(struct shmkv *kv, int64_t t, bool seconds, bool absolute,
		    bool positive, int64_t *deadline);

#endif
