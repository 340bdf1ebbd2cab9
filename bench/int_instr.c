/*
 * int_instr - N calls of one integer operation, for callgrind: run it for
 * two N and divide the difference in instructions by the difference in N,
 * so the set-up cancels out (as bench/instr.sh does for locks):
 *
 *   for n in 1000000 2000000; do
 *     valgrind --tool=callgrind --callgrind-out-file=/dev/null \
 *       build/bench/int_instr ll2string $n; done
 *
 * usage: int_instr ll2string|string2ll|ll2string_ms|string2ll_ms|get|
 *                  key_get|get_int|key_get_int N
 *        int_instr --quick   (every op, natively: make test's smoke run)
 *
 * ll2string formats the values 0..999999 in turn (1 to 6 digits, the
 * inline integers a counter holds); string2ll parses the decimal forms of
 * 1000 others of up to 7 digits. The _ms ones do the same 1.7e12 higher:
 * Unix times in milliseconds (13 digits), the SETNX page's lock values.
 * The others read the inline integer 123456 under a 12-byte key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/intconv.h"
#include "shmkv.h"

#define KEY "counter:0001"

/* Keeps the compiler from dropping a result nobody reads. */
static volatile uint64_t sink;

/* ll2string and string2ll: of numbers of up to 7 digits; with "_ms", of
 * Unix times in milliseconds (13 digits: the SETNX page's lock values). */
static int run_conv(const char *op, long n)
{
	char buf[SHMKV_INT_STRLEN];
	uint64_t acc = 0;
	int64_t base = strstr(op, "_ms") != NULL ? 1700000000000 : 0;

	/* Two loops: a base added at run time would cost the short
	 * numbers' loop instructions of its own. */
	if (strcmp(op, "ll2string") == 0) {
		for (long i = 0; i < n; i++)
			acc += shmkv__ll2string(buf, i % 1000000);
	} else if (strcmp(op, "ll2string_ms") == 0) {
		for (long i = 0; i < n; i++)
			acc += shmkv__ll2string(buf,
						1700000000000 + i % 1000000);
	} else {
		char(*text)[SHMKV_INT_STRLEN] = malloc(1000 * sizeof(*text));
		size_t *len = malloc(1000 * sizeof(*len));

		if (text == NULL || len == NULL)
			return 1;
		for (int i = 0; i < 1000; i++)
			len[i] = shmkv__ll2string(text[i], base + i * 997 + 1);
		for (long i = 0; i < n; i++) {
			int64_t v = 0;

			acc += (uint64_t)shmkv__string2ll(text[i % 1000],
							  len[i % 1000], &v) +
			       (uint64_t)v;
		}
		free(text);
		free(len);
	}
	sink = acc;
	return 0;
}

static int run_get(shmkv_t *kv, const char *op, long n)
{
	struct shmkv_keyref ref;
	char buf[64];
	struct shmkv_value out = { buf, sizeof(buf), 0 };
	/* The operation, chosen once: no string compare in the loop. */
	int which = strcmp(op, "get") == 0	 ? 0
		    : strcmp(op, "key_get") == 0 ? 1
		    : strcmp(op, "get_int") == 0 ? 2
						 : 3;
	uint64_t acc = 0;

	if (shmkv_set(kv, KEY, strlen(KEY), "123456", 6, 0, 0, NULL) != 1 ||
	    shmkv_key_prepare(kv, &ref, KEY, strlen(KEY)) != 0)
		return 1;
	for (long i = 0; i < n; i++) {
		int64_t v = 0;
		int rc;

		switch (which) {
		case 0:
			rc = shmkv_get(kv, KEY, strlen(KEY), &out);
			break;
		case 1:
			rc = shmkv_key_get(kv, &ref, &out);
			break;
		case 2:
			rc = shmkv_get_int(kv, KEY, strlen(KEY), &v);
			break;
		default:
			rc = shmkv_key_get_int(kv, &ref, &v);
			break;
		}
		if (rc != 1)
			return 1;
		acc += out.len + (uint64_t)v;
	}
	sink = acc;
	return 0;
}

/* One op @n times, on a fresh store for the GETs. */
static int run_op(const char *op, long n)
{
	char name[64];
	shmkv_t *kv;
	int rc;

	if (strncmp(op, "ll2string", 9) == 0 ||
	    strncmp(op, "string2ll", 9) == 0)
		return run_conv(op, n);
	snprintf(name, sizeof(name), "/shmkv-int-instr-%d", (int)getpid());
	if (shmkv_create(name, NULL, &kv) != 0) {
		fprintf(stderr, "int_instr: cannot create %s\n", name);
		return 1;
	}
	rc = run_get(kv, op, n);
	if (rc)
		fprintf(stderr, "int_instr: %s failed\n", op);
	shmkv_close(kv);
	/* Only once closed: a removed store's handle says -ESTALE. */
	shmkv_unlink(name);
	return rc;
}

int main(int argc, char **argv)
{
	static const char *const ops[] = { "ll2string",	   "string2ll",
					   "ll2string_ms", "string2ll_ms",
					   "get",	   "key_get",
					   "get_int",	   "key_get_int" };
	long n;

	/* --quick (make test's smoke run): every op natively, a few times. */
	if (argc == 2 && strcmp(argv[1], "--quick") == 0) {
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
			if (run_op(ops[i], 1000) != 0)
				return 1;
		return 0;
	}
	if (argc != 3 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: int_instr ll2string|string2ll|"
				"ll2string_ms|string2ll_ms|get|key_get|get_int|"
				"key_get_int N\n");
		return 2;
	}
	return run_op(argv[1], n);
}
