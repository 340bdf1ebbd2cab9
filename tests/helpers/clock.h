/*
 * clock.h - the clock reads and sleeps of the test programs and helpers:
 * one timespec conversion, and one sleep that a signal does not cut short
 * (a supervisor's SIGCHLD would otherwise end it early).
 *
 * Free of Criterion: the standalone programs use it.
 */
#ifndef SHMKV_TESTS_CLOCK_H
#define SHMKV_TESTS_CLOCK_H

#include <stdint.h>
#include <time.h>

/* The time of clock @id (CLOCK_MONOTONIC, CLOCK_REALTIME...) in ns. */
int64_t clock_ns(clockid_t id);

/* Sleeps @ns (<= 0: not at all), resuming after a signal. */
void sleep_ns(int64_t ns);

#endif /* SHMKV_TESTS_CLOCK_H */
