/*
 * redis_link.c - one connection to one Redis node (hiredis 0.14's
 * blocking API): connect with a timeout, AUTH and SELECT, one command and
 * its reply, and the rules that keep a reply from ever being read as
 * another command's:
 *
 * - A command that failed after its first byte may have been sent (a write
 *   or read error, a timeout) leaves the reply stream out of step: the
 *   link is closed at once, the command's caller gets -ECONNRESET or
 *   -ETIMEDOUT (it may or may not have run), and the next call connects
 *   afresh. A late reply can then only arrive on a socket nobody reads.
 * - Between commands nothing may be readable: a connection the server
 *   closed (restart, client timeout, CLIENT KILL) shows as readable EOF,
 *   and any stray byte means the stream is out of step. Both are found
 *   by a poll before the command is sent, and the link reconnects
 *   instead of sending a command it would then fail.
 * - A fork child's inherited connection is the parent's socket: the child
 *   frees its copy of the context without a byte written (redisFree only
 *   close()s the descriptor, which leaves the parent's open, and drops the
 *   output buffer unsent) and connects its own.
 *
 * SIGPIPE: hiredis 0.14 writes with write(2), so a write to a connection
 * the peer reset would raise SIGPIPE, whose default action kills the
 * process, and the library must not change the process's disposition (the
 * application owns it). So the link sends hiredis's formatted output
 * buffer itself, with send(MSG_NOSIGNAL): the write fails with EPIPE and
 * no signal is raised. (It did block SIGPIPE around hiredis's write, as
 * libcurl does where MSG_NOSIGNAL is missing: three more system calls a
 * command.) Reads raise no SIGPIPE and are hiredis's.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/sds.h>

#include "redis.h"

void shmkv__redis_link_init(struct shmkv_redis_link *l,
			    const struct shmkv_redis_uri *u, bool unix_socket,
			    const struct shmkv_redis_addr *addr,
			    uint32_t *connects)
{
	memset(l, 0, sizeof(*l));
	l->uri = u;
	l->connects = connects;
	l->unix_socket = unix_socket;
	if (addr != NULL)
		l->addr = *addr;
}

void shmkv__redis_link_close(struct shmkv_redis_link *l)
{
	/* redisFree writes nothing (no QUIT, the output buffer is dropped):
	 * right for a fork child's inherited socket as for a broken one. */
	if (l->c != NULL)
		redisFree(l->c);
	l->c = NULL;
	l->pid = 0;
}

static struct timeval ms_timeval(int ms)
{
	struct timeval tv = { ms / 1000, (suseconds_t)(ms % 1000) * 1000 };

	return tv;
}

/* A failed connect's errno, as redis.h names them. */
static int connect_error(const redisContext *c, int saved)
{
	if (c == NULL || c->err == REDIS_ERR_OOM)
		return -ENOMEM;
	switch (saved) {
	case ETIMEDOUT:
	case EINPROGRESS:
	case EAGAIN:
		return -ETIMEDOUT;
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EADDRNOTAVAIL:
		return -EHOSTUNREACH;
	case EACCES:
	case EPERM:
		return -EACCES; /* a unix socket we may not connect to */
	default:
		/* ECONNREFUSED, a unix socket path nobody listens at
		 * (ENOENT), and a host name that does not resolve (hiredis
		 * reports it as REDIS_ERR_OTHER): nobody to talk to. */
		return c->err == REDIS_ERR_OTHER ? -EHOSTUNREACH
						 : -ECONNREFUSED;
	}
}

/* The errno of @c's failed write or read, in the middle of a command. */
static int inflight_error(const redisContext *c, int saved)
{
	switch (c->err) {
	case REDIS_ERR_OOM:
		return -ENOMEM;
	case REDIS_ERR_PROTOCOL:
		return -EPROTO;
	case REDIS_ERR_IO:
		/* SO_RCVTIMEO / SO_SNDTIMEO ran out (redisSetTimeout). */
		if (saved == EAGAIN || saved == EWOULDBLOCK ||
		    saved == ETIMEDOUT)
			return -ETIMEDOUT;
		return -ECONNRESET;
	default: /* REDIS_ERR_EOF: the server closed it */
		return -ECONNRESET;
	}
}

/* Sends all of @c's output buffer (see the top: MSG_NOSIGNAL). With the
 * command timeout as SO_SNDTIMEO (redisSetTimeout), a send that waited
 * that long fails with EAGAIN. Return: 0, or the in-flight error. */
