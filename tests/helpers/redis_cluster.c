/*
 * redis_cluster.c - a private 3-master Redis Cluster for a test program
 * (see redis_cluster.h).
 */
#include "helpers/redis_cluster.h"

#include <dirent.h>
#include <errno.h>
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

#include "helpers/redis_server.h"
#include "helpers/resp.h"

/* Polls 50 ms apart: ~15 s for a node to answer, ~30 s for the cluster
 * to agree, ~60 s for redis-cli --cluster create (it sleeps itself). */
#define POLL_US	     50000
#define NODE_POLLS   300
#define AGREE_POLLS  600
#define CREATE_POLLS 1200
#define NODE_TRIES   3

void redis_cluster_kill_node(struct redis_cluster *c, int i)
{
	pid_t pid = c->node[i].pid;

	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		c->node[i].pid = 0;
	}
}

void redis_cluster_stop(struct redis_cluster *c)
{
	int i;

	for (i = 0; i < REDIS_CLUSTER_NODES; i++)
		redis_cluster_kill_node(c, i);
}

/* Removes @dir and the files in it (it has no subdirectories). */
static void remove_dir(const char *dir)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

void redis_cluster_cleanup(struct redis_cluster *c)
{
	redis_cluster_stop(c);
	/* The janitor first: once its pipe closes it would remove the dir
	 * too (harmless, but one remover is clearer). */
	if (c->janitor > 0) {
		kill(c->janitor, SIGKILL);
		waitpid(c->janitor, NULL, 0);
		c->janitor = 0;
		close(c->janitor_fd);
	}
	if (!c->dir[0])
		return;
	remove_dir(c->dir);
	c->dir[0] = '\0';
}

int redis_cluster_pid_gone(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) != 0)
		return errno == ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	/* "pid (comm) S ...": comm may hold ')' itself, the state follows
	 * the last one. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* The janitor's life (see redis_cluster.h): never returns. Forked from a
 * test that may have threads, it calls opendir (malloc): glibc's fork
 * leaves malloc usable in the child, which is what this relies on. */
static void janitor_run(int rfd, const char *dir)
{
	pid_t pid[64];
	int n = 0, i, k;
	ssize_t r;

	/* Nothing of the test's but the pipe (a socket held open here
	 * would hide the test's death from whoever watches it); and a
	 * Ctrl-C to the process group must leave the janitor to its job. */
	if (rfd != 3) {
		dup2(rfd, 3);
		close(rfd);
	}
	close_range(4, ~0U, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	for (;;) {
		r = read(3, &pid[n < 64 ? n : 63], sizeof(pid[0]));
		if (r == (ssize_t)sizeof(pid[0]))
			n += n < 64;
		else if (r == 0 || errno != EINTR)
			break; /* EOF: the test process is gone */
	}
	/* Its nodes die of PR_SET_PDEATHSIG (a zombie is dead enough: a
	 * subreaper may be slow to reap it); none may write its nodes.conf
	 * after the removal. Polled up to 5 s each
	 * (a pid reused meanwhile only makes this wait longer). */
	for (i = 0; i < n; i++)
		for (k = 0; k < 200 && !redis_cluster_pid_gone(pid[i]); k++)
			usleep(25000);
	remove_dir(dir);
	_exit(0);
}

/* Starts @c's janitor; without one (fork failed) a crash leaves the dir. */
static void janitor_start(struct redis_cluster *c)
{
	int fd[2];
	pid_t pid;

	if (pipe2(fd, O_CLOEXEC) != 0)
		return;
	pid = fork();
	if (pid == 0) {
		close(fd[1]);
		janitor_run(fd[0], c->dir);
	}
	close(fd[0]);
	if (pid < 0) {
		close(fd[1]);
		return;
	}
	c->janitor = pid;
	c->janitor_fd = fd[1];
}

/* Tells the janitor to wait for node @pid before it removes the dir. */
static void janitor_watch(const struct redis_cluster *c, pid_t pid)
{
	ssize_t w;

	/* One small write to a pipe is atomic; a failed one would only
	 * lose the wait, not the removal. */
	if (c->janitor > 0)
		w = write(c->janitor_fd, &pid, sizeof(pid));
	(void)w;
}

const char *redis_cluster_cli_find(void)
{
	static char path[4096];
	const char *env = getenv("SHMKV_REDIS_CLI");
	const char *srv = redis_server_find(), *p = getenv("PATH");
	const char *slash;
	size_t n;

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	if (srv && (slash = strrchr(srv, '/'))) {
		snprintf(path, sizeof(path), "%.*s/redis-cli",
			 (int)(slash - srv), srv);
		if (access(path, X_OK) == 0)
			return path;
	}
	for (p = p ? p : "/usr/bin:/bin"; *p; p += n + (p[n] == ':')) {
		n = strcspn(p, ":");
		snprintf(path, sizeof(path), "%.*s/redis-cli", (int)n, p);
		if (n && access(path, X_OK) == 0)
			return path;
	}
	return NULL;
}

/* A port free right now, other than the cluster's taken ones (a node may
 * still lose a race for it: the start retries). */
static int free_port(const struct redis_cluster *c)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int fd, port, i, tries;

	for (tries = 0; tries < 16; tries++) {
		port = -1;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd >= 0 &&
		    bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
		    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
			port = ntohs(a.sin_port);
		if (fd >= 0)
			close(fd);
		for (i = 0; port > 0 && i < REDIS_CLUSTER_NODES; i++)
			if (c->node[i].port == port ||
			    c->node[i].bus_port == port)
				port = 0;
		if (port)
			return port;
	}
	return -1;
}

