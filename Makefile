# Makefile for shmkv, in the style of liburing's: plain GNU make, user
# overridable CFLAGS, required flags added with override, sources picked up
# by wildcard so a new file needs no edit here.
#
#   make                    library, tools, benchmarks and test binaries
#   make test               install missing deps, build, run the tests
#   make SANITIZE=address,undefined test   the same under ASan+UBSan,
#                           built into build-$(SANITIZE) (also: thread)
#   make install DESTDIR=/tmp/stage PREFIX=/usr
#   make V=1                show the commands
#   make WERROR=1           warnings are errors (always when CI=true)

.DEFAULT_GOAL := all

NAME := shmkv
# The header is the one place the version is written down.
VERSION := $(shell sed -n 's/^\#define SHMKV_VERSION_STRING "\(.*\)"/\1/p' \
	include/shmkv.h 2>/dev/null)
ifeq ($(VERSION),)
VERSION := 0.1.0
endif
MAJOR := $(firstword $(subst ., ,$(VERSION)))

prefix ?= /usr/local
PREFIX ?= $(prefix)
exec_prefix ?= $(PREFIX)
bindir ?= $(exec_prefix)/bin
libdir ?= $(exec_prefix)/lib
includedir ?= $(PREFIX)/include
datadir ?= $(PREFIX)/share
mandir ?= $(datadir)/man
pkgconfigdir ?= $(libdir)/pkgconfig

CC ?= cc
AR ?= ar
INSTALL ?= install
CLANG_FORMAT ?= clang-format

CFLAGS ?= -O2 -g
override CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes -fPIC -MMD -MP -Iinclude
# Debian puts liburcu's arch headers in the multiarch include dir, which
# the compiler searches anyway; ask pkg-config in case another system
# does not. Empty (and harmless) when pkg-config is not installed yet.
URCU_CFLAGS := $(shell pkg-config --cflags liburcu 2>/dev/null)
override CFLAGS += $(URCU_CFLAGS)

ifneq ($(filter true 1,$(CI))$(filter 1,$(WERROR)),)
override CFLAGS += -Werror
endif

# Crash points compiled in (src/fault.h; make FAULT=1): the library then
# reads SHMKV_CRASH_AT, so its objects get their own build dir too.
ifeq ($(FAULT),1)
BUILD ?= build-fault$(if $(SANITIZE),-$(SANITIZE))
override CFLAGS += -DSHMKV_FAULT_INJECTION
endif

# Sanitized objects must never mix with normal ones: separate build dir.
ifneq ($(SANITIZE),)
BUILD ?= build-$(SANITIZE)
override CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
# UBSan only prints by default: make undefined behaviour fail the test.
SAN_COMMA := ,
ifneq ($(filter undefined,$(subst $(SAN_COMMA), ,$(SANITIZE))),)
override CFLAGS += -fno-sanitize-recover=undefined
endif
else
BUILD ?= build
endif

# Tests and benchmarks find the programs they exec (workers, tools) here.
PROG_CFLAGS := -DSHMKV_BUILD_DIR='"$(abspath $(BUILD))"'

# shmctl's prompt uses libedit when its header is there (libedit-dev);
# LIBEDIT=0 builds without it, LIBEDIT=1 insists.
ifeq ($(origin LIBEDIT),undefined)
LIBEDIT := $(shell echo '\#include <editline/readline.h>' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo 1)
endif
ifeq ($(LIBEDIT),1)
SHMCTL_CFLAGS := -DSHMCTL_WITH_LIBEDIT
SHMCTL_LIBS := -ledit
endif

LIB_LIBS := -lpthread
TOOL_LIBS := -lpthread -lm
BENCH_LIBS := -lhiredis -lurcu-cds -lurcu -lurcu-common -lpthread -lm
TEST_LIBS := -lcriterion -lpthread -lm
TEST_PROG_LIBS := -lcriterion -lhiredis -lpthread -lm

# Quiet unless V=1 or make -s (short options are the first word).
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
V := 0
QUIET := 1
endif
ifeq ($(V),1)
Q :=
quiet =
else
Q := @
ifeq ($(QUIET),1)
quiet =
else
quiet = @printf '  %-6s %s\n' $(1) $(2);
endif
endif

# ---------------------------------------------------------------------------
# Sources

