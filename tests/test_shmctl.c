/*
 * test_shmctl.c - shmctl driven as a real process: every command's exit
 * code, stdout and stderr, usage errors, missing, foreign and forbidden
 * stores, dump/restore of binary data, check on clean and damaged stores,
 * and the prompt and watch on a terminal (tmux).
 *
 * The binary is $SHMCTL_BIN or SHMKV_BUILD_DIR/shmctl. Each run gets its
 * stdin from a memfd and its stdout and stderr into memfds; the child only
 * execs (an alarm inherited across exec ends a hung run), and the parent
 * asserts.
 */
#include "helpers/testutil.h"

#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "shmkv_lock.h"

/* Not a time limit on behaviour: only a hung run's end. */
#define RUN_ALARM_S 60
#define NOBODY	    65534

struct run {
	int code; /* exit code, or 128 + signal */
	char *out, *err;
	size_t out_len, err_len;
};

static const char *shmctl_bin(void)
{
	const char *env = getenv("SHMCTL_BIN");

	return env ? env : SHMKV_BUILD_DIR "/shmctl";
}

static int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("shmctl-test", 0);

	cr_assert_geq(fd, 0, "memfd_create: %s", strerror(errno));
	if (len)
		cr_assert_eq(write(fd, data, len), (ssize_t)len);
	lseek(fd, 0, SEEK_SET);
	return fd;
}

static char *slurp_fd(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *p = malloc((size_t)n + 1);

	cr_assert_not_null(p);
	cr_assert_eq(pread(fd, p, (size_t)n, 0), (ssize_t)n);
	p[n] = '\0';
	*len = (size_t)n;
	close(fd);
	return p;
}

/* In the child: become @uid (root only), wire the fds, exec. */
static void child(char **argv, int in, int out, int err, uid_t uid)
{
	if (uid != (uid_t)-1 &&
	    (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0))
		_exit(126);
	dup2(in, 0), dup2(out, 1), dup2(err, 2);
	alarm(RUN_ALARM_S);
	execv(shmctl_bin(), argv);
	_exit(127);
}

static struct run run_v(const char *input, size_t inlen, uid_t uid, char **argv)
{
	int in = memfd_with(input, inlen), out = memfd_with(NULL, 0),
	    err = memfd_with(NULL, 0), st;
	struct run r;
	pid_t pid = fork();

	cr_assert_geq(pid, 0, "fork");
	if (pid == 0)
		child(argv, in, out, err, uid);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	close(in);
	r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	r.out = slurp_fd(out, &r.out_len);
	r.err = slurp_fd(err, &r.err_len);
	return r;
}

/* shmctl ARGS... (NULL-terminated) with @input on stdin, as @uid. */
static struct run run_in(const char *input, size_t inlen, uid_t uid, ...)
{
	char *argv[32] = { "shmctl" };
	va_list ap;
	int n = 1;

	va_start(ap, uid);
	while ((argv[n] = va_arg(ap, char *)) != NULL)
		cr_assert_lt(++n, 31, "too many arguments");
	va_end(ap);
	return run_v(input, inlen, uid, argv);
}

#define RUN(...)	 run_in(NULL, 0, (uid_t)-1, __VA_ARGS__, (char *)NULL)
#define RUN_AS(uid, ...) run_in(NULL, 0, (uid), __VA_ARGS__, (char *)NULL)
#define RUN_STDIN(s, ...)                                                      \
	run_in((s), strlen(s), (uid_t)-1, __VA_ARGS__, (char *)NULL)

#define assert_code(r, want)                                                   \
	cr_assert_eq((r).code, (want),                                         \
		     "exit %d, expected %d\n--- stdout:\n%s--- stderr:\n%s",   \
		     (r).code, (want), (r).out, (r).err)
#define assert_has(buf, s)                                                     \
	cr_assert(strstr((buf), (s)) != NULL, "expected \"%s\" in:\n%s", (s),  \
		  (buf))
#define assert_lacks(buf, s)                                                   \
	cr_assert(strstr((buf), (s)) == NULL, "unexpected \"%s\" in:\n%s",     \
		  (s), (buf))
#define assert_out(r, s)                                                       \
	cr_assert_str_eq((r).out, (s), "stdout:\n%s\nstderr:\n%s", (r).out,    \
			 (r).err)
/* Exit code, exact stdout, empty stderr. */
#define assert_reply(r, code, s)                                               \
	do {                                                                   \
		assert_code(r, code);                                          \
		assert_out(r, s);                                              \
		cr_assert_str_empty((r).err, "stderr: %s", (r).err);           \
	} while (0)

static bool is_root(void)
{
	return geteuid() == 0;
}

static bool shm_exists(const char *name)
{
	char path[TU_PATH_CAP];

	tu_shm_path(name, path);
	return access(path, F_OK) == 0;
}

/* A fresh store of the default test geometry: tu_kv/tu_name. */
static void setup(void)
{
	tu_setup();
}

/* Replaces the suite's store with one of geometry @cfg. */
static void recreate(const struct shmkv_config *cfg)
{
	shmkv_close(tu_kv);
	tu_kv = tu_create(cfg, tu_name);
}

static const char *user_name(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw ? pw->pw_name : "?";
}

/* Temporary files of the running test, removed when it ends (even when
 * an assertion fails). */
#define TEMP_MAX 8
static char temps[TEMP_MAX][64];
static unsigned ntemps;

static void temp_path(char *path, size_t cap)
{
	cr_assert_lt(ntemps, TEMP_MAX, "too many temporary files");
	snprintf(temps[ntemps], sizeof(temps[0]), "/tmp/shmctl-test-%d-%u",
		 (int)getpid(), ntemps);
	snprintf(path, cap, "%s", temps[ntemps++]);
}

static void teardown(void)
{
	while (ntemps > 0)
		unlink(temps[--ntemps]);
	tu_teardown();
}

static void set_kv(const char *k, size_t kl, const char *v, size_t vl,
		   int64_t px)
{
	tu_assert_rc(
		shmkv_set(tu_kv, k, kl, v, vl, px ? SHMKV_SET_PX : 0, px, NULL),
		1);
}

#define SET(k, v) set_kv((k), strlen(k), (v), strlen(v), 0)

