/*
 * cleanup.c - what a bench leaves outside itself (shared-memory names,
 * files, a redis-server) is registered here and removed at exit or on a
 * fatal signal; plus the shared-memory helpers that create those things.
 *
 * The signal handler only calls async-signal-safe functions (shm_unlink is
 * unlink of a /dev/shm path, kill, unlink) on fixed arrays filled before
 * the signal could matter.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define ITEMS_MAX 32
#define PATH_LEN  128

static pid_t owner;
static char shm_names[ITEMS_MAX][PATH_LEN];
static char files[ITEMS_MAX][PATH_LEN];
static volatile pid_t pids[ITEMS_MAX];
static struct bench_csv *volatile csv_pending;

static int add_path(char (*arr)[PATH_LEN], const char *path)
{
	size_t len = strlen(path);

	if (len >= PATH_LEN)
		return -ENAMETOOLONG;
	for (int i = 0; i < ITEMS_MAX; i++)
		if (arr[i][0] == '\0') {
			memcpy(arr[i], path, len + 1);
			return 0;
		}
	return -ENOSPC;
}

/* Async-signal-safe part: unlink names, files and the CSV's tmp file,
 * signal the servers. */
static void remove_all(int reap)
{
	for (int i = 0; i < ITEMS_MAX; i++) {
		if (shm_names[i][0])
			shm_unlink(shm_names[i]);
		if (files[i][0])
			unlink(files[i]);
		shm_names[i][0] = files[i][0] = '\0';
		if (pids[i] > 0) {
			kill(pids[i], SIGTERM);
			if (reap)
				waitpid(pids[i], NULL, 0);
			pids[i] = 0;
		}
	}
	if (csv_pending && csv_pending->f)
		unlink(csv_pending->tmp);
}

static void at_exit(void)
{
	if (getpid() != owner)
		return;
	remove_all(1);
}

static void on_signal(int sig)
{
	if (getpid() == owner)
		remove_all(0);
	signal(sig, SIG_DFL);
	raise(sig);
}

void bench_cleanup_init(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	owner = getpid();
	atexit(at_exit);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
}

int bench_cleanup_shm(const char *name)
{
	return add_path(shm_names, name);
}

int bench_cleanup_file(const char *path)
{
	return add_path(files, path);
}

int bench_cleanup_pid(pid_t pid)
{
	for (int i = 0; i < ITEMS_MAX; i++)
		if (pids[i] == 0) {
			pids[i] = pid;
			return 0;
		}
	return -ENOSPC;
}

void bench_cleanup_forget_pid(pid_t pid)
{
	for (int i = 0; i < ITEMS_MAX; i++)
		if (pids[i] == pid)
			pids[i] = 0;
}

void bench_cleanup_csv(struct bench_csv *csv)
{
	csv_pending = csv;
}

static void forget_shm(const char *name)
{
	for (int i = 0; i < ITEMS_MAX; i++)
		if (strcmp(shm_names[i], name) == 0)
			shm_names[i][0] = '\0';
}

void *bench_shm_alloc(size_t len)
{
	static unsigned seq;
	char name[64];
	void *p;
	int fd;

	snprintf(name, sizeof(name), "/shmkv-bench-mem-%ld-%u", (long)getpid(),
		 seq++);
	fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return NULL;
	shm_unlink(name); /* mapped below: no name left to leak */
	if (ftruncate(fd, (off_t)len) != 0) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

void bench_shm_free(void *p, size_t len)
{
	if (p)
		munmap(p, len);
}

int bench_robust_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;
	int rc;

	pthread_mutexattr_init(&a);
	rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	if (!rc)
		rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	if (!rc)
		rc = pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
	return -rc;
}

int bench_store_create(const char *tag, const struct shmkv_config *cfg,
		       shmkv_t **kv, char *name)
{
	int rc;

	snprintf(name, 64, "/shmkv-bench-%s-%ld", tag, (long)getpid());
	rc = bench_cleanup_shm(name);
	if (rc)
		return rc;
	/* Registered before it exists, so no signal can leave it behind;
	 * the name has our pid, so it cannot be someone else's store. */
	rc = shmkv_create(name, cfg, kv);
	if (rc)
		forget_shm(name);
	return rc;
}

void bench_store_destroy(shmkv_t *kv, const char *name)
{
	shmkv_close(kv);
	shmkv_unlink(name);
	forget_shm(name);
}
