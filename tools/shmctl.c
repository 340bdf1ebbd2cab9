/*
 * shmctl.c - inspect and administer shmkv stores: the entry point.
 *
 *   shmctl [--raw|--no-raw] COMMAND [ARGS]...   a tool command (ls, ...)
 *   shmctl [--raw|--no-raw] NAME [CMD [ARGS]...] a Redis command on store
 *                                          NAME, or the prompt without CMD
 *   shmctl [--raw|--no-raw] NAME VERB [ARGS]... a tool command on NAME
 *   shmctl [--raw|--no-raw] CMD [ARGS]...  on the default store
 *
 * The global options are parsed up to the first operand; each command then
 * parses its own with getopt_long (ctl_getopt), so every command has its
 * own --help. Exit codes are the enum ctl_exit in shmctl.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shmctl.h"

static void usage(FILE *f)
{
	fputs("Usage: shmctl [--raw|--no-raw] COMMAND [ARGS]...\n"
	      "       shmctl [--raw|--no-raw] NAME [REDIS-COMMAND [ARGS]...]\n"
	      "       shmctl [--raw|--no-raw] NAME VERB [ARGS]...\n"
	      "       shmctl [--raw|--no-raw] REDIS-COMMAND [ARGS]...\n"
	      "Inspect and administer shmkv stores (POSIX shared memory "
	      "in " SHMKV_SHM_DIR ").\n\nCommands:\n",
	      f);
	for (size_t i = 0; ctl_command_at(i) != NULL; i++)
		fprintf(f, "  %-8s %s\n", ctl_command_at(i)->name,
			ctl_command_at(i)->summary);
	fputs("  help     help on a command: shmctl help COMMAND\n\n"
	      "Data commands run on store NAME with redis-cli's replies:\n",
	      f);
	ctl_print_data_commands(f);
	fputs("  e.g. shmctl orders set k v NX PX 500.\n"
	      "  shmctl NAME alone opens an interactive prompt.\n"
	      "  Without NAME they run on the default store, $SHMKV_STORE or\n"
	      "  " SHMKV_DEFAULT_NAME " (shmctl get k, as redis-cli).\n\n"
	      "VERB: the commands that also run with the store's name "
	      "first\n(shmctl orders keys 'user:*' is shmctl keys orders "
	      "'user:*'):\n  ",
	      f);
	for (size_t i = 0, col = 2; ctl_verb_at(i) != NULL; i++) {
		if (col + strlen(ctl_verb_at(i)->name) > 66) {
			fputs(",\n  ", f);
			col = 2;
		} else if (i > 0) {
			col += (size_t)fprintf(f, ", ");
		}
		col += (size_t)fprintf(f, "%s", ctl_verb_at(i)->name);
	}
	fputs(".\n\n"
	      "NAME is a store name with or without its slash (orders or\n"
	      "/orders); a store named like a command needs the slash.\n\n"
	      "Options:\n"
	      "      --raw      data replies as raw bytes, one per line (the\n"
	      "                 default when stdout is not a terminal)\n"
	      "      --no-raw   data replies quoted as redis-cli on a "
	      "terminal\n"
	      "                 (the default on one, or with FAKETTY set)\n"
	      "  -h, --help     show this help\n"
	      "  -V, --version  show the version\n\n",
	      f);
	ctl_print_exit_codes(f);
	fputs("\nSee shmctl(1).\n", f);
}

static int version(void)
{
#ifdef SHMCTL_WITH_LIBEDIT
	const char *editing = "libedit";
#else
	const char *editing = "none (built without libedit)";
#endif
	printf("shmctl %s (shmkv %s)\nline editing: %s\n", SHMKV_VERSION_STRING,
	       SHMKV_VERSION_STRING, editing);
	return CTL_OK;
}

static int help_command(int argc, char **argv)
{
	const struct shmkv_command *data;
	const struct ctl_cmd *cmd;

	if (argc < 2) {
		usage(stdout);
		return CTL_OK;
	}
	cmd = ctl_command_find(argv[1]);
	if (cmd == NULL)
		cmd = ctl_verb_find(argv[1]);
	if (cmd != NULL)
		return ctl_help(cmd);
	data = shmkv_command_find(argv[1], strlen(argv[1]));
	if (data == NULL) {
		char near[CTL_SUGGEST_CAP], shown[CTL_SHOWN_CAP];
		const char *what = ctl_shown(argv[1], shown, sizeof(shown));

		if (ctl_suggest(argv[1], CTL_SUGGEST_TOOL | CTL_SUGGEST_DATA,
				near, sizeof(near)))
			return ctl_usage(NULL,
					 "no such command: '%s'; did you "
					 "mean %s?",
					 what, near);
		return ctl_usage(NULL, "no such command: '%s'", what);
	}
	printf("Usage: shmctl NAME ");
	ctl_print_syntax(stdout, data);
	return CTL_OK;
}

/*
 * redis-cli's rule for data replies: raw bytes when stdout is not a
 * terminal (a pipe, a file: what a script reads), the quoted form on one;
 * FAKETTY in the environment counts as a terminal (redis-cli's name, for
 * tests). --raw and --no-raw override it, the last one given winning.
 */
static bool raw_by_default(void)
{
	return !isatty(STDOUT_FILENO) && getenv("FAKETTY") == NULL;
}

static int parse_global(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, 'r' },
		{ "no-raw", no_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	ctl_opt.raw = raw_by_default();
	/* '+': stop at the first operand; the rest is the command's. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			ctl_opt.raw = true;
			break;
		case 'R':
			ctl_opt.raw = false;
			break;
		case 'h':
			usage(stdout);
			return CTL_GETOPT_EXIT + CTL_OK;
		case 'V':
			return CTL_GETOPT_EXIT + version();
		default:
			fputs("Try 'shmctl --help' for more information.\n",
			      stderr);
			return CTL_GETOPT_EXIT + CTL_USAGE;
		}
	}
	return -1;
}

/*
 * Output that did not reach its file is a failure, not a success: a dump
 * or a key listing redirected to a full disk must not exit 0. Checked once
 * for every command, after it ran (stdio reports a write error only then).
 */
static int finish(int rc)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	fprintf(stderr, "shmctl: writing output: %s\n", strerror(errno));
	return rc == CTL_OK || rc == 1 ? CTL_STORE : rc;
}

/*
 * The first word is a tool command ("shmctl info orders"), else a data
 * command for the default store ("shmctl get k", as redis-cli's), else a
 * store name: its verb ("shmctl orders info") or data command ("shmctl
 * orders get k"), or its prompt. A store named like a command is reached
 * with its slash ("shmctl /get get k"): a word with a slash is never a
 * command.
 */
static int dispatch(int argc, char **argv)
{
	const struct ctl_cmd *cmd;

	if (strcmp(argv[0], "help") == 0)
		return help_command(argc, argv);
	cmd = ctl_command_find(argv[0]);
	if (cmd != NULL)
		return ctl_run_command(cmd, argc, argv);
	if (shmkv_command_find(argv[0], strlen(argv[0])) != NULL)
		return ctl_data_default(argc, argv);
	cmd = argc >= 2 ? ctl_verb_find(argv[1]) : NULL;
	if (cmd != NULL)
		return ctl_run_verb(cmd, argv[0], argc - 1, argv + 1);
	return ctl_data_main(argc, argv);
}

int main(int argc, char **argv)
{
	int rc = parse_global(argc, argv);

	if (rc >= CTL_GETOPT_EXIT)
		return rc - CTL_GETOPT_EXIT;
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		usage(stderr);
		return CTL_USAGE;
	}
	return finish(dispatch(argc, argv));
}