TestSuite(shmctl_cli);
TestSuite(shmctl_admin, .fini = teardown);
TestSuite(shmctl_info, .init = setup, .fini = teardown);
TestSuite(shmctl_data, .init = setup, .fini = teardown);
TestSuite(shmctl_keys, .init = setup, .fini = teardown);
TestSuite(shmctl_dump, .init = setup, .fini = teardown);
TestSuite(shmctl_maint, .init = setup, .fini = teardown);
TestSuite(shmctl_tty, .init = setup, .fini = teardown);

static const char *const commands[] = {
	"ls",	   "create", "destroy", "info",	 "keys",  "scan",  "dump",
	"restore", "check",  "recover", "sweep", "watch", "locks",
};
#define NCMDS (sizeof(commands) / sizeof(commands[0]))

/*
 * The command line.
 */

Test(shmctl_cli, prints_usage_to_stderr_and_exits_2_without_arguments)
{
	struct run r = run_in(NULL, 0, (uid_t)-1, (char *)NULL);

	assert_code(r, 2);
	assert_has(r.err, "Usage: shmctl");
	cr_assert_str_empty(r.out);
}

Test(shmctl_cli, lists_every_command_and_exit_code_in_its_help)
{
	struct run r = RUN("--help");

	assert_code(r, 0);
	for (size_t i = 0; i < NCMDS; i++)
		assert_has(r.out, commands[i]);
	assert_has(r.out, "Exit status:");
	assert_has(r.out, "4  check found problems");
	assert_has(r.out, "6  malformed restore file");
}

Test(shmctl_cli, prints_its_version)
{
	struct run r = RUN("--version");

	assert_code(r, 0);
	assert_has(r.out, "shmctl " SHMKV_VERSION_STRING);
}

Test(shmctl_cli, gives_help_on_each_command_both_ways)
{
	for (size_t i = 0; i < NCMDS; i++) {
		char want[64];
		struct run a = RUN(commands[i], "--help");
		struct run b = RUN("help", commands[i]);

		snprintf(want, sizeof(want), "Usage: shmctl %s ", commands[i]);
		assert_code(a, 0);
		cr_assert_str_empty(a.err, "%s", a.err);
		assert_has(a.out, want);
		assert_has(a.out, "Exit status:");
		assert_code(b, 0);
		cr_assert_str_eq(a.out, b.out);
	}
}

Test(shmctl_cli, rejects_unknown_options_with_a_hint)
{
	struct run g = RUN("--bogus");
	struct run c = RUN("info", "--bogus", "x");
	struct run h = RUN("help", "nosuch");

	assert_code(g, 2);
	assert_has(g.err, "unrecognized option");
	assert_code(c, 2);
	assert_has(c.err, "Try 'shmctl info --help'");
	assert_code(h, 2);
	assert_has(h.err, "no such command");
}

Test(shmctl_cli, rejects_missing_and_extra_operands)
{
	for (size_t i = 1; i < NCMDS; i++) {
		struct run r = RUN(commands[i]);

		assert_code(r, 2);
		assert_has(r.err, "missing operand");
	}
	struct run x = RUN("info", "a", "b");
	struct run l = RUN("ls", "a");
	struct run s = RUN("restore", "a");

	assert_code(x, 2);
	assert_has(x.err, "too many operands");
	assert_code(l, 2);
	assert_code(s, 2);
}

Test(shmctl_cli, rejects_an_invalid_store_name)
{
	struct run i = RUN("info", "a/b");
	struct run d = RUN("a/b", "get", "k");

	assert_code(i, 2);
	assert_has(i.err, "invalid store name 'a/b'");
	assert_code(d, 2);
}

Test(shmctl_cli, reports_a_missing_store_on_every_command_that_opens_one)
{
	static const char *const cmds[] = { "info",  "keys",  "scan",
					    "dump",  "check", "recover",
					    "sweep", "watch", "locks" };
	char name[TU_NAME_CAP], want[TU_NAME_CAP + 64];

	tu_make_name(name, "missing");
	snprintf(want, sizeof(want), "shmctl: %s: no such store\n", name);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		struct run r = RUN(cmds[i], name);

		assert_code(r, 3);
		cr_assert_str_eq(r.err, want);
	}
	struct run d = RUN(name, "get", "k");

	assert_code(d, 3);
	cr_assert_str_eq(d.err, want);
}

/*
 * create, destroy, ls.
 */

Test(shmctl_admin, create_rejects_bad_geometry_and_creates_nothing)
{
	static const char *const bad[][2] = {
		{ "--slots", "1000" },	  { "--slots", "8" },
		{ "--key-max", "0" },	  { "--key-max", "5000" },
		{ "--value-max", "2m" },  { "--memory", "12q" },
		{ "--mode", "999" },	  { "--mode", "0" },
		{ "--probe-limit", "x" },
	};
	char name[TU_NAME_CAP];

	tu_make_name(name, NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r = RUN("create", name, bad[i][0], bad[i][1]);

		assert_code(r, 2);
		assert_has(r.err, bad[i][0]);
	}
	struct run m = RUN("create", name, "--value-max", "1m", "--memory",
			   "1k");

	assert_code(m, 2);
	assert_has(m.err, "--memory does not fit this geometry");
	cr_assert(!shm_exists(name));
}

Test(shmctl_admin, create_makes_the_requested_store_from_a_name_without_slash)
{
	char name[TU_NAME_CAP], path[TU_PATH_CAP];
	struct run r;
	struct stat st;

	tu_make_name(name, NULL);
	r = RUN("create", name + 1, "--slots", "2k", "--key-max", "32",
		"--value-max", "512", "--memory", "1m", "--mode", "0640");
	assert_code(r, 0);
	assert_has(r.out, "created ");
	tu_kv = tu_open(name, 0);
	struct shmkv_config cfg = tu_get_config(tu_kv);

	cr_assert_eq(cfg.slots, 2048);
	cr_assert_eq(cfg.key_max, 32);
	cr_assert_eq(cfg.value_max, 512);
	cr_assert_eq(cfg.value_memory, 1 << 20);
	tu_shm_path(name, path);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640);
	r = RUN("create", name);
	assert_code(r, 3);
	assert_has(r.err, "already exists");
}

