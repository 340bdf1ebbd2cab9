/*
 * segment.c - creating, attaching and removing the shared segment.
 *
 * Create builds the whole segment in an unnamed file (O_TMPFILE) in
 * /dev/shm and then linkat()s it to the public name. A creator killed
 * before that leaves nothing: the file never had a name, so it goes with
 * its last descriptor. linkat() fails with EEXIST if the name is taken, so
 * creation is exclusive and race-free, and no process can ever open a
 * half-built store. The magic is still stored last (release) so a reader
 * that maps the file sees every header field.
 *
 * Where O_TMPFILE is missing (or the file cannot be linked: no capability
 * for AT_EMPTY_PATH and no /proc) the segment is built under a private
 * name, "/dev/shm/.shmkv-new-<pid>-<random>", and link()ed. A creator
 * killed then leaves that file; create and read-write open remove those
 * whose pid is dead.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "atomic.h"
#include "backend.h"
#include "evict.h"
#include "fault.h"
#include "internal.h"
#include "mapping.h"
#include "redis_typed.h"
#include "segment.h"
#include "tables.h"

void shmkv_config_init(struct shmkv_config *cfg)
{
	if (cfg != NULL)
		memset(cfg, 0, sizeof(*cfg));
}

static void shm_path(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s%s", SHMKV_SHM_DIR, name);
}

static uint64_t last_serial; /* handles opened by this process */

uint64_t shmkv__serial_next(void)
{
	/* Full barrier (process-local counter): only uniqueness is needed,
	 * relaxed would do; liburcu 0.13's fetch-and-add is full. */
	return shmkv__add_full(&last_serial, 1);
}

/* Fills the process-local handle from a validated geometry. */
static void handle_init(struct shmkv *kv, int fd, unsigned char *base,
			const struct shmkv_geometry *g, uint64_t seed,
			const char *name, bool readonly)
{
	memset(kv, 0, sizeof(*kv));
	kv->geo = *g;
	kv->fd = fd;
	kv->base = base;
	/* life_cached 0 (memset): generation 0, T(0), a valid hint even in
	 * a store that has grown since (the first command resolves). */
	for (uint32_t e = 0; e <= g->epoch_max; e++) {
		kv->tables[e].slots = base + shmkv__table_offset(g, e);
		kv->tables[e].mask = (g->slot_count << e) - 1;
		kv->tables[e].slot_shift = (uint8_t)g->slot_shift;
		kv->tables[e].epoch = (uint8_t)e;
	}
	kv->hash_seed = seed;
	kv->readonly = readonly;
	kv->page_table = (uint32_t *)(base + g->page_table_offset);
	kv->pages = base + g->pages_offset;
	kv->pages_ready = g->pages_initial;
	kv->serial = shmkv__serial_next();
	for (uint32_t c = 0; c < g->class_count; c++)
		kv->class_blocks[c] = g->page_size / g->class_size[c];
	/* Spread processes over the pages so they rarely collide. */
	kv->claim_hint = shmkv__self_pid() * 2654435761u % g->page_count;
	snprintf(kv->name, sizeof(kv->name), "%s", name);
	kv->fd_pid = shmkv__self_pid(); /* @fd: opened by this process */
}

static void header_write(unsigned char *base, const struct shmkv_geometry *g,
			 uint64_t seed, int evict_policy)
{
	struct shmkv_header_shm *h = (struct shmkv_header_shm *)base;

	h->layout_version = SHMKV_LAYOUT_VERSION;
	h->format = SHMKV_LAYOUT_FORMAT;
	shmkv__geometry_to_header(g, h);
	h->max_memory = g->reserve_memory; /* the config's, or the system's */
	h->pages_ready = g->pages_initial;
	(void)shmkv__evict_policy_store(h, evict_policy); /* checked */
	h->hash_seed = seed;
	h->created_unix_ms = (uint64_t)shmkv__unix_ms();
	h->clock_offset_ms = (int64_t)h->created_unix_ms - shmkv__now_ms();
	h->creator_pid = shmkv__self_pid();
	h->pid_ns = shmkv__pid_ns();
	/* Release: whoever reads the magic reads every field above. A fresh
	 * tmpfs file is zero-filled, which is already a valid empty table
	 * (every slot EMPTY at version 0, every block FREE). */
	shmkv__store_release(&h->magic, SHMKV_MAGIC);
}

