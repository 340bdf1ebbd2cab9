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

# Sanitized objects must never mix with normal ones: separate build dir.
ifneq ($(SANITIZE),)
BUILD ?= build-$(SANITIZE)
override CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
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
DEMO := $(if $(wildcard tools/shmkv-demo.c),$(BUILD)/shmkv-demo)
DEMO_WORKER := $(if $(wildcard tools/shmkv-demo-worker.c),\
	$(BUILD)/shmkv-demo-worker)
TOOLS := $(SHMCTL) $(DEMO) $(DEMO_WORKER)

BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_LIB_SRCS := $(sort $(wildcard bench/lib/*.c))
BENCH_LIB_OBJS := $(BENCH_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
BENCHES := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

UNIT_SRCS := $(sort $(wildcard tests/test_*.c))
HELPER_SRCS := $(sort $(wildcard tests/helpers/*.c))
HELPER_OBJS := $(HELPER_SRCS:%.c=$(BUILD)/obj/%.o)
HELPER_A := $(if $(HELPER_OBJS),$(BUILD)/tests/libhelpers.a)
TEST_PROG_SRCS := $(filter-out $(UNIT_SRCS),$(sort $(wildcard tests/*.c)))
TEST_PROGS := $(TEST_PROG_SRCS:tests/%.c=$(BUILD)/tests/%)
UNIT := $(if $(UNIT_SRCS),$(BUILD)/tests/unit)

FORMAT_FILES = $(sort $(shell find include src tools bench tests \
	-path tests/fuzz/out -prune -o -name '*.[ch]' -print 2>/dev/null))

ALL_OBJS := $(LIB_OBJS) $(SHMCTL_SRCS:%.c=$(BUILD)/obj/%.o) \
	$(DEMO:$(BUILD)/%=$(BUILD)/obj/tools/%.o) \
	$(DEMO_WORKER:$(BUILD)/%=$(BUILD)/obj/tools/%.o) \
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
		$(BUILD)/obj/tools/%.o $(LIB_A) $(SRCS_FILE)
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
$(TEST_PROGS): $(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(HELPER_A) $(LIB_A) \
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
	$(Q)sh tools/install-deps.sh

test: deps
	$(Q)$(SUBMAKE) build-all
ifneq ($(wildcard tests/run-tests.sh),)
	$(Q)$(call run-script,tests/run-tests.sh)
else ifneq ($(UNIT),)
	$(Q)$(RUN_ENV) $(UNIT)
else
	@echo "test: no tests/run-tests.sh and no tests/test_*.c" >&2; exit 1
endif

bench: deps
	$(Q)$(SUBMAKE) build-all
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
	@echo "demo: tools/shmkv-demo.c does not exist" >&2; exit 1
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
	@echo '  deps           install missing build/test dependencies (Debian)'
	@echo '  install uninstall   honour DESTDIR, PREFIX (now $(PREFIX)), libdir'
	@echo '  format format-check clean'
	@echo 'Variables: CFLAGS, LDFLAGS, LIBS, V=1, WERROR=1 (implied by CI=true),'
	@echo '  SANITIZE=address,undefined|thread (builds into build-$$SANITIZE;'
	@echo '  Criterion itself cannot run under thread: Criterion issue #274),'
	@echo '  LIBEDIT=0|1 (shmctl line editing; default: if libedit-dev is installed)'
