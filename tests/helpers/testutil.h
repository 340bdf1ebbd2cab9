/*
 * testutil.h - shared helpers for the Criterion unit tests.
 *
 * Criterion runs every test in its own process, so the helpers keep their
 * state in globals: the store a test works on (tu_kv, tu_name), the names
 * it created (unlinked by tu_teardown(), at exit, and on a crash), and the
 * buffers it allocated.
 *
 * Assertions are macros so that a failure reports the test's own line.
 */
#ifndef SHMKV_TESTUTIL_H
#define SHMKV_TESTUTIL_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "shmkv.h"

/* A string literal as the (pointer, length) pair every command takes. */
#define LIT(s) (s), (sizeof(s) - 1)

/* Capacity of a store-name buffer, terminating NUL included. */
#define TU_NAME_CAP (SHMKV_NAME_MAX + 1)

/* The store the suite's .init created, and its name. */
extern shmkv_t *tu_kv;
extern char tu_name[TU_NAME_CAP];

/* Geometry of the store tu_setup() creates: small enough that the suites
 * can run in parallel, large enough that no test fills it by accident. */
#define TU_SLOTS     1024u
#define TU_KEY_MAX   64u
#define TU_VALUE_MAX 1024u
/* A string too long to live in the slot of any key of such a store (its
 * slots are 128 bytes, 36 of them fixed): its value is a block. */
#define TU_BLOCK_TEXT                                                          \
	"a string long enough that no slot of a store of key_max 64 can "      \
	"keep it inline, so that it lives in a value block"

/* Suite hooks: .init = tu_setup creates tu_kv; .fini = tu_teardown closes
 * it and unlinks every name the test created. */
void tu_setup(void);
void tu_teardown(void);

/* A config with the given fields and every other field 0 (default). */
struct shmkv_config tu_config(uint32_t slots, uint32_t key_max,
			      uint32_t value_max, uint64_t value_memory);

/* Writes a fresh store name into @name: "/shmkv-test-<pid>-<n>-<suite>-
 * <test>[-tag]", cut to SHMKV_NAME_MAX, and registers it for unlinking. */
void tu_make_name(char name[TU_NAME_CAP], const char *tag);

/* Registers @name (a /dev/shm name) to be unlinked when the test ends. */
void tu_track(const char *name);

/* Creates a store under a fresh name (written to @name) and asserts that
 * creation succeeded. @cfg may be NULL for the defaults. Test stores do
 * not grow: a config without max_memory gets its initial size as the limit
 * (so tests of a full store stay full, and the file has no sparse
 * reservation). tu_create_growing keeps the config as it is. */
shmkv_t *tu_create(const struct shmkv_config *cfg, char name[TU_NAME_CAP]);
shmkv_t *tu_create_growing(const struct shmkv_config *cfg,
			   char name[TU_NAME_CAP]);
/*
 * Runs @child(@name) in a forked process that mounts a private tmpfs with
 * @options on /dev/shm first (a mount namespace of its own: root only),
 * and checks that it exited on its own. Where the mount is refused, the
 * test is skipped, saying that @untested was not tested here.
 * Return: the child's exit status.
 */
int tu_in_private_shm(const char *options, int (*child)(const char *name),
		      const char *name, const char *untested);
/* In such a child: takes every page /dev/shm has left, into a file of its
 * own. Return: whether /dev/shm is full now. */
bool tu_shm_fill(void);

/*
 * Writer lanes killed at random: starts @lanes writer processes with
 * @spawn(lane, 0, ctx), then SIGKILLs a random lane's writer (after up to
 * @pause_us) until @kills_max kills were sent, restarting each killed one
 * with @spawn(lane, n, ctx) (n: the restarts so far, 1 on), until every
 * lane's writer has exited 0 (asserted). Return: the writers that died.
 */
unsigned tu_kill_lanes(unsigned lanes, unsigned kills_max, unsigned pause_us,
		       pid_t (*spawn)(unsigned lane, unsigned n, void *ctx),
		       void *ctx);
/* As tu_kill_lanes, but each kill is sent only if @when(ctx) says so
 * after its pause (a lane is then left alone until the next try): kills
 * that land in a phase the test aims at (a growth of the table under
 * way). Return: the writers that died. */
unsigned
tu_kill_lanes_when(unsigned lanes, unsigned kills_max, unsigned pause_us,
		   pid_t (*spawn)(unsigned lane, unsigned n, void *ctx),
		   bool (*when)(void *ctx), void *ctx);

/* The shared memory a store made from @cfg uses at creation, and with
 * @pages value pages ready. */
