/*
 * redis_exec.h - shmkv_exec on a Redis handle (redis_exec.c): the
 * backend row's exec.
 */
#ifndef SHMKV_SRC_REDIS_EXEC_H
#define SHMKV_SRC_REDIS_EXEC_H

#include <stddef.h>

#include "shmkv.h"
#include "shmkv_exec.h"

/*
 * shmkv__redis_exec - runs one command of shmkv_exec's table on the
 * server, its keys prefixed, and fills @reply as the shared-memory store
 * would. shmkv_exec calls it after its own checks (a known command, its
 * arity, a read-only handle's refusal of writes), so those replies are
 * the shared-memory store's, word for word.
 * Return: 0 with @reply filled (a Redis error is a reply, but for a
 * server's READONLY and OOM: their error reply, returning -EROFS and
 * -ENOMEM as a shm store's read-only handle and full memory do), or a
 * negative
 * errno with @reply an error reply of its shmkv_strerror text: the
 * connection's (-ECONNRESET: the command may have run; -ETIMEDOUT;
 * -ECONNREFUSED ...), -EPROTO (a reply of a type the command cannot
 * have), -ENOMEM.
 */
int shmkv__redis_exec(shmkv_t *kv, int argc, const char *const *argv,
		      const size_t *argvlen, struct shmkv_reply *reply);

#endif /* SHMKV_SRC_REDIS_EXEC_H */