Test(shmctl_admin, destroy_refuses_without_force_when_stdin_is_not_a_terminal)
{
	struct run r;

	tu_setup();
	r = RUN("destroy", tu_name);
	assert_code(r, 2);
	assert_has(r.err, "use --force");
	cr_assert(shm_exists(tu_name));
	r = RUN("destroy", "--force", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "destroyed ");
	cr_assert(!shm_exists(tu_name));
}

Test(shmctl_admin, destroy_leaves_a_foreign_file_alone)
{
	char name[TU_NAME_CAP], want[TU_NAME_CAP + 64];
	struct run r;

	tu_make_name(name, "foreign");
	tu_shm_write_new(name, "not a store", 11);
	r = RUN("destroy", "--force", name);
	assert_code(r, 3);
	snprintf(want, sizeof(want),
		 "shmctl: %s: not a shmkv store (bad magic)\n", name);
	cr_assert_str_eq(r.err, want);
	cr_assert(shm_exists(name));
}

/* The line of `shmctl ls` for @name, or NULL. */
static const char *ls_line(const char *out, const char *name)
{
	char key[TU_NAME_CAP + 2];

	snprintf(key, sizeof(key), "\n%s ", name);
	return strstr(out, key);
}

/* `shmctl ls` printed a row for @name, and its end holds @status. */
#define assert_row(out, name, status)                                          \
	do {                                                                   \
		const char *row_ = ls_line((out), (name));                     \
		cr_assert_not_null(row_, "no row for %s in:\n%s", (name),      \
				   (out));                                     \
		assert_has(row_, (status));                                    \
	} while (0)

Test(shmctl_admin, ls_lists_a_store_with_its_size_mode_and_keys)
{
	struct shmkv_config cfg = tu_config(1024, 64, 1024, 0);
	char want[512];
	struct run r;

	cfg.mode = 0640;
	tu_kv = tu_create(&cfg, tu_name);
	tu_populate(tu_kv, 3);
	r = RUN("ls");
	assert_code(r, 0);
	cr_assert_not_null(ls_line(r.out, tu_name), "%s", r.out);
	r = RUN("ls", "--json");
	assert_code(r, 0);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"size\":%" PRId64 ",\"owner\":\"%s\","
		 "\"uid\":%u,\"mode\":\"0640\",\"keys\":3,\"slots\":1024,"
		 "\"status\":\"ok\"}",
		 tu_name, (int64_t)tu_shm_size(tu_name), user_name(),
		 (unsigned)geteuid());
	assert_has(r.out, want);
	cr_assert(strncmp(r.out, "{\"stores\":[", 11) == 0);
}

Test(shmctl_admin, ls_shows_foreign_and_temporary_files_only_with_all)
{
	char foreign[TU_NAME_CAP], tmp[TU_NAME_CAP];
	pid_t dead = fork();
	struct run r;

	cr_assert_geq(dead, 0);
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	tu_make_name(foreign, "foreign");
	tu_shm_write_new(foreign, "hello", 5);
	snprintf(tmp, sizeof(tmp), "/.shmkv-new-%d-00000000000000ff",
		 (int)dead);
	tu_shm_write_new(tmp, "x", 1);
	r = RUN("ls");
	assert_code(r, 0);
	assert_lacks(r.out, foreign);
	assert_lacks(r.out, tmp);
	r = RUN("ls", "--all");
	assert_code(r, 0);
	assert_row(r.out, foreign, "not a shmkv store\n");
	assert_row(r.out, tmp, "creation abandoned by dead process");
}

Test(shmctl_admin, ls_shows_a_store_it_may_not_read_only_with_all)
{
	struct run r;

	if (!is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	tu_setup(); /* mode 0600, owned by root */
	r = RUN_AS(NOBODY, "ls");
	assert_code(r, 0);
	cr_assert_null(ls_line(r.out, tu_name), "%s", r.out);
	r = RUN_AS(NOBODY, "ls", "--all");
	assert_code(r, 0);
	assert_row(r.out, tu_name, "permission denied\n");
}

/*
 * info.
 */

Test(shmctl_info, shows_geometry_keys_tombstones_and_classes)
{
	struct run r;

	SET("a", "1");
	SET("b", "two");
	set_kv(LIT("c"), LIT("three"), 100000);
	SET("gone", "x");
	tu_assert_rc(shmkv_del(tu_kv, LIT("gone")), 1);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "1024 slots, key_max 64, value_max 1024");
	assert_has(r.out, "3 live, 1 with a TTL");
	assert_has(r.out, "1 tombstones");
	assert_has(r.out, "CLASS");
	assert_has(r.out, "warnings  none");
}

Test(shmctl_info, json_follows_the_documented_schema)
{
	struct run r;

	SET("a", "1");
	set_kv(LIT("c"), LIT("three"), 100000);
	r = RUN("info", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"config\":{\"slots\":1024,\"key_max\":64,"
			  "\"value_max\":1024,\"probe_limit\":128,"
			  "\"value_memory\":");
	assert_has(r.out, "\"keys\":{\"live\":2,\"volatile\":1}");
	assert_has(r.out, "\"slots\":{\"total\":1024,\"tombstones\":0,"
			  "\"expired\":0,\"pending\":0,\"corrupt\":0,"
			  "\"longest_probe\":");
	assert_has(r.out, "\"pages\":{\"size\":65536,\"total\":");
	assert_has(r.out, "\"classes\":[{\"class\":0,\"block_size\":32,"
			  "\"pages\":");
	assert_has(r.out, "\"warnings\":[]}\n");
}

Test(shmctl_info, warns_about_a_table_over_75_percent_full)
{
	struct shmkv_config cfg = tu_config(16, 16, 100, 0);
	struct run r;
	char k[8];

	recreate(&cfg);
	for (unsigned i = 0; i < 13; i++)
		set_kv(k, tu_fmt(k, sizeof(k), "k", i), LIT("v"), 0);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "table 81% full (over 75%)");
}

