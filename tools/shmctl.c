/*
 * shmctl.c - inspect and administer shmkv stores: the entry point.
 *
 *   shmctl [--raw] COMMAND [ARGS]...       a tool command (ls, info, ...)
 *   shmctl [--raw] NAME [CMD [ARGS]...]    a Redis command on store NAME,
 *                                          or the prompt when CMD is absent
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

#include "shmctl.h"

static const struct ctl_cmd *const commands[] = {
	&ctl_cmd_ls,	&ctl_cmd_create,  &ctl_cmd_destroy, &ctl_cmd_info,
	&ctl_cmd_keys,	&ctl_cmd_scan,	  &ctl_cmd_dump,    &ctl_cmd_restore,
	&ctl_cmd_check, &ctl_cmd_recover, &ctl_cmd_sweep,   &ctl_cmd_maintain,
	&ctl_cmd_watch, &ctl_cmd_locks,	  &ctl_cmd_config,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fputs("Usage: shmctl [--raw] COMMAND [ARGS]...\n"
	      "       shmctl [--raw] NAME [REDIS-COMMAND [ARGS]...]\n"
	      "Inspect and administer shmkv stores (POSIX shared memory "
	      "in " SHMKV_SHM_DIR ").\n\nCommands:\n",
	      f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i]->name,
			commands[i]->summary);
	fputs("  help     help on a command: shmctl help COMMAND\n\n"
	      "Data commands run on store NAME with redis-cli's replies:\n",
	      f);
	ctl_print_data_commands(f);
	fputs("  e.g. shmctl orders set k v NX PX 500.\n"
	      "  shmctl NAME alone opens an interactive prompt.\n\n"
	      "NAME is a store name with or without its slash (orders or\n"
	      "/orders); a store named like a command needs the slash.\n\n"
	      "Options:\n"
	      "      --raw      print data replies as raw bytes, one per line\n"
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

static const struct ctl_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static int help_command(int argc, char **argv)
{
	const struct shmkv_command *data;
	const struct ctl_cmd *cmd;

	if (argc < 2) {
		usage(stdout);
		return CTL_OK;
	}
	cmd = find_command(argv[1]);
	if (cmd != NULL)
		return ctl_help(cmd);
	data = shmkv_command_find(argv[1], strlen(argv[1]));
	if (data == NULL)
		return ctl_usage(NULL, "no such command: '%s'", argv[1]);
	printf("Usage: shmctl NAME ");
	ctl_print_syntax(stdout, data);
	return CTL_OK;
}

/* Runs @cmd on its own argument vector: getopt restarts from it. */
static int run_command(const struct ctl_cmd *cmd, int argc, char **argv)
{
	char prog[64];

	/* getopt_long names argv[0] in its messages. */
	snprintf(prog, sizeof(prog), "shmctl %s", cmd->name);
	argv[0] = prog;
	optind = 0; /* GNU: re-initialise for the new vector */
	return cmd->run(cmd, argc, argv);
}

static int parse_global(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "raw", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	/* '+': stop at the first operand; the rest is the command's. */
	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			ctl_opt.raw = true;
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

/* The tool command that @word names at a store's prompt, or NULL. */
static const struct ctl_cmd *prompt_command(const char *word)
{
	if (strcasecmp(word, "config") == 0)
		return &ctl_cmd_config;
	if (strcasecmp(word, "maintain") == 0)
		return &ctl_cmd_maintain;
	return NULL;
}

static int dispatch(int argc, char **argv)
{
	const struct ctl_cmd *cmd;

	if (strcmp(argv[0], "help") == 0)
		return help_command(argc, argv);
	cmd = find_command(argv[0]);
	if (cmd != NULL)
		return run_command(cmd, argc, argv);
	/* The tool commands a store's prompt also takes, in the data form:
	 * "shmctl NAME config get ..." (Redis's CONFIG) is "shmctl config
	 * NAME get ...", and "shmctl NAME maintain" "shmctl maintain NAME". */
	cmd = argc >= 2 ? prompt_command(argv[1]) : NULL;
	if (cmd != NULL) {
		char *name = argv[0];

		argv[0] = argv[1];
		argv[1] = name;
		return run_command(cmd, argc, argv);
	}
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
