/*
 * backend.c - the backends a store name can route to (see backend.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "backend.h"

/* The registered backends, NULL-terminated. */
static const struct shmkv_backend *const backends[] = {
	&shmkv__backend_redis,
	&shmkv__backend_redis_unix,
	&shmkv__backend_redis_cluster,
	NULL,
};

static bool scheme_char(char c, bool first)
{
	bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');

	if (first)
		return alpha;
	return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
	       c == '.';
}

/* Length of @name's scheme if it is a URI ("scheme://", RFC 3986's
 * scheme syntax), else 0. */
static size_t scheme_len(const char *name)
{
	size_t n = 0;

	while (name[n] != '\0' && scheme_char(name[n], n == 0))
		n++;
	return n > 0 && strncmp(name + n, "://", 3) == 0 ? n : 0;
}

int shmkv__backend_route(const char *name, const struct shmkv_backend **be)
{
	size_t n = name != NULL ? scheme_len(name) : 0;

	*be = NULL;
	if (n == 0)
		return 0;
	/* Schemes are case-insensitive (RFC 3986, 3.1). */
	for (size_t i = 0; backends[i] != NULL; i++)
		if (strlen(backends[i]->scheme) == n &&
		    strncasecmp(backends[i]->scheme, name, n) == 0) {
			*be = backends[i];
			return 0;
		}
	return -EAFNOSUPPORT;
}
