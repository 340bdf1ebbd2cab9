/*
 * shmctl_users.c - which processes have a store mapped: what destroy says
 * before it removes one, and info shows.
 *
 * Read from each process's /proc/PID/maps, matched by the segment's device
 * and inode (not its name: a mapping of a removed store shows "(deleted)",
 * and another store may have the name since). Nothing in the segment
 * keeps a list of users: a list would have to be repaired after every
 * kill -9, and /proc is never stale. Only the processes of our pid
 * namespace are seen, and only those whose maps we may read (our own
 * user's, or all as root); the others are counted apart.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "shmctl.h"

/* The device and inode of one line of a maps file, "start-end perms
 * offset major:minor inode path". Return: false if it is not such a line. */
static bool maps_line_file(const char *line, dev_t *dev, uint64_t *ino)
{
	unsigned long maj, min;
	unsigned long long inode;
	const char *p = line;
	char *end;

	for (int field = 0; field < 3; field++) { /* to the device */
		p = strchr(p, ' ');
		if (p == NULL)
			return false;
		p++;
	}
	maj = strtoul(p, &end, 16);
	if (end == p || *end != ':')
		return false;
	p = end + 1;
	min = strtoul(p, &end, 16);
	if (end == p || *end != ' ')
		return false;
	p = end + 1;
	inode = strtoull(p, &end, 10);
	if (end == p)
		return false;
	*dev = makedev(maj, min);
	*ino = inode;
	return true;
}

/* Does some line of @f map the file (@dev, @ino)? */
static bool maps_file(FILE *f, dev_t dev, ino_t ino)
{
	char line[512];
	bool at_start = true;

	/* A line longer than the buffer is read in pieces: only the first
	 * has the fields (the rest is a path, which may hold anything). */
	while (fgets(line, sizeof(line), f) != NULL) {
		bool starts = at_start;
		dev_t d;
		uint64_t i;

		at_start = strchr(line, '\n') != NULL;
		if (starts && maps_line_file(line, &d, &i) &&
		    i == (uint64_t)ino && d == dev)
			return true;
	}
	return false;
}

int ctl_store_users(const char *name, struct ctl_users *u)
{
	char path[sizeof(SHMKV_SHM_DIR) + SHMKV_NAME_MAX + 1];
	pid_t self = getpid();
	struct dirent *e;
	struct stat st;
	DIR *d;

	memset(u, 0, sizeof(*u));
	snprintf(path, sizeof(path), "%s%s", SHMKV_SHM_DIR, name);
	if (stat(path, &st) != 0)
		return -errno;
	d = opendir("/proc");
	if (d == NULL)
		return -errno;
	while ((e = readdir(d)) != NULL) {
		char maps[64];
		FILE *f;
		long pid;
		char *end;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid == self)
			continue;
		snprintf(maps, sizeof(maps), "/proc/%ld/maps", pid);
		f = fopen(maps, "re");
		if (f == NULL) {
			/* Gone meanwhile (ENOENT, ESRCH), or not ours to
			 * read. */
			u->unknown += errno == EACCES || errno == EPERM;
			continue;
		}
		u->count += maps_file(f, st.st_dev, st.st_ino);
		fclose(f);
	}
	closedir(d);
	return 0;
}

void ctl_users_phrase(const struct ctl_users *u, char *buf, size_t cap)
{
	if (u->unknown > 0)
		snprintf(buf, cap,
			 "open in %u process%s, and %u whose maps we may not "
			 "read",
			 u->count, u->count == 1 ? "" : "es", u->unknown);
	else
		snprintf(buf, cap, "open in %u process%s", u->count,
			 u->count == 1 ? "" : "es");
}
