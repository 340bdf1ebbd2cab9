/*
 * test_shmctl.c - shmctl driven as a real process (helpers/shmctl_run.h):
 * the command line (help, usage errors, missing stores), create, destroy
 * and ls, and info on healthy, full, foreign and forbidden stores. Data
 * commands, keys and scan are in test_shmctl_data.c; dump and restore in
 * test_shmctl_dump.c; check, recover, sweep and locks in
 * test_shmctl_maint.c; the table's growth (info, watch, maintain) in
 * test_shmctl_grow.c; the prompt and watch on a terminal in
 * test_shmctl_tty.c.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

TestSuite(shmctl_cli);
TestSuite(shmctl_admin, .fini = ctl_teardown);
TestSuite(shmctl_info, .init = tu_setup, .fini = ctl_teardown);

static const char *const commands[] = {
	"ls",	   "create", "destroy", "info",	 "keys",  "scan",  "dump",
	"restore", "check",  "recover", "sweep", "watch", "locks", "maintain",
};
#define NCMDS (sizeof(commands) / sizeof(commands[0]))

static const char *user_name(void)
{
	struct passwd *pw = getpwuid(geteuid());

	return pw ? pw->pw_name : "?";
}

/*
 * The command line.
 */

Test(shmctl_cli, prints_usage_to_stderr_and_exits_2_without_arguments)
{
	struct run r = ctl_run_in(NULL, 0, (uid_t)-1, (char *)NULL);

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
	assert_has(m.err, "--memory 1 KiB is below this geometry's minimum of "
			  "17476 KiB: one 1028 KiB page per size class, 17 "
			  "classes (value_max 1048576)");
	cr_assert(!ctl_shm_exists(name));
}

/* The case: 384 KiB is six pages, and the rule is one page per
 * size class (seven of them for the default value_max): the message says
 * the real minimum, which then works. */
Test(shmctl_admin, create_says_the_real_minimum_of_memory_and_max_memory)
{
	char name[TU_NAME_CAP];
	struct run r;

	tu_make_name(name, NULL);
	r = RUN("create", name, "--slots", "1024", "--memory", "384k");
	assert_code(r, 2);
	assert_has(r.err, "--memory 384 KiB is below this geometry's minimum "
			  "of 448 KiB: one 64 KiB page per size class, 7 "
			  "classes (value_max 1024)");
	cr_assert(!ctl_shm_exists(name));
	r = RUN("create", name, "--slots", "1024", "--max-memory", "100k");
	assert_code(r, 2);
	assert_has(r.err, "--max-memory 100 KiB is below the ");
	assert_has(r.err, " this store uses at creation (header, table and "
			  "448 KiB of value storage)");
	cr_assert(!ctl_shm_exists(name));
	r = RUN("create", name, "--slots", "1024", "--memory", "448k");
	assert_code(r, 0);
	tu_kv = tu_open(name, 0);
	cr_assert_eq(tu_get_config(tu_kv).value_memory, 448 << 10);
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

/* Whether the kernel gives huge pages is /dev/shm's mount option: the
 * store is made either way, and create and info tell the same story. */
Test(shmctl_admin, create_huge_pages_records_the_choice_and_says_what_it_got)
{
	char name[TU_NAME_CAP];
	struct run r, i;
	uint64_t huge = 0;
	shmkv_t *pop;

	tu_make_name(name, NULL);
	r = RUN("create", name, "--slots", "4k", "--huge-pages");
	assert_code(r, 0);
	assert_has(r.out, "huge pages asked for: ");
	tu_kv = tu_open(name, 0);
	cr_assert_eq(tu_get_config(tu_kv).flags, SHMKV_CONFIG_HUGE_PAGES);
	pop = tu_open(name, SHMKV_OPEN_READONLY | SHMKV_OPEN_POPULATE);
	tu_assert_ok(shmkv_huge_mapped(pop, &huge));
	shmkv_close(pop);
	i = RUN("info", name);
	assert_code(i, 0);
	assert_has(i.out, "huge pages asked for: ");
	if (huge == 0) {
		assert_has(r.err, "it no huge pages: mount /dev/shm with "
				  "huge=advise");
		assert_has(i.out, "0 B of ");
		assert_has(i.out, "huge pages asked for, none given");
	} else {
		cr_assert_eq(r.err[0], '\0', "%s", r.err);
	}
	i = RUN("info", "--json", name);
	assert_has(i.out, "\"huge_pages\":true");
	assert_has(i.out, "\"huge_page_bytes\":");
}

Test(shmctl_admin, info_of_a_plain_store_says_4k_pages)
{
	struct run r;

	tu_setup();
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "4 KiB pages (huge pages not asked for)");
	r = RUN("info", "--json", tu_name);
	assert_has(r.out, "\"huge_pages\":false");
}

