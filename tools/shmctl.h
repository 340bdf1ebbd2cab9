/*
 * shmctl.h - the pieces of shmctl shared between its files.
 *
 * Calls point one way (checked with nm on the objects; no file calls up):
 *   shmctl.c (entry: global options, dispatch, usage) calls
 *   cmds (the table of commands, the per-store verbs, the default store,
 *     suggestions), which runs the command files through their struct
 *     ctl_cmd: ls admin info keys dump restore maint (check, recover,
 *     sweep, maintain, locks) watch config, and
 *   data (Redis commands on NAME, which runs the prompt, repl; both reach
 *     the verbs through cmds), calling
 *   the utilities: reply (one command through shmkv_exec), dumpfmt, stats,
 *     args, json, users (who has a store open), util (names, opening,
 *     numbers, escaping, eviction policies' names), and under them
 *     all cli (messages, usage, getopt, exit codes): reply and dumpfmt use
 *     util and args, util uses cli, and cli only the library.
 */
#ifndef SHMCTL_H
#define SHMCTL_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "shmkv.h"
#include "shmkv_exec.h"

/* The size classes of @st to show: its count, bounded by its cls[] array
 * (the count comes from the segment, which is not trusted). */
static inline uint32_t ctl_classes(const struct shmkv_stats *st)
{
	return st->classes < SHMKV_STATS_CLASSES ? st->classes
						 : SHMKV_STATS_CLASSES;
}

/*
 * Exit codes, documented in --help and shmctl.1. Keep them stable: scripts
 * depend on them.
 */
enum ctl_exit {
	CTL_OK = 0,    /* done */
	CTL_NIL = 1,   /* nil reply, 0 from a yes/no command, TTL -2,
			   declined confirmation */
	CTL_USAGE = 2, /* bad command line; nothing was done */
	CTL_STORE = 3, /* store missing, unreadable, not a store, full, I/O */
	CTL_CHECK = 4, /* check found problems */
	CTL_REPLY = 5, /* the command was refused with an error reply */
	CTL_INPUT = 6, /* malformed restore file */
};

/* One command of the tool: "shmctl NAME ARGS". */
struct ctl_cmd {
	const char *name;
	const char *synopsis; /* what follows the name */
	const char *summary;  /* one line for the command list */
	const char *help;     /* options and details for NAME --help */
	int (*run)(const struct ctl_cmd *cmd, int argc, char **argv);
};

/* Global options, set before the command runs. */
struct ctl_options {
	/* Data replies (and keys, scan, dbsize) as raw bytes: by default
	 * when stdout is not a terminal, as redis-cli; --raw, --no-raw. */
	bool raw;
};
extern struct ctl_options ctl_opt;

/* The commands, each defined in its group's file. */
extern const struct ctl_cmd ctl_cmd_ls, ctl_cmd_create, ctl_cmd_destroy,
	ctl_cmd_info, ctl_cmd_keys, ctl_cmd_scan, ctl_cmd_dbsize, ctl_cmd_dump,
	ctl_cmd_restore, ctl_cmd_check, ctl_cmd_recover, ctl_cmd_sweep,
	ctl_cmd_watch, ctl_cmd_locks, ctl_cmd_config, ctl_cmd_maintain;

/*
 * shmctl_cmds.c: the table of commands, the per-store verbs, the default
 * store and suggestions.
 */

/* The @i-th tool command in the order --help lists them, or NULL. */
const struct ctl_cmd *ctl_command_at(size_t i);
/* The tool command named exactly @name, or NULL. */
const struct ctl_cmd *ctl_command_find(const char *name);
/* The @i-th per-store verb (a tool command that also runs as "shmctl NAME
 * VERB ARGS" and at NAME's prompt), or NULL. */
const struct ctl_cmd *ctl_verb_at(size_t i);
/* The per-store verb @word names (any case), or NULL. */
const struct ctl_cmd *ctl_verb_find(const char *word);
/* Runs @cmd on its own argument vector (argv[0] is replaced: getopt
 * restarts from it). Return: the command's CTL_* code. */
int ctl_run_command(const struct ctl_cmd *cmd, int argc, char **argv);
/* Runs @verb on @store: @argv is VERB ARGS..., run as "shmctl VERB STORE
 * ARGS...". Return: a CTL_* code. */
