/*
 * error.c - shmkv_strerror(): one sentence per error, phrased for shmkv.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "shmkv.h"

static const struct {
	int err;
	const char *text;
} messages[] = {
	{ 0, "success" },
	{ EINVAL, "invalid argument" },
	{ ENAMETOOLONG, "key (or store name) too long" },
	{ E2BIG, "value too long for this store" },
	{ EROFS, "store opened read-only" },
	{ ENOSPC, "table full: no free slot in the key's probe window" },
	{ ENOMEM, "out of memory: no free value storage of that size" },
	{ ENOBUFS, "buffer too small for the value" },
	{ EBADMSG, "store is corrupted (on Redis: a lock's token counter, "
		   "lock.{<name>}:token, has a field that is not a number)" },
	{ EAGAIN, "operation kept losing races; try again" },
	{ EPROTO, "not a shmkv store (bad magic, or not a regular file)" },
	{ EPROTONOSUPPORT, "shmkv store of another layout version or build" },
	{ EAFNOSUPPORT, "no backend for this store name's scheme (scheme://) "
			"in this build" },
	{ EXDEV, "shmkv store of another pid namespace (read-only use only)" },
	{ EEXIST, "already exists" },
	{ EBUSY, "lock is held by another owner" },
	{ EDEADLK, "this handle already holds the lock" },
	{ ENOLCK, "lock is not held (free, released, or its lease ran out)" },
	{ EPERM, "lock is held by another grant (the lease ran out and it was "
		 "taken)" },
	{ ETIMEDOUT, "timed out" },
	{ ENOENT, "no such store" },
	{ ESTALE, "store was removed (shmctl destroy or shmkv_unlink) since "
		  "it was opened: open it again" },
	{ EACCES, "permission denied" },
	{ EDOM, "value is not an integer or out of range" },
	{ EOVERFLOW, "increment or decrement would overflow" },
	/* The Redis backends (redis.h). */
	{ EREMOTE, "the store is on a Redis server: this call does not go "
		   "there" },
	{ ECONNREFUSED, "the Redis server refused the connection (nothing "
			"listens there)" },
	{ EHOSTUNREACH, "the Redis server's host cannot be reached (or its "
			"name does not resolve)" },
	{ ECONNRESET, "the connection to the Redis server dropped with the "
		      "command in flight: it may or may not have run" },
	{ ENXIO, "the Redis server has no such database (the URI's db)" },
	{ ELOOP, "too many Redis Cluster redirections (MOVED/ASK)" },
	{ EPROTOTYPE, "the key holds a Redis value that is not a string "
		      "(WRONGTYPE)" },
	{ ENOTSUP, "not supported by this store's backend (a lock on Redis: "
		   "the server evicts keys, its maxmemory-policy is not "
		   "noeviction or cannot be read, so locks are refused; add "
		   "?locks_on_evicting_server=1 to the URI to accept)" },
};

const char *shmkv_strerror(int err)
{
	int e;

	if (err > 0)
		return "success";
	if (err == INT_MIN)
		return "unknown error";
	e = -err;
	for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++)
		if (messages[i].err == e)
			return messages[i].text;
	/* strerror is fine for the rest: it never returns NULL on glibc. */
	return strerror(e);
}