/* One page of value storage, given to the class of 100-byte values. */
Test(shmctl_info, warns_about_a_full_size_class_with_no_page_left)
{
	struct shmkv_config cfg = tu_config(1024, 16, 100, 64 << 10);
	char k[16], *big = tu_fill(100, 'v');
	struct run r;

	recreate(&cfg);
	for (unsigned i = 0; i < 470; i++)
		set_kv(k, tu_fmt(k, sizeof(k), "k", i), big, 100, 0);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "1 of 64.0 KiB: 1 given to 3 size classes, 0 free");
	assert_has(r.out, "(128-byte blocks) 92% used (over 90%) and no free "
			  "page left");
	assert_lacks(r.out, "table ");
}

Test(shmctl_info, names_a_foreign_file_as_not_a_store)
{
	char name[TU_NAME_CAP], want[TU_NAME_CAP + 64];
	struct run r;

	tu_make_name(name, "foreign");
	tu_shm_write_new(name, "0123456789abcdef", 16);
	r = RUN("info", name + 1);
	assert_code(r, 3);
	snprintf(want, sizeof(want),
		 "shmctl: %s: not a shmkv store (bad magic)\n", name);
	cr_assert_str_eq(r.err, want);
	cr_assert_str_empty(r.out);
}

Test(shmctl_info, reports_permission_denied_to_another_user)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	if (!is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	r = RUN_AS(NOBODY, "info", tu_name);
	assert_code(r, 3);
	snprintf(want, sizeof(want), "shmctl: %s: permission denied\n",
		 tu_name);
	cr_assert_str_eq(r.err, want);
	r = RUN_AS(NOBODY, tu_name, "get", "k");
	assert_code(r, 3);
	cr_assert_str_eq(r.err, want);
}

/*
 * Data commands.
 */

/* One command line and what it must print and exit with. */
struct step {
	const char *argv[6];
	const char *out;
	int code;
};

static void run_steps(const struct step *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *argv[8] = { "shmctl", tu_name };

		for (int j = 0; s[i].argv[j]; j++)
			argv[j + 2] = (char *)s[i].argv[j];
		struct run r = run_v(NULL, 0, (uid_t)-1, argv);

		cr_assert_eq(r.code, s[i].code,
			     "%s: exit %d, expected %d\n%s%s", s[i].argv[0],
			     r.code, s[i].code, r.out, r.err);
		cr_assert_str_eq(r.out, s[i].out, "step %zu (%s)", i,
				 s[i].argv[0]);
	}
}

Test(shmctl_data, prints_replies_as_redis_cli_and_exits_by_their_meaning)
{
	static const struct step steps[] = {
		{ { "get", "k" }, "(nil)\n", 1 },
		{ { "set", "k", "hello" }, "OK\n", 0 },
		{ { "GET", "k" }, "\"hello\"\n", 0 },
		{ { "set", "k", "x", "NX" }, "(nil)\n", 1 },
		{ { "setnx", "k", "y" }, "(integer) 0\n", 1 },
		{ { "setnx", "n", "10" }, "(integer) 1\n", 0 },
		{ { "exists", "k", "nope" }, "(integer) 1\n", 0 },
		{ { "exists", "nope" }, "(integer) 0\n", 1 },
		{ { "ttl", "k" }, "(integer) -1\n", 0 },
		{ { "pttl", "nope" }, "(integer) -2\n", 1 },
		{ { "expire", "k", "100" }, "(integer) 1\n", 0 },
		{ { "ttl", "k" }, "(integer) 100\n", 0 },
		{ { "persist", "k" }, "(integer) 1\n", 0 },
		{ { "persist", "k" }, "(integer) 0\n", 1 },
		{ { "expire", "nope", "5" }, "(integer) 0\n", 1 },
		{ { "incr", "n" }, "(integer) 11\n", 0 },
		{ { "getset", "n", "0" }, "\"11\"\n", 0 },
		{ { "incrby", "n", "0" }, "(integer) 0\n", 0 },
		{ { "delifeq", "k", "other" }, "(integer) 0\n", 1 },
		{ { "delifeq", "k", "hello" }, "(integer) 1\n", 0 },
		{ { "del", "k" }, "(integer) 0\n", 1 },
		{ { "ping" }, "PONG\n", 0 },
	};

	run_steps(steps, sizeof(steps) / sizeof(steps[0]));
}

Test(shmctl_data, error_replies_print_as_errors_and_exit_5)
{
	static const struct step steps[] = {
		{ { "set", "s", "text" }, "OK\n", 0 },
		{ { "incr", "s" },
		  "(error) ERR value is not an integer or out of range\n",
		  5 },
		{ { "set", "k" },
		  "(error) ERR wrong number of arguments for 'set' command\n",
		  5 },
		{ { "set", "k", "v", "NX", "XX" },
		  "(error) ERR syntax error\n",
		  5 },
		{ { "nosuch", "a" },
		  "(error) ERR unknown command 'nosuch', with args beginning "
		  "with: 'a' \n",
		  5 },
	};

	run_steps(steps, sizeof(steps) / sizeof(steps[0]));
}

Test(shmctl_data, escapes_binary_values_and_prints_them_raw_with_raw)
{
	static const char val[] = "a\0b\n\xff\"\\";
	struct run r;

	set_kv(LIT("bin"), val, sizeof(val) - 1, 0);
	r = RUN(tu_name, "get", "bin");
	assert_reply(r, 0, "\"a\\x00b\\n\\xff\\\"\\\\\"\n");
	r = RUN("--raw", tu_name, "get", "bin");
	assert_code(r, 0);
	cr_assert_eq(r.out_len, sizeof(val));
	cr_assert(memcmp(r.out, val, sizeof(val) - 1) == 0);
	cr_assert_eq(r.out[sizeof(val) - 1], '\n');
}

Test(shmctl_data, reports_a_store_failure_as_a_store_error)
{
	char *big = tu_fill(TU_VALUE_MAX + 2, 'v'), want[TU_NAME_CAP + 64];
	struct run r;

	big[TU_VALUE_MAX + 1] = '\0'; /* one byte over value_max */
	r = RUN(tu_name, "set", "k", big);
	assert_code(r, 3);
	snprintf(want, sizeof(want),
		 "shmctl: %s: value too long for this store\n", tu_name);
	cr_assert_str_eq(r.err, want);
}

