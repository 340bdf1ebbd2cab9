/*
 * fault.c - crash points (see fault.h). Compiled to nothing unless the
 * build defines SHMKV_FAULT_INJECTION.
 */
#include "fault.h"

#ifdef SHMKV_FAULT_INJECTION
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void (*shmkv__pause_hook)(const char *name);
static const char *crash_at;
static long crash_after;
static int crash_signal = SIGKILL;
static long passes; /* process-local; torture workers are single-threaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void arm(void)
{
	const char *after = getenv("SHMKV_CRASH_AFTER");

	const char *sig = getenv("SHMKV_CRASH_SIGNAL");

	crash_at = getenv("SHMKV_CRASH_AT");
	crash_after = after ? strtol(after, NULL, 10) : 1;
	if (sig != NULL && strcmp(sig, "STOP") == 0)
		crash_signal = SIGSTOP;
}

void shmkv__crash_point(const char *name)
{
	pthread_once(&once, arm);
	if (crash_at == NULL ||
	    (strcmp(crash_at, "any") != 0 && strcmp(crash_at, name) != 0))
		return;
	if (++passes >= crash_after)
		raise(crash_signal);
}
#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int shmkv__fault_injection_disabled;
#endif
