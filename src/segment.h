/*
 * segment.h - shmkv_create's working files (segment.c), for the tests,
 * removing a store (remove.c), and opening a store's file (store_file.c).
 */
#ifndef SHMKV_SEGMENT_H
#define SHMKV_SEGMENT_H

#include <stdbool.h>
#include <stdint.h>

struct shmkv;

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

/*
 * Opens @path (/dev/shm/NAME) with @access (O_RDONLY or O_RDWR) as a store's
 * file would be: without following a symbolic link and without waiting
 * (a FIFO opened for reading would block until a writer came), and only
 * if it is a regular file. Return: the descriptor (close-on-exec), or
 * -EPROTO (a symbolic link, FIFO, directory, socket or device: not a
 * store), -ENOENT, -EACCES, -errno.
 */
int shmkv__store_file_open(const char *path, int access);
/*
 * A new open file description of @kv's file, with @access (O_RDONLY or
 * O_RDWR), close-on-exec: for locks of its own (OFD locks belong to a
 * description). Through /proc/self/fd, else by the store's name if that
 * still names the same file. Return: the descriptor, or -ESTALE (the name
 * is gone or names another file), -errno.
 */
int shmkv__store_file_reopen(const struct shmkv *kv, int access);
/*
 * Removes the store at @path (/dev/shm/NAME): marks it removed, so that
 * every handle to it says -ESTALE from then on, then unlinks the name,
 * taking turns with other removers of the same file (remove.c). A name
 * that is not a store (not a regular file, or not our magic) is left as
 * it is. Return: 0, or -ENOENT, -EACCES, -EPROTO (not a store),
 * -EPROTONOSUPPORT, -errno.
 */
int shmkv__store_remove(const char *path);
/*
 * Finishes the removal of the store at @path if it was marked removed (its
 * remover died before the unlink): what a create that found the name
 * taken does. Return: 1 (the name is free now: try again), 0 (a live
 * store holds it), or -errno.
 */
int shmkv__store_clear_removed(const char *path);

/* A new handle's serial (struct shmkv.serial): never 0, never reused in
 * the process. For every backend's handles. */
uint64_t shmkv__serial_next(void);

struct shmkv_config;
/* Does @cfg use only options this build knows (flags, eviction policy,
 * reserved words zero)? shmkv_create refuses one that does not, and so
 * does every backend, even where the options have no meaning. */
bool shmkv__config_known(const struct shmkv_config *cfg);

#endif /* SHMKV_SEGMENT_H */
