/*
 * hash.c - the key hash, of the wyhash family: 64x64->128 multiply mixing,
 * 16 bytes at a time, and for keys of up to 16 bytes (lock names,
 * counters, most keys) two multiplies over two possibly overlapping words.
 * Identical in every process; a per-store seed from the header makes
 * colliding key sets differ between stores. Changing it changes where
 * keys live: SHMKV_LAYOUT_FORMAT names the hash version.
 */
#include <string.h>

#include "internal.h"

static inline uint64_t mix(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t read64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

static inline uint64_t read32(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

/* Up to 16 bytes as two words; the reads overlap for lengths 9-15 and
 * 5-7, which is harmless since the length is mixed in too. */
static inline void short_words(const unsigned char *p, size_t len, uint64_t *a,
			       uint64_t *b)
{
	if (len >= 8) {
		*a = read64(p);
		*b = read64(p + len - 8);
	} else if (len >= 4) {
		*a = read32(p);
		*b = read32(p + len - 4);
	} else {
		*a = len ? ((uint64_t)p[0] << 16) |
				     ((uint64_t)p[len >> 1] << 8) | p[len - 1]
			 : 0;
		*b = 0;
	}
}

uint64_t shmkv__hash(const void *key, size_t len, uint64_t seed)
{
	const unsigned char *p = key;
	uint64_t h = seed ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL);
	uint64_t a, b;

	if (len <= 16) {
		short_words(p, len, &a, &b);
		/* Two rounds: one multiply alone maps every key whose first
		 * word cancels the constant to the same hash. */
		h = mix(a ^ 0xa0761d6478bd642fULL, b ^ h);
		return mix(h ^ 0x8ebc6af09c88c6e3ULL, 0xe7037ed1a0b428dbULL);
	}
	while (len > 16) {
		h = mix(read64(p) ^ 0xa0761d6478bd642fULL, read64(p + 8) ^ h);
		p += 16;
		len -= 16;
	}
	/* The last 16 bytes, overlapping what was mixed: len is 1-16 here. */
	a = read64(p + len - 16);
	b = read64(p + len - 8);
	h = mix(a ^ 0xa0761d6478bd642fULL, b ^ h);
	return mix(h ^ 0x8ebc6af09c88c6e3ULL, 0xe7037ed1a0b428dbULL);
}
