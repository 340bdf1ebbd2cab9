/*
 * shmctl_cli.c - the command-line plumbing every shmctl command uses:
 * messages on stderr, usage errors, --help, getopt, operand counts, the
 * exit codes' text and the global options. A utility: it calls no command.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "shmctl.h"

struct ctl_options ctl_opt;

/*
 * Prints the names of the library's commands that have all of @flags,
 * separated by @sep, wrapped before column 68 onto lines that start with
 * @indent; the first name goes at column @col.
 */
static void print_command_names(FILE *f, unsigned flags, const char *sep,
				int col, const char *indent)
{
	const struct shmkv_command *c;
	const char *before = "";

	for (size_t i = 0; (c = shmkv_command_at(i)) != NULL; i++) {
		if ((c->flags & flags) != flags)
			continue;
		if (col + strlen(before) + strlen(c->name) > 68) {
			fprintf(f, "%s\n%s", strchr(sep, ',') ? "," : "",
				indent);
			before = "";
			col = (int)strlen(indent);
		}
		col += fprintf(f, "%s%s", before, c->name);
		before = sep;
	}
}

void ctl_print_data_commands(FILE *f)
{
	fputs("  ", f);
	print_command_names(f, 0, " ", 2, "  ");
	fputs(".\n", f);
}

/* The yes/no commands are named from the library's command table. */
void ctl_print_exit_codes(FILE *f)
{
	fputs("Exit status:\n"
	      "  0  success\n"
	      "  1  nil reply; 0 from a yes/no command (",
	      f);
	print_command_names(f, SHMKV_CMD_YESNO, ", ", 44, "     ");
	fputs(");\n"
	      "     ttl/pttl of a missing key (-2); a declined confirmation\n"
	      "  2  usage error (nothing was done)\n"
	      "  3  store error: missing, permission denied, not a shmkv "
	      "store,\n"
	      "     corrupted, full, or an I/O error\n"
	      "  4  check found problems\n"
	      "  5  the command was refused with an error reply ((error) ...)\n"
	      "  6  malformed restore file\n",
	      f);
}

bool ctl_is_uri(const char *name)
{
	const char *p = strstr(name, "://");
	size_t n = p != NULL ? (size_t)(p - name) : 0;

	/* RFC 3986's scheme: a letter, then letters, digits, "+-.". */
	if (n == 0 || !((name[0] | 0x20) >= 'a' && (name[0] | 0x20) <= 'z'))
		return false;
	return strspn(name,
		      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789+-.") == n;
}

const char *ctl_shown(const char *name, char *buf, size_t cap)
{
	if (shmkv_name_redact(name, buf, cap) < 0 && cap > 0)
		snprintf(buf, cap, "***");
	return buf;
}

void ctl_shown_in_place(char store[SHMKV_NAME_MAX + 1])
{
	char given[SHMKV_NAME_MAX + 1];

	memcpy(given, store, sizeof(given));
	ctl_shown(given, store, SHMKV_NAME_MAX + 1); /* cut if need be */
}

void ctl_err(const char *store, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("shmctl: ", stderr);
	if (store != NULL) { /* a URI's password never shows */
		char shown[CTL_SHOWN_CAP];

		fprintf(stderr, "%s: ", ctl_shown(store, shown, sizeof(shown)));
	}
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ctl_usage(const struct ctl_cmd *cmd, const char *fmt, ...)
{
	const char *name = cmd ? cmd->name : NULL;
	va_list ap;

	fprintf(stderr, "shmctl%s%s: ", name ? " " : "", name ? name : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry 'shmctl%s%s --help' for more information.\n",
		name ? " " : "", name ? name : "");
	return CTL_USAGE;
}

int ctl_help(const struct ctl_cmd *cmd)
{
	printf("Usage: shmctl %s %s\n%c%s.\n", cmd->name, cmd->synopsis,
	       toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
	if (cmd->help != NULL && cmd->help[0] != '\0')
		printf("\n%s", cmd->help);
	printf("  -h, --help   show this help\n\n");
	ctl_print_exit_codes(stdout);
	return CTL_OK;
}

int ctl_getopt(const struct ctl_cmd *cmd, int argc, char **argv,
	       const char *shortopts, const struct option *longopts)
{
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	if (c == 'h')
		return CTL_GETOPT_EXIT + ctl_help(cmd);
	if (c == '?' || c == ':') {
		/* getopt_long has said what was wrong. */
		fprintf(stderr,
			"Try 'shmctl %s --help' for more information.\n",
			cmd->name);
		return CTL_GETOPT_EXIT + CTL_USAGE;
	}
	return c;
}

int ctl_operands(const struct ctl_cmd *cmd, int argc, int min, int max)
{
	if (argc < min)
		return ctl_usage(cmd, "missing operand (usage: shmctl %s %s)",
				 cmd->name, cmd->synopsis);
	if (argc > max)
		return ctl_usage(cmd, "too many operands (usage: shmctl %s %s)",
				 cmd->name, cmd->synopsis);
	return CTL_OK;
}