Test(shmctl_admin, destroy_refuses_without_force_when_stdin_is_not_a_terminal)
{
	struct run r;

	tu_setup();
	r = RUN("destroy", tu_name);
	assert_code(r, 2);
	assert_has(r.err, "use --force");
	cr_assert(ctl_shm_exists(tu_name));
	r = RUN("destroy", "--force", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "destroyed ");
	cr_assert(!ctl_shm_exists(tu_name));
}

/* A child that opens the store, says so on @ready, waits for @go to be
 * closed, and exits 0 if its next command says -ESTALE. */
static pid_t start_user(int ready, const int go[2])
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		shmkv_t *kv;
		char c;

		if (shmkv_open(tu_name, 0, &kv) != 0)
			_exit(10);
		close(go[1]);
		if (write(ready, "x", 1) != 1)
			_exit(12);
		while (read(go[0], &c, 1) > 0)
			;
		_exit(shmkv_set(kv, LIT("k"), LIT("v"), 0, 0, NULL) == -ESTALE
			      ? 0
			      : 11);
	}
	return pid;
}

Test(shmctl_admin, destroy_says_how_many_processes_have_it_open)
{
	int ready[2], go[2], status;
	pid_t users[2];
	char c;
	struct run r;

	tu_setup(); /* this process has it open: one */
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	for (int i = 0; i < 2; i++) {
		users[i] = start_user(ready[1], go);
		cr_assert_eq(read(ready[0], &c, 1), 1);
	}
	r = RUN("destroy", "--force", tu_name);
	assert_code(r, 0);
	/* (and maybe ", and N whose maps we may not read": some systems
	 * hide a process or two even from root, pid 1 in a container) */
	assert_has(r.out, "it was open in 3 processes");
	assert_has(r.out, ": their next command on it fails with ESTALE\n");
	close(go[1]);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(waitpid(users[i], &status, 0), users[i]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "user %d: status %#x", i, status);
	}
	tu_assert_rc(shmkv_get(tu_kv, LIT("k"), NULL), -ESTALE);
	shmkv_close(tu_kv);
	/* Nobody has it open: no count. */
	tu_setup();
	shmkv_close(tu_kv);
	tu_kv = NULL;
	r = RUN("destroy", "--force", tu_name);
	assert_code(r, 0);
	cr_assert(strstr(r.out, "open in") == NULL ||
			  strstr(r.out, "open in 0 processes") != NULL,
		  "%s", r.out);
}

Test(shmctl_admin, info_says_how_many_processes_have_it_open)
{
	struct run r;

	tu_setup(); /* this process has it open */
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "  users     open in 1 process");
	r = RUN("info", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"processes\":{\"open\":1,");
	shmkv_close(tu_kv);
	tu_kv = NULL;
	r = RUN("info", tu_name);
	assert_has(r.out, "  users     open in 0 processes");
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
		 "shmctl: %s: not a shmkv store (bad magic, or not a regular "
		 "file)\n",
		 name);
	cr_assert_str_eq(r.err, want);
	cr_assert(ctl_shm_exists(name));
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
		 "{\"name\":\"%s\",\"size\":%" PRId64 ",\"reserved\":%" PRId64
		 ",\"owner\":\"%s\","
		 "\"uid\":%u,\"mode\":\"0640\",\"keys\":3,\"slots\":1024,"
		 "\"readable\":true,"
		 "\"status\":\"ok\"}",
		 tu_name, (int64_t)tu_shm_allocated(tu_name),
		 (int64_t)tu_shm_size(tu_name), user_name(),
		 (unsigned)geteuid());
	assert_has(r.out, want);
	cr_assert(strncmp(r.out, "{\"stores\":[", 11) == 0);
}