/* How a store's mappings are made: its huge-page choice (the header's,
 * the same for every process). */
static unsigned map_how(const struct shmkv_geometry *g, bool rw)
{
	return (rw ? SHMKV_MAP_WRITE : 0u) |
	       (g->flags & SHMKV_HDR_HUGE_PAGES ? SHMKV_MAP_HUGE : 0u);
}

/* Pre-faults what store @g has allocated with @ready pages ready: the
 * header, the tables of life word @life (two while it grows), which the
 * handle holds (giveback.c), the ready page-table words, and the ready
 * pages (never the rest of the reservation, nor a table a growth gave
 * back: faulting would allocate). */
static void populate_used(unsigned char *base, const struct shmkv_geometry *g,
			  uint64_t life, uint32_t ready, bool write)
{
	uint64_t gen = SHMKV_LIFE_GEN(life);

	(void)shmkv__map_populate(base, g->slots_offset, write);
	for (uint64_t e = gen / 2; e <= (gen + 1) / 2 && e <= g->epoch_max; e++)
		(void)shmkv__map_populate(
			base + shmkv__table_start(g, (uint32_t)e),
			shmkv__table_end(g, (uint32_t)e) -
				shmkv__table_start(g, (uint32_t)e),
			write);
	(void)shmkv__map_populate(
		base + g->page_table_offset,
		shmkv__head_end(g, ready) - g->page_table_offset, write);
	(void)shmkv__map_populate(base + g->pages_offset,
				  shmkv__pages_end(g, ready) - g->pages_offset,
				  write);
}

/* Sizes (the whole reservation, sparse), allocates the initial part of and
 * maps a new segment. Return: its base, or NULL with *@err set. */
static unsigned char *map_new(int fd, const struct shmkv_geometry *g,
			      uint32_t mode, bool populate, int *err)
{
	unsigned char *p;

	if (fchmod(fd, mode) != 0 ||
	    ftruncate(fd, (off_t)g->segment_size) != 0) {
		*err = shmkv__errno();
		return NULL;
	}
	p = shmkv__map(fd, g->segment_size, map_how(g, true));
	if (p == NULL) {
		*err = shmkv__errno();
		return NULL;
	}
	/* tmpfs allocates pages lazily: allocate the initial part now so that
	 * running out of memory is a clean -ENOSPC here, not a SIGBUS in some
	 * later SET (huge pages: faulted in through the advised mapping
	 * first, see shmkv__memory_allocate). */
	*err = shmkv__memory_allocate(fd, p, g, 0, g->pages_initial);
	if (*err != 0) {
		munmap(p, g->segment_size);
		return NULL;
	}
	if (populate)
		populate_used(p, g, 0, g->pages_initial, true);
	return p;
}

/* Does this library know every option @cfg asks for? An option of a later
 * version (a flag bit, a reserved word) cannot be honoured: -EINVAL. */
bool shmkv__config_known(const struct shmkv_config *cfg)
{
	if (cfg->flags & ~(uint32_t)(SHMKV_CONFIG_HUGE_PAGES |
				     SHMKV_CONFIG_POPULATE) ||
	    shmkv_evict_policy_name((int)cfg->evict_policy) == NULL)
		return false;
	for (size_t i = 0; i < sizeof(cfg->reserved) / sizeof(cfg->reserved[0]);
	     i++)
		if (cfg->reserved[i] != 0)
			return false;
	return true;
}

/* What the system allows a store: the size of the file system at
 * /dev/shm (tmpfs: its size= option, half the RAM by default). A store
 * reserves that much address space and file length, not memory. 0 if
 * unknown: the store then stays at its initial size unless max_memory
 * says more. */
static uint64_t system_memory(void)
{
	struct statvfs sv;

	if (statvfs(SHMKV_SHM_DIR, &sv) != 0)
		return 0;
	return (uint64_t)sv.f_blocks * sv.f_frsize;
}

