/*
 * shmctl_util.c - store names, opening a store with a clear error, number
 * parsing, byte formatting and redis-cli's escaping.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmctl.h"

int ctl_store_name(const char *arg, char name[SHMKV_NAME_MAX + 1])
{
	const char *base = arg[0] == '/' ? arg + 1 : arg;
	size_t len = strlen(base);

	/* A URI goes to the library as it is (its backend parses it). */
	if (ctl_is_uri(arg)) {
		if (strlen(arg) > SHMKV_NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, arg, strlen(arg) + 1);
		return 0;
	}

	if (len == 0 || strchr(base, '/') != NULL || strcmp(base, ".") == 0 ||
	    strcmp(base, "..") == 0)
		return -EINVAL;
	if (len + 1 > SHMKV_NAME_MAX)
		return -ENAMETOOLONG;
	name[0] = '/';
	memcpy(name + 1, base, len + 1);
	return 0;
}

int ctl_store_err(const char *name, const char *what, int err)
{
	if (what != NULL)
		ctl_err(name, "%s: %s", what, shmkv_strerror(err));
	else
		ctl_err(name, "%s", shmkv_strerror(err));
	return CTL_STORE;
}

/* Reports a bad store name and returns CTL_USAGE. */
static int bad_name(const char *arg, int err)
{
	char shown[CTL_SHOWN_CAP];

	arg = ctl_shown(arg, shown, sizeof(shown));
	if (err == -ENAMETOOLONG)
		ctl_err(NULL,
			"store name too long (at most %d bytes): '%.40s...'",
			SHMKV_NAME_MAX - 1, arg);
	else
		ctl_err(NULL,
			"invalid store name '%s': one file name "
			"in " SHMKV_SHM_DIR ", e.g. orders or /orders",
			arg);
	return CTL_USAGE;
}

int ctl_open(const char *arg, unsigned flags, shmkv_t **kv,
	     char name[SHMKV_NAME_MAX + 1])
{
	int err = ctl_store_name(arg, name);

	if (err)
		return bad_name(arg, err);
	err = shmkv_open(name, flags, kv);
	if (err)
		return ctl_store_err(name, NULL, err);
	ctl_shown_in_place(name);
	return CTL_OK;
}

int ctl_parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long n;

	/* strtoull accepts a sign and blanks: refuse them. */
	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*v = n;
	return 0;
}

int ctl_parse_size(const char *s, uint64_t *v)
{
	static const char units[] = "bkmgt";
	char digits[32];
	size_t len = strlen(s);
	const char *u;
	uint64_t n;
	int err;

	if (len == 0 || len >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, s, len + 1);
	u = strchr(units, digits[len - 1] | 0x20);
	if (u != NULL && len > 1)
		digits[len - 1] = '\0';
	else
		u = units;
	err = ctl_parse_u64(digits, &n);
	if (err)
		return err;
	for (; u > units; u--) {
		if (n > UINT64_MAX / 1024)
			return -ERANGE;
		n *= 1024;
	}
	*v = n;
	return 0;
}

const char *ctl_human_bytes(uint64_t n, char *buf, size_t cap)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double x = (double)n;
	size_t u = 0;

	while (x >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		x /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, cap, "%" PRIu64 " B", n);
	else
		snprintf(buf, cap, "%.1f %s", x, units[u]);
	return buf;
}

const char *ctl_policy_name(uint32_t policy)
{
	const char *s = shmkv_evict_policy_name((int)policy);

	/* The library reads a policy it does not know as noeviction; a name
	 * is still never NULL here, whatever a newer library reports. */
	return s != NULL ? s : "unknown";
}

const char *ctl_policy_list(char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int p = 0; shmkv_evict_policy_name(p) != NULL && n < cap; p++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", p ? ", " : "",
				      shmkv_evict_policy_name(p));
	return buf;
}

/* As Redis's sdscatrepr, with "printable" meaning ASCII 0x20-0x7e
 * whatever the locale, so the output is the same everywhere. */
void ctl_repr(FILE *f, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		switch (p[i]) {
		case '\\':
		case '"':
			fputc('\\', f);
			fputc(p[i], f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\a':
			fputs("\\a", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		default:
			if (p[i] >= 0x20 && p[i] < 0x7f)
				fputc(p[i], f);
			else
				fprintf(f, "\\x%02x", p[i]);
		}
	}
	fputc('"', f);
}

static bool color_enabled(void)
{
	static int enabled = -1;
	const char *term = getenv("TERM");

	if (enabled < 0)
		enabled = isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL &&
			  term != NULL && strcmp(term, "dumb") != 0;
	return enabled;
}

const char *ctl_color(const char *sgr)
{
	/* A few calls per printf: a small ring of buffers suffices. */
	static char ring[4][16];
	static unsigned next;
	char *buf;

	if (!color_enabled())
		return "";
	buf = ring[next++ % 4];
	snprintf(buf, sizeof(ring[0]), "\033[%sm", sgr);
	return buf;
}
