/*
 * shmctl_ls.c - "shmctl ls": the shmkv stores in /dev/shm.
 *
 * A file is a store when shmkv_open() recognises its magic: it either opens
 * (listed with its key count) or fails with an error that only a store can
 * give (another layout version, a corrupted header), and is listed with
 * that error as its status. A file we may not read cannot be told apart
 * from a store: it is listed with the stores as unreadable, with its owner
 * and mode, rather than left out (a user who may read none of seven
 * stores must not be told there are none). Everything else in /dev/shm
 * (other programs' segments, the .shmkv-new-* files of creations in
 * progress or abandoned) is only shown with --all.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shmctl.h"

struct row {
	char name[SHMKV_NAME_MAX + 1];
	struct stat st;
	bool store;	 /* magic matched */
	bool unreadable; /* we may not open it: maybe a store */
	int64_t keys;	 /* -1: unknown */
	uint64_t slots;	 /* 0: unknown */
	char status[96];
};

struct ls {
	bool all, json;
	struct ctl_json j;
	unsigned stores, others, unreadable;
};

static const char *owner(uid_t uid, char *buf, size_t cap)
{
	struct passwd *pw = getpwuid(uid);

	if (pw != NULL)
		snprintf(buf, cap, "%s", pw->pw_name);
	else
		snprintf(buf, cap, "%u", (unsigned)uid);
	return buf;
}

/* Fills @r for a file that may be a store. */
static void probe_store(struct row *r)
{
	struct shmkv_stats st;
	shmkv_t *kv;
	int err = shmkv_open(r->name, SHMKV_OPEN_READONLY, &kv);

	r->keys = -1;
	if (err == 0) {
		err = shmkv_stats(kv, &st);
		if (err == 0) {
			r->keys = (int64_t)st.live_keys;
			r->slots = st.slots;
		}
		shmkv_close(kv);
	}
	/* Only a file with our magic gets these two. */
	r->store = err == 0 || err == -EPROTONOSUPPORT || err == -EBADMSG;
	r->unreadable = err == -EACCES || err == -EPERM;
	snprintf(r->status, sizeof(r->status), "%s",
		 err == 0	  ? "ok"
		 : err == -EPROTO ? "not a shmkv store"
		 : r->unreadable  ? "unreadable (permission denied): maybe a "
				    "store"
				  : shmkv_strerror(err));
}

/* A creation's temporary file: whose is it, and is that process alive? */
static void probe_tmp(struct row *r, const char *file)
{
	unsigned pid = 0;

	r->keys = -1;
	pid = (unsigned)strtoul(file + strlen(SHMKV_NEW_PREFIX), NULL, 10);
	snprintf(r->status, sizeof(r->status),
		 pid != 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH
			 ? "creation abandoned by dead process %u"
			 : "creation in progress by process %u",
		 pid);
}

static void print_human(const struct row *r, bool header)
{
	char size[32], who[32], keys[24], slots[24];

	if (header)
		printf("%-24s %10s  %-10s %-5s %10s %10s  %s\n", "NAME", "SIZE",
		       "OWNER", "MODE", "KEYS", "SLOTS", "STATUS");
	snprintf(keys, sizeof(keys), "%" PRId64, r->keys);
	snprintf(slots, sizeof(slots), "%" PRIu64, r->slots);
	printf("%-24s %10s  %-10s %04o  %10s %10s  %s\n", r->name,
	       ctl_human_bytes((uint64_t)r->st.st_blocks * 512, size,
			       sizeof(size)),
	       owner(r->st.st_uid, who, sizeof(who)),
	       (unsigned)(r->st.st_mode & 07777), r->keys < 0 ? "-" : keys,
	       r->slots == 0 ? "-" : slots, r->status);
}

static void print_json(struct ls *ls, const struct row *r)
{
	char who[32], mode[8];

	snprintf(mode, sizeof(mode), "%04o", (unsigned)(r->st.st_mode & 07777));
	cj_obj(&ls->j, NULL);
	cj_cstr(&ls->j, "name", r->name);
	/* The memory it uses: the file is a reservation, mostly holes. */
	cj_u64(&ls->j, "size", (uint64_t)r->st.st_blocks * 512);
	cj_u64(&ls->j, "reserved", (uint64_t)r->st.st_size);
	cj_cstr(&ls->j, "owner", owner(r->st.st_uid, who, sizeof(who)));
	cj_u64(&ls->j, "uid", r->st.st_uid);
	cj_cstr(&ls->j, "mode", mode);
	if (r->keys < 0)
		cj_null(&ls->j, "keys");
	else
		cj_i64(&ls->j, "keys", r->keys);
	cj_u64(&ls->j, "slots", r->slots);
	cj_bool(&ls->j, "readable", !r->unreadable);
	cj_cstr(&ls->j, "status", r->status);
	cj_end(&ls->j, '}');
}

/* Builds the row for /dev/shm/@file. Return: true if it is to be shown
 * in the pass for stores (@stores) or for the others. */
