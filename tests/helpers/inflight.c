/*
 * inflight.c - holding a request to a redis-server in flight (see
 * inflight.h).
 */
#include "helpers/inflight.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

long inflight_unread_at(int port)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	long total = 0;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned lport, rport, st;
		unsigned long tx, rx;

		/* The server's side of an accepted connection: its local
		 * port, a remote port. */
		if (sscanf(line, " %*d: %*x:%x %*x:%x %x %lx:%lx", &lport,
			   &rport, &st, &tx, &rx) == 5 &&
		    (int)lport == port && rport != 0)
			total += (long)rx;
	}
	fclose(f);
	return total;
}

int inflight_stopped(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command may hold spaces and parens */
	return p != NULL && p[1] == ' ' && p[2] == 'T';
}

int inflight_stop(pid_t pid)
{
	if (kill(pid, SIGSTOP) != 0)
		return -1;
	while (!inflight_stopped(pid))
		usleep(1000);
	return 0;
}

int inflight_listen(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(fd, 4) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

static int connect_port(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	return -1;
}

static void close_reset(int fd)
{
	struct linger l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* Client bytes arrived; @begins: they begin a request (++*@count). */
static void client_bytes(struct inflight_relay *rl, bool begins, int *count)
{
	if (!begins || ++*count != rl->hold_at)
		return;
	inflight_stop(rl->server);
	/* Seq_cst: the test reads it and then the server's queue. */
	atomic_store(&rl->held, 1);
}

/* One client connection, relayed until either side ends or quit. */
static void relay_one(struct inflight_relay *rl, int cfd, int *count)
{
	int sfd = connect_port(rl->upstream_port);
	bool server_spoke = true; /* the next client bytes begin a request */
	static char buf[65536];	  /* one relay thread per process */

	if (sfd < 0) {
		close_reset(cfd);
		return;
	}
	while (!atomic_load(&rl->quit)) {
		struct pollfd p[2] = { { cfd, POLLIN, 0 }, { sfd, POLLIN, 0 } };
		ssize_t n;

		if (poll(p, 2, 50) <= 0)
			continue;
		if (p[0].revents) {
			n = read(cfd, buf, sizeof(buf));
			if (n <= 0)
				break; /* the client closed */
			client_bytes(rl, server_spoke, count);
			server_spoke = false;
			if (write(sfd, buf, (size_t)n) != n)
				break;
		}
		if (p[1].revents) {
			n = read(sfd, buf, sizeof(buf));
			if (n <= 0) {
				/* The server died: so does the client's link. */
				close(sfd);
				close_reset(cfd);
				return;
			}
			server_spoke = true;
			if (write(cfd, buf, (size_t)n) != n)
				break;
		}
	}
	close(sfd);
	close(cfd);
}

static void *relay_thread(void *arg)
{
	struct inflight_relay *rl = arg;
	int count = 0;

	while (!atomic_load(&rl->quit)) {
		struct pollfd p = { rl->lfd, POLLIN, 0 };
		int cfd;

		if (poll(&p, 1, 50) <= 0)
			continue;
		cfd = accept4(rl->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd >= 0)
			relay_one(rl, cfd, &count);
	}
	return NULL;
}

int inflight_relay_start(struct inflight_relay *rl, int lfd, int port,
			 int upstream_port, pid_t server, int hold_at)
{
	memset(rl, 0, sizeof(*rl));
	rl->lfd = lfd;
	rl->port = port;
	rl->upstream_port = upstream_port;
	rl->server = server;
	rl->hold_at = hold_at;
	return -pthread_create(&rl->t, NULL, relay_thread, rl);
}

void inflight_relay_stop(struct inflight_relay *rl)
{
	atomic_store(&rl->quit, 1);
	pthread_join(rl->t, NULL);
}
