# Makefile for shmkv: plain GNU make, one make for the whole tree (no
# recursion, so every dependency is seen). User-overridable CFLAGS, the
# required flags added with override; sources are picked up by wildcard,
# so a new file needs no edit. Each folder says how its part is built:
#
#   mk/config.mk       version, flags, build directory, shared helpers
#   src/build.mk       the library          tools/build.mk     shmctl
#   examples/build.mk  the demo             bench/build.mk     benchmarks
#   python/build.mk    the Python module (make python)
#   tests/build.mk     test binaries        mk/install.mk      install
#   mk/quality.mk      torture fuzz lint sanitize-test tsan valgrind model
#
#   make                the library and shmctl
#   make demo           install missing deps, build, run the demo
#   make test           install missing deps, build everything, run the
#                       tests (tests/run-tests.sh): what CI runs
#   make bench          install missing deps, build, run bench/run.sh
#   make help           every target and variable

.DEFAULT_GOAL := all

include mk/config.mk
include src/build.mk
include tools/build.mk
include examples/build.mk
include bench/build.mk
include python/build.mk
include tests/build.mk
include mk/install.mk
include mk/quality.mk

.PHONY: all everything
all: lib tools
everything: lib tools examples bench-build tests-build

# Objects depend on the flags they were built with: a build with other
# flags (CI=true adds -Werror) recompiles instead of trusting old objects.
# Binaries depend on the list of sources: a deleted source file relinks
# them instead of leaving its code in the library.
FLAGS_NOW := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $(LIBS) $(SHMCTL_CFLAGS)
NO_BUILD_GOALS := clean format format-check help deps uninstall
ifneq ($(filter-out $(NO_BUILD_GOALS),$(or $(MAKECMDGOALS),all)),)
$(call stamp,$(BUILD)/.flags,$(FLAGS_NOW))
$(call stamp,$(BUILD)/.sources,$(ALL_OBJS))
endif
# Only when removed after the check above (make clean all).
$(BUILD)/.flags $(BUILD)/.sources:
	@mkdir -p $(@D)
	@touch $@

-include $(ALL_OBJS:.o=.d)

# ---------------------------------------------------------------------------
# Running things. Each installs missing deps, then builds in a sub-make so
# the build sees what was just installed (and never races the install).

RUN_ENV = BUILD='$(BUILD)' SANITIZE='$(SANITIZE)' $(if $(QUICK),QUICK='$(QUICK)')

.PHONY: deps test bench bench-quick bench-instr demo build-everything \
	build-bench
deps:
	$(Q)sh scripts/install-deps.sh

# The builds without "Nothing to be done" when all is up to date.
build-everything: everything
	@:
# Benchmarks need only the library and themselves (and the Python
# module, for bench/python_bench.py), so a test that does not compile
# cannot stop a benchmark run.
build-bench: lib bench-build python
	@:

test: deps
	$(Q)$(SUBMAKE) build-everything
	$(Q)$(RUN_ENV) bash tests/run-tests.sh

bench: deps
	$(Q)$(SUBMAKE) build-bench
	$(Q)$(RUN_ENV) bash bench/run.sh

bench-quick:
	$(Q)$(SUBMAKE) bench QUICK=1

# Instructions and locked instructions per call of each command, shmkv
# and its baselines, per lock cycle and per integer op, counted by
# callgrind (bench/instr.sh; bench/run.sh runs it too):
# bench/results/instr.*, and bench/README.md regenerated from them.
bench-instr: deps
	$(Q)$(SUBMAKE) build-bench
	$(Q)$(RUN_ENV) bash bench/instr.sh
	$(Q)sh bench/report.sh bench/results >bench/README.md.tmp && \
		mv bench/README.md.tmp bench/README.md

demo: deps
	$(Q)$(SUBMAKE) lib examples
	$(Q)$(RUN_ENV) $(DEMO)

# ---------------------------------------------------------------------------
# Housekeeping

CLANG_FORMAT ?= clang-format
FORMAT_FILES = $(sort $(shell find include src tools examples bench tests python \
	-path tests/fuzz/out -prune -o -name '*.[ch]' -print 2>/dev/null))

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
	@echo '  all (default)  the library and shmctl, in $(BUILD)/'
	@echo '  everything     also the demo, benchmarks and test binaries'
	@echo '  lib tools examples bench-build tests-build   one part each'
	@echo '  test           deps, build everything, run tests/run-tests.sh'
	@echo '  bench          deps, build, run bench/run.sh (bench-quick: QUICK=1)'
	@echo '  bench-instr    instructions per call, lock cycle and integer op (callgrind)'
	@echo '  demo           deps, build, run $(DEMO)'
	@echo '  deps           install missing build/test dependencies (Debian)'
	@echo '  install uninstall   honour DESTDIR, PREFIX (now $(PREFIX)), libdir'
	@echo '  format format-check clean'
	@echo 'Quality (mk/quality.mk; each installs its deps first):'
	@echo '  torture        FAULT=1 build, crash torture for TORTURE_SECONDS (60),'
	@echo '                 then the lifecycle soak for LIFECYCLE_SECONDS (120),'
	@echo '                 then the limit soak for LIMIT_SECONDS (60) and,'
	@echo '                 under allkeys-lru, LIMIT_LRU_SECONDS (30)'
	@echo '  fuzz fuzz-build   libFuzzer harnesses (FUZZ_TIME, FUZZ_ONLY)'
	@echo '  lint           cppcheck, clang-tidy, atomics only in src/atomic.h'
	@echo '  sanitize-test  unit suite and stress programs under ASan+UBSan'
	@echo '  tsan           tsan_stress under ThreadSanitizer (clang)'
	@echo '  valgrind       every shmctl command under memcheck'
	@echo '  model          spin on tests/model/ (MODEL_FULL=1: the big runs)'
	@echo 'Variables: CFLAGS, LDFLAGS, LIBS, V=1, WERROR=1 (implied by CI=true),'
	@echo '  SANITIZE=address,undefined|thread (builds into build-$$SANITIZE;'
	@echo '  Criterion itself cannot run under thread: Criterion issue #274),'
	@echo '  LIBEDIT=0|1 (shmctl line editing; default: if libedit-dev is installed)'
	@echo '  FAULT=1 (crash points compiled in; builds into build-fault)'
