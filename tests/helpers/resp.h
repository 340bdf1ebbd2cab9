/*
 * resp.h - a few lines of RESP for test programs that must not depend on
 * a client library (or on the library under test): send one command to a
 * loopback server, get its reply flattened to text.
 *
 * The flat form: each element on its own line, an integer as ":N", a
 * status as "+text", an error as "-text", a bulk as its bytes, a nil as
 * "(nil)", an array as "*N" followed by its elements. Enough to compare
 * CLUSTER SLOTS of two nodes or read a line of CLUSTER INFO; not for
 * binary values with newlines (use hiredis for those).
 */
#ifndef SHMKV_RESP_H
#define SHMKV_RESP_H

#include <stddef.h>

/*
 * Connects to 127.0.0.1:@port (1 s for the connect and for each read),
 * sends @argv (@argc NUL-terminated strings), and writes the reply's flat
 * form, NUL-terminated, into @out (@cap bytes; truncated if longer).
 * Return: 0, or -1 if it could not connect, send or read a whole reply
 * (a reply that is an error is a reply: 0, @out starts with '-').
 */
int resp_command(int port, int argc, const char *const *argv, char *out,
		 size_t cap);

/* As resp_command, with @argvlen[i] the length of @argv[i] (binary
 * arguments). */
int resp_commandv(int port, int argc, const char *const *argv,
		  const size_t *argvlen, char *out, size_t cap);

/* As resp_command, @cmd split at spaces (no quoting: for fixed commands
 * such as "CLUSTER INFO"). */
int resp_simple(int port, const char *cmd, char *out, size_t cap);

#endif /* SHMKV_RESP_H */
