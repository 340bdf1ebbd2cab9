/*
 * fault.h - crash points for the torture tests.
 *
 * A crash point marks a place between two steps of a protocol where a
 * process killed there leaves work half done for others to finish (see the
 * README's crash table). Random SIGKILLs almost never land on them; a
 * build with -DSHMKV_FAULT_INJECTION (make FAULT=1) lets a test process
 * die exactly there: with SHMKV_CRASH_AT=<name> (or "any") and
 * SHMKV_CRASH_AFTER=<n> in its environment it raises SIGKILL on its n-th
 * pass through the point (SIGSTOP with SHMKV_CRASH_SIGNAL=STOP, so a test
 * can look at what it leaves while it is still alive, then kill it).
 * Without the flag the points compile to nothing.
 */
#ifndef SHMKV_FAULT_H
#define SHMKV_FAULT_H

/*
 * Pause points, in the same builds: a test sets shmkv__pause_hook and is
 * called at the named step of a protocol, in the process that runs it, to
 * force an interleaving (another process acts while this one waits there)
 * instead of hoping a stress run hits it.
 */
#ifdef SHMKV_FAULT_INJECTION
void shmkv__crash_point(const char *name);
extern void (*shmkv__pause_hook)(const char *name);
#define SHMKV_CRASH_POINT(name) shmkv__crash_point(name)
#define SHMKV_PAUSE_POINT(name)                                                \
	do {                                                                   \
		if (shmkv__pause_hook != 0)                                    \
			shmkv__pause_hook(name);                               \
	} while (0)
#else
#define SHMKV_CRASH_POINT(name) ((void)0)
#define SHMKV_PAUSE_POINT(name) ((void)0)
#endif

#endif
