/*
 * redis_server.c - a private redis-server for a test program (see
 * redis_server.h).
 */
#include "helpers/redis_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Polls of a try, 50 ms apart (~15 s), and tries, each on a new port. */
#define READY_POLLS 300
#define TRIES	    3

void redis_server_stop(struct redis_server *s)
{
	pid_t pid = s->pid;

	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		s->pid = 0;
	}
}

void redis_server_cleanup(struct redis_server *s)
{
	redis_server_stop(s);
	if (s->log_path[0])
		unlink(s->log_path);
}

const char *redis_server_find(void)
{
	static char path[4096];
	const char *env = getenv("SHMKV_REDIS_SERVER");
	const char *p = getenv("PATH");
	size_t n;

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (p = p ? p : "/usr/bin:/bin"; *p; p += n + (p[n] == ':')) {
		n = strcspn(p, ":");
		snprintf(path, sizeof(path), "%.*s/redis-server", (int)n, p);
		if (n && access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

/* A port free right now (redis-server may still lose a race for it). */
static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Arguments of one server: the fixed ones, then the caller's extra. */
#define EXTRA_MAX 32

static pid_t spawn(const char *bin, int port, const char *log_path,
		   const char *const *extra)
{
	const char *args[16 + EXTRA_MAX + 1] = {
		"redis-server", "--port", NULL,		 "--save", "",
		"--appendonly", "no",	  "--daemonize", "no",	   "--bind",
		"127.0.0.1",
	};
	pid_t parent = getpid(), pid;
	char portstr[16];
	int fd, n = 11;

	snprintf(portstr, sizeof(portstr), "%d", port);
	args[2] = portstr;
	for (int i = 0; extra != NULL && extra[i] != NULL && i < EXTRA_MAX; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	pid = fork();
	if (pid != 0)
		return pid;
	/* If the test dies without cleaning up, the server dies too (and
	 * if it died before the request took hold, there is no point). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(127);
	fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (chdir("/tmp") != 0)
		_exit(127);
	execv(bin, (char *const *)args);
	_exit(127);
}

/* Polls @probe while the server lives. Return: 0 ready, -1 not. */
static int wait_ready(struct redis_server *s, redis_probe_fn probe, void *arg)
{
	int i, status;

	for (i = 0; i < READY_POLLS; i++) {
		if (probe(s, arg))
			return 0;
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			s->pid = 0; /* exited: reaped here */
			return -1;
		}
		usleep(50000);
	}
	return -1;
}

int redis_server_start(struct redis_server *s, const char *bin, const char *tag,
		       redis_probe_fn probe, void *arg)
{
	return redis_server_start_with(s, bin, tag, NULL, probe, arg);
}

int redis_server_start_with(struct redis_server *s, const char *bin,
			    const char *tag, const char *const *extra,
			    redis_probe_fn probe, void *arg)
{
	int attempt;

	snprintf(s->log_path, sizeof(s->log_path), "/tmp/%s-%d.log", tag,
		 (int)getpid());
	for (attempt = 0; attempt < TRIES; attempt++) {
		s->port = free_port();
		if (s->port < 0)
			break;
		s->pid = spawn(bin, s->port, s->log_path, extra);
		if (s->pid < 0) {
			s->pid = 0;
			break;
		}
		if (wait_ready(s, probe, arg) == 0)
			return 0;
		redis_server_stop(s);
	}
	return -1;
}

int redis_server_restart(struct redis_server *s, const char *bin,
			 const char *const *extra, redis_probe_fn probe,
			 void *arg)
{
	redis_server_stop(s);
	s->pid = spawn(bin, s->port, s->log_path, extra);
	if (s->pid < 0) {
		s->pid = 0;
		return -1;
	}
	if (wait_ready(s, probe, arg) == 0)
		return 0;
	redis_server_stop(s);
	return -1;
}
