/*
 * demo.h - what the parts of shmkv-demo share. Each part shows one claim
 * of shmkv with real processes and prints it as a sentence; it checks the
 * claim's semantics (counts, tokens, verdicts) and fails the demo if one
 * does not hold, but never judges a time: times are printed, not
 * asserted, so a loaded machine cannot make the demo fail.
 *
 *   shmkv-demo.c      options, the store, the parts in order
 *   demo_pattern.c    the SETNX pattern lock across exec'd processes
 *   demo_takeover.c   a safe-lock holder SIGKILLed, a waiter taking over
 *   demo_crash.c      writers SIGKILLed, the store checked clean as is
 *   demo_timing.c     one lock cycle: shmkv, a robust mutex, Redis
 *   demo_redis.c      a private redis-server and a minimal RESP client
 *   demo_util.c       starting children, clocks, waiting for keys
 *
 * The children are shmkv-demo-worker (the pattern lock) and
 * shmkv-demo-child (hold, wait, write), exec'd from this program's
 * directory. Only the public headers are used, as by any program.
 */
#ifndef SHMKV_DEMO_H
#define SHMKV_DEMO_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "shmkv.h"

/* Hang guards only: a wait for a child that a broken build could make
 * endless. Never reached on a working store, however loaded the host. */
#define DEMO_WAIT_MAX_MS 60000

struct demo {
	shmkv_t *kv;
	const char *name;
	char dir[PATH_MAX]; /* where our programs are */
};

/* demo_util.c */

/* Nanoseconds of CLOCK_MONOTONIC: one clock for every process of the
 * host, so a child's timestamp compares with ours. */
int64_t demo_now_ns(void);
/* @prog in our directory into @buf. Return: 0, or -1 (said on stderr). */
int demo_prog_path(const struct demo *d, const char *prog, char *buf,
		   size_t cap);
/* Forks and execs @argv (NULL-terminated); the child dies with us
 * (PR_SET_PDEATHSIG). Return: its pid, or -1 (said on stderr). */
pid_t demo_spawn(char *const argv[]);
/* Waits for @pid. Return: 0 if it exited 0; else -1, said on stderr with
 * @what. */
int demo_reap(pid_t pid, const char *what);
/* Polls until @key exists (1 ms apart, at most DEMO_WAIT_MAX_MS) or child
 * @pid (if > 0) has exited. Return: 0 found, -1 not (said on stderr). */
int demo_wait_key(const struct demo *d, const char *key, pid_t pid);
/* The integer at @key into *@v. Return: 0, or -1 (missing, not an
 * integer, or an error). */
int demo_get_i64(shmkv_t *kv, const char *key, int64_t *v);
/* "1,234,567": @n with thousands separators, in @buf. */
const char *demo_count(char *buf, size_t cap, uint64_t n);
/* A time in ns as "85 ns", "1.8 us", "2.3 ms", in @buf. */
const char *demo_time(char *buf, size_t cap, double ns);

/* The parts. Each prints its sentence; return: 0, or 1 if its claim did
 * not hold (or it could not run), said on stdout/stderr. */
struct demo_pattern_opts {
	unsigned long workers, cycles, timeout_ms;
};
int demo_pattern(const struct demo *d, const struct demo_pattern_opts *o);
int demo_takeover(const struct demo *d);
int demo_crash(const struct demo *d);
int demo_timing(const struct demo *d);

/* demo_redis.c: a redis-server of our own on a free loopback port. */
struct demo_redis {
	pid_t pid;
	int port;
	int fd; /* connected, TCP_NODELAY */
};
/* Starts one and connects. Return: 0; 1 none installed (@why says so);
 * -1 it did not come up (@why says why). Nothing runs after a failure. */
int demo_redis_start(struct demo_redis *r, char *why, size_t cap);
/* Closes the connection, stops the server and reaps it. */
void demo_redis_stop(struct demo_redis *r);
/* Sends the command @argv (@argc strings) and reads its reply into
 * @line: a one-line reply without its CRLF ("+OK", ":1"), a bulk reply
 * whole ("$n\r\n<data>\r\n"). Return: 0, or -1 (I/O error, or a reply
 * longer than @cap). */
int demo_redis_cmd(struct demo_redis *r, int argc, const char *const *argv,
		   char *line, size_t cap);

#endif /* SHMKV_DEMO_H */