uint64_t tu_initial_footprint(const struct shmkv_config *cfg);
uint64_t tu_footprint(const struct shmkv_config *cfg, uint32_t pages);

/* Opens @name and asserts that it succeeded. */
shmkv_t *tu_open(const char *name, unsigned flags);

/* The store's geometry, asserting that shmkv_get_config() succeeded. */
struct shmkv_config tu_get_config(const shmkv_t *kv);

/* A value buffer of @cap bytes, filled with TU_CANARY so that writes past
 * the value can be seen. Freed when the test ends. cap 0 gives buf NULL. */
#define TU_CANARY 0xa5
struct shmkv_value tu_value(size_t cap);
/* A value buffer of the store's value_max. */
struct shmkv_value tu_value_for(const shmkv_t *kv);
/* A value_max buffer shared by the assertion macros: valid until the next
 * call, so not for values a test keeps. */
struct shmkv_value tu_scratch_for(const shmkv_t *kv);

/* "k<i>"-style keys and values built into caller buffers; return length. */
size_t tu_fmt(char *buf, size_t cap, const char *prefix, unsigned long i);

/* A buffer of @len bytes of @c (freed when the test ends). */
char *tu_fill(size_t len, int c);

/* Wall-clock Unix time in milliseconds, as the store's deadlines use. */
int64_t tu_now_ms(void);
void tu_sleep_ms(unsigned ms);

/* The state letter of @pid in /proc/<pid>/stat ('R', 'S', 'Z'...; for a
 * multi-threaded process, its main thread's), or '?' if unreadable. */
char tu_proc_state(int pid);
/* Polls (1 ms apart, at most 10 s) until tu_proc_state(@pid) is @want;
 * asserts that it got there. */
void tu_wait_proc_state(int pid, char want);

/* "/dev/shm<name>" into @path (at least TU_PATH_CAP bytes). */
#define TU_PATH_CAP (TU_NAME_CAP + 16)
void tu_shm_path(const char *name, char path[TU_PATH_CAP]);

/* Raw access to a segment file, bypassing the library. Each asserts. */
void tu_shm_write_new(const char *name, const void *data, size_t len);
void tu_shm_pwrite(const char *name, const void *data, size_t len, off_t off);
void tu_shm_pread(const char *name, void *data, size_t len, off_t off);
void tu_shm_truncate(const char *name, off_t len);
off_t tu_shm_size(const char *name);
/* The bytes of /dev/shm@name that hold memory (st_blocks). */
off_t tu_shm_allocated(const char *name);
/* How many of shmkv_create's named working files ("/dev/shm/.shmkv-new-
 * <pid>-*") process @pid has in /dev/shm. */
unsigned tu_count_new_files(int pid);
/* The whole file in a malloc'd buffer (freed when the test ends). */
void *tu_shm_read_all(const char *name, size_t *len);

/*
 * Snapshot of a store's visible content: every live key (found by
 * shmkv_scan), its value, whether it has a TTL, and the live-key count
 * from shmkv_stats. Used to assert that a failed command changed nothing.
 */
struct tu_snap;
struct tu_snap *tu_snap_take(shmkv_t *kv);
/* 0 if @kv still holds what @snap recorded; else -1 and a reason in @why.
 * TTLs compare by presence, so keys with TTLs must outlive the test. */
int tu_snap_diff(shmkv_t *kv, const struct tu_snap *snap, char *why,
		 size_t cap);
size_t tu_snap_count(const struct tu_snap *snap);

/* Stores @n keys "base<i>" = "value<i>", every third with an hour's TTL,
 * as background content for "nothing changed" assertions. */
void tu_populate(shmkv_t *kv, unsigned n);

/* Name of a negative errno ("-ENOENT") or the number itself otherwise. */
const char *tu_rcname(int rc);

/*
 * Assertions.
 */

