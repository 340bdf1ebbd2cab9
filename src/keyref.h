/*
 * keyref.h - the fields of a prepared key. shmkv.h gives callers a struct
 * shmkv_keyref of fixed opaque storage (SHMKV_KEYREF_SIZE), so these can
 * change without changing the ABI; the assertions keep them inside it.
 */
#ifndef SHMKV_KEYREF_H
#define SHMKV_KEYREF_H

#include <stddef.h>
#include <stdint.h>

#include "shmkv.h"

/* The caller's storage is declared as the public struct and the library
 * reads and writes it as this one: may_alias tells the compiler the two
 * name the same bytes, so no type-based alias analysis reorders them. */
struct __attribute__((may_alias)) shmkv__keyref {
	const void *key; /* the caller's bytes: must outlive the reference */
	size_t len;
	const void *owner; /* the handle it was prepared for */
	uint32_t hash32;
	uint32_t home;	/* the key's home in table T(epoch) */
	uint32_t slot;	/* where the key was last found (in a table whose
			 * epoch its state word names: SLOT_MEMBER_WORD) */
	uint32_t epoch; /* the table home was computed for */
	uint64_t state; /* that slot's state word then; 0: nothing cached */
};

_Static_assert(sizeof(struct shmkv__keyref) <= SHMKV_KEYREF_SIZE &&
		       sizeof(struct shmkv_keyref) == SHMKV_KEYREF_SIZE,
	       "keyref fields outgrew SHMKV_KEYREF_SIZE");
_Static_assert(_Alignof(struct shmkv__keyref) <= _Alignof(struct shmkv_keyref),
	       "keyref fields need more alignment than the public struct");

/* The fields of @ref (NULL stays NULL). */
static inline struct shmkv__keyref *shmkv__kref(struct shmkv_keyref *ref)
{
	return (struct shmkv__keyref *)(void *)ref;
}

static inline const struct shmkv__keyref *
shmkv__kref_const(const struct shmkv_keyref *ref)
{
	return (const struct shmkv__keyref *)(const void *)ref;
}

#endif /* SHMKV_KEYREF_H */
