/*
 * test_shmctl_dump.c - shmctl dump and restore: binary keys, values and
 * TTLs round-trip into a new store, the documented format, and malformed
 * files refused by line without changing anything.
 */
#include "helpers/shmctl_run.h"
#include "helpers/testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

TestSuite(shmctl_dump, .init = tu_setup, .fini = ctl_teardown);

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
	cr_assert_eq(x.flags, y.flags);
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

/* Dumps tu_name to a file and restores it into a new store (its name in
 * @copy). Return: restore's run, which succeeded. */
static struct run dump_into_copy(char copy[TU_NAME_CAP])
{
	char path[64];
	struct run r;

	ctl_temp_path(path, sizeof(path));
	r = RUN("dump", tu_name, "--output", path);
	assert_reply(r, 0, "");
	tu_make_name(copy, "copy");
	r = RUN("restore", copy, path);
	unlink(path);
	assert_code(r, 0);
	return r;
}

Test(shmctl_dump, round_trips_binary_keys_values_and_ttls_to_a_new_store)
{
	struct shmkv_config cfg = tu_config(256, 32, 2000, 1 << 20);
	char copy[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	cfg.mode = 0640;
	ctl_recreate(&cfg);
	for (size_t i = 0; i < NITEMS; i++)
		ctl_set_kv(items[i].k, items[i].kl, items[i].v, items[i].vl,
			   items[i].px);
	r = dump_into_copy(copy);
	assert_has(r.out, "restored 10 keys into ");
	assert_has(r.out, "(created)");
	kv = tu_open(copy, 0);
	assert_same_geometry(tu_kv, kv);
	assert_holds_items(kv);
	shmkv_close(kv);
}

/* The huge-page choice is the store's: a dump carries it to the copy. */
Test(shmctl_dump, round_trips_the_huge_page_choice)
{
	struct shmkv_config cfg = tu_config(256, 32, 64, 1 << 20);
	char copy[TU_NAME_CAP];
	shmkv_t *kv;
	struct run r;

	cfg.flags = SHMKV_CONFIG_HUGE_PAGES;
	ctl_recreate(&cfg);
	SET("a", "1");
	dump_into_copy(copy);
	kv = tu_open(copy, 0);
	assert_same_geometry(tu_kv, kv);
	cr_assert_eq(tu_get_config(kv).flags, SHMKV_CONFIG_HUGE_PAGES);
	tu_assert_get_str(kv, "a", "1");
	shmkv_close(kv);
	r = RUN("dump", tu_name);
	assert_has(r.out, " mode=0600 huge_pages=1\n");
}

Test(shmctl_dump, writes_the_documented_format_to_stdout)
{
	struct shmkv_config cfg = tu_get_config(tu_kv);
	char head[256];
	struct run r;

	SET("a", "1");
	ctl_set_kv(LIT("b\n"), LIT("x\0"), 0);
	r = RUN("dump", tu_name);
	snprintf(head, sizeof(head),
		 "SHMKV-DUMP 1 slots=1024 key_max=64 value_max=1024 "
		 "probe_limit=1024 value_memory=%" PRIu64 " max_memory=%" PRIu64
		 " mode=0600\n",
		 cfg.value_memory, cfg.max_memory);
	assert_code(r, 0);
	cr_assert(strncmp(r.out, head, strlen(head)) == 0, "%s", r.out);
	assert_has(r.out, "\n\"a\" \"1\" -1\n");
	assert_has(r.out, "\n\"b\\n\" \"x\\x00\" -1\n");
	assert_has(r.out, "\nEND 2\n");
	cr_assert_eq(ctl_count_lines(r.out), 4);
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

/*
 * A PTTL of 0 is a key dumped in the millisecond of its deadline (live,
 * as in Redis). Restored, it gets the deadline "now": whether it is still
 * there depends on the clock, but the value it replaces never survives,
 * and where it is there, it has the dump's value and a TTL.
 */
/* The key's last millisecond has passed by the time it is restored: it
 * is restored expired, and the value it replaces does not survive. */
Test(shmctl_dump, restore_of_a_pttl_of_zero_leaves_the_key_expired)
{
	int64_t ms = 0;
	struct run r;

	SET("k", "old");
	r = RUN_STDIN(HEADER "\"k\" \"new\" 0\nEND 1\n", "restore", tu_name,
		      "-");
	assert_code(r, 0);
	assert_has(r.out, "restored 1 keys into ");
	cr_assert_eq(shmkv_get(tu_kv, LIT("k"), NULL), 0,
		     "the key (old or new value) outlived its PTTL of 0");
	tu_assert_ok(shmkv_pttl(tu_kv, LIT("k"), &ms));
	cr_assert_eq(ms, -2, "PTTL %" PRId64, ms);
}

Test(shmctl_dump, restore_refuses_a_malformed_file_by_line_and_changes_nothing)
{
	static const char *const cases[][2] = {
		{ "", ":1: empty file" },
		{ "hello\n", ":1: not a shmkv dump" },
		{ "SHMKV-DUMP 2 slots=64\n", ":1: unsupported dump format" },
		{ "SHMKV-DUMP 1 slots=64 colour=red\n",
		  ":1: malformed header" },
		{ "SHMKV-DUMP 1 slots=64 huge_pages=2\n",
		  ":1: malformed header" },
		{ HEADER "\"a\" \"b\"\nEND 1\n", ":2: expected" },
		{ HEADER "\"a\" \"b\" -1\n\"c\" \"d -1\nEND 2\n",
		  ":3: malformed quoting" },
		{ HEADER "\"a\"x \"b\" -1\nEND 1\n", ":2: malformed quoting" },
		{ HEADER "\"a\" \"b\" -2\nEND 1\n", ":2: PTTL must be" },
		{ HEADER "\"a\" \"b\" 1.5\nEND 1\n", ":2: PTTL must be" },
		{ HEADER "\"a\" \"b\" -1\n", ":3: no END line" },
		{ HEADER "\"a\" \"b\" -1\nEND 5\n", ":3: END count" },
		{ HEADER "END 0\n\"a\" \"b\" -1\n", ":3: text after the END" },
		{ HEADER "\""
			 "0123456789012345678901234567890123456789"
			 "0123456789012345678901234567890123456789\" \"b\" -1\n"
			 "END 1\n",
		  ":2: key is 80 bytes, " },
	};
	struct tu_snap *snap = tu_snap_take(tu_kv);
	char path[64], fresh[TU_NAME_CAP], want[128];

	tu_make_name(fresh, "fresh");
	ctl_temp_path(path, sizeof(path));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file(path, cases[i][0]);
		snprintf(want, sizeof(want), "shmctl: %s%s", path, cases[i][1]);
		struct run a = RUN("restore", fresh, path);
		struct run b = RUN("restore", tu_name, path);

		unlink(path);
		assert_code(a, 6);
		assert_has(a.err, want);
		assert_code(b, 6);
		cr_assert(!ctl_shm_exists(fresh), "case %zu created the store",
			  i);
	}
	tu_assert_unchanged(tu_kv, snap);
}

Test(shmctl_dump,
     restore_refuses_keys_too_long_for_the_store_and_writes_nothing)
{
	struct shmkv_config cfg = tu_config(64, 8, 64, 0);
	struct run r;

	ctl_recreate(&cfg);
	r = RUN_STDIN(HEADER "\"short\" \"v\" -1\n\"a-much-longer-key\" \"v\" "
			     "-1\nEND 2\n",
		      "restore", tu_name, "-");
	assert_code(r, 6);
	assert_has(r.err, "(stdin):3: key is 17 bytes, ");
	assert_has(r.err, "'s key_max is 8: nothing restored");
	tu_assert_missing_str(tu_kv, "short");
	/* A value past the header's value_max (64) is named the same way. */
	r = RUN_STDIN(HEADER "\"short\" \"v\" -1\n\"k\" \""
			     "0123456789012345678901234567890123456789"
			     "0123456789012345678901234567890123456789\" -1\n"
			     "END 2\n",
		      "restore", tu_name, "-");
	assert_code(r, 6);
	assert_has(r.err,
		   "(stdin):3: value is 80 bytes, the header's value_max is 64");
	tu_assert_missing_str(tu_kv, "short");
	tu_assert_missing_str(tu_kv, "k");
}

/*
 * All or nothing. A store of 16 slots whose limit is its initial size
 * cannot grow its table: 24 keys do not fit. Restored into it, nothing
 * stays of the dump, and the keys it named are as they were (value and
 * TTL); a dump that fits then restores whole.
 */
static void write_keys(const char *path, int from, int n)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs(HEADER, f);
	for (int i = from; i < from + n; i++)
		fprintf(f, "\"k%d\" \"new%d\" -1\n", i, i);
	fprintf(f, "END %d\n", n);
	cr_assert_eq(fclose(f), 0);
}

