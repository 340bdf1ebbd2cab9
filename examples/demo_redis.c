/*
 * demo_redis.c - a redis-server of the demo's own, for the timing part:
 * started on a free loopback port without persistence, dying with the
 * demo (PR_SET_PDEATHSIG), stopped and reaped at the end; and the least
 * RESP client that times a lock cycle (commands out, one reply line in).
 * No client library: the demo builds from the library and itself only.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "demo.h"

#define TRIES 3 /* each on a fresh port: another may take ours first */

/* The redis-server to run: $SHMKV_REDIS_SERVER, else the first in $PATH. */
static const char *server_find(char *buf, size_t cap)
{
	const char *env = getenv("SHMKV_REDIS_SERVER");
	const char *p = getenv("PATH");
	size_t n;

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (p = p ? p : "/usr/bin:/bin"; *p; p += n + (p[n] == ':')) {
		n = strcspn(p, ":");
		snprintf(buf, cap, "%.*s/redis-server", (int)n, p);
		if (n && access(buf, X_OK) == 0)
			return buf;
	}
	return NULL;
}

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons((uint16_t)port);
	return a;
}

/* A port free right now (the server may still lose a race for it). */
static int free_port(void)
{
	struct sockaddr_in a = loopback(0);
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static pid_t spawn(const char *bin, int port)
{
	pid_t parent = getpid(), pid;
	char portstr[16];
	int fd;

	snprintf(portstr, sizeof(portstr), "%d", port);
	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(127);
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
	}
	if (chdir("/tmp") != 0)
		_exit(127);
	execl(bin, "redis-server", "--port", portstr, "--bind", "127.0.0.1",
	      "--save", "", "--appendonly", "no", "--daemonize", "no",
	      (char *)NULL);
	_exit(127);
}

static int connect_to(int port)
{
	struct sockaddr_in a = loopback(port);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Whether the server on r->fd is ours (process_id in INFO server), not
 * another that held the port. */
static int is_ours(struct demo_redis *r)
{
	const char *argv[] = { "INFO", "server" };
	char reply[8192], want[32];

	snprintf(want, sizeof(want), "process_id:%ld\r", (long)r->pid);
	return demo_redis_cmd(r, 2, argv, reply, sizeof(reply)) == 0 &&
	       strstr(reply, want) != NULL;
}

/* Connects to the server r->pid started on r->port. Return: 0, or -1 if
 * it exited or never answered (hang guard: DEMO_WAIT_MAX_MS / 4). */
static int wait_ready(struct demo_redis *r)
{
	struct timespec ms = { 0, 10000000 };

	for (int i = 0; i < DEMO_WAIT_MAX_MS / 40; i++) {
		r->fd = connect_to(r->port);
		if (r->fd >= 0) {
			if (is_ours(r))
				return 0;
			close(r->fd);
			r->fd = -1;
		}
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
			r->pid = 0; /* exited (lost the port): reaped */
			return -1;
		}
		nanosleep(&ms, NULL);
	}
	return -1;
}

int demo_redis_start(struct demo_redis *r, char *why, size_t cap)
{
	char buf[PATH_MAX];
	const char *bin = server_find(buf, sizeof(buf));

	*r = (struct demo_redis){ 0, 0, -1 };
	if (bin == NULL) {
		snprintf(why, cap,
			 "no redis-server in PATH (apt-get install "
			 "redis-server; make demo installs it)");
		return 1;
	}
	for (int t = 0; t < TRIES; t++) {
		r->port = free_port();
		r->pid = r->port > 0 ? spawn(bin, r->port) : -1;
		if (r->pid < 0)
			break;
		if (wait_ready(r) == 0)
			return 0;
		demo_redis_stop(r);
	}
	r->pid = 0;
	snprintf(why, cap, "%s did not answer on a loopback port", bin);
	return -1;
}

void demo_redis_stop(struct demo_redis *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads until @buf holds a whole reply: a line, or for a bulk "$n" the
 * line and n bytes and CRLF. Return: bytes read, or -1. */
static ssize_t read_reply(int fd, char *buf, size_t cap)
{
	size_t have = 0;

	for (;;) {
		char *eol = memchr(buf, '\n', have);
		ssize_t n;

		if (eol != NULL && buf[0] != '$')
			return (ssize_t)have;
		if (eol != NULL) {
			long len = strtol(buf + 1, NULL, 10);
			size_t need = (size_t)(eol + 1 - buf) +
				      (len < 0 ? 0 : (size_t)len + 2);

			if (have >= need)
				return (ssize_t)have;
		}
		if (have + 1 >= cap)
			return -1;
		n = read(fd, buf + have, cap - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
	}
}

int demo_redis_cmd(struct demo_redis *r, int argc, const char *const *argv,
		   char *line, size_t cap)
{
	char out[1024];
	size_t used;
	ssize_t n;
	char *eol;

	used = (size_t)snprintf(out, sizeof(out), "*%d\r\n", argc);
	for (int i = 0; i < argc && used < sizeof(out); i++)
		used += (size_t)snprintf(out + used, sizeof(out) - used,
					 "$%zu\r\n%s\r\n", strlen(argv[i]),
					 argv[i]);
	if (used >= sizeof(out) || write_all(r->fd, out, used))
		return -1;
	line[0] = '\0';
	n = read_reply(r->fd, line, cap);
	if (n < 0)
		return -1;
	eol = line[0] == '$' ? NULL : strchr(line, '\r');
	if (eol != NULL)
		*eol = '\0';
	return 0;
}