Test(shmctl_data, reads_with_read_permission_only)
{
	struct shmkv_config cfg = tu_config(64, 16, 64, 0);
	char want[TU_NAME_CAP + 64];
	struct run r;

	if (!is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	cfg.mode = 0644;
	recreate(&cfg);
	SET("k", "v");
	r = RUN_AS(NOBODY, tu_name, "get", "k");
	assert_reply(r, 0, "\"v\"\n");
	r = RUN_AS(NOBODY, tu_name, "set", "k", "w");
	assert_code(r, 3);
	snprintf(want, sizeof(want), "shmctl: %s: permission denied\n",
		 tu_name);
	cr_assert_str_eq(r.err, want);
}

Test(shmctl_data, runs_a_script_from_stdin_with_redis_cli_quoting)
{
	struct run r = RUN_STDIN("set \"a b\" \"x\\x00y\\n\"\n"
				 "get 'a b'\n"
				 "set k \"unterminated\n"
				 "\n"
				 "incr \"a b\"\n"
				 "quit\n"
				 "get k\n",
				 tu_name);

	assert_reply(r, 0,
		     "OK\n\"x\\x00y\\n\"\nInvalid argument(s)\n"
		     "(error) ERR value is not an integer or out of range\n");
	tu_assert_get(tu_kv, LIT("a b"), LIT("x\0y\n"));
}

/*
 * keys and scan.
 */

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(shmctl_keys, lists_every_key_or_those_matching_a_pattern)
{
	struct run r;

	SET("user:1", "a");
	SET("user:2", "b");
	SET("order:1", "c");
	r = RUN("keys", tu_name);
	assert_code(r, 0);
	cr_assert_eq(count_lines(r.out), 3, "%s", r.out);
	assert_has(r.out, ") \"order:1\"\n");
	r = RUN("keys", tu_name, "user:*");
	assert_code(r, 0);
	cr_assert_eq(count_lines(r.out), 2, "%s", r.out);
	assert_lacks(r.out, "order");
	r = RUN("keys", tu_name, "nomatch*");
	assert_reply(r, 0, "(empty array)\n");
}

Test(shmctl_keys, matches_binary_keys_with_the_redis_glob)
{
	static const char *const cases[][2] = {
		{ "a?b", "1) \"a\\x00b\"\n" },	  { "x\\*y", "1) \"x*y\"\n" },
		{ "[^a-b]1", "1) \"c1\"\n" },	  { "[ab]1", "1) \"b1\"\n" },
		{ "*\\x00*", "(empty array)\n" },
	};

	set_kv("a\0b", 3, LIT("v"), 0);
	SET("x*y", "1");
	SET("xzy", "1");
	SET("b1", "1");
	SET("c1", "1");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct run r = RUN("keys", tu_name, cases[i][0]);

		assert_reply(r, 0, cases[i][1]);
	}
}

Test(shmctl_keys, json_writes_each_byte_as_one_code_point)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	set_kv("k\xff\n\"", 4, LIT("v"), 0);
	r = RUN("keys", "--json", tu_name);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"keys\":[\"k\\u00ff\\n\\\"\"],\"count\":1}"
		 "\n",
		 tu_name);
	assert_reply(r, 0, want);
}

Test(shmctl_keys, scan_with_a_cursor_visits_every_key)
{
	unsigned seen[100] = { 0 }, steps = 0;
	char cursor[24] = "0";

	for (unsigned i = 0; i < 100; i++) {
		char k[16];

		set_kv(k, tu_fmt(k, sizeof(k), "key", i), LIT("v"), 0);
	}
	do {
		struct run r = RUN("--raw", "scan", tu_name, cursor, "--count",
				   "50");
		char *line = strtok(r.out, "\n");

		assert_code(r, 0);
		snprintf(cursor, sizeof(cursor), "%s", line);
		while ((line = strtok(NULL, "\n")) != NULL)
			seen[atoi(line + 3)]++;
		cr_assert_lt(++steps, 100, "scan does not end");
	} while (strcmp(cursor, "0") != 0);
	cr_assert_eq(steps, (TU_SLOTS + 49) / 50);
	for (unsigned i = 0; i < 100; i++)
		cr_assert_geq(seen[i], 1, "key%u never seen", i);
}

Test(shmctl_keys, scan_prints_the_cursor_then_the_keys_as_redis_cli)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	SET("one", "1");
	SET("two", "2");
	r = RUN("scan", tu_name, "0", "--count", "1024");
	assert_code(r, 0);
	cr_assert(strncmp(r.out, "1) \"0\"\n2) 1) \"", 14) == 0, "%s", r.out);
	assert_has(r.out, "\n   2) \"");
	r = RUN("scan", tu_name, "0", "--count", "1024", "--match", "t*",
		"--json");
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"cursor\":0,\"keys\":[\"two\"]}\n",
		 tu_name);
	assert_reply(r, 0, want);
	r = RUN("scan", tu_name, "1000", "--match", "nothing");
	assert_reply(r, 0, "1) \"1010\"\n2) (empty array)\n");
}

Test(shmctl_keys, scan_rejects_a_bad_cursor_or_count)
{
	struct run a = RUN("scan", tu_name, "abc");
	struct run b = RUN("scan", tu_name, "--", "-1");
	struct run c = RUN("scan", tu_name, "--count", "0");

	assert_code(a, 2);
	assert_has(a.err, "invalid cursor 'abc'");
	assert_code(b, 2);
	assert_code(c, 2);
	assert_has(c.err, "--count '0'");
}

/*
 * dump and restore.
 */

struct item {
	const char *k;
	size_t kl;
	const char *v;
	size_t vl;
	int64_t px;
};

#define ITEM(k, v, px)                                                         \
	{                                                                      \
		(k), sizeof(k) - 1, (v), sizeof(v) - 1, (px)                   \
	}
static const struct item items[] = {
	ITEM("plain", "value", 0),
	ITEM("nul\0key", "v\0al\n", 0),
	ITEM("nl\nkey\xff", "\xff\xfe\x01", 0),
	ITEM("quote\"\\", "tab\t\r\a\b'", 0),
	ITEM("empty", "", 0),
	ITEM("", "empty key", 0),
	ITEM("int", "12345", 0),
	ITEM("neg", "-42", 0),
	ITEM("ttl", "expires\0later", 600000),
	ITEM("ttlint", "7", 600000),
};
#define NITEMS (sizeof(items) / sizeof(items[0]))

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

