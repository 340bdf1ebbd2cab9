/*
 * slot_of.h - white-box tests' way to the slot that holds a key, for
 * tests that write into a slot's words to stage what a dead process left.
 */
#ifndef TESTS_HELPERS_SLOT_OF_H
#define TESTS_HELPERS_SLOT_OF_H

#include "internal.h"
#include "lookup.h"

/* The slot holding @key in @kv (the test fails if the key has none). */
struct shmkv_slot_ref tu_slot_ref(shmkv_t *kv, const char *key);

/* The slot's words in the segment. */
struct shmkv_slot_shm *tu_slot_of(shmkv_t *kv, const char *key);

/* Writes into @out the @nth key "other<i>" (i = 0, 1, ...) whose probe
 * sequence in @kv starts at slot @home: a key that an insert puts into
 * @home if that slot is free. */
void tu_key_homed_at(shmkv_t *kv, uint32_t home, int nth, char out[32]);

#endif