Test(shmctl_admin, ls_shows_foreign_and_temporary_files_only_with_all)
{
	char foreign[TU_NAME_CAP], tmp[TU_NAME_CAP];
	pid_t dead = ctl_dead_pid();
	struct run r;

	tu_make_name(foreign, "foreign");
	tu_shm_write_new(foreign, "hello", 5);
	/* Not the library's exact form (16 hex digits), so the creates of
	 * tests running beside this one do not remove it meanwhile. */
	snprintf(tmp, sizeof(tmp), "/.shmkv-new-%d-ff", (int)dead);
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

/* Issue 14: a user who may read no store was told "no shmkv stores".
 * A file it may not open may be a store: listed with the stores, as
 * unreadable, with its owner and mode. */
Test(shmctl_admin, ls_lists_a_store_it_may_not_read_as_unreadable)
{
	char want[TU_NAME_CAP + 64];
	const char *row;
	struct run r;

	if (!ctl_is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	tu_setup(); /* mode 0600, owned by root */
	r = RUN_AS(NOBODY, "ls");
	assert_code(r, 0);
	assert_row(r.out, tu_name,
		   "unreadable (permission denied): maybe a store\n");
	row = ls_line(r.out, tu_name);
	cr_assert(strncmp(strstr(row, "  root ") ? strstr(row, "  root ") : "",
			  "  root       0600  ", 19) == 0,
		  "owner and mode in: %s", row);
	assert_lacks(r.out, "no shmkv stores");
	assert_has(r.out, "you may not read: run as ");
	r = RUN_AS(NOBODY, "ls", "--json");
	assert_code(r, 0);
	snprintf(want, sizeof(want), "{\"name\":\"%s\",", tu_name);
	assert_has(r.out, want);
	assert_has(strstr(r.out, want),
		   "\"owner\":\"root\",\"uid\":0,\"mode\":\"0600\","
		   "\"keys\":null,\"slots\":0,\"readable\":false,");
	/* Its owner sees it as a store. */
	r = RUN("ls");
	assert_row(r.out, tu_name, "ok\n");
}

/* From a checkout only its owner may enter (root's, in /root, mode 0700):
 * another user still runs the binary (exit 0, not 127). */
Test(shmctl_admin, another_user_runs_it_from_a_private_directory)
{
	char dir[] = "/tmp/shmkv-private-XXXXXX", bin[64], cmd[256];
	struct run r;

	if (!ctl_is_root())
		cr_skip_test("needs root to run shmctl as another uid");
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0700), 0);
	snprintf(bin, sizeof(bin), "%s/shmctl", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", shmctl_bin(), bin);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	cr_assert_eq(setenv("SHMCTL_BIN", bin, 1), 0);
	r = RUN_AS(NOBODY, "--version");
	unsetenv("SHMCTL_BIN");
	unlink(bin);
	rmdir(dir);
	assert_code(r, 0);
	assert_has(r.out, "shmctl");
}

/*
 * info.
 */

Test(shmctl_info, shows_geometry_keys_tombstones_and_classes)
{
	struct run r;

	SET("a", "1");
	SET("b", "two");
	ctl_set_kv(LIT("c"), LIT("three"), 100000);
	SET("gone", "x");
	tu_assert_rc(shmkv_del(tu_kv, LIT("gone")), 1);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(
		r.out,
		"table     1024 slots (1024 at creation, doubled 0 times, may "
		"not double within max_memory)\n");
	assert_has(r.out,
		   "geometry  key_max 64, value_max 1024, probe_limit 1024");
	assert_has(r.out, "3 live, 1 with a TTL");
	/* "two" in its slot, "three" (a TTL) in a block, 1 in its word. */
	assert_has(r.out, "1 strings in their slots, 1 in value blocks");
	assert_has(r.out, "1 tombstones");
	assert_has(r.out, "CLASS");
	assert_has(r.out, "warnings  none");
}

Test(shmctl_info, json_follows_the_documented_schema)
{
	struct run r;

	SET("a", "1");
	ctl_set_kv(LIT("c"), LIT("three"), 100000);
	r = RUN("info", "--json", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "\"config\":{\"slots\":1024,\"key_max\":64,"
			  "\"value_max\":1024,\"probe_limit\":1024,"
			  "\"value_memory\":");
	assert_has(r.out, "\"huge_pages\":false,"
			  "\"evict_policy\":\"noeviction\"},");
	assert_has(r.out, "\"keys\":{\"live\":2,\"volatile\":1,"
			  "\"inline_strings\":0,\"block_values\":1,"
			  "\"evicted\":0}");
	assert_has(r.out, "\"slots\":{\"total\":1024,\"tombstones\":0,"
			  "\"expired\":0,\"pending\":0,\"corrupt\":0,"
			  "\"longest_probe\":");
	assert_has(r.out, "\"pages\":{\"size\":65536,\"total\":");
	assert_has(r.out, "\"classes\":[{\"class\":0,\"block_size\":32,"
			  "\"pages\":");
	assert_has(r.out, "\"warnings\":[]}\n");
}

/* A table that may double (at 7/8 full) is not a warning at 81%: info
 * says how far it may grow. One whose limit leaves no room to double is. */
Test(shmctl_info, warns_about_a_table_over_75_percent_full_that_cannot_grow)
{
	struct shmkv_config cfg = tu_config(16, 16, 100, 0);
	struct run r;
	char k[8];

	/* Room for the table to double a few times beside its pages. */
	cfg.max_memory = tu_initial_footprint(&cfg) + (64 << 10);
	ctl_recreate(&cfg);
	for (unsigned i = 0; i < 13; i++)
		ctl_set_kv(k, tu_fmt(k, sizeof(k), "k", i), LIT("v"), 0);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "16 slots (16 at creation, doubled 0 times, may "
			  "double to ");
	assert_lacks(r.out, "full (over 75%)");
	r = RUN("info", tu_name, "--json");
	assert_has(r.out, "\"growths\":0,\"max\":");
	assert_lacks(r.out, "\"max\":16,");

	cfg.max_memory = 0; /* tu_create's: the initial footprint */
	ctl_recreate(&cfg);
	for (unsigned i = 0; i < 13; i++)
		ctl_set_kv(k, tu_fmt(k, sizeof(k), "k", i), LIT("v"), 0);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "16 slots (16 at creation, doubled 0 times, may not "
			  "double within max_memory)");
	assert_has(r.out, "table 81% full (over 75%) and may not double "
			  "within max_memory: new keys may fail with 'table "
			  "full' (maxmemory-policy noeviction)");
	r = RUN("info", tu_name, "--json");
	assert_has(r.out, "\"growths\":0,\"max\":16,");
	tu_assert_ok(shmkv_set_evict_policy(tu_kv, SHMKV_EVICT_ALLKEYS_LFU));
	r = RUN("info", tu_name);
	assert_has(r.out, "table 81% full (over 75%) and may not double "
			  "within max_memory: new keys evict others "
			  "(maxmemory-policy allkeys-lfu)");
}