Test(shmctl_dump, restore_into_a_store_too_small_writes_nothing_then_fits)
{
	struct shmkv_config cfg = tu_config(16, 16, 64, 196608);
	char path[64], k[8], v[16];
	int64_t ms = 0;
	struct run r;

	cfg.max_memory = tu_initial_footprint(&cfg);
	ctl_recreate(&cfg);
	SET("keep", "mine");
	ctl_set_kv(LIT("k3"), LIT("old"), 600000);
	SET("k5", "12");
	ctl_temp_path(path, sizeof(path));
	write_keys(path, 0, 24);
	r = RUN("restore", tu_name, path);
	assert_code(r, 3);
	/* The library's words for it may change: its stable part. */
	assert_has(r.err, "table full");
	assert_has(r.err, ": nothing restored (the dump does not fit; the ");
	assert_has(r.err, " keys written before are as they were)");
	cr_assert_str_empty(r.out, "%s", r.out);
	tu_assert_get_str(tu_kv, "keep", "mine");
	tu_assert_get_str(tu_kv, "k3", "old");
	tu_assert_ok(shmkv_pttl(tu_kv, LIT("k3"), &ms));
	cr_assert(ms > 0 && ms <= 600000, "k3's TTL: %" PRId64, ms);
	tu_assert_get_str(tu_kv, "k5", "12");
	for (int i = 0; i < 24; i++)
		if (i != 3 && i != 5)
			tu_assert_missing(tu_kv, k,
					  tu_fmt(k, sizeof(k), "k", i));
	assert_reply(RUN("dbsize", tu_name), 0, "3\n");
	/* Eight keys fit beside the three: restored whole. */
	write_keys(path, 0, 8);
	r = RUN("restore", tu_name, path);
	assert_code(r, 0);
	assert_has(r.out, "restored 8 keys into ");
	for (int i = 0; i < 8; i++)
		tu_assert_get(tu_kv, k, tu_fmt(k, sizeof(k), "k", i), v,
			      tu_fmt(v, sizeof(v), "new", i));
	tu_assert_get_str(tu_kv, "keep", "mine");
	assert_reply(RUN("dbsize", tu_name), 0, "9\n");
}