static int check_create_args(const struct shmkv_config *cfg, shmkv_t **out,
			     struct shmkv_geometry *g)
{
	struct shmkv_config defaults;

	if (out == NULL)
		return -EINVAL;
	if (cfg == NULL) {
		shmkv_config_init(&defaults);
		cfg = &defaults;
	}
	if (cfg->mode & ~0777u || !shmkv__config_known(cfg))
		return -EINVAL;
	return shmkv__geometry_from_config(cfg, system_memory(), g);
}

int shmkv_config_plan(const struct shmkv_config *cfg, struct shmkv_plan *plan)
{
	struct shmkv_geometry g;
	struct shmkv_config c;
	int err;

	if (cfg == NULL || plan == NULL)
		return -EINVAL;
	memset(plan, 0, sizeof(*plan));
	err = shmkv__geometry_plan(cfg, plan);
	if (err || plan->value_memory < plan->value_memory_min ||
	    plan->value_memory > plan->value_memory_max)
		return err;
	/* The geometry shmkv_create() computes (its reservation: the
	 * config's max_memory, or the system's), without the check of
	 * max_memory against the result, which is what this is for. */
	c = *cfg;
	c.value_memory = plan->value_memory;
	c.max_memory = 0;
	err = shmkv__geometry_from_config(
		&c, cfg->max_memory ? cfg->max_memory : system_memory(), &g);
	if (err == 0)
		plan->memory_bytes = shmkv__footprint(&g, g.pages_initial);
	return 0;
}

bool shmkv__tmpfile_off;

/* Creation's working file: unnamed, or named @tmp. */
struct new_file {
	int fd;
	bool named;
	char tmp[sizeof(SHMKV_SHM_DIR) + 64];
};

/* Opens an unnamed working file in /dev/shm, or a named one if @named or
 * if the file system has no O_TMPFILE. */
static int new_file_open(struct new_file *nf, bool named)
{
	uint64_t nonce;

	nf->named = named || shmkv__tmpfile_off;
	if (!nf->named) {
		/* No O_EXCL: it would forbid the linkat() that names it. */
		nf->fd = open(SHMKV_SHM_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC,
			      0600);
		if (nf->fd >= 0)
			return 0;
		/* EISDIR: a kernel older than O_TMPFILE; EOPNOTSUPP: a file
		 * system without it. Other errors a named file would share. */
		if (errno != EISDIR && errno != EOPNOTSUPP && errno != EINVAL)
			return shmkv__errno();
		nf->named = true;
	}
	/* Not the hash seed: file names are visible to every user. */
	if (getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce))
		nonce = (uint64_t)shmkv__mono_ms() * 0x9e3779b97f4a7c15u;
	snprintf(nf->tmp, sizeof(nf->tmp), "%s/" SHMKV_NEW_PREFIX "%u-%016llx",
		 SHMKV_SHM_DIR, shmkv__self_pid(), (unsigned long long)nonce);
	nf->fd = open(nf->tmp,
		      O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return nf->fd < 0 ? shmkv__errno() : 0;
}

/*
 * Names the built file @path: atomic, and exclusive because a link never
 * replaces. Return: 0, 1 (an unnamed file we cannot link: build a named
 * one), or a negative errno (-EEXIST: the name is taken).
 */