/* Forks @argv with its output in @log, dying with this process. */
static pid_t spawn(const char *const *argv, const char *log)
{
	pid_t parent = getpid(), pid = fork();
	int fd;

	if (pid != 0)
		return pid;
	/* If the test dies without cleaning up, the child dies too (and
	 * if it died before the request took hold, there is no point). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(127);
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	execv(argv[0], (char *const *)argv);
	_exit(127);
}

/* Node @i is up and is ours: it answers, and from our dir (another
 * server may hold a port this one lost the race for). */
static int node_ours(const struct redis_cluster *c, int i)
{
	char out[512];

	return resp_simple(c->node[i].port, "CONFIG GET dir", out,
			   sizeof(out)) == 0 &&
	       strstr(out, c->dir) != NULL;
}

static int node_start_once(struct redis_cluster *c, int i, const char *bin)
{
	struct redis_cluster_node *n = &c->node[i];
	char port[16], bus[16], conf[32], log[128], out[128];
	const char *argv[] = { bin,	    "--port",
			       port,	    "--cluster-enabled",
			       "yes",	    "--cluster-port",
			       bus,	    "--cluster-config-file",
			       conf,	    "--cluster-require-full-coverage",
			       "no",	    "--dir",
			       c->dir,	    "--save",
			       "",	    "--appendonly",
			       "no",	    "--daemonize",
			       "no",	    "--bind",
			       "127.0.0.1", NULL };
	int k, status;

	n->port = free_port(c);
	n->bus_port = n->port > 0 ? free_port(c) : -1;
	if (n->bus_port < 0)
		return -1;
	snprintf(port, sizeof(port), "%d", n->port);
	snprintf(bus, sizeof(bus), "%d", n->bus_port);
	snprintf(conf, sizeof(conf), "nodes-%d.conf", i);
	snprintf(log, sizeof(log), "%s/node-%d.log", c->dir, i);
	n->pid = spawn(argv, log);
	if (n->pid < 0) {
		n->pid = 0;
		return -1;
	}
	janitor_watch(c, n->pid);
	for (k = 0; k < NODE_POLLS; k++) {
		if (node_ours(c, i) &&
		    resp_simple(n->port, "CLUSTER MYID", out, sizeof(out)) ==
			    0 &&
		    strlen(out) == 41) {
			memcpy(n->id, out, 40);
			n->id[40] = '\0';
			return 0;
		}
		if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
			n->pid = 0; /* exited (a lost port race): reaped */
			return -1;
		}
		usleep(POLL_US);
	}
	redis_cluster_kill_node(c, i);
	return -1;
}

static int node_start(struct redis_cluster *c, int i, const char *bin)
{
	char conf[512];
	int t;

	for (t = 0; t < NODE_TRIES; t++) {
		if (node_start_once(c, i, bin) == 0)
			return 0;
		/* A half-started node may have written its config. */
		snprintf(conf, sizeof(conf), "%s/nodes-%d.conf", c->dir, i);
		unlink(conf);
		c->node[i].port = c->node[i].bus_port = 0;
	}
	return -1;
}