LIB_SRCS := $(sort $(wildcard src/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIB_MAP := src/libshmkv.map
LIB_A := $(BUILD)/libshmkv.a
LIB_SO_REAL := $(BUILD)/libshmkv.so.$(VERSION)
LIB_SO_MAJOR := $(BUILD)/libshmkv.so.$(MAJOR)
LIB_SO := $(BUILD)/libshmkv.so
LIBS_ALL := $(LIB_A) $(LIB_SO_REAL) $(LIB_SO_MAJOR) $(LIB_SO)

SHMCTL_SRCS := $(if $(wildcard tools/shmctl.c),\
	tools/shmctl.c $(sort $(wildcard tools/shmctl_*.c)))
SHMCTL := $(if $(SHMCTL_SRCS),$(BUILD)/shmctl)
DEMO := $(if $(wildcard examples/shmkv-demo.c),$(BUILD)/shmkv-demo)
DEMO_WORKER := $(if $(wildcard examples/shmkv-demo-worker.c),\
	$(BUILD)/shmkv-demo-worker)
TOOLS := $(SHMCTL) $(DEMO) $(DEMO_WORKER)

BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_LIB_SRCS := $(sort $(wildcard bench/lib/*.c))
BENCH_LIB_OBJS := $(BENCH_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
BENCHES := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

UNIT_SRCS := $(sort $(wildcard tests/unit/*/test_*.c))
HELPER_SRCS := $(sort $(wildcard tests/helpers/*.c))
HELPER_OBJS := $(HELPER_SRCS:%.c=$(BUILD)/obj/%.o)
HELPER_A := $(if $(HELPER_OBJS),$(BUILD)/tests/libhelpers.a)
TEST_PROG_SRCS := $(sort $(wildcard tests/programs/*.c))
TEST_PROGS := $(TEST_PROG_SRCS:tests/programs/%.c=$(BUILD)/tests/%)
UNIT := $(if $(UNIT_SRCS),$(BUILD)/tests/unit)

FORMAT_FILES = $(sort $(shell find include src tools bench tests \
	-path tests/fuzz/out -prune -o -name '*.[ch]' -print 2>/dev/null))

ALL_OBJS := $(LIB_OBJS) $(SHMCTL_SRCS:%.c=$(BUILD)/obj/%.o) \
	$(DEMO:$(BUILD)/%=$(BUILD)/obj/examples/%.o) \
	$(DEMO_WORKER:$(BUILD)/%=$(BUILD)/obj/examples/%.o) \
	$(BENCH_SRCS:%.c=$(BUILD)/obj/%.o) $(BENCH_LIB_OBJS) \
	$(UNIT_SRCS:%.c=$(BUILD)/obj/%.o) $(HELPER_OBJS) \
	$(TEST_PROG_SRCS:%.c=$(BUILD)/obj/%.o)

# Objects depend on the flags they were built with: a build with other
# flags (CI=true adds -Werror) recompiles instead of trusting old objects.
# Binaries depend on the list of sources: a deleted source file relinks
# them instead of leaving its code in the library.
FLAGS_FILE := $(BUILD)/.flags
FLAGS_NOW := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LIBS) $(SHMCTL_CFLAGS)
SRCS_FILE := $(BUILD)/.sources
SRCS_NOW := $(ALL_OBJS)
NO_BUILD_GOALS := clean format format-check help deps uninstall

# stamp: file, content; rewrites file only when its content differs.
eq = $(and $(findstring $(1),$(2)),$(findstring $(2),$(1)))
stamp = $(if $(call eq,$(file <$(1)),$(2)),,\
	$(shell mkdir -p $(dir $(1)))$(file >$(1),$(2)))
ifneq ($(filter-out $(NO_BUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
$(call stamp,$(FLAGS_FILE),$(FLAGS_NOW))
$(call stamp,$(SRCS_FILE),$(SRCS_NOW))
endif

# Only when removed after the check above (make clean all).
$(FLAGS_FILE) $(SRCS_FILE):
	@mkdir -p $(@D)
	@touch $@

# ---------------------------------------------------------------------------
# Build targets

.PHONY: all lib tools bench-build tests-build
all: lib tools bench-build tests-build

lib: $(LIBS_ALL)
tools: $(TOOLS)
bench-build: $(BENCHES)
tests-build: $(UNIT) $(TEST_PROGS)

$(BUILD)/obj/%.o: %.c $(FLAGS_FILE)
	@mkdir -p $(@D)
	$(call quiet,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Programs that exec our binaries learn where they are. Tests may include
# internal headers ("table.h") and their helpers; benchmarks theirs.
$(BUILD)/obj/tests/%.o: override CFLAGS += $(PROG_CFLAGS) -Itests -Isrc
$(BUILD)/obj/bench/%.o: override CFLAGS += $(PROG_CFLAGS) -Ibench
$(BUILD)/obj/tools/shmctl.o $(BUILD)/obj/tools/shmctl_%.o: \
	override CFLAGS += $(SHMCTL_CFLAGS)

$(LIB_A): $(LIB_OBJS) $(SRCS_FILE)
	@mkdir -p $(@D)
	$(Q)rm -f $@
	$(call quiet,AR,$@)$(AR) rcs $@ $(filter %.o,$^)

$(LIB_SO_REAL): $(LIB_OBJS) $(LIB_MAP) $(SRCS_FILE)
	@mkdir -p $(@D)
	$(call quiet,LINK,$@)$(CC) $(CFLAGS) -shared \
		-Wl,-soname,libshmkv.so.$(MAJOR) \
		-Wl,--version-script=$(LIB_MAP) -Wl,-z,defs \
		$(LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS) $(LIBS)

$(LIB_SO_MAJOR): $(LIB_SO_REAL)
	$(call quiet,LN,$@)ln -sf $(notdir $<) $@

$(LIB_SO): $(LIB_SO_MAJOR)
	$(call quiet,LN,$@)ln -sf $(notdir $<) $@

# link-prog: objects, extra libraries
define link-prog
@mkdir -p $(@D)
$(call quiet,LINK,$@)$(CC) $(CFLAGS) $(LDFLAGS) -Wl,--as-needed \
	-o $@ $(filter %.o %.a,$(1)) $(2) $(LIBS)
endef

$(SHMCTL): $(SHMCTL_SRCS:%.c=$(BUILD)/obj/%.o) $(LIB_A) $(SRCS_FILE)
	$(call link-prog,$^,$(SHMCTL_LIBS) $(TOOL_LIBS))

$(BUILD)/shmkv-demo $(BUILD)/shmkv-demo-worker: $(BUILD)/%: \
		$(BUILD)/obj/examples/%.o $(LIB_A) $(SRCS_FILE)
	$(call link-prog,$^,$(TOOL_LIBS))

$(BENCHES): $(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BENCH_LIB_OBJS) \
		$(LIB_A) $(SRCS_FILE)
	$(call link-prog,$^,$(BENCH_LIBS))

ifneq ($(HELPER_A),)
$(HELPER_A): $(HELPER_OBJS) $(SRCS_FILE)
	@mkdir -p $(@D)
	$(Q)rm -f $@
	$(call quiet,AR,$@)$(AR) rcs $@ $(filter %.o,$^)
endif

# Standalone test programs take only the helpers they call (an archive).
$(TEST_PROGS): $(BUILD)/tests/%: $(BUILD)/obj/tests/programs/%.o $(HELPER_A) $(LIB_A) \
		$(SRCS_FILE)
	$(call link-prog,$^,$(TEST_PROG_LIBS))

# One Criterion binary; the tests exec the standalone programs and tools,
# so those are built first.
ifneq ($(UNIT),)
$(UNIT): $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o) $(HELPER_OBJS) $(LIB_A) \
		$(SRCS_FILE) | $(TEST_PROGS) $(TOOLS)
	$(call link-prog,$^,$(TEST_LIBS))
endif

-include $(ALL_OBJS:.o=.d)

# ---------------------------------------------------------------------------
# Running things. Each installs missing deps, then builds in a sub-make so
# the build sees what was just installed (and never races the install).

SUBMAKE = $(MAKE) --no-print-directory
# all, without "Nothing to be done" when everything is up to date.
.PHONY: build-all
build-all: all
	@:
RUN_ENV = BUILD='$(BUILD)' SANITIZE='$(SANITIZE)' $(if $(QUICK),QUICK='$(QUICK)')
# run-script: script; runs it with bash if it is not executable.
run-script = if [ -x $(1) ]; then $(RUN_ENV) ./$(1); \
	else $(RUN_ENV) bash $(1); fi

.PHONY: deps test bench bench-quick demo
deps:
	$(Q)sh scripts/install-deps.sh

test: deps
	$(Q)$(SUBMAKE) build-all
ifneq ($(wildcard tests/run-tests.sh),)
	$(Q)$(call run-script,tests/run-tests.sh)
else ifneq ($(UNIT),)
	$(Q)$(RUN_ENV) $(UNIT)
else
	@echo "test: no tests/run-tests.sh and no tests/unit/*/test_*.c" >&2; exit 1
endif

# Benchmarks need only the library and themselves (build-bench, below).
bench: deps
	$(Q)$(SUBMAKE) build-bench
ifneq ($(wildcard bench/run.sh),)
	$(Q)$(call run-script,bench/run.sh)
else
	@echo "bench: no bench/run.sh; binaries are in $(BUILD)/bench" >&2
endif

bench-quick:
	$(Q)$(SUBMAKE) bench QUICK=1

demo: deps
	$(Q)$(SUBMAKE) build-all
ifneq ($(DEMO),)
	$(Q)$(RUN_ENV) $(DEMO)
else
	@echo "demo: examples/shmkv-demo.c does not exist" >&2; exit 1
endif

# ---------------------------------------------------------------------------
# Install: uninstall is its mirror image. Both honour DESTDIR and PREFIX.

HEADERS := $(sort $(wildcard include/*.h))
MANPAGE := $(wildcard tools/shmctl.1)
PC := $(BUILD)/$(NAME).pc

# Regenerated on every install, so a changed PREFIX is never stale.
.PHONY: $(PC)
$(PC): src/$(NAME).pc.in
	@mkdir -p $(@D)
	$(call quiet,GEN,$@)sed -e 's|@prefix@|$(PREFIX)|g' \
		-e 's|@exec_prefix@|$(exec_prefix)|g' \
		-e 's|@libdir@|$(libdir)|g' \
		-e 's|@includedir@|$(includedir)|g' \
		-e 's|@version@|$(VERSION)|g' $< > $@

.PHONY: install uninstall
install: $(LIBS_ALL) $(SHMCTL) $(PC)
	$(INSTALL) -d $(DESTDIR)$(libdir) $(DESTDIR)$(includedir) \
		$(DESTDIR)$(pkgconfigdir)
	$(INSTALL) -m 644 $(LIB_A) $(DESTDIR)$(libdir)/
	$(INSTALL) -m 755 $(LIB_SO_REAL) $(DESTDIR)$(libdir)/
	ln -sf libshmkv.so.$(VERSION) $(DESTDIR)$(libdir)/libshmkv.so.$(MAJOR)
	ln -sf libshmkv.so.$(MAJOR) $(DESTDIR)$(libdir)/libshmkv.so
	$(INSTALL) -m 644 $(HEADERS) $(DESTDIR)$(includedir)/
	$(INSTALL) -m 644 $(PC) $(DESTDIR)$(pkgconfigdir)/
ifneq ($(SHMCTL),)
	$(INSTALL) -d $(DESTDIR)$(bindir)
	$(INSTALL) -m 755 $(SHMCTL) $(DESTDIR)$(bindir)/
endif
ifneq ($(MANPAGE),)
	$(INSTALL) -d $(DESTDIR)$(mandir)/man1
	$(INSTALL) -m 644 $(MANPAGE) $(DESTDIR)$(mandir)/man1/
endif

uninstall:
	rm -f $(DESTDIR)$(libdir)/libshmkv.a
	rm -f $(DESTDIR)$(libdir)/libshmkv.so.$(VERSION)
	rm -f $(DESTDIR)$(libdir)/libshmkv.so.$(MAJOR)
	rm -f $(DESTDIR)$(libdir)/libshmkv.so
	rm -f $(addprefix $(DESTDIR)$(includedir)/,$(notdir $(HEADERS)))
	rm -f $(DESTDIR)$(pkgconfigdir)/$(NAME).pc
ifneq ($(SHMCTL),)
	rm -f $(DESTDIR)$(bindir)/shmctl
endif
ifneq ($(MANPAGE),)
	rm -f $(DESTDIR)$(mandir)/man1/$(notdir $(MANPAGE))
endif

# ---------------------------------------------------------------------------
# Housekeeping

.PHONY: clean format format-check help
# make clean all: clean must finish before anything is built, even with -j.
ifneq ($(filter clean,$(MAKECMDGOALS)),)
.NOTPARALLEL:
endif

clean:
	rm -rf build build-*/

format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check:
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES)

help:
	@echo 'Targets:'
	@echo '  all (default)  library, tools, benchmarks, test binaries in $(BUILD)/'
	@echo '  lib tools bench-build tests-build   parts of all'
	@echo '  test           deps, build, run tests/run-tests.sh or the unit tests'
	@echo '  bench          deps, build, run bench/run.sh (bench-quick: QUICK=1)'
	@echo '  demo           deps, build, run $(BUILD)/shmkv-demo'
	@echo '  torture        deps, FAULT=1 build, crash torture for TORTURE_SECONDS (60),'
	@echo '                 then the lifecycle soak for LIFECYCLE_SECONDS (120)'
	@echo '  deps           install missing build/test dependencies (Debian)'
	@echo '  install uninstall   honour DESTDIR, PREFIX (now $(PREFIX)), libdir'
	@echo '  format format-check clean'
	@echo 'Variables: CFLAGS, LDFLAGS, LIBS, V=1, WERROR=1 (implied by CI=true),'
	@echo '  SANITIZE=address,undefined|thread (builds into build-$$SANITIZE;'
	@echo '  Criterion itself cannot run under thread: Criterion issue #274),'
	@echo '  LIBEDIT=0|1 (shmctl line editing; default: if libedit-dev is installed)'
	@echo '  FAULT=1 (crash points compiled in; builds into build-fault)'

# ---------------------------------------------------------------------------
# Crash torture (tests/torture.c): workers SIGKILLed at random moments and,
# in this FAULT=1 build, at the crash points; then recover, check, audit.

TORTURE_SECONDS ?= 60
# Then the lifecycle soak (tests/lifecycle_soak.c): short-lived processes
# leaving every way, no recovery; the store must come back to a steady state.
LIFECYCLE_SECONDS ?= 120
.PHONY: torture torture-run
torture: deps
	$(Q)$(SUBMAKE) FAULT=1 torture-run

torture-run: $(BUILD)/tests/torture $(BUILD)/tests/torture_worker \
		$(BUILD)/tests/lifecycle_soak $(BUILD)/tests/lifecycle_worker
	$(Q)$(BUILD)/tests/torture --seconds $(TORTURE_SECONDS)
	$(Q)$(BUILD)/tests/lifecycle_soak --seconds $(LIFECYCLE_SECONDS) \
		--rounds 4

# ---------------------------------------------------------------------------
# Fuzzing (tests/fuzz/): libFuzzer harnesses, built with clang under ASan
# and UBSan into build-fuzz/ from the library's and the tool's sources
# (never mixing objects with the other builds). tests/fuzz/run.sh runs them.
#   make fuzz                  build, replay the corpora, fuzz each harness
#                              FUZZ_TIME seconds (10)
#   make fuzz FUZZ_TIME=300 FUZZ_ONLY=fuzz_attach
#   make fuzz-build            build only

FUZZ_CC ?= clang
FUZZ_TIME ?= 10
FUZZ_BUILD := build-fuzz
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_HELPER_OBJS := $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,\
	$(sort $(wildcard tests/fuzz/fz_*.c)))
FUZZ_LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_TOOL_OBJS := $(SHMCTL_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow \
	-MMD -MP -Iinclude -Isrc -Itools -Itests/fuzz $(URCU_CFLAGS) $(FUZZ_SAN)
# The guard zones around mapped segments (tests/fuzz/fz_guard.c).
FUZZ_LDFLAGS := -fsanitize=fuzzer -Wl,--wrap=mmap,--wrap=munmap
# Only our own files are held to -Werror here: clang may warn where the
# gcc build of src/ and tools/ (which has -Werror) does not.
FUZZ_WERROR := $(if $(filter true 1,$(CI))$(filter 1,$(WERROR)),-Werror)
# Objects depend on the flags they were built with, as above.
FUZZ_FLAGS_FILE := $(FUZZ_BUILD)/.flags
ifneq ($(filter fuzz-build $(FUZZ_BINS),$(MAKECMDGOALS)),)
$(call stamp,$(FUZZ_FLAGS_FILE),$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_WERROR))
endif
$(FUZZ_FLAGS_FILE):
	@mkdir -p $(@D)
	@touch $@

$(FUZZ_BUILD)/obj/%.o: %.c $(FUZZ_FLAGS_FILE)
	@mkdir -p $(@D)
	$(call quiet,FUZZCC,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) \
		-fsanitize=fuzzer-no-link -c -o $@ $<
$(FUZZ_BUILD)/obj/tests/fuzz/%.o: FUZZ_CFLAGS += $(FUZZ_WERROR)
# libFuzzer has the main(); the tool's is renamed out of the way.
$(FUZZ_BUILD)/obj/tools/shmctl.o: FUZZ_CFLAGS += -Dmain=shmctl_main

# The tool's files for the harnesses that call it; fuzz_restore includes
# shmctl_restore.c and shmctl_dump.c itself, to reach their statics.
$(FUZZ_BUILD)/fuzz_shmctl_args: FUZZ_EXTRA = $(FUZZ_TOOL_OBJS)
$(FUZZ_BUILD)/fuzz_restore: FUZZ_EXTRA = $(filter-out \
	%/shmctl_restore.o %/shmctl_dump.o,$(FUZZ_TOOL_OBJS))

$(FUZZ_BINS): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/tests/fuzz/%.o \
		$(FUZZ_HELPER_OBJS) $(FUZZ_LIB_OBJS) $(FUZZ_TOOL_OBJS)
	$(call quiet,LINK,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LDFLAGS) -o $@ \
		$< $(FUZZ_HELPER_OBJS) $(FUZZ_EXTRA) $(FUZZ_LIB_OBJS) \
		-lpthread -lm

-include $(wildcard $(FUZZ_BUILD)/obj/*/*.d $(FUZZ_BUILD)/obj/*/*/*.d)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

fuzz: deps
	$(Q)$(SUBMAKE) fuzz-build
	$(Q)FUZZ_BUILD=$(FUZZ_BUILD) bash tests/fuzz/run.sh \
		--time $(FUZZ_TIME) $(FUZZ_ONLY)

# ---------------------------------------------------------------------------
# What `make bench` builds: the library and the benchmarks, not the test
# binaries (so a test that does not compile cannot stop a benchmark run),
# without "Nothing to be done" when all is up to date.
.PHONY: build-bench
build-bench: lib bench-build
	@:

# ---------------------------------------------------------------------------
# Sanitizers and static analysis. Configuration: .clang-tidy,
# tests/cppcheck.supp, tests/tsan.supp; programs: tests/tsan_stress.c,
# tests/valgrind-shmctl.sh.
#   make lint            cppcheck and clang-tidy on src/ tools/ include/;
#                        any finding fails
#   make sanitize-test   unit suite, tsan_stress and diff_redis under
#                        ASan+UBSan (build-address,undefined/)
#   make tsan            tests/tsan_stress under ThreadSanitizer, built
#                        with clang (TSAN_CC) into build-thread-clang/:
#                        Criterion cannot run under TSan (Criterion #274)
#   make valgrind        every shmctl command under valgrind memcheck

NPROC := $(shell nproc 2>/dev/null || echo 2)
# -jN for a sub-make, unless this make already shares a jobserver.
SUB_J = $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(NPROC))

CPPCHECK ?= cppcheck
CLANG_TIDY ?= clang-tidy
LINT_SRCS = $(sort $(wildcard src/*.c tools/*.c))
LINT_CFLAGS = -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(URCU_CFLAGS) \
	$(SHMCTL_CFLAGS)

.PHONY: lint lint-run lint-cppcheck lint-tidy
lint: deps
	$(Q)$(SUBMAKE) lint-run
# -k: both tools report even when the first finds something.
lint-run:
	$(Q)$(SUBMAKE) -k lint-cppcheck lint-tidy

lint-cppcheck:
	$(call quiet,CPPCHECK,'src tools include')$(CPPCHECK) --quiet \
		--enable=warning,performance,portability,style --std=c11 \
		--error-exitcode=1 --inline-suppr -j$(NPROC) \
		--suppressions-list=tests/cppcheck.supp -D_GNU_SOURCE \
		-Iinclude -Isrc --template='{file}:{line}: {severity} ({id}): {message}' \
		src tools include

# One clang-tidy per file, in parallel; its "N warnings generated" (the
# count of diagnostics .clang-tidy filtered out) goes to /dev/null.
lint-tidy:
	$(call quiet,TIDY,'src tools include')printf '%s\n' $(LINT_SRCS) | \
		xargs -P $(NPROC) -I{} sh -c '$(CLANG_TIDY) --quiet "$$0" \
		-- $(LINT_CFLAGS) 2>/dev/null || \
		{ echo "lint: clang-tidy: findings in $$0" >&2; exit 1; }' {}

# Sanitizer reports must fail the run: UBSan only prints by default, and
# an error becomes an abort, which Criterion counts as a crashed test.
# Leaks are checked in the standalone programs; Criterion ignores the exit
# status its test processes give at exit, so there they are off.
SAN_UBSAN = UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
SAN_ENV = ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 $(SAN_UBSAN)
SAN_UNIT_ENV = ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 $(SAN_UBSAN)

.PHONY: sanitize-test sanitize-run sanitize-exec
sanitize-test: deps
	$(Q)$(SUBMAKE) sanitize-run
# BUILD is passed on: tests/run-tests.sh has the plain one in its
# environment, which would otherwise win over build-$(SANITIZE).
SAN_MAKE = $(SUBMAKE) SANITIZE=address,undefined BUILD=build-address,undefined
sanitize-run:
	$(Q)$(SAN_MAKE) $(SUB_J) tests-build tools
	$(Q)$(SAN_MAKE) sanitize-exec
sanitize-exec:
	$(Q)$(SAN_UNIT_ENV) $(BUILD)/tests/unit --jobs $(NPROC)
	$(Q)$(SAN_ENV) $(BUILD)/tests/tsan_stress --ops 20000
	$(Q)$(SAN_ENV) $(BUILD)/tests/diff_redis --seed 1 --ops 20000

# clang by default: gcc 12's TSan runtime often cannot restore the stack
# of a race's older access, and such a report escapes tests/tsan.supp.
TSAN_CC ?= clang
TSAN_BUILD ?= build-thread-$(TSAN_CC)
TSAN_SEEDS ?= 1 2 3
TSAN_OPS ?= 20000
# history_size=7: the longest access history, so that the stack of the
# older access of a race can be shown (and matched by tests/tsan.supp).
TSAN_ENV = TSAN_OPTIONS='suppressions=$(abspath tests/tsan.supp) \
	history_size=7 halt_on_error=0 exitcode=66'

.PHONY: tsan tsan-run tsan-exec
tsan: deps
	$(Q)$(SUBMAKE) tsan-run
tsan-run:
	$(Q)$(SUBMAKE) $(SUB_J) SANITIZE=thread CC=$(TSAN_CC) \
		BUILD=$(TSAN_BUILD) tsan-exec
# --own-handles 0: all threads on one mapping of the store, the only
# accesses TSan can relate (it tracks virtual addresses; see tsan_stress.c).
tsan-exec: $(BUILD)/tests/tsan_stress
	$(Q)for seed in $(TSAN_SEEDS); do \
		$(TSAN_ENV) $(BUILD)/tests/tsan_stress --seed $$seed \
			--ops $(TSAN_OPS) --own-handles 0 || exit 1; \
	done

.PHONY: valgrind valgrind-run
valgrind: deps
	$(Q)$(SUBMAKE) SANITIZE= valgrind-run
valgrind-run: $(SHMCTL)
	$(Q)BUILD='$(BUILD)' bash tests/valgrind-shmctl.sh $(SHMCTL)

# ---------------------------------------------------------------------------
# Model check (tests/model/): spin explores every interleaving of the
# Promela models of the slot protocol and the safe lock's takeover;
# MODEL_FULL=1 adds the big 3-process runs.

.PHONY: model model-run
model: deps
	$(Q)$(SUBMAKE) model-run
model-run:
	$(Q)bash tests/model/run.sh $(if $(filter 1,$(MODEL_FULL)),--full)
