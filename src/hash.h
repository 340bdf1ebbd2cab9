/*
 * hash.h - the key hash, of the wyhash family: 64x64->128 multiply mixing,
 * 16 bytes at a time, and for keys of up to 16 bytes (lock names,
 * counters, most keys) two multiplies over two possibly overlapping words.
 * Identical in every process; a per-store seed from the header makes
 * colliding key sets differ between stores. Changing it changes where
 * keys live: SHMKV_LAYOUT_FORMAT names the hash version.
 *
 * Inline, so that a command on a short key hashes it in a few dozen
 * instructions without a call (most keys take the len <= 16 branch).
 */
#ifndef SHMKV_HASH_H
#define SHMKV_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline uint64_t shmkv__mix(uint64_t a, uint64_t b)
{
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t shmkv__read64(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

static inline uint64_t shmkv__read32(const unsigned char *p)
{
	uint32_t w;

	memcpy(&w, p, 4);
	return w;
}

/* Up to 16 bytes as two words; the reads overlap for lengths 9-15 and
 * 5-7, which is harmless since the length is mixed in too. */
static inline void shmkv__short_words(const unsigned char *p, size_t len,
				      uint64_t *a, uint64_t *b)
{
	if (len >= 8) {
		*a = shmkv__read64(p);
		*b = shmkv__read64(p + len - 8);
	} else if (len >= 4) {
		*a = shmkv__read32(p);
		*b = shmkv__read32(p + len - 4);
	} else {
		*a = len ? ((uint64_t)p[0] << 16) |
				     ((uint64_t)p[len >> 1] << 8) | p[len - 1]
			 : 0;
		*b = 0;
	}
}

static inline uint64_t shmkv__hash(const void *key, size_t len, uint64_t seed)
{
	const unsigned char *p = key;
	uint64_t h = seed ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL);
	uint64_t a, b;

	if (len <= 16) {
		shmkv__short_words(p, len, &a, &b);
		/* Two rounds: one multiply alone maps every key whose first
		 * word cancels the constant to the same hash. */
		h = shmkv__mix(a ^ 0xa0761d6478bd642fULL, b ^ h);
		return shmkv__mix(h ^ 0x8ebc6af09c88c6e3ULL,
				  0xe7037ed1a0b428dbULL);
	}
	while (len > 16) {
		h = shmkv__mix(shmkv__read64(p) ^ 0xa0761d6478bd642fULL,
			       shmkv__read64(p + 8) ^ h);
		p += 16;
		len -= 16;
	}
	/* The last 16 bytes, overlapping what was mixed: len is 1-16 here. */
	a = shmkv__read64(p + len - 16);
	b = shmkv__read64(p + len - 8);
	h = shmkv__mix(a ^ 0xa0761d6478bd642fULL, b ^ h);
	return shmkv__mix(h ^ 0x8ebc6af09c88c6e3ULL, 0xe7037ed1a0b428dbULL);
}

#endif /* SHMKV_HASH_H */
