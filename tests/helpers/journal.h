/*
 * journal.h - shared memory a test program and the workers it execs write
 * their tallies to (torture, lifecycle_soak): a memfd, so that an exec'd
 * worker maps it by its inherited descriptor.
 */
#ifndef SHMKV_TEST_JOURNAL_H
#define SHMKV_TEST_JOURNAL_H

#include <stddef.h>

/* Maps @len zeroed bytes of a new memfd named @tag; *@fd is its
 * descriptor. Return: the mapping, or NULL with errno set. */
void *journal_map(const char *tag, size_t len, int *fd);

#endif