static int write_all(redisContext *c)
{
	size_t len = sdslen(c->obuf), off = 0;

	while (off < len) {
		ssize_t n = send(c->fd, c->obuf + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK
				       ? -ETIMEDOUT
				       : -ECONNRESET;
		off += (size_t)n;
	}
	sdsclear(c->obuf);
	return 0;
}

/* One command and its reply on the connected @l. */
static int exchange(struct shmkv_redis_link *l, int argc, const char **argv,
		    const size_t *argvlen, redisReply **rep)
{
	void *r = NULL;
	int err;

	*rep = NULL;
	if (redisAppendCommandArgv(l->c, argc, argv, argvlen) != REDIS_OK)
		return -ENOMEM; /* nothing sent; the buffer is dropped below */
	err = write_all(l->c);
	if (err)
		return err;
	if (redisGetReply(l->c, &r) != REDIS_OK)
		return inflight_error(l->c, errno);
	if (r == NULL) /* not in blocking mode: a reply or an error */
		return -EPROTO;
	*rep = r;
	return 0;
}

/* A one-word setup command (AUTH, SELECT) on a fresh connection. Return:
 * 0, @refused for an error reply, or the in-flight error. */
static int setup_command(struct shmkv_redis_link *l, int argc,
			 const char **argv, int refused)
{
	size_t lens[3];
	redisReply *rep;
	int err;

	for (int i = 0; i < argc; i++)
		lens[i] = strlen(argv[i]);
	err = exchange(l, argc, argv, lens, &rep);
	if (err || rep == NULL)
		return err ? err : -EPROTO;
	if (rep->type == REDIS_REPLY_ERROR)
		err = strncmp(rep->str, "NOAUTH", 6) == 0 ||
				      strncmp(rep->str, "NOPERM", 6) == 0 ||
				      strncmp(rep->str, "WRONGPASS", 9) == 0
			      ? -EACCES
			      : refused;
	freeReplyObject(rep);
	return err;
}

/* AUTH and SELECT, as the URI says. */
static int setup(struct shmkv_redis_link *l)
{
	const struct shmkv_redis_uri *u = l->uri;
	int err = 0;

	if (u->password[0] != '\0') {
		/* "AUTH user password" (an ACL user), or "AUTH password". */
		const char *auth[3] = { "AUTH", u->user, u->password };
		bool user = u->user[0] != '\0';

		if (!user)
			auth[1] = u->password;
		err = setup_command(l, user ? 3 : 2, auth, -EACCES);
	}
	if (err == 0 && u->db != 0) {
		char db[16];

		snprintf(db, sizeof(db), "%d", u->db);
		/* "ERR DB index is out of range": no such database. */
		err = setup_command(l, 2, (const char *[]){ "SELECT", db },
				    -ENXIO);
	}
	return err;
}

static int link_connect(struct shmkv_redis_link *l)
{
	const struct shmkv_redis_uri *u = l->uri;
	struct timeval ctv = ms_timeval(u->connect_timeout_ms);
	int err, saved;

	/* Whatever this connects to, its policy is not known yet. */
	l->policy_read = false;
	errno = 0;
	l->c = l->unix_socket ? redisConnectUnixWithTimeout(u->path, ctv)
			      : redisConnectWithTimeout(l->addr.host,
							l->addr.port, ctv);
	saved = errno;
	if (l->c == NULL || l->c->err) {
		err = connect_error(l->c, saved);
		shmkv__redis_link_close(l);
		return err;
	}
	l->pid = (pid_t)shmkv__self_pid();
	/* TCP keepalive (hiredis: idle 15 s, then 3 probes): a backstop that
	 * ends a wait on a host that vanished without a reset when the URI
	 * says timeout=0. Best effort: the command timeout is the bound. */
	if (!l->unix_socket)
		(void)redisEnableKeepAlive(l->c);
	/* 0 ms: a zero timeval, which SO_RCVTIMEO reads as "no timeout". */
	if (redisSetTimeout(l->c, ms_timeval(u->command_timeout_ms)) !=
	    REDIS_OK) {
		shmkv__redis_link_close(l);
		return -ENOMEM;
	}
	err = setup(l);
	if (err)
		shmkv__redis_link_close(l);
	if (err == 0 && l->connects != NULL)
		(*l->connects)++;
	return err;
}

/* Is @l's idle connection unusable (EOF, an error, or bytes nobody asked
 * for)? Between commands nothing may be readable. */
static bool idle_broken(const struct shmkv_redis_link *l)
{
	struct pollfd p = { l->c->fd, POLLIN, 0 };

	return poll(&p, 1, 0) != 0;
}

bool shmkv__redis_link_would_connect(const struct shmkv_redis_link *l)
{
	return l->c == NULL || l->pid != (pid_t)shmkv__self_pid() ||
	       idle_broken(l);
}

int shmkv__redis_link_call(struct shmkv_redis_link *l, int argc,
			   const char **argv, const size_t *argvlen,
			   redisReply **rep)
{
	int err;

	*rep = NULL;
	/* A fork child's inherited connection: dropped unwritten. */
	if (l->c != NULL &&
	    (l->pid != (pid_t)shmkv__self_pid() || idle_broken(l)))
		shmkv__redis_link_close(l);
	if (l->c == NULL) {
		err = link_connect(l);
		if (err)
			return err;
	}
	err = exchange(l, argc, argv, argvlen, rep);
	if (err) /* out of step from here on: never reused */
		shmkv__redis_link_close(l);
	return err;
}
