/*
 * rng.h - the tests' one random number generator: splitmix64, small,
 * seedable and the same in every process, so one seed replays the random
 * choices of a run (not the scheduler's) in unit tests, programs and
 * fuzzer helpers alike.
 *
 * Header-only (static inline) and free of Criterion, so that the
 * standalone programs and the libFuzzer helpers can include it too.
 */
#ifndef SHMKV_TESTS_RNG_H
#define SHMKV_TESTS_RNG_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The next 64-bit number of the stream whose state is @s. */
static inline uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A number below @n; 0 if @n is 0. The modulo bias is far below what
 * any test could notice. */
static inline uint64_t rng_below(uint64_t *s, uint64_t n)
{
	return n ? rng_next(s) % n : 0;
}

/* Fills @buf with @len random bytes. */
static inline void rng_fill(uint64_t *s, void *buf, size_t len)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)rng_next(s);
}

/* A seed nobody chose: the clock and the pid, so that runs started in
 * the same second, or processes started at once, still differ. */
static inline uint64_t rng_clock_seed(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
	       ((uint64_t)getpid() << 40);
}

/* The seed in the environment variable @var (any base strtoull takes)
 * if it is set and not empty, else rng_clock_seed(). The caller logs it,
 * so that a failing run can be replayed. */
static inline uint64_t rng_env_seed(const char *var)
{
	const char *env = getenv(var);

	return env && *env ? strtoull(env, NULL, 0) : rng_clock_seed();
}

#endif /* SHMKV_TESTS_RNG_H */
