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

#endif