/* Value memory too small for the dump's values (one 64 KiB page for the
 * class of 100-byte values: 512 blocks), in a store restore creates: it
 * is removed, nothing stays. */
Test(shmctl_dump, restore_into_a_new_store_too_small_leaves_no_store)
{
	struct shmkv_config cfg = tu_config(1024, 16, 100, 196608);
	char path[64], copy[TU_NAME_CAP], *val = tu_fill(100, 'x');
	FILE *f;
	struct run r;

	ctl_temp_path(path, sizeof(path));
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"SHMKV-DUMP 1 slots=1024 key_max=16 value_max=100 "
		"probe_limit=1024 value_memory=196608 max_memory=%" PRIu64
		" mode=0600\n",
		tu_initial_footprint(&cfg));
	for (int i = 0; i < 600; i++)
		fprintf(f, "\"k%d\" \"%.100s\" -1\n", i, val);
	fprintf(f, "END 600\n");
	cr_assert_eq(fclose(f), 0);
	tu_make_name(copy, "small");
	r = RUN("restore", copy, path);
	assert_code(r, 3);
	/* The 513th value (line 514) is the first with no block. */
	assert_has(r.err, ":514: ");
	assert_has(r.err, "nothing restored (the dump does not fit; the store "
			  "restore created is removed)");
	cr_assert(!ctl_shm_exists(copy), "%s stayed", copy);
}

/* The man page's DUMP FORMAT example, as printed (the wrapped header joined,
 * roff's escapes undone), is a dump restore takes. */
static char *man_example(void)
{
	FILE *f = fopen(SHMKV_SOURCE_DIR "/tools/shmctl.1", "r");
	static char out[4096];
	char line[512];
	size_t n = 0;
	bool in = false;

	cr_assert_not_null(f, "tools/shmctl.1");
	out[0] = '\0';
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "SHMKV-DUMP", 10) == 0)
			in = true;
		if (!in)
			continue;
		if (strncmp(line, ".RE", 3) == 0)
			break;
		for (char *p = line; *p != '\0'; p++) {
			if (p[0] == '\\' && p[1] == 'e') {
				/* " \e" before the newline: a wrapped line. */
				if (p[2] == '\n') {
					p += 2;
					continue;
				}
				out[n++] = '\\';
				p++;
			} else if (p[0] == '\\' && p[1] == '-') {
				out[n++] = '-';
				p++;
			} else {
				out[n++] = *p;
			}
			cr_assert_lt(n, 4000);
		}
	}
	fclose(f);
	out[n] = '\0';
	cr_assert(in, "no example in tools/shmctl.1");
	return out;
}

Test(shmctl_dump, the_man_pages_example_restores)
{
	char path[] = "/tmp/shmkv-man-dump-XXXXXX", name[TU_NAME_CAP];
	char *text = man_example();
	int fd = mkstemp(path);
	struct shmkv_value v = tu_value(16);
	int64_t ttl = 0;
	struct run r;
	shmkv_t *kv;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	tu_make_name(name, "man");
	r = RUN("restore", name, path);
	unlink(path);
	assert_code(r, 0);
	kv = tu_open(name, 0);
	tu_assert_get_str(kv, "plain", "value");
	tu_assert_rc(shmkv_get(kv, LIT("nul\0key"), &v), 1);
	tu_assert_value_(v, "line\n\xff", 6);
	tu_assert_ok(shmkv_pttl(kv, LIT("nul\0key"), &ttl));
	cr_assert(ttl > 0 && ttl <= 59977, "pttl %lld", (long long)ttl);
	shmkv_close(kv);
}
