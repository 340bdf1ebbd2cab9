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

#ifdef SHMKV_FAULT_INJECTION
void shmkv__crash_point(const char *name);
#define SHMKV_CRASH_POINT(name) shmkv__crash_point(name)
#else
#define SHMKV_CRASH_POINT(name) ((void)0)
#endif

#endif