/* @expr returns exactly @want (a result or a negative errno). */
#define tu_assert_rc(expr, want)                                               \
	do {                                                                   \
		int tu_rc_ = (expr);                                           \
		int tu_want_ = (want);                                         \
		cr_assert_eq(tu_rc_, tu_want_, "%s\n  got %s, expected %s",    \
			     #expr, tu_rcname(tu_rc_), tu_rcname(tu_want_));   \
	} while (0)

#define tu_assert_ok(expr) tu_assert_rc(expr, 0)

/* @v (a struct shmkv_value) holds exactly the @n bytes at @p. */
#define tu_assert_value_(v, p, n)                                              \
	do {                                                                   \
		const struct shmkv_value *tu_v_ = &(v);                        \
		size_t tu_n_ = (n);                                            \
		cr_assert_eq(tu_v_->len, tu_n_,                                \
			     "value length %zu, expected %zu", tu_v_->len,     \
			     tu_n_);                                           \
		cr_assert(tu_n_ == 0 || !memcmp(tu_v_->buf, (p), tu_n_),       \
			  "value is \"%.*s\", expected \"%.*s\"",              \
			  (int)(tu_n_ > 64 ? 64 : tu_n_),                      \
			  (const char *)tu_v_->buf,                            \
			  (int)(tu_n_ > 64 ? 64 : tu_n_), (const char *)(p));  \
	} while (0)

#define tu_assert_value_str(v, s) tu_assert_value(v, (s), strlen(s))

/* GET of (@k, @klen) returns 1 and exactly the @n bytes at @p. */
#define tu_assert_get_(kv, k, klen, p, n)                                      \
	do {                                                                   \
		struct shmkv_value tu_g_ = tu_scratch_for(kv);                 \
		tu_assert_rc(shmkv_get((kv), (k), (klen), &tu_g_), 1);         \
		tu_assert_value(tu_g_, (p), (n));                              \
	} while (0)

/* GET of the string key @k returns the string @s. */
#define tu_assert_get_str(kv, k, s)                                            \
	tu_assert_get(kv, (k), strlen(k), (s), strlen(s))

/* The key is absent: GET gives 0, EXISTS gives 0, PTTL gives -2. */
#define tu_assert_missing_(kv, k, klen)                                        \
	do {                                                                   \
		struct shmkv_value tu_m_ = tu_scratch_for(kv);                 \
		int64_t tu_ttl_ = 0;                                           \
		tu_assert_rc(shmkv_get((kv), (k), (klen), &tu_m_), 0);         \
		tu_assert_rc(shmkv_exists((kv), (k), (klen)), 0);              \
		tu_assert_ok(shmkv_pttl((kv), (k), (klen), &tu_ttl_));         \
		cr_assert_eq(tu_ttl_, -2, "PTTL of a missing key is %lld",     \
			     (long long)tu_ttl_);                              \
	} while (0)

#define tu_assert_missing_str(kv, k) tu_assert_missing(kv, (k), strlen(k))

/* PTTL of the key is exactly @want (-1 or -2). */
#define tu_assert_pttl_is_(kv, k, klen, want)                                  \
	do {                                                                   \
		int64_t tu_p_ = 0;                                             \
		tu_assert_ok(shmkv_pttl((kv), (k), (klen), &tu_p_));           \
		cr_assert_eq(tu_p_, (int64_t)(want),                           \
			     "PTTL %lld, expected %lld", (long long)tu_p_,     \
			     (long long)(want));                               \
	} while (0)

/* PTTL of the key lies in [@lo, @hi] milliseconds. */
#define tu_assert_pttl_in_(kv, k, klen, lo, hi)                                \
	do {                                                                   \
		int64_t tu_p_ = 0;                                             \
		tu_assert_ok(shmkv_pttl((kv), (k), (klen), &tu_p_));           \
		cr_assert(tu_p_ >= (int64_t)(lo) && tu_p_ <= (int64_t)(hi),    \
			  "PTTL %lld, expected in [%lld, %lld]",               \
			  (long long)tu_p_, (long long)(lo), (long long)(hi)); \
	} while (0)

/*
 * Public spellings: variadic so that LIT("k") (one argument that expands to
 * two) can be passed where a pointer and a length are expected.
 */
#define tu_assert_value(v, ...)	   tu_assert_value_(v, __VA_ARGS__)
#define tu_assert_get(kv, ...)	   tu_assert_get_(kv, __VA_ARGS__)
#define tu_assert_missing(kv, ...) tu_assert_missing_(kv, __VA_ARGS__)
#define tu_assert_pttl_is(kv, ...) tu_assert_pttl_is_(kv, __VA_ARGS__)
#define tu_assert_pttl_in(kv, ...) tu_assert_pttl_in_(kv, __VA_ARGS__)

/* The store holds what @snap recorded. */
#define tu_assert_unchanged(kv, snap)                                          \
	do {                                                                   \
		char tu_why_[512];                                             \
		cr_assert_eq(                                                  \
			tu_snap_diff((kv), (snap), tu_why_, sizeof(tu_why_)),  \
			0, "store changed: %s", tu_why_);                      \
	} while (0)

#endif /* SHMKV_TESTUTIL_H */
