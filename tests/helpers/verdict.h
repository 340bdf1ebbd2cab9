/*
 * verdict.h - one checked property of a stress program's audit (torture,
 * lifecycle_soak): counted as passed or failed, and a failure printed to
 * stderr as "<program>: FAILED: <what>", after stdout is flushed so that
 * the two streams read in order.
 */
#ifndef SHMKV_TESTS_VERDICT_H
#define SHMKV_TESTS_VERDICT_H

#include <stdarg.h>
#include <stdbool.h>

/* Counts @ok in *@passed or *@failed; on a failure prints @fmt and @ap
 * under the name @prog. */
void verdict_count(int *passed, int *failed, const char *prog, bool ok,
		   const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

#endif /* SHMKV_TESTS_VERDICT_H */