static void assert_same_geometry(shmkv_t *a, shmkv_t *b)
{
	struct shmkv_config x = tu_get_config(a), y = tu_get_config(b);

	cr_assert_eq(x.slots, y.slots);
	cr_assert_eq(x.key_max, y.key_max);
	cr_assert_eq(x.value_max, y.value_max);
	cr_assert_eq(x.probe_limit, y.probe_limit);
	cr_assert_eq(x.value_memory, y.value_memory);
	cr_assert_eq(x.mode, y.mode);
}

static void assert_holds_items(shmkv_t *kv)
{
	struct shmkv_stats st;

	for (size_t i = 0; i < NITEMS; i++) {
		const struct item *it = &items[i];
		int64_t ms = 0;

		tu_assert_get(kv, it->k, it->kl, it->v, it->vl);
		tu_assert_ok(shmkv_pttl(kv, it->k, it->kl, &ms));
		if (it->px)
			cr_assert(ms > 0 && ms <= it->px, "item %zu: %" PRId64,
				  i, ms);
		else
			cr_assert_eq(ms, -1, "item %zu: %" PRId64, i, ms);
	}
	tu_assert_ok(shmkv_stats(kv, &st));
	cr_assert_eq(st.live_keys, NITEMS);
}

Test(shmctl_dump, round_trips_binary_keys_values_and_ttls_to_a_new_store)
{
	struct shmkv_config cfg = tu_config(256, 32, 2000, 1 << 20);
	char path[64], copy[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	cfg.mode = 0640;
	recreate(&cfg);
	for (size_t i = 0; i < NITEMS; i++)
		set_kv(items[i].k, items[i].kl, items[i].v, items[i].vl,
		       items[i].px);
	temp_path(path, sizeof(path));
	r = RUN("dump", tu_name, "--output", path);
	assert_reply(r, 0, "");
	tu_make_name(copy, "copy");
	r = RUN("restore", copy, path);
	unlink(path);
	assert_code(r, 0);
	assert_has(r.out, "restored 10 keys into ");
	assert_has(r.out, "(created)");
	kv = tu_open(copy, 0);
	assert_same_geometry(tu_kv, kv);
	assert_holds_items(kv);
	shmkv_close(kv);
}

Test(shmctl_dump, writes_the_documented_format_to_stdout)
{
	struct shmkv_config cfg = tu_get_config(tu_kv);
	char head[256];
	struct run r;

	SET("a", "1");
	set_kv(LIT("b\n"), LIT("x\0"), 0);
	r = RUN("dump", tu_name);
	snprintf(head, sizeof(head),
		 "SHMKV-DUMP 1 slots=1024 key_max=64 value_max=1024 "
		 "probe_limit=128 value_memory=%" PRIu64 " mode=0600\n",
		 cfg.value_memory);
	assert_code(r, 0);
	cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
	assert_has(r.out, "\n\"a\" \"1\" -1\n");
	assert_has(r.out, "\n\"b\\n\" \"x\\x00\" -1\n");
	assert_has(r.out, "\nEND 2\n");
	cr_assert_eq(count_lines(r.out), 4);
}

#define HEADER                                                                 \
	"SHMKV-DUMP 1 slots=64 key_max=64 value_max=64 probe_limit=64 "        \
	"value_memory=65536 mode=0600\n"

Test(shmctl_dump, restore_from_stdin_into_an_existing_store_keeps_its_keys)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	SET("keep", "me");
	r = RUN_STDIN(HEADER "\"new\" \"v\\x00\" 50000\nEND 1\n", "restore",
		      tu_name + 1, "-");
	snprintf(want, sizeof(want), "restored 1 keys into %s\n", tu_name);
	assert_reply(r, 0, want);
	tu_assert_get_str(tu_kv, "keep", "me");
	tu_assert_get(tu_kv, LIT("new"), LIT("v\0"));
	tu_assert_pttl_in(tu_kv, LIT("new"), 1, 50000);
}