static int new_file_publish(const struct new_file *nf, const char *path)
{
	char self[32];

	if (nf->named)
		return link(nf->tmp, path) == 0 ? 0 : shmkv__errno();
	/* Links the descriptor itself; older kernels allow that only with
	 * CAP_DAC_READ_SEARCH and say ENOENT without. */
	if (linkat(nf->fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT)
		return shmkv__errno();
	/* The same file through /proc's link to it, which needs no capability
	 * (and ENOENT again: no /proc). */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", nf->fd);
	if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return errno == ENOENT ? 1 : shmkv__errno();
}

static void new_file_discard(const struct new_file *nf)
{
	if (nf->named)
		unlink(nf->tmp);
	close(nf->fd);
}

/*
 * Builds the segment in a new working file (named if @named) and names it
 * @path. Return: 0 (nf->fd and *base are the store's), 1 (cannot name an
 * unnamed file: try @named), or a negative errno; nothing is left on
 * failure.
 */
static int build(struct new_file *nf, bool named, const char *path,
		 const struct shmkv_geometry *g, const struct shmkv_config *cfg,
		 uint64_t seed, unsigned char **base)
{
	uint32_t mode = cfg && cfg->mode ? cfg->mode : SHMKV_MODE_DEFAULT;
	bool populate = cfg && (cfg->flags & SHMKV_CONFIG_POPULATE);
	int err = new_file_open(nf, named);

	if (err)
		return err;
	*base = map_new(nf->fd, g, mode, populate, &err);
	if (*base == NULL)
		goto out_discard;
	header_write(*base, g, seed, cfg ? (int)cfg->evict_policy : 0);
	SHMKV_CRASH_POINT("create_built");
	err = new_file_publish(nf, path);
	if (err) {
		munmap(*base, g->segment_size);
		goto out_discard;
	}
	if (nf->named)
		unlink(nf->tmp);
	return 0;
out_discard:
	new_file_discard(nf);
	return err;
}

static int create_shm(const char *name, const struct shmkv_config *cfg,
		      shmkv_t **out)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
	struct shmkv_geometry g;
	struct new_file nf;
	unsigned char *base = NULL;
	struct shmkv *kv;
	uint64_t seed = 0;
	int err;

	err = check_create_args(cfg, out, &g);
	if (err)
		return err;
	kv = malloc(sizeof(*kv));
	if (kv == NULL)
		return -ENOMEM;
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = (uint64_t)shmkv__unix_ms() ^ shmkv__self_pid();
	shm_path(path, sizeof(path), name);
	shmkv__new_files_sweep();
	/* Each new round means a removed store was taken off the name
	 * (its remover died before unlinking it): progress, so it ends. */
	do {
		err = build(&nf, false, path, &g, cfg, seed, &base);
		if (err == 1)
			err = build(&nf, true, path, &g, cfg, seed, &base);
	} while (err == -EEXIST && shmkv__store_clear_removed(path) == 1);
	if (err) {
		free(kv);
		return err;
	}
	handle_init(kv, nf.fd, base, &g, seed, name, false);
	/* T(0), held as by any handle (the store has its name already). */
	err = shmkv__tables_attach(kv);
	if (err) {
		shmkv_close(kv);
		return err;
	}
	*out = kv;
	return 0;
}

/* The creator's pid in a working file's name ".shmkv-new-<pid>-<16 hex>";
 * 0 if @name is not one. */
static uint32_t new_file_pid(const char *name)
{
	size_t plen = strlen(SHMKV_NEW_PREFIX);
	const char *p = name + plen;
	uint64_t pid = 0;

	if (strncmp(name, SHMKV_NEW_PREFIX, plen) != 0)
		return 0;
	for (; *p >= '0' && *p <= '9' && pid <= UINT32_MAX; p++)
		pid = pid * 10 + (uint64_t)(*p - '0');
	if (*p != '-' || pid > UINT32_MAX ||
	    strspn(p + 1, "0123456789abcdef") != 16 || p[17] != '\0')
		return 0;
	return (uint32_t)pid;
}

int shmkv__new_files_sweep(void)
{
	uint32_t self = shmkv__self_pid();
	DIR *d = opendir(SHMKV_SHM_DIR);
	struct dirent *e;
	int removed = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		uint32_t pid = new_file_pid(e->d_name);

		/* Ours may be another thread's create under way. A reused pid
		 * keeps the file until that process dies too. Judged in our
		 * pid namespace (proc.c): a creator in another one could lose
		 * its file and fail with -ENOENT. */
		if (pid == 0 || pid == self || shmkv__pid_alive(pid))
			continue;
		removed += unlinkat(dirfd(d), e->d_name, 0) == 0;
	}
	closedir(d);
	return removed;
}

/* Reads and validates the header of an open file without mapping it. */
/*
 * Liveness (of lock holders, claimants, owners of leftovers) is judged by
 * pid: a writer from another pid namespace would take live processes for
 * dead and free what they use. Readers judge nothing that changes the
 * store. Return: 0, -EXDEV.
 */
