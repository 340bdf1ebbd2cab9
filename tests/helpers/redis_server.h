/*
 * redis_server.h - a private redis-server for a test program: started on
 * a free loopback port with no persistence, killed and reaped at the end,
 * and killed by the kernel if the program dies first (PR_SET_PDEATHSIG).
 *
 * Talking to the server is the caller's: the start waits for a probe the
 * caller supplies (with hiredis, say), so this file needs no client
 * library, and no Criterion: standalone programs link it.
 */
#ifndef SHMKV_REDIS_SERVER_H
#define SHMKV_REDIS_SERVER_H

#include <sys/types.h>

struct redis_server {
	/* The server's pid, 0 when none runs. volatile: signal handlers
	 * read it to stop the server. */
	volatile pid_t pid;
	int port;
	/* Its stdout and stderr. Clear it to keep the file after a failure:
	 * redis_server_cleanup() unlinks what it names. */
	char log_path[64];
};

/*
 * Tries once to reach the server @s started on s->port. Return: 1 when it
 * answers, and is the process s->pid (another server may hold a port the
 * new one lost the race for); 0 to try again later.
 */
typedef int (*redis_probe_fn)(const struct redis_server *s, void *arg);

/* The redis-server to run: $SHMKV_REDIS_SERVER if set (NULL if it is not
 * executable), else the first in $PATH. NULL if there is none. The string
 * is static or the environment's. */
const char *redis_server_find(void);

/*
 * Starts @bin (from redis_server_find) into @s, zeroed by the caller,
 * with its output in /tmp/<@tag>-<pid>.log, and waits until @probe(@s,
 * @arg) returns 1: up to about 15 s per try, and three tries, each on a
 * fresh free port. Return: 0; -1 if it never answered (the server is
 * stopped; the log is left for redis_server_cleanup or the caller).
 */
int redis_server_start(struct redis_server *s, const char *bin, const char *tag,
		       redis_probe_fn probe, void *arg);

/* As redis_server_start, with @extra (NULL-terminated, at most 32; may be
 * NULL) appended to the server's arguments: "--requirepass", "pw", ...
 * (a later option overrides an earlier one, so these may also replace the
 * defaults). */
int redis_server_start_with(struct redis_server *s, const char *bin,
			    const char *tag, const char *const *extra,
			    redis_probe_fn probe, void *arg);

/* Stops the server (if it runs) and starts a new one on the same port,
 * with the same log file (truncated) and @extra, waiting
 * for @probe as redis_server_start does (one try: the port is fixed).
 * Return: 0, or -1 (nothing runs). */
int redis_server_restart(struct redis_server *s, const char *bin,
			 const char *const *extra, redis_probe_fn probe,
			 void *arg);

/* Kills the server with SIGKILL and reaps it; nothing if none runs.
 * Async-signal-safe. */
void redis_server_stop(struct redis_server *s);

/* Stops the server and unlinks its log (if log_path is set).
 * Async-signal-safe. */
void redis_server_cleanup(struct redis_server *s);

#endif /* SHMKV_REDIS_SERVER_H */