static bool make_row(const char *file, bool stores, struct row *r)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];

	memset(r, 0, sizeof(*r));
	if (strlen(file) + 1 > SHMKV_NAME_MAX)
		return false;
	snprintf(r->name, sizeof(r->name), "/%s", file);
	snprintf(path, sizeof(path), SHMKV_SHM_DIR "%s", r->name);
	if (lstat(path, &r->st) != 0 || !S_ISREG(r->st.st_mode))
		return false;
	if (strncmp(file, SHMKV_NEW_PREFIX, strlen(SHMKV_NEW_PREFIX)) == 0) {
		probe_tmp(r, file);
		return !stores;
	}
	probe_store(r);
	return (r->store || r->unreadable) == stores;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The file names in /dev/shm into *@out (sorted, freed by the caller).
 * Return: 0 or a negative errno. */
static int list_dir(char ***out, size_t *n)
{
	DIR *d = opendir(SHMKV_SHM_DIR);
	struct dirent *e;
	char **names = NULL, **grown;
	size_t cap = 0;

	*n = 0;
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' &&
		    strncmp(e->d_name, SHMKV_NEW_PREFIX,
			    strlen(SHMKV_NEW_PREFIX)) != 0)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			grown = realloc(names, cap * sizeof(*names));
			if (grown == NULL)
				break;
			names = grown;
		}
		names[*n] = strdup(e->d_name);
		if (names[*n] != NULL)
			(*n)++;
	}
	closedir(d);
	if (*n > 0)
		qsort(names, *n, sizeof(*names), by_name);
	*out = names;
	return 0;
}

static void list_pass(struct ls *ls, char **names, size_t n, bool stores)
{
	struct row r;

	for (size_t i = 0; i < n; i++) {
		if (!make_row(names[i], stores, &r))
			continue;
		if (ls->json)
			print_json(ls, &r);
		else
			print_human(&r,
				    stores ? ls->stores == 0 : ls->others == 0);
		if (stores)
			ls->stores++;
		else
			ls->others++;
		ls->unreadable += r.unreadable;
	}
}

static int ls_output(struct ls *ls)
{
	char **names = NULL;
	size_t n;
	int err = list_dir(&names, &n);

	if (err) {
		ctl_err(SHMKV_SHM_DIR, "%s", strerror(-err));
		return CTL_STORE;
	}
	if (ls->json) {
		cj_open(&ls->j, stdout);
		cj_arr(&ls->j, "stores");
	}
	list_pass(ls, names, n, true);
	if (ls->json) {
		cj_end(&ls->j, ']');
		cj_arr(&ls->j, "others");
	} else if (ls->all && ls->stores > 0) {
		putchar('\n');
	}
	if (ls->all)
		list_pass(ls, names, n, false);
	if (ls->json) {
		cj_end(&ls->j, ']');
		cj_close(&ls->j);
	} else if (ls->stores == 0 && ls->others == 0) {
		printf("no shmkv stores in " SHMKV_SHM_DIR "\n");
	} else if (ls->unreadable > 0) {
		printf("%u file%s you may not read: run as %s owner (or root) "
		       "to see %s\n",
		       ls->unreadable, ls->unreadable == 1 ? "" : "s",
		       ls->unreadable == 1 ? "its" : "their",
		       ls->unreadable == 1 ? "it" : "them");
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return CTL_OK;
}

static int run_ls(const struct ctl_cmd *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "all", no_argument, NULL, 'a' },
		CTL_OPT_JSON,
		CTL_OPT_HELP,
		{ NULL, 0, NULL, 0 },
	};
	struct ls ls = { 0 };
	int c;

	while ((c = ctl_getopt(cmd, argc, argv, "ahj", opts)) != -1) {
		if (c >= CTL_GETOPT_EXIT)
			return c - CTL_GETOPT_EXIT;
		if (c == 'a')
			ls.all = true;
		else if (c == 'j')
			ls.json = true;
	}
	c = ctl_operands(cmd, argc - optind, 0, 0);
	if (c != CTL_OK)
		return c;
	return ls_output(&ls);
}

const struct ctl_cmd ctl_cmd_ls = {
	.name = "ls",
	.synopsis = "[--all] [--json]",
	.summary = "list the shmkv stores in " SHMKV_SHM_DIR
		   " with size, owner, mode and keys",
	.help = "A file is listed when it carries the shmkv magic; a store\n"
		"that cannot be opened is listed with the reason as STATUS.\n"
		"A file you may not read may be a store: it is listed too, as\n"
		"unreadable, with its owner and mode (run as its owner or\n"
		"root to see its keys).\n\n"
		"Options:\n"
		"  -a, --all    also list the other files: foreign segments\n"
		"               and the " SHMKV_NEW_PREFIX "* files of "
		"creations\n"
		"               in progress or abandoned\n"
		"  -j, --json   one JSON object: {\"stores\":[...],\"others\":"
		"[...]},\n"
		"               each {name,size,owner,uid,mode,keys,slots,"
		"readable,\n               status}\n",
	.run = run_ls,
};