static int same_pid_ns(const struct shmkv_header_shm *h)
{
	uint32_t mine = shmkv__pid_ns();

	return h->pid_ns == 0 || mine == 0 || h->pid_ns == mine ? 0 : -EXDEV;
}

static int header_check(int fd, bool ro, struct shmkv_geometry *g,
			uint64_t *seed)
{
	struct shmkv_header_shm h;
	struct stat st;
	ssize_t n;
	int err;

	if (fstat(fd, &st) != 0)
		return shmkv__errno();
	if (!S_ISREG(st.st_mode))
		return -EPROTO;
	memset(&h, 0, sizeof(h));
	n = pread(fd, &h, sizeof(h), 0);
	if (n < 0)
		return shmkv__errno();
	err = shmkv__header_validate(&h, (uint64_t)st.st_size, g);
	/* Marked removed, its remover died before the unlink: it is gone
	 * (a create under the name finishes the removal). Other bits: no
	 * library of this layout sets them. */
	if (err == 0 && (h.life & SHMKV_LIFE_REMOVED))
		err = -ENOENT;
	/* A generation whose tables the segment does not reserve: corrupt. */
	if (err == 0 && (SHMKV_LIFE_GEN(h.life) + 1) / 2 > g->epoch_max)
		err = -EBADMSG;
	if (err == 0 && !ro)
		err = same_pid_ns(&h);
	if (err)
		return err;
	*seed = h.hash_seed;
	return 0;
}

static int open_shm(const char *name, unsigned flags, shmkv_t **out)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
	bool ro = flags & SHMKV_OPEN_READONLY;
	struct shmkv_geometry g;
	struct shmkv *kv;
	uint64_t seed = 0;
	void *base;
	int fd, err;

	if (out == NULL ||
	    (flags & ~(unsigned)(SHMKV_OPEN_READONLY | SHMKV_OPEN_POPULATE)))
		return -EINVAL;
	if (!ro) /* a read-only open changes nothing, not even debris */
		shmkv__new_files_sweep();
	shm_path(path, sizeof(path), name);
	fd = shmkv__store_file_open(path, ro ? O_RDONLY : O_RDWR);
	if (fd < 0)
		return fd;
	err = header_check(fd, ro, &g, &seed);
	if (err)
		goto out_close;
	base = shmkv__map(fd, g.segment_size, map_how(&g, !ro));
	if (base == NULL) {
		err = shmkv__errno();
		goto out_close;
	}
	kv = malloc(sizeof(*kv));
	if (kv == NULL) {
		munmap(base, g.segment_size);
		err = -ENOMEM;
		goto out_close;
	}
	handle_init(kv, fd, base, &g, seed, name, ro);
	/* The tables the life word names, held before anything reads them,
	 * and checked against the file: a corrupt word is -EBADMSG here. */
	err = shmkv__tables_attach(kv);
	if (err) {
		shmkv__tables_release(kv);
		munmap(base, g.segment_size);
		free(kv);
		goto out_close;
	}
	/* Older tables that nobody holds any more (their last holder
	 * closed, or died, since): given back. */
	shmkv__tables_give_back(kv);
	if (flags & SHMKV_OPEN_POPULATE)
		populate_used(base, &g, kv->life_checked,
			      shmkv__pages_ready_refresh(kv), !ro);
	*out = kv;
	return 0;
out_close:
	close(fd);
	return err;
}

static int open_or_create_shm(const char *name, const struct shmkv_config *cfg,
			      shmkv_t **out)
{
	unsigned flags = cfg && (cfg->flags & SHMKV_CONFIG_POPULATE)
				 ? SHMKV_OPEN_POPULATE
				 : 0;

	/* Refused even when the store exists and @cfg would go unused. */
	if (cfg != NULL && !shmkv__config_known(cfg))
		return -EINVAL;
	/* Bounded: each failed round means the name appeared or vanished
	 * between our two calls, i.e. another process made progress. */
	for (int round = 0; round < 64; round++) {
		int err = open_shm(name, flags, out);

		if (err != -ENOENT)
			return err;
		err = create_shm(name, cfg, out);
		if (err != -EEXIST)
			return err;
	}
	return -EAGAIN;
}