int ctl_run_verb(const struct ctl_cmd *verb, const char *store, int argc,
		 char **argv);
/* The store a data command without a store name goes to: $SHMKV_STORE
 * if set and not empty, else SHMKV_DEFAULT_NAME. */
const char *ctl_default_store(void);
/* Where ctl_suggest() looks. */
enum ctl_suggest_in {
	CTL_SUGGEST_TOOL = 1 << 0,  /* the tool commands (ls, info...) */
	CTL_SUGGEST_VERBS = 1 << 1, /* the per-store verbs */
	CTL_SUGGEST_DATA = 1 << 2,  /* the data commands (get, set...) */
};
/* The names closest to @word by edit distance (any case; a typo or two,
 * none for a word of one or two letters), as "'info'" or "'get' or
 * 'set'", into @buf. Return: false (and @buf "") when none is close. */
bool ctl_suggest(const char *word, unsigned what, char *buf, size_t cap);
#define CTL_SUGGEST_CAP 64
/* After the error reply to a command the library does not know (@cmd,
 * @len bytes), "shmctl: did you mean 'get'?" on stderr when one is close. */
void ctl_hint_unknown(const char *cmd, size_t len);

/*
 * shmctl_cli.c: messages and command-line plumbing.
 */

/* Is @name a URI ("scheme://..."), a store the library reaches over the
 * network, rather than a shared-memory store's name? */
bool ctl_is_uri(const char *name);
/* @name as it may be shown (shmkv_name_redact: a URI's password as
 * "***", never printed, in messages, prompts or JSON), into @buf, cut to
 * @cap. Return: @buf. */
const char *ctl_shown(const char *name, char *buf, size_t cap);
/* @store, the name of a store a command opened and now only shows, made
 * its shown form (a shared-memory name is its own). */
