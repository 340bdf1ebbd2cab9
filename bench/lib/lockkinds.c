/*
 * lockkinds.c - the locks of bench_lock (see lockkinds.h).
 */
#include "lockkinds.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kv.h"

#define LEASE_MS  10000
#define RETRY_MAX 100000000ul /* failed attempts: only ends a hang */

const char *const lock_kind_name[LK_N] = {
	"SETNX+DEL",	    "SETNX+DEL prepared",
	"pattern lock",	    "safe lock",
	"safe, waiter killed", "robust mutex",
	"flock",	    "OFD fcntl",
	"redis SET NX PX",
};
const char *const lock_kind_tag[LK_N] = {
	"setnx_del",	"setnx_del_prepared", "pattern", "safe",
	"safe_scarred", "robust",	      "flock",	 "ofd",
	"redis",
};

/* Distinct keys, so no kind finds another's leftovers. */
#define SETNX_KEY    "lk.setnx"
#define PATTERN_NAME "bench-pattern"
#define SAFE_NAME    "bench-safe"
#define SCARRED_NAME "bench-safe-scarred"

static pid_t main_pid;

void lock_die(const char *what, const char *why)
{
	fprintf(stderr, "bench_lock[%d]: %s: %s\n", (int)getpid(), what, why);
	if (getpid() != main_pid)
		_exit(1);
	exit(1);
}

static int count_waiters(const struct shmkv_lock_info *info, void *arg)
{
	if (info->name_len == sizeof(SCARRED_NAME) - 1 &&
	    memcmp(info->name, SCARRED_NAME, info->name_len) == 0)
		*(uint32_t *)arg = info->waiters;
	return 0;
}

static uint32_t scarred_waiters(shmkv_t *kv)
{
	uint32_t w = 0;

	shmkv_lock_list(kv, count_waiters, &w);
	return w;
}

/* Leaves SCARRED_NAME as a killed waiter leaves a lock: hold it, block a
 * child in acquire, SIGKILL the child while it sleeps, release. */
static int scar(shmkv_t *kv)
{
	struct shmkv_lock lk;
	pid_t pid;
	int rc = shmkv_lock_init(kv, &lk, SCARRED_NAME), st;

	if (rc == 0)
		rc = shmkv_lock_acquire(&lk, LEASE_MS);
	if (rc != 0)
		return rc;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(shmkv_lock_acquire(&lk, LEASE_MS) == 0 ? 0 : 1);
	for (int i = 0; i < 100000 && scarred_waiters(kv) == 0; i++)
		sched_yield();
	usleep(20000); /* asleep in FUTEX_WAIT, not between tries */
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return shmkv_lock_release(&lk);
}

int lock_env_init(struct lock_env *env)
{
	static char name[64];
	int fd, err;

	memset(env, 0, sizeof(*env));
	main_pid = getpid();
	env->mutex = bench_shm_alloc(sizeof(*env->mutex));
	if (!env->mutex)
		return -ENOMEM;
	if ((err = bench_robust_mutex_init(env->mutex)) ||
	    (err = bench_store_create("lock", NULL, &env->kv, name)) ||
	    (err = scar(env->kv)))
		return err;
	snprintf(env->file, sizeof(env->file), "/tmp/shmkv-bench-lock-XXXXXX");
	fd = mkstemp(env->file);
	if (fd < 0)
		return -errno;
	close(fd);
	bench_cleanup_file(env->file);
	return 0;
}

int lock_env_redis(struct lock_env *env, int port)
{
	redisContext *c = redisConnect("127.0.0.1", port);
	redisReply *r = NULL;
	int ok = c && !c->err;

	if (ok)
		r = redisCommand(c, "SCRIPT LOAD %s", bench_redis_delifeq_lua);
	ok = r && r->type == REDIS_REPLY_STRING &&
	     r->len < sizeof(env->redis_sha);
	if (ok) {
		memcpy(env->redis_sha, r->str, r->len + 1);
		env->redis_port = port;
	}
	freeReplyObject(r);
	redisFree(c);
	return ok ? 0 : -ECONNREFUSED;
}

static void redis_open(struct lock_proc *p)
{
	p->rc = redisConnect("127.0.0.1", p->env->redis_port);
	if (p->rc == NULL || p->rc->err)
		lock_die("redis connect", p->rc ? p->rc->errstr : "?");
}

void lock_proc_open(struct lock_proc *p, const struct lock_env *env,
		    enum lock_kind kind)
{
	int rc = 0;

	memset(p, 0, sizeof(*p));
	p->kind = kind;
	p->env = env;
	p->fd = -1;
	if (kind == LK_SAFE || kind == LK_SAFE_SCARRED)
		rc = shmkv_lock_init(env->kv, &p->lk,
				     kind == LK_SAFE ? SAFE_NAME
						     : SCARRED_NAME);
	else if (kind == LK_PATTERN)
		rc = shmkv_pattern_init(env->kv, &p->pl, PATTERN_NAME);
	else if (kind == LK_SETNX_PREP)
		rc = shmkv_key_prepare(env->kv, &p->ref, SETNX_KEY,
				       sizeof(SETNX_KEY) - 1);
	if (rc)
		lock_die(lock_kind_name[kind], shmkv_strerror(rc));
	if ((kind == LK_FLOCK || kind == LK_OFD) &&
	    (p->fd = open(env->file, O_RDWR | O_CLOEXEC)) < 0)
		lock_die(env->file, strerror(errno));
	if (kind == LK_REDIS)
		redis_open(p);
}

