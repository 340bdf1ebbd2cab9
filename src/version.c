/*
 * version.c - the library's own version, answered at run time: these
 * macros are expanded when the library is built, so a program built
 * against another header learns what it really runs on.
 */
#include <stddef.h>

#include "shmkv.h"

const char *shmkv_version(int *major, int *minor, int *patch)
{
	if (major != NULL)
		*major = SHMKV_VERSION_MAJOR;
	if (minor != NULL)
		*minor = SHMKV_VERSION_MINOR;
	if (patch != NULL)
		*patch = SHMKV_VERSION_PATCH;
	return SHMKV_VERSION_STRING;
}