/* Routes @name: to its backend (a URI), or to the shared-memory store
 * (open_shm, create_shm) under its shm name, the slash added if missing.
 * Return: as shmkv_open, shmkv_create. */
static int route(const char *name, enum shmkv_backend_open_how how,
		 unsigned flags, const struct shmkv_config *cfg, shmkv_t **out)
{
	char shm_name[SHMKV_NAME_MAX + 1];
	const struct shmkv_backend *be;
	int err = shmkv__backend_route(name, &be);

	if (err)
		return err;
	if (be != NULL)
		return be->open(name, how, flags, cfg, out);
	err = shmkv__name_canon(name, shm_name);
	if (err)
		return err;
	name = shm_name;
	switch (how) {
	case SHMKV_BACKEND_OPEN:
		return open_shm(name, flags, out);
	case SHMKV_BACKEND_CREATE:
		return create_shm(name, cfg, out);
	default:
		return open_or_create_shm(name, cfg, out);
	}
}

int shmkv_create(const char *name, const struct shmkv_config *cfg,
		 shmkv_t **out)
{
	return route(name, SHMKV_BACKEND_CREATE, 0, cfg, out);
}

int shmkv_open(const char *name, unsigned flags, shmkv_t **out)
{
	return route(name, SHMKV_BACKEND_OPEN, flags, NULL, out);
}

int shmkv_open_or_create(const char *name, const struct shmkv_config *cfg,
			 shmkv_t **out)
{
	return route(name, SHMKV_BACKEND_OPEN_OR_CREATE, 0, cfg, out);
}

void shmkv_close(shmkv_t *kv)
{
	if (kv == NULL)
		return;
	if (kv->backend != NULL) {
		kv->backend->close(kv);
		return;
	}
	if (kv->ext != NULL)
		kv->ext->close(kv, kv->ext);
	/* Our tables' locks go first: nothing of this handle is in a table
	 * any more (the caller's promise), and an old table that only we
	 * still held can go back now. */
	shmkv__tables_release(kv);
	shmkv__tables_give_back(kv);
	munmap(kv->base, kv->geo.segment_size);
	close(kv->fd);
	free(kv);
}

int shmkv_unlink(const char *name)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
	char shm_name[SHMKV_NAME_MAX + 1];
	const struct shmkv_backend *be;
	int err = shmkv__backend_route(name, &be);

	if (err)
		return err;
	if (be != NULL)
		return be->unlink(name);
	err = shmkv__name_canon(name, shm_name);
	if (err)
		return err;
	shm_path(path, sizeof(path), shm_name);
	return shmkv__store_remove(path);
}

int shmkv_get_config(const shmkv_t *kv, struct shmkv_config *cfg)
{
	struct stat st;

	if (kv == NULL || cfg == NULL)
		return -EINVAL;
	if (shmkv__is_remote(kv)) /* no header to read */
		return shmkv__redis_get_config(kv, cfg);
	memset(cfg, 0, sizeof(*cfg));
	cfg->slots = kv->geo.slot_count;
	cfg->key_max = kv->geo.key_max;
	cfg->value_max = kv->geo.value_max;
	cfg->probe_limit = kv->geo.probe_limit;
	cfg->value_memory = kv->geo.value_memory;
	/* Relaxed: a setting, read as it is now. */
	cfg->max_memory = shmkv__load_relaxed(
		&((struct shmkv_header_shm *)kv->base)->max_memory);
	cfg->evict_policy = (uint32_t)shmkv__evict_policy(kv);
	cfg->mode = fstat(kv->fd, &st) == 0 ? (st.st_mode & 0777) : 0;
	if (kv->geo.flags & SHMKV_HDR_HUGE_PAGES)
		cfg->flags |= SHMKV_CONFIG_HUGE_PAGES;
	return 0;
}

int shmkv_huge_mapped(const shmkv_t *kv, uint64_t *bytes)
{
	if (kv == NULL || bytes == NULL)
		return -EINVAL;
	if (kv->backend != NULL)
		return -ENOTSUP;
	return shmkv__map_huge_bytes(kv->base, bytes);
}
