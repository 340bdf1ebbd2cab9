/*
 * args.h - strict parsing of the numbers on a test program's command
 * line: all of the argument or nothing, so that a typo is a usage error
 * instead of a silent 0 (atoi) or a wrapped "-1" (strtoull).
 *
 * Free of Criterion: the standalone programs use it.
 */
#ifndef SHMKV_TESTS_ARGS_H
#define SHMKV_TESTS_ARGS_H

#include <stdint.h>

/* Parses all of @s as a decimal number no larger than @max into *@out.
 * Return: 0, or -1 (empty, a sign, junk, out of range; *@out untouched). */
int arg_u64(const char *s, uint64_t max, uint64_t *out);

/* Parses all of @s as a decimal int in [@min, @max] (@min >= 0) into
 * *@out. Return: 0, or -1 as arg_u64(). */
int arg_int(const char *s, int min, int max, int *out);

/* Parses a seed: any 64-bit number, decimal or 0x hex (as printed by the
 * programs that log one). Return: 0, or -1 as arg_u64(). */
int arg_seed(const char *s, uint64_t *out);

/* Parses all of @s as a finite number >= 0 into *@out (a duration).
 * Return: 0, or -1. */
int arg_seconds(const char *s, double *out);

#endif /* SHMKV_TESTS_ARGS_H */
