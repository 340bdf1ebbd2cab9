/*
 * clock.c - clock reads and sleeps (see clock.h).
 */
#include "helpers/clock.h"

#include <errno.h>

int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000, ns % 1000000000 };

	if (ns <= 0)
		return;
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}