Test(shmctl_dump, restore_refuses_a_malformed_file_by_line_and_changes_nothing)
{
	static const char *const cases[][2] = {
		{ "", ":1: empty file" },
		{ "hello\n", ":1: not a shmkv dump" },
		{ "SHMKV-DUMP 2 slots=64\n", ":1: unsupported dump format" },
		{ "SHMKV-DUMP 1 slots=64 colour=red\n",
		  ":1: malformed header" },
		{ HEADER "\"a\" \"b\"\nEND 1\n", ":2: expected" },
		{ HEADER "\"a\" \"b\" -1\n\"c\" \"d -1\nEND 2\n",
		  ":3: malformed quoting" },
		{ HEADER "\"a\"x \"b\" -1\nEND 1\n", ":2: malformed quoting" },
		{ HEADER "\"a\" \"b\" 0\nEND 1\n", ":2: PTTL must be" },
		{ HEADER "\"a\" \"b\" -1\n", ":3: no END line" },
		{ HEADER "\"a\" \"b\" -1\nEND 5\n", ":3: END count" },
		{ HEADER "END 0\n\"a\" \"b\" -1\n", ":3: text after the END" },
		{ HEADER "\""
			 "0123456789012345678901234567890123456789"
			 "0123456789012345678901234567890123456789\" \"b\" -1\n"
			 "END 1\n",
		  ":2: key or value longer" },
	};
	struct tu_snap *snap = tu_snap_take(tu_kv);
	char path[64], fresh[TU_NAME_CAP], want[128];

	tu_make_name(fresh, "fresh");
	temp_path(path, sizeof(path));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file(path, cases[i][0]);
		snprintf(want, sizeof(want), "shmctl: %s%s", path, cases[i][1]);
		struct run a = RUN("restore", fresh, path);
		struct run b = RUN("restore", tu_name, path);

		unlink(path);
		assert_code(a, 6);
		assert_has(a.err, want);
		assert_code(b, 6);
		cr_assert(!shm_exists(fresh), "case %zu created the store", i);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(shmctl_dump,
     restore_refuses_keys_too_long_for_the_store_and_writes_nothing)
{
	struct shmkv_config cfg = tu_config(64, 8, 64, 0);
	struct run r;

	recreate(&cfg);
	r = RUN_STDIN(HEADER "\"short\" \"v\" -1\n\"a-much-longer-key\" \"v\" "
			     "-1\nEND 2\n",
		      "restore", tu_name, "-");
	assert_code(r, 6);
	assert_has(r.err, "(stdin):3: key or value longer than ");
	tu_assert_missing_str(tu_kv, "short");
}

/*
 * check, recover, sweep, locks.
 */

static struct shmkv_slot_shm *slot_of(const char *key)
{
	struct shmkv_slot_ref ref;
	struct shmkv_key k;

	shmkv__key_init(tu_kv, &k, key, strlen(key));
	tu_assert_rc(shmkv__lookup(tu_kv, &k, &ref), 1);
	return shmkv__slot(tu_kv, ref.index);
}

/* Marks an empty slot claimed by a process that is gone. */
static void plant_dead_claim(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	for (uint32_t i = 0; i <= tu_kv->mask; i++) {
		struct shmkv_slot_shm *s = shmkv__slot(tu_kv, i);

		if (s->state == 0) {
			s->state = SLOT_WORD(SLOT_BUSY, pid, 0);
			return;
		}
	}
	cr_assert_fail("no empty slot");
}

Test(shmctl_maint, check_passes_a_clean_store)
{
	char want[TU_NAME_CAP + 80];
	struct run r;

	tu_populate(tu_kv, 50);
	r = RUN("check", tu_name);
	snprintf(want, sizeof(want), "%s: 0 problems found\n", tu_name);
	assert_reply(r, 0, want);
	r = RUN("check", "--json", tu_name);
	snprintf(want, sizeof(want),
		 "{\"name\":\"%s\",\"problems\":[],\"count\":0,"
		 "\"clean\":true}\n",
		 tu_name);
	assert_reply(r, 0, want);
}

Test(shmctl_maint, check_reports_a_corrupted_store_and_exits_4)
{
	struct run r;

	tu_populate(tu_kv, 50);
	SET("n", "12"); /* an inline integer: no block to leak */
	slot_of("n")->value = (uint64_t)3 << 62;
	r = RUN("check", tu_name);
	assert_code(r, 4);
	assert_has(r.out, ": malformed value word 0xc000000000000000\n");
	assert_has(r.out, ": 1 problem found\n");
	r = RUN("check", "--json", tu_name);
	assert_code(r, 4);
	assert_has(r.out, "malformed value word");
	assert_has(r.out, "\"count\":1,\"clean\":false}\n");
}

Test(shmctl_maint, recover_repairs_what_check_reports)
{
	struct run r;

	plant_dead_claim();
	r = RUN("check", tu_name);
	assert_code(r, 4);
	assert_has(r.out, "which is dead");
	r = RUN("recover", tu_name);
	assert_code(r, 0);
	assert_has(r.out, ": 1 repair\n");
	assert_has(r.out, "stale claims            1");
	r = RUN("check", tu_name);
	assert_code(r, 0);
	r = RUN("recover", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"repairs\":0,\"stale_claims\":0,");
}

Test(shmctl_maint, sweep_deletes_the_expired_keys)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	set_kv(LIT("e1"), LIT("v"), 1);
	set_kv(LIT("e2"), LIT("v"), 1);
	set_kv(LIT("e3"), LIT("12"), 1);
	SET("stays", "v");
	tu_sleep_ms(20);
	r = RUN("sweep", tu_name);
	snprintf(want, sizeof(want), "%s: 3 expired keys deleted\n", tu_name);
	assert_reply(r, 0, want);
	r = RUN("sweep", "--json", tu_name);
	assert_has(r.out, "\"expired\":0}");
	tu_assert_get_str(tu_kv, "stays", "v");
}

Test(shmctl_maint, locks_lists_a_held_lock_with_its_holder)
{
	char want[TU_NAME_CAP + 160];
	struct shmkv_lock lk;
	struct run r;

	r = RUN("locks", tu_name);
	snprintf(want, sizeof(want), "%s: no locks\n", tu_name);
	assert_reply(r, 0, want);
	tu_assert_ok(shmkv_lock_init(tu_kv, &lk, "job"));
	cr_assert_geq(shmkv_lock_try(&lk, 600000), 0);
	r = RUN("locks", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "LOCK");
	assert_has(r.out, "\njob ");
	snprintf(want, sizeof(want),
		 "{\"lock\":\"job\",\"state\":\"held\",\"held\":true,"
		 "\"alive\":true,\"pid\":%d,\"token\":1,",
		 (int)getpid());
	r = RUN("locks", "--json", tu_name);
	assert_has(r.out, want);
	assert_has(r.out, "\"count\":1}\n");
	tu_assert_ok(shmkv_lock_release(&lk));
	r = RUN("locks", tu_name);
	assert_has(r.out, " free ");
}

/*
 * On a terminal: tmux with a private server per test.
 */

struct tmux {
	char sock[48];
};

