/*
 * verdict.c - one checked property of an audit (see verdict.h).
 */
#include "helpers/verdict.h"

#include <stdio.h>

void verdict_count(int *passed, int *failed, const char *prog, bool ok,
		   const char *fmt, va_list ap)
{
	if (ok) {
		(*passed)++;
		return;
	}
	(*failed)++;
	fflush(stdout);
	fprintf(stderr, "%s: FAILED: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}
