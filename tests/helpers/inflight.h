/*
 * inflight.h - holding a request to a redis-server in flight, for tests
 * of what a client does when the server dies mid-command.
 *
 * The server is stopped (SIGSTOP, waited for: kill() returns before the
 * target has stopped, and until it has it may still answer), the call is
 * made, and once its bytes sit unread in the server's socket (the
 * rx_queue of /proc/net/tcp) the server is killed: the kernel resets a
 * socket closed with bytes unread, so the client sees its request sent
 * and its connection reset. For the n-th request of a call that makes
 * several, a relay stands between the client and the server and stops the
 * server just before it passes request n on.
 *
 * No Criterion and no client library: standalone programs may link it.
 */
#ifndef SHMKV_TEST_INFLIGHT_H
#define SHMKV_TEST_INFLIGHT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

/* Bytes that arrived at @port's accepted TCP connections (IPv4) and that
 * nobody has read yet; -1 if /proc/net/tcp cannot be read. */
long inflight_unread_at(int port);

/* 1 if @pid is stopped (state T in /proc/<pid>/stat), else 0. */
int inflight_stopped(pid_t pid);

/* Sends SIGSTOP to @pid and waits until it has stopped. Return: 0, or -1
 * (no such process). */
int inflight_stop(pid_t pid);

/*
 * A relay on a loopback port of its own to the server on upstream_port,
 * one client connection at a time, in a thread. It counts the client's
 * requests from its start: the client sends a request only after the
 * reply to the last (no pipelining), so a request begins with the first
 * bytes from the client after bytes from the server. At request hold_at
 * (0: never) it stops the server (inflight_stop), then passes the request
 * on and sets held. When the server's side ends (the server died), the
 * client's connection is reset (SO_LINGER 0), as the kernel resets it for
 * a server killed with bytes unread.
 */
struct inflight_relay {
	int lfd;  /* listening; the caller's (inflight_listen) */
	int port; /* lfd's */
	int upstream_port;
	pid_t server;
	int hold_at;
	atomic_int held;
	atomic_int quit;
	pthread_t t;
};

/* A listening socket on a free loopback port into *@port. Return: the fd,
 * or -1. */
int inflight_listen(int *port);

/* Starts @rl's thread on @lfd (@port) to the server @server on
 * @upstream_port, holding request @hold_at. Return: 0 or -errno. */
int inflight_relay_start(struct inflight_relay *rl, int lfd, int port,
			 int upstream_port, pid_t server, int hold_at);

/* Stops the thread and closes the client's connection (lfd stays open). */
void inflight_relay_stop(struct inflight_relay *rl);

#endif /* SHMKV_TEST_INFLIGHT_H */
