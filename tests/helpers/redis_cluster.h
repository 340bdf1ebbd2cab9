/*
 * redis_cluster.h - a private 3-master Redis Cluster for a test program:
 * three redis-server --cluster-enabled yes on free loopback ports, no
 * persistence, their nodes.conf files and logs in a temp dir of their
 * own, joined by redis-cli --cluster create (no replicas), killed and
 * reaped at the end, and killed by the kernel if the program dies first
 * (PR_SET_PDEATHSIG), its temp dir then removed by a janitor process.
 *
 * The nodes run with cluster-require-full-coverage no: a killed master's
 * slots fail, the others' keep serving (what a test of a lost node wants
 * to see), and with no replicas there is no failover. No client library
 * and no Criterion: it talks RESP itself (resp.h), so standalone programs
 * link it. One thread at a time per process (wait_agreed and slot_owner
 * use static buffers).
 */
#ifndef SHMKV_REDIS_CLUSTER_H
#define SHMKV_REDIS_CLUSTER_H

#include <sys/types.h>

#define REDIS_CLUSTER_NODES 3

struct redis_cluster_node {
	/* The node's pid, 0 when it does not run. volatile: signal
	 * handlers read it to stop the node. */
	volatile pid_t pid;
	int port;     /* clients */
	int bus_port; /* cluster bus (cluster-port) */
	char id[41];  /* CLUSTER MYID */
};

struct redis_cluster {
	struct redis_cluster_node node[REDIS_CLUSTER_NODES];
	/* The temp dir: nodes-<i>.conf, node-<i>.log, create.log. "" when
	 * none. */
	char dir[64];
	/* The janitor: a child that removes the dir if this process dies
	 * without redis_cluster_cleanup (a crash, a SIGKILL, a signal
	 * handler that only stops the nodes): it waits for EOF on a pipe
	 * only this process writes (the nodes' pids go down it), then for
	 * the nodes to be gone (PR_SET_PDEATHSIG kills them), then removes
	 * the dir. 0 when none runs. */
	volatile pid_t janitor;
	int janitor_fd; /* the pipe's write end, close-on-exec */
};

/* The redis-cli to run: $SHMKV_REDIS_CLI if set (NULL if it is not
 * executable), else the one beside redis_server_find()'s redis-server,
 * else the first in $PATH. NULL if there is none. */
const char *redis_cluster_cli_find(void);

/*
 * Starts the cluster into @c (zeroed by the caller) with its temp dir
 * /tmp/<@tag>-<pid>-XXXXXX, and waits until every node answers
 * cluster_state:ok and all three give the same CLUSTER SLOTS (16384 slots
 * in three ranges). Return: 0; -1 if it could not (the nodes' logs are
 * copied to stderr, the nodes stopped and the dir removed).
 */
int redis_cluster_start(struct redis_cluster *c, const char *tag);

/*
 * Waits until every running node says cluster_state:ok (or, with
 * @allow_fail, answers at all) and the running nodes give the same
 * CLUSTER SLOTS: after a test moved a slot. Return: 0, or -1 after
 * about 30 s.
 */
int redis_cluster_wait_agreed(struct redis_cluster *c, int allow_fail);

/* The index of the node that serves @slot in node 0's (or the first
 * running node's) CLUSTER SLOTS, or -1. */
int redis_cluster_slot_owner(struct redis_cluster *c, unsigned slot);

/* 1 if @pid is no process, or a zombie (it runs no more), else 0. */
int redis_cluster_pid_gone(pid_t pid);

/* Kills node @i with SIGKILL and reaps it. Async-signal-safe. */
void redis_cluster_kill_node(struct redis_cluster *c, int i);

/* Kills and reaps every node. Async-signal-safe. The temp dir stays (the
 * janitor removes it when this process ends). */
void redis_cluster_stop(struct redis_cluster *c);

/* Stops the nodes and the janitor, and removes the temp dir and what is
 * in it. */
void redis_cluster_cleanup(struct redis_cluster *c);

#endif /* SHMKV_REDIS_CLUSTER_H */
