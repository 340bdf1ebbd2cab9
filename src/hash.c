/*
 * hash.c - the key hash: 8 bytes at a time, 64x64->128 multiply mixing (the
 * wyhash family). Identical in every process; a per-store seed from the
 * header makes colliding key sets differ between stores.
 */
#include <string.h>

#include "internal.h"

static inline uint64_t mix(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint64_t shmkv__hash(const void *key, size_t len, uint64_t seed)
{
	const unsigned char *p = key;
	uint64_t h = seed ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, p, 8);
		h = mix(h ^ w, 0xa0761d6478bd642fULL);
		p += 8;
		len -= 8;
	}
	w = 0;
	if (len > 0)
		memcpy(&w, p, len);
	h = mix(h ^ w ^ ((uint64_t)len << 56), 0xe7037ed1a0b428dbULL);
	return mix(h, 0x8ebc6af09c88c6e3ULL);
}