/* One page of value storage, given to the class of 100-byte values. */
Test(shmctl_info, warns_about_a_full_size_class_with_no_page_left)
{
	/* 3 classes, 3 pages: the 128-byte class gets one, two stay
	 * reserved for the classes that have none. */
	struct shmkv_config cfg = tu_config(1024, 16, 100, 192 << 10);
	char k[16], *big = tu_fill(100, 'v');
	struct run r;

	ctl_recreate(&cfg);
	for (unsigned i = 0; i < 470; i++)
		ctl_set_kv(k, tu_fmt(k, sizeof(k), "k", i), big, 100, 0);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "3 of 64.0 KiB: 1 given to 3 size classes, 2 free");
	assert_has(r.out, "(128-byte blocks) 92% used (over 90%) and no free "
			  "page left to it");
	assert_lacks(r.out, "full (over 75%)");
}

/* The store: "2 free pages" while a SET of its class fails with
 * out of memory, the pages being kept for the classes that have none.
 * ROOM says what each class can still take: none for the full class,
 * a page's blocks for the others, which a SET then uses. */
Test(shmctl_info, shows_the_room_each_size_class_has_left)
{
	struct shmkv_config cfg = tu_config(1024, 16, 100, 192 << 10);
	char k[16], *big = tu_fill(100, 'v'), *mid = tu_fill(40, 'm');
	unsigned n = 0;
	struct run r;
	int rc;

	ctl_recreate(&cfg);
	while ((rc = shmkv_set(tu_kv, k, tu_fmt(k, sizeof(k), "k", n), big, 100,
			       0, 0, NULL)) == 1)
		cr_assert_lt(++n, 1000, "never full");
	tu_assert_rc(rc, -ENOMEM);
	r = RUN("info", tu_name);
	assert_code(r, 0);
	assert_has(r.out, "3 of 64.0 KiB: 1 given to 3 size classes, 2 free "
			  "(2 kept for the classes that have none, one each)");
	assert_has(r.out,
		   "  CLASS   BLOCK  PAGES     BLOCKS       USED       "
		   "FREE  USED%       ROOM     USABLE\n"
		   "      0      32      0          0          0          "
		   "0   0.0%       2048   64.0 KiB\n"
		   "      1      64      0          0          0          "
		   "0   0.0%       1024   64.0 KiB\n"
		   "      2     128      1        512        512          "
		   "0 100.0%          0        0 B\n");
	r = RUN("info", "--json", tu_name);
	assert_has(r.out, "\"block_size\":128,\"pages\":1,\"blocks\":512,"
			  "\"used\":512,\"free\":0,\"pages_left\":0,"
			  "\"room\":0,\"usable_bytes\":0}");
	assert_has(r.out, "\"block_size\":64,\"pages\":0,\"blocks\":0,"
			  "\"used\":0,\"free\":0,\"pages_left\":1,"
			  "\"room\":1024,\"usable_bytes\":65536}");
	assert_has(r.out, "\"free\":2,\"kept\":2,");
	/* What ROOM promised: a 40-byte value (a 64-byte block) fits. */
	ctl_set_kv(LIT("mid"), mid, 40, 0);
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
		 "shmctl: %s: not a shmkv store (bad magic, or not a regular "
		 "file)\n",
		 name);
	cr_assert_str_eq(r.err, want);
	cr_assert_str_empty(r.out);
}

Test(shmctl_info, reports_permission_denied_to_another_user)
{
	char want[TU_NAME_CAP + 64];
	struct run r;

	if (!ctl_is_root())
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
