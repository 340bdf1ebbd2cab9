/*
 * shmkv_exec.h - the Redis-style command interface of shmkv: run a command
 * given as Redis arguments and get Redis's reply, and the table of the
 * commands it knows (name, arity, flags, key positions, syntax).
 *
 * This is what shmctl, the differential test against redis-server and the
 * fuzzers drive. Arguments are parsed exactly as Redis 7 parses them and
 * the replies are Redis's, error texts included. The store's conventions
 * (errors, thread and process safety, ordering) are shmkv.h's.
 */
#ifndef SHMKV_EXEC_H
#define SHMKV_EXEC_H

#include <stddef.h>

#include "shmkv.h"

#ifdef __cplusplus
extern "C" {
#endif

enum shmkv_reply_type {
	SHMKV_REPLY_STATUS = 1, /**< "+OK" */
	SHMKV_REPLY_ERROR,	/**< "-ERR ..." : str holds "ERR ..." */
	SHMKV_REPLY_INTEGER,	/**< ":n" */
	SHMKV_REPLY_NIL,	/**< "$-1" */
	SHMKV_REPLY_BULK,	/**< "$n" : str, len */
};

/** A reply; str is owned by the reply and freed by shmkv_reply_free(). */
struct shmkv_reply {
	enum shmkv_reply_type type;
	long long integer;
	char *str;
	size_t len;
};

/**
 * shmkv_exec - runs one command given as Redis arguments (argv[0] is the
 * command name, case-insensitive; the commands are those of
 * shmkv_command_at()).
 * @kv: an open store. On a read-only handle a command with
 *      SHMKV_CMD_WRITE is refused before its arguments are parsed, as by
 *      a read-only Redis replica: an error reply with
 *      shmkv_strerror(-EROFS)'s text, and -EROFS returned.
 * @argc, @argv, @argvlen: the arguments, binary-safe (@argvlen[i] bytes at
 *      @argv[i]; a NULL @argv[i] only with a length of 0).
 * @reply: filled on every return; free it with shmkv_reply_free().
 * Return: 0 with @reply filled (a Redis error is a reply, not a failure),
 * or a negative errno when the reply could not be built (-ENOMEM), the
 * arguments are not a command (-EINVAL: @argc < 1, NULL vectors), or the
 * store failed in a way Redis has no reply for (-EROFS, -ENOSPC, -EBADMSG
 * ...; then @reply is an error reply too, carrying shmkv_strerror's text,
 * except for a length: -ENAMETOOLONG and -E2BIG reply with the argument's
 * length and the store's limit, "ERR key is 70 bytes, this store's key_max
 * is 64", "ERR value is 2000 bytes, this store's value_max is 1024").
 * Thread and process safety: as the C command it runs (shmkv.h).
 */
SHMKV_API int shmkv_exec(shmkv_t *kv, int argc, const char *const *argv,
			 const size_t *argvlen, struct shmkv_reply *reply);

/** Frees what @reply owns; the struct itself is the caller's. NULL is
 * allowed. */
SHMKV_API void shmkv_reply_free(struct shmkv_reply *reply);

/*
 * The command table: one row per command shmkv_exec() knows, in the terms
 * of Redis's COMMAND INFO, so that a client (shmctl's read-only opens and
 * completion, a differential test) reads the facts instead of repeating
 * them. The table is constant: rows never change and the pointers stay
 * valid for the life of the process.
 */

/** Flags of a command (struct shmkv_command.flags). */
enum shmkv_command_flags {
	/** Only reads the store (Redis's "readonly"). */
	SHMKV_CMD_READONLY = 1u << 0,
	/** May change the store (Redis's "write"): refused on a read-only
	 * handle with -EROFS. A command with neither flag (PING) touches no
	 * key and runs anywhere. */
	SHMKV_CMD_WRITE = 1u << 1,
	/** Its integer reply is a yes/no or a count of changes: 0 means that
	 * nothing happened (DEL, EXISTS, SETNX, the EXPIRE family...). */
	SHMKV_CMD_YESNO = 1u << 2,
	/** Its integer reply is a TTL: -2 means there is no such key, -1 a
	 * key without TTL (TTL, PTTL). */
	SHMKV_CMD_TTL_REPLY = 1u << 3,
};

/**
 * One command. Only the library allocates these (the caller gets const
 * pointers into its table), so fields may be appended in a later version
 * without breaking the ABI: never copy the struct by value or take its
 * sizeof.
 */
struct shmkv_command {
	const char *name; /**< lowercase, as Redis prints it in errors */
	/** Redis's arity, the name included: N means exactly N arguments,
	 * -N at least N. shmkv_exec() replies "wrong number of arguments"
	 * otherwise. */
	int arity;
	unsigned flags; /**< enum shmkv_command_flags */
	/** Key positions as COMMAND INFO gives them: the first and last
	 * argument index holding a key (last -1: up to the last argument)
	 * and the step between keys; all 0 for a command without keys. */
	int first_key, last_key, key_step;
	/** The usage line, as Redis's docs write it, name in capitals:
	 * "SET key value [NX|XX] [GET] [EX seconds|...]". */
	const char *syntax;
};

/** shmkv_command_count - how many commands shmkv_exec() knows. */
SHMKV_API size_t shmkv_command_count(void);

/**
 * shmkv_command_at - command @i of the table, 0 <= @i < the count, in a
 * fixed order (the order of shmkv_exec's dispatch).
 * Return: the row, or NULL when @i is out of range.
 */
SHMKV_API const struct shmkv_command *shmkv_command_at(size_t i);

/**
 * shmkv_command_find - looks a command up by name, ignoring case, as
 * shmkv_exec() does: the @len bytes at @name must be the whole name
 * ("get\0x" is not GET). @name may be NULL if @len is 0.
 * Return: the row, or NULL when no command has that name.
 */
SHMKV_API const struct shmkv_command *shmkv_command_find(const char *name,
							 size_t len);

#ifdef __cplusplus
}
#endif
#endif /* SHMKV_EXEC_H */