void ctl_shown_in_place(char store[SHMKV_NAME_MAX + 1]);
#define CTL_SHOWN_CAP (2 * SHMKV_NAME_MAX + 16)
/* "shmctl: @store: <message>\n" on stderr (no store part if NULL). */
void ctl_err(const char *store, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A usage error of @cmd: the message, a hint, and CTL_USAGE to return. */
int ctl_usage(const struct ctl_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints @cmd's help on stdout; returns CTL_OK. */
int ctl_help(const struct ctl_cmd *cmd);
/* The exit codes, as --help and every command's help end. */
void ctl_print_exit_codes(FILE *f);
/* The names of the data commands (the library's table), wrapped. */
void ctl_print_data_commands(FILE *f);

/* Options every command takes. */
#define CTL_OPT_HELP                                                           \
	{                                                                      \
		"help", no_argument, NULL, 'h'                                 \
	}
#define CTL_OPT_JSON                                                           \
	{                                                                      \
		"json", no_argument, NULL, 'j'                                 \
	}

/*
 * Runs getopt_long over @argv for @cmd. Returns the next option character,
 * -1 at the end, or a CTL_* exit code + 1000 when the caller should return
 * it (--help printed, or a usage error reported).
 */
#define CTL_GETOPT_EXIT 1000
/* Returned by option helpers when the command is to go on. */
#define CTL_CONTINUE (-1)
int ctl_getopt(const struct ctl_cmd *cmd, int argc, char **argv,
	       const char *shortopts, const struct option *longopts);
/* Checks the count of operands left after the options. */
int ctl_operands(const struct ctl_cmd *cmd, int argc, int min, int max);

/*
 * shmctl_util.c: store names, opening, numbers, escaping.
 */

/* "orders" or "/orders" into "/orders"; a URI ("redis://...": a store on
 * a Redis server) is kept as it is. Return: 0, or a negative errno. */
int ctl_store_name(const char *arg, char name[SHMKV_NAME_MAX + 1]);
/* shmctl_rinfo.c: "shmctl info URI": the Redis backend's view. */
int ctl_redis_info(const char *name, bool json);
/* Opens store @arg, reporting any failure on stderr. On success @name
 * holds the store's name as it may be shown (ctl_shown_in_place): what the
 * command prints, never opens again.
 * Return: CTL_OK, CTL_USAGE (bad name) or CTL_STORE. */
int ctl_open(const char *arg, unsigned flags, shmkv_t **kv,
	     char name[SHMKV_NAME_MAX + 1]);
/* Reports a library error about @name and returns CTL_STORE. */
int ctl_store_err(const char *name, const char *what, int err);

/* Unsigned decimal with nothing after it. Return: 0 or -EINVAL/-ERANGE. */
int ctl_parse_u64(const char *s, uint64_t *v);
/* A byte count with an optional k, m, g (x1024) suffix, or "b". */
int ctl_parse_size(const char *s, uint64_t *v);
/* "1.5 MiB" into @buf. */
const char *ctl_human_bytes(uint64_t n, char *buf, size_t cap);

/* Eviction policies by Redis's maxmemory-policy names ("allkeys-lru"). */
/* @policy's name, or "unknown" (never NULL). */
const char *ctl_policy_name(uint32_t policy);
/* Every policy's name, ", "-separated, into @buf (CTL_POLICY_LIST_CAP). */
#define CTL_POLICY_LIST_CAP 160
const char *ctl_policy_list(char *buf, size_t cap);

/* Writes @len bytes as a redis-cli quoted string: "a\x00\n". */
void ctl_repr(FILE *f, const void *buf, size_t len);

/* Colour escapes when stdout is a terminal (and NO_COLOR is unset). */
const char *ctl_color(const char *sgr);
#define CTL_RED	   "31"
#define CTL_YELLOW "33"
#define CTL_BOLD   "1"
#define CTL_RESET  "0"

/*
 * shmctl_users.c: the processes that have a store mapped (/proc/PID/maps).
 */
struct ctl_users {
	unsigned count;	  /* other processes that map it */
	unsigned unknown; /* processes whose maps we may not read */
};
/* Counts the users of store @name (a valid name, "/x"), this process
 * aside. Return: 0, or a negative errno (no such file, no /proc). */
int ctl_store_users(const char *name, struct ctl_users *u);
/* "open in 2 processes" (and how many could not be checked) into @buf. */
void ctl_users_phrase(const struct ctl_users *u, char *buf, size_t cap);

/*
 * shmctl_args.c: redis-cli's quoting ("a b", 'x', \x00) and globbing.
 */
struct ctl_args {
	int argc;
	char **argv; /* each NUL-terminated too, for printing */
	size_t *len; /* binary-safe lengths */
};
/* Splits @line (@n bytes) into @a. Return: 0, -EINVAL (unbalanced quotes
 * or a closing quote not followed by a space; *@at is the offset), or
 * -ENOMEM. */
int ctl_split(const char *line, size_t n, struct ctl_args *a, size_t *at);
void ctl_args_free(struct ctl_args *a);

/* Redis's glob (stringmatchlen): * ? [abc] [^a] [a-z] \x, binary-safe. */
bool ctl_glob(const char *pat, size_t plen, const void *str, size_t slen);

/*
 * shmctl_json.c: a small streaming writer with a stable layout.
 */
#define CTL_JSON_DEPTH 8
struct ctl_json {
	FILE *f;
	int depth;
	bool first[CTL_JSON_DEPTH];
};
void cj_open(struct ctl_json *j, FILE *f);	  /* begins the top object */
void cj_close(struct ctl_json *j);		  /* ends it, newline */
void cj_obj(struct ctl_json *j, const char *key); /* key NULL in arrays */
void cj_arr(struct ctl_json *j, const char *key);
void cj_end(struct ctl_json *j, char closer); /* '}' or ']' */
void cj_str(struct ctl_json *j, const char *key, const void *s, size_t len);
void cj_cstr(struct ctl_json *j, const char *key, const char *s);
void cj_u64(struct ctl_json *j, const char *key, uint64_t v);
void cj_i64(struct ctl_json *j, const char *key, int64_t v);
void cj_bool(struct ctl_json *j, const char *key, bool v);
void cj_num(struct ctl_json *j, const char *key, double v);
void cj_null(struct ctl_json *j, const char *key);

/*
 * shmctl_stats.c: what info and watch show.
 */
struct ctl_info {
	struct shmkv_config cfg;
	struct shmkv_stats st;
	bool huge_known;     /* ctl_info_huge() measured huge_bytes */
	uint64_t huge_bytes; /* of the segment, in huge pages */
	bool users_known;    /* info counted the processes in users */
	struct ctl_users users;
};
/* Return: 0 or a negative errno. */
int ctl_info_take(shmkv_t *kv, struct ctl_info *in);
/* For a store that asked for huge pages: how much of it the kernel gave
 * them to, measured in a mapping of @name pre-faulted for the purpose (one
 * page-table entry per 2 MiB when they were given). Return: 0 or a
 * negative errno. */
int ctl_info_huge(const char *name, struct ctl_info *in);
/* One line on the store's pages: "4 KiB pages", or what of the huge pages
 * it asked for the kernel gave (as ctl_info_huge() measured). */
void ctl_info_pages_line(const struct ctl_info *in, char *buf, size_t cap);
/* Share of slots holding a live key or an insert in progress. */
double ctl_info_load(const struct shmkv_stats *st);
/* While the table grows (st->growing_from != 0): the old slots moved,
 * at most growing_from, and that as a share (0 to 1; 0 when none runs). */
uint64_t ctl_info_moved(const struct shmkv_stats *st);
double ctl_info_progress(const struct shmkv_stats *st);
/* "2048 slots (1024 at creation, doubled 1 time)" into @buf. */
void ctl_info_table_line(const struct ctl_info *in, char *buf, size_t cap);
/* While the table grows: "from 1024 to 2048 slots: 300 of 1024 old slots
 * moved (29.3%)" into @buf. Return: false (and @buf untouched) when no
 * growth is under way. */
bool ctl_info_growth_line(const struct shmkv_stats *st, char *buf, size_t cap);
/* Value storage in use, in bytes of blocks. */
uint64_t ctl_info_used_bytes(const struct shmkv_stats *st);
/* The warnings for @in, one line each. Return: how many (<= max). */
#define CTL_WARN_LEN 160
#define CTL_WARN_MAX (SHMKV_STATS_CLASSES + 4)
int ctl_info_warnings(const struct ctl_info *in, char (*w)[CTL_WARN_LEN],
		      int max);
/* Free pages kept for the size classes that have none yet (one each). */
uint32_t ctl_info_pages_kept(const struct shmkv_stats *st);
/* Pages class @c may still take: free ones and those growth within
 * max_memory may add, less one kept for each other class without one. */
uint64_t ctl_info_class_pages_left(const struct shmkv_stats *st, uint32_t c);
/* Blocks class @c can still hand out: its free blocks and those of the
 * pages it may still take. */
uint64_t ctl_info_class_room(const struct shmkv_stats *st, uint32_t c);
/* The per-class table, each line between @indent and @eol. */
void ctl_info_classes(const struct shmkv_stats *st, const char *indent,
		      const char *eol);

/*
 * shmctl_reply.c: one Redis command through shmkv_exec, its reply printed.
 */
/* Runs one command and prints its reply. Return: a CTL_* code. */
int ctl_exec(shmkv_t *kv, const char *name, int argc, const char *const *argv,
	     const size_t *len);
/* Is @cmd a known command without SHMKV_CMD_WRITE (one that may run on a
 * read-only handle)? */
bool ctl_cmd_is_read_only(const char *cmd, size_t len);
/* @c's syntax line, and whether it writes. */
void ctl_print_syntax(FILE *f, const struct shmkv_command *c);

/*
 * shmctl_data.c: "shmctl NAME CMD ARGS..." (argv[0] is the store) or, with
 * no command, the interactive prompt of shmctl_repl.c.
 */
int ctl_data_main(int argc, char **argv);
/* "shmctl CMD ARGS..." without a store name: @argv[0] (a data command)
 * on the default store, ctl_default_store(). */
int ctl_data_default(int argc, char **argv);
/* shmctl_config.c: "config get|set ..." typed at a store's prompt (or
 * "shmctl NAME config ..."): @argv[0] is "config". Return: a CTL_* code. */
int ctl_config_prompt(shmkv_t *kv, const char *name, int argc, char **argv);
/* shmctl_maint.c: "maintain" typed at a store's prompt (or "shmctl NAME
 * maintain"): @argv[0] is "maintain". Return: a CTL_* code. */
int ctl_maintain_prompt(shmkv_t *kv, const char *name, int argc, char **argv);
int ctl_repl(shmkv_t *kv, const char *name);

#endif /* SHMCTL_H */