void lock_proc_close(struct lock_proc *p)
{
	if (p->fd >= 0)
		close(p->fd);
	if (p->rc)
		redisFree(p->rc);
	p->fd = -1;
	p->rc = NULL;
}

/* One SET NX PX with a fresh token. Return: 1 if acquired. */
static int redis_try(struct lock_proc *p)
{
	redisReply *r;
	int ok;

	snprintf(p->token, sizeof(p->token), "%d:%llu", (int)getpid(),
		 (unsigned long long)++p->n);
	r = redisCommand(p->rc, "SET lk %s NX PX %d", p->token, LEASE_MS);
	if (r == NULL)
		lock_die("redis SET", p->rc->errstr);
	ok = r->type == REDIS_REPLY_STATUS;
	freeReplyObject(r);
	return ok;
}

static void redis_release(struct lock_proc *p)
{
	redisReply *r = redisCommand(p->rc, "EVALSHA %s 1 lk %s",
				     p->env->redis_sha, p->token);

	if (r == NULL || r->type != REDIS_REPLY_INTEGER || r->integer != 1)
		lock_die("redis release", r ? "lock was not ours" : "no reply");
	freeReplyObject(r);
}

static int setnx_try(struct lock_proc *p)
{
	int rc = p->kind == LK_SETNX_PREP
			 ? shmkv_key_setnx(p->env->kv, &p->ref, "1", 1)
			 : shmkv_setnx(p->env->kv, SETNX_KEY,
				       sizeof(SETNX_KEY) - 1, "1", 1);

	if (rc < 0)
		lock_die("SETNX", shmkv_strerror(rc));
	return rc;
}

/* Kinds without a wait of their own retry; a loser yields the CPU (the
 * holder may be waiting for it), except Redis, whose round trip does. */
static void retry(struct lock_proc *p, int (*attempt)(struct lock_proc *))
{
	for (unsigned long i = 0; !attempt(p); i++) {
		if (i > RETRY_MAX)
			lock_die(lock_kind_name[p->kind], "never acquired");
		if (p->kind != LK_REDIS)
			sched_yield();
	}
}

static void ofd(struct lock_proc *p, short type)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_len = 1 };

	if (fcntl(p->fd, type == F_UNLCK ? F_OFD_SETLK : F_OFD_SETLKW, &fl))
		lock_die("fcntl(F_OFD_SETLKW)", strerror(errno));
}

void lock_acquire(struct lock_proc *p)
{
	int rc = 0;

	switch (p->kind) {
	case LK_SETNX:
	case LK_SETNX_PREP:
		retry(p, setnx_try);
		break;
	case LK_PATTERN:
		rc = shmkv_pattern_acquire(&p->pl, LEASE_MS, SHMKV_LOCK_FOREVER,
					   &p->expiry);
		break;
	case LK_SAFE:
	case LK_SAFE_SCARRED:
		rc = shmkv_lock_acquire(&p->lk, LEASE_MS);
		break;
	case LK_ROBUST:
		if (pthread_mutex_lock(p->env->mutex) == EOWNERDEAD)
			pthread_mutex_consistent(p->env->mutex);
		break;
	case LK_FLOCK:
		if (flock(p->fd, LOCK_EX))
			lock_die("flock", strerror(errno));
		break;
	case LK_OFD:
		ofd(p, F_WRLCK);
		break;
	default:
		retry(p, redis_try);
	}
	if (rc < 0)
		lock_die(lock_kind_name[p->kind], shmkv_strerror(rc));
}

void lock_release(struct lock_proc *p)
{
	int rc = 0;

	switch (p->kind) {
	case LK_SETNX:
		rc = shmkv_del(p->env->kv, SETNX_KEY, sizeof(SETNX_KEY) - 1);
		rc = rc == 1 ? 0 : rc == 0 ? -ENOLCK : rc;
		break;
	case LK_SETNX_PREP:
		rc = shmkv_key_del(p->env->kv, &p->ref);
		rc = rc == 1 ? 0 : rc == 0 ? -ENOLCK : rc;
		break;
	case LK_PATTERN:
		rc = shmkv_pattern_release(&p->pl, p->expiry);
		break;
	case LK_SAFE:
	case LK_SAFE_SCARRED:
		rc = shmkv_lock_release(&p->lk);
		break;
	case LK_ROBUST:
		pthread_mutex_unlock(p->env->mutex);
		break;
	case LK_FLOCK:
		flock(p->fd, LOCK_UN);
		break;
	case LK_OFD:
		ofd(p, F_UNLCK);
		break;
	default:
		redis_release(p);
	}
	if (rc)
		lock_die("release", shmkv_strerror(rc));
}
