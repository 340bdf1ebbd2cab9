/*
 * journal.h - shared memory a test program and the workers it execs write
 * their tallies to (torture, lifecycle_soak, the linearizability test's logs): a
 * memfd, so that an exec'd worker maps it by its inherited descriptor.
 */
#ifndef SHMKV_TEST_JOURNAL_H
#define SHMKV_TEST_JOURNAL_H

#include <stddef.h>

/* Maps @len zeroed bytes of a new memfd named @tag; *@fd is its
 * descriptor. Return: the mapping, or NULL with errno set. */
void *journal_map(const char *tag, size_t len, int *fd);

/* In an exec'd worker: maps the first @len bytes of the journal whose
 * inherited descriptor is the decimal @fd_arg (from its command line).
 * Return: the mapping, or NULL with errno set: EINVAL for a bad number,
 * EOVERFLOW if the file is shorter than @len (touching past its end would
 * be a SIGBUS), or fstat's or mmap's errno. */
void *journal_attach(const char *fd_arg, size_t len);

#endif
