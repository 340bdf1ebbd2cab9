# mk/config.mk - what every part of the build shares: the version, the
# install directories, the compiler flags, the build directory, quiet
# output and the two helpers (stamp, link-prog). Included first by the
# top-level Makefile; the folders' build.mk files use what is set here.

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
docdir ?= $(datadir)/doc/$(NAME)
pkgconfigdir ?= $(libdir)/pkgconfig

CC ?= cc
AR ?= ar
INSTALL ?= install

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

# Programs that exec our binaries (workers, tools) find them here; tests
# that check the docs find those in the source tree.
PROG_CFLAGS := -DSHMKV_BUILD_DIR='"$(abspath $(BUILD))"' \
	-DSHMKV_SOURCE_DIR='"$(abspath .)"'

NPROC := $(shell nproc 2>/dev/null || echo 2)

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

# Every object of every folder: the folders' build.mk files add theirs.
ALL_OBJS :=

$(BUILD)/obj/%.o: %.c $(BUILD)/.flags
	@mkdir -p $(@D)
	$(call quiet,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# link-prog: objects and archives, extra libraries
define link-prog
@mkdir -p $(@D)
$(call quiet,LINK,$@)$(CC) $(CFLAGS) $(LDFLAGS) -Wl,--as-needed \
	-o $@ $(filter %.o %.a,$(1)) $(2) $(LIBS)
endef

# stamp: file, content; rewrites file only when its content differs.
eq = $(and $(findstring $(1),$(2)),$(findstring $(2),$(1)))
stamp = $(if $(call eq,$(file <$(1)),$(2)),,\
	$(shell mkdir -p $(dir $(1)))$(file >$(1),$(2)))

SUBMAKE = $(MAKE) --no-print-directory
# -jN for a sub-make, unless this make already shares a jobserver.
SUB_J = $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(NPROC))