static int cluster_create(struct redis_cluster *c)
{
	char addr[REDIS_CLUSTER_NODES][32], log[128];
	const char *cli = redis_cluster_cli_find();
	const char *argv[REDIS_CLUSTER_NODES + 8];
	int i, k = 0, status;
	pid_t pid;

	if (!cli)
		return -1;
	argv[k++] = cli;
	argv[k++] = "--cluster";
	argv[k++] = "create";
	for (i = 0; i < REDIS_CLUSTER_NODES; i++) {
		snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d",
			 c->node[i].port);
		argv[k++] = addr[i];
	}
	argv[k++] = "--cluster-replicas";
	argv[k++] = "0";
	argv[k++] = "--cluster-yes";
	argv[k] = NULL;
	snprintf(log, sizeof(log), "%s/create.log", c->dir);
	pid = spawn(argv, log);
	if (pid < 0)
		return -1;
	for (k = 0; k < CREATE_POLLS; k++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) && !WEXITSTATUS(status) ? 0
									 : -1;
		usleep(POLL_US);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* Every running node ok (or answering), and the same map on all. */
static int agreed(struct redis_cluster *c, int allow_fail)
{
	static char first[16384], out[16384];
	char info[2048];
	int i, have = 0;

	for (i = 0; i < REDIS_CLUSTER_NODES; i++) {
		if (!c->node[i].pid)
			continue;
		if (resp_simple(c->node[i].port, "CLUSTER INFO", info,
				sizeof(info)) != 0)
			return 0;
		if (!strstr(info, "cluster_slots_assigned:16384") ||
		    (!allow_fail && !strstr(info, "cluster_state:ok")))
			return 0;
		if (resp_simple(c->node[i].port, "CLUSTER SLOTS",
				have ? out : first, sizeof(out)) != 0)
			return 0;
		if (have && strcmp(first, out) != 0)
			return 0;
		have = 1;
	}
	return have;
}

int redis_cluster_wait_agreed(struct redis_cluster *c, int allow_fail)
{
	int k;

	for (k = 0; k < AGREE_POLLS; k++) {
		if (agreed(c, allow_fail))
			return 0;
		usleep(POLL_US);
	}
	return -1;
}

int redis_cluster_slot_owner(struct redis_cluster *c, unsigned slot)
{
	static char out[16384];
	char *line, *save = NULL;
	long lo = -1, hi = -1, port;
	int i, from = -1, ints = 0;

	for (i = 0; i < REDIS_CLUSTER_NODES && from < 0; i++)
		if (c->node[i].pid)
			from = i;
	if (from < 0 || resp_simple(c->node[from].port, "CLUSTER SLOTS", out,
				    sizeof(out)) != 0)
		return -1;
	/* Each range's integers are lo, hi and its master's port (no
	 * replicas here: exactly three); the rest are strings and arrays. */
	for (line = strtok_r(out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] != ':')
			continue;
		if (ints % 3 == 0)
			lo = atol(line + 1);
		else if (ints % 3 == 1)
			hi = atol(line + 1);
		port = atol(line + 1);
		if (ints++ % 3 != 2 || (long)slot < lo || (long)slot > hi)
			continue;
		for (i = 0; i < REDIS_CLUSTER_NODES; i++)
			if (c->node[i].port == port)
				return i;
	}
	return -1;
}

static void dump_logs(const struct redis_cluster *c)
{
	char path[512], buf[4096];
	struct dirent *e;
	size_t n;
	DIR *d = opendir(c->dir);
	FILE *f;

	while (d && (e = readdir(d))) {
		if (!strstr(e->d_name, ".log"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->dir, e->d_name);
		fprintf(stderr, "---- %s\n", path);
		if (!(f = fopen(path, "r")))
			continue;
		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, stderr);
		fclose(f);
	}
	if (d)
		closedir(d);
}

int redis_cluster_start(struct redis_cluster *c, const char *tag)
{
	const char *bin = redis_server_find();
	int i;

	snprintf(c->dir, sizeof(c->dir), "/tmp/%s-%d-XXXXXX", tag,
		 (int)getpid());
	if (!bin || !mkdtemp(c->dir)) {
		c->dir[0] = '\0';
		return -1;
	}
	janitor_start(c);
	for (i = 0; i < REDIS_CLUSTER_NODES; i++)
		if (node_start(c, i, bin) != 0)
			goto fail;
	if (cluster_create(c) != 0 || redis_cluster_wait_agreed(c, 0) != 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "redis_cluster: could not start a cluster in %s\n",
		c->dir);
	redis_cluster_stop(c);
	dump_logs(c);
	redis_cluster_cleanup(c);
	return -1;
}