static void tmux_cmd(const struct tmux *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void tmux_cmd(const struct tmux *t, const char *fmt, ...)
{
	char cmd[2048];
	int n = snprintf(cmd, sizeof(cmd), "tmux -L %s -f /dev/null ", t->sock);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd + n, sizeof(cmd) - (size_t)n, fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* Runs the shell command @cmd in a new 120x40 terminal. */
static void tmux_start(struct tmux *t, const char *cmd)
{
	if (system("command -v tmux >/dev/null 2>&1") != 0)
		cr_skip_test("tmux is not installed");
	snprintf(t->sock, sizeof(t->sock), "shmctl-test-%d", (int)getpid());
	tmux_cmd(t, "new-session -d -s main -x 120 -y 40 '%s'", cmd);
}

static char *tmux_screen(const struct tmux *t)
{
	static char buf[16384];
	char cmd[128];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "tmux -L %s capture-pane -p -J -t main",
		 t->sock);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(buf, 1, sizeof(buf) - 1, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

/* Waits for @text on the screen: the program runs at its own pace on a
 * loaded machine, so poll (up to 20 s) instead of sleeping a fixed time. */
static void tmux_wait(const struct tmux *t, const char *text)
{
	for (int i = 0; i < 400; i++) {
		if (strstr(tmux_screen(t), text) != NULL)
			return;
		tu_sleep_ms(50);
	}
	cr_assert_fail("\"%s\" never appeared on:\n%s", text, tmux_screen(t));
}

static void tmux_stop(const struct tmux *t)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "tmux -L %s kill-server 2>/dev/null",
		 t->sock);
	if (system(cmd) != 0)
		return; /* already gone */
}

static bool built_with_libedit(void)
{
	struct run r = RUN("--version");

	return strstr(r.out, "line editing: libedit") != NULL;
}

Test(shmctl_tty, prompt_runs_commands_until_quit)
{
	char cmd[2048], prompt[TU_NAME_CAP + 4];
	struct tmux t;

	snprintf(cmd, sizeof(cmd),
		 "SHMCTL_HISTFILE= %s %s; echo EXIT=$?; sleep 60", shmctl_bin(),
		 tu_name + 1);
	tmux_start(&t, cmd);
	/* without its blank: tmux may trim the cursor row */
	snprintf(prompt, sizeof(prompt), "%s>", tu_name);
	tmux_wait(&t, prompt);
	tmux_cmd(&t, "send-keys -t main 'set greeting \"hello world\"' Enter");
	tmux_wait(&t, "\nOK\n");
	tmux_cmd(&t, "send-keys -t main 'get greeting' Enter");
	tmux_wait(&t, "\n\"hello world\"\n");
	tmux_cmd(&t, "send-keys -t main quit Enter");
	tmux_wait(&t, "EXIT=0");
	tmux_stop(&t);
	tu_assert_get_str(tu_kv, "greeting", "hello world");
}

Test(shmctl_tty, prompt_recalls_history_with_the_up_arrow)
{
	char cmd[2048], hist[64];
	struct tmux t;
	FILE *f;

	if (!built_with_libedit())
		cr_skip_test("shmctl built without libedit: no line editing");
	temp_path(hist, sizeof(hist));
	snprintf(cmd, sizeof(cmd),
		 "SHMCTL_HISTFILE=%s %s %s; echo EXIT=$?; sleep 60", hist,
		 shmctl_bin(), tu_name);
	tmux_start(&t, cmd);
	tmux_wait(&t, ">");
	tmux_cmd(&t, "send-keys -t main 'incr counter' Enter");
	tmux_wait(&t, "(integer) 1");
	tmux_cmd(&t, "send-keys -t main Up Enter");
	tmux_wait(&t, "(integer) 2");
	tmux_cmd(&t, "send-keys -t main C-d");
	tmux_wait(&t, "EXIT=0");
	tmux_stop(&t);
	f = fopen(hist, "r");
	cr_assert_not_null(f, "no history file");
	fclose(f);
	unlink(hist);
}

Test(shmctl_tty, destroy_asks_for_confirmation_on_a_terminal)
{
	char cmd[2048];
	struct tmux t;

	snprintf(cmd, sizeof(cmd),
		 "%s destroy %s; echo EXIT=$?; %s destroy %s; echo EXIT=$?; "
		 "sleep 60",
		 shmctl_bin(), tu_name, shmctl_bin(), tu_name);
	tmux_start(&t, cmd);
	tmux_wait(&t, "[y/N]");
	tmux_cmd(&t, "send-keys -t main n Enter");
	tmux_wait(&t, "EXIT=1");
	cr_assert(shm_exists(tu_name), "destroyed despite n");
	tmux_cmd(&t, "send-keys -t main y Enter");
	tmux_wait(&t, "EXIT=0");
	tmux_stop(&t);
	cr_assert(!shm_exists(tu_name), "not destroyed despite y");
}

/* The stty flags written to @path, once the shell has written them. */
static char *read_modes(const char *path)
{
	static char buf[8192];

	for (int i = 0; i < 400; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

		if (f)
			fclose(f);
		buf[n] = '\0';
		if (strstr(buf, "icanon\n"))
			return buf;
		tu_sleep_ms(50);
	}
	cr_assert_fail("no stty output in %s", path);
	return NULL;
}

/* watch until @key ends it; the terminal's modes must be back after. */
static void watch_and_quit(const char *key)
{
	char cmd[2048], stty[64], *modes;
	struct tmux t;

	SET("a", "1");
	SET("b", "2");
	temp_path(stty, sizeof(stty));
	snprintf(cmd, sizeof(cmd),
		 "%s watch %s; echo EXIT=$?; stty -a | tr \" ;\" \"\\n\\n\" > "
		 "%s; sleep 60",
		 shmctl_bin(), tu_name, stty);
	tmux_start(&t, cmd);
	tmux_wait(&t, "2 live (");
	assert_has(tmux_screen(&t), "CLASS");
	SET("c", "3");
	tmux_wait(&t, "3 live (+");
	tmux_cmd(&t, "send-keys -t main %s", key);
	tmux_wait(&t, "EXIT=0");
	modes = read_modes(stty);
	tmux_stop(&t);
	unlink(stty);
	assert_has(modes, "\nicanon\n");
	assert_has(modes, "\necho\n");
	assert_lacks(modes, "-icanon");
	assert_lacks(modes, "-echo\n");
}

Test(shmctl_tty, watch_draws_the_store_and_quits_on_q_restoring_the_terminal)
{
	watch_and_quit("q");
}

Test(shmctl_tty, watch_quits_on_ctrl_c_restoring_the_terminal)
{
	watch_and_quit("C-c");
}

Test(shmctl_tty, watch_prints_plain_frames_when_not_on_a_terminal)
{
	struct run r;
	const char *p;
	int frames = 0;

	SET("a", "1");
	r = RUN("watch", "--count", "2", "--interval", "0.1", tu_name);
	assert_code(r, 0);
	for (p = r.out; (p = strstr(p, "1 live (")) != NULL; p++)
		frames++;
	cr_assert_eq(frames, 2, "%s", r.out);
	assert_lacks(r.out, "\033");
}
