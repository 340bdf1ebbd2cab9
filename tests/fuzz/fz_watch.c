/*
 * fz_watch.c - the bound on one command's time (see fz_common.h): a
 * watchdog thread that aborts when the harness's thread has spent more
 * than FZ_COMMAND_CPU_MS of CPU time in one command, so that a command
 * that loops (over corrupted words, say) is a failure libFuzzer reports
 * with its input, not a hang that only -timeout ends after 10 s.
 *
 * CPU time, not wall time: a busy machine that descheduled the harness
 * does not make a command look long, and a command that loops spends CPU
 * (the library never sleeps in the commands the scripts run: no blocking
 * lock waits).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "fz_common.h"

#define WATCH_PERIOD_MS 20

static clockid_t watched_clock;	   /* the harness thread's CPU clock */
static _Atomic int64_t started_ns; /* of the command under way; 0: none */
static const char *_Atomic what;
static pthread_once_t watch_once = PTHREAD_ONCE_INIT;

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *watchdog(void *arg)
{
	struct timespec nap = { 0, WATCH_PERIOD_MS * 1000000L };

	(void)arg;
	for (;;) {
		int64_t t0 = atomic_load(&started_ns);

		if (t0 != 0 && clock_ns(watched_clock) - t0 >
				       (int64_t)FZ_COMMAND_CPU_MS * 1000000) {
			fprintf(fz_err,
				"fuzz: %s ran past %d ms of CPU time: a loop "
				"without a bound\n",
				atomic_load(&what), FZ_COMMAND_CPU_MS);
			fflush(fz_err);
			abort();
		}
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static void watch_start(void)
{
	pthread_t t;
	int err = pthread_getcpuclockid(pthread_self(), &watched_clock);

	FZ_ASSERT(err == 0, "pthread_getcpuclockid: %s", strerror(err));
	err = pthread_create(&t, NULL, watchdog, NULL);
	FZ_ASSERT(err == 0, "pthread_create: %s", strerror(err));
	pthread_detach(t);
}

void fz_watch_begin(const char *command)
{
	pthread_once(&watch_once, watch_start);
	atomic_store(&what, command);
	atomic_store(&started_ns, clock_ns(watched_clock));
}

void fz_watch_end(void)
{
	int64_t t0 = atomic_exchange(&started_ns, 0);
	int64_t spent = clock_ns(watched_clock) - t0;

	FZ_ASSERT(spent <= (int64_t)FZ_COMMAND_CPU_MS * 1000000,
		  "%s took %lld ms of CPU time (the bound: %d)",
		  atomic_load(&what), (long long)(spent / 1000000),
		  FZ_COMMAND_CPU_MS);
}
