/*
 * segment.h - shmkv_create's working files (segment.c), for the tests.
 */
#ifndef SHMKV_SEGMENT_H
#define SHMKV_SEGMENT_H

#include <stdbool.h>

/* Test seam: true makes shmkv_create build the segment in a named working
 * file, as it does where /dev/shm has no O_TMPFILE. */
extern bool shmkv__tmpfile_off;

/*
 * Removes the named working files of creators that are dead (killed in
 * shmkv_create on a system without O_TMPFILE): one pass over /dev/shm; a
 * file of a live process or of this one stays. Files we may not unlink
 * (another user's, in the sticky /dev/shm) stay too.
 * Return: how many were removed.
 */
int shmkv__new_files_sweep(void);

#endif /* SHMKV_SEGMENT_H */
