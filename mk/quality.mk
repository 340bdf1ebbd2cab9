# mk/quality.mk - the checks beyond `make test`'s own run, each a target
# that installs what it needs first (deps) and then builds in a sub-make:
#   torture        crash torture, the long lifecycle and limit soaks (FAULT=1)
#   fuzz           libFuzzer harnesses (tests/fuzz/), clang, ASan+UBSan
#   lint           cppcheck, clang-tidy, no atomics outside src/atomic.h
#   sanitize-test  unit suite and stress programs under ASan+UBSan
#   tsan           tests/programs/tsan_stress under ThreadSanitizer
#   valgrind       every shmctl command under memcheck
#   model          spin on the Promela models (tests/model/)

# ---------------------------------------------------------------------------
# Crash torture (tests/programs/torture.c): workers SIGKILLed at random moments and,
# in this FAULT=1 build, at the crash points; then recover, check, audit.

TORTURE_SECONDS ?= 60
# Then the lifecycle soak (tests/programs/lifecycle_soak.c): short-lived processes
# leaving every way, no recovery; the store must come back to a steady state.
LIFECYCLE_SECONDS ?= 120
# Then the store at its limit (tests/programs/limit_soak.c): growths with
# value memory full, SIGKILLs; every DEL and release succeeds, no wedge.
# LIMIT_SECONDS under noeviction, then LIMIT_LRU_SECONDS under allkeys-lru.
LIMIT_SECONDS ?= 60
LIMIT_LRU_SECONDS ?= 30
.PHONY: torture torture-run
torture: deps
	$(Q)$(SUBMAKE) FAULT=1 torture-run

torture-run: $(BUILD)/tests/torture $(BUILD)/tests/torture_worker \
		$(BUILD)/tests/lifecycle_soak $(BUILD)/tests/lifecycle_worker \
		$(BUILD)/tests/limit_soak
	$(Q)$(BUILD)/tests/torture --seconds $(TORTURE_SECONDS)
	$(Q)$(BUILD)/tests/lifecycle_soak --seconds $(LIFECYCLE_SECONDS) \
		--rounds 4
	$(Q)$(BUILD)/tests/limit_soak --seconds $(LIMIT_SECONDS) --rounds 12
	$(Q)$(BUILD)/tests/limit_soak --seconds $(LIMIT_LRU_SECONDS) \
		--rounds 6 --policy allkeys-lru

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

# The tool's files, for the harnesses that call it.
$(FUZZ_BUILD)/fuzz_shmctl_args $(FUZZ_BUILD)/fuzz_restore: \
	FUZZ_EXTRA = $(FUZZ_TOOL_OBJS)

$(FUZZ_BINS): $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/tests/fuzz/%.o \
		$(FUZZ_HELPER_OBJS) $(FUZZ_LIB_OBJS) $(FUZZ_TOOL_OBJS)
	$(call quiet,LINK,$@)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_LDFLAGS) -o $@ \
		$< $(FUZZ_HELPER_OBJS) $(FUZZ_EXTRA) $(FUZZ_LIB_OBJS) \
		$(LIB_LIBS) -lm

-include $(wildcard $(FUZZ_BUILD)/obj/*/*.d $(FUZZ_BUILD)/obj/*/*/*.d)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)

fuzz: deps
	$(Q)$(SUBMAKE) fuzz-build
	$(Q)FUZZ_BUILD=$(FUZZ_BUILD) bash tests/fuzz/run.sh \
		--time $(FUZZ_TIME) $(FUZZ_ONLY)

# ---------------------------------------------------------------------------
# Sanitizers and static analysis. Configuration: .clang-tidy,
# tests/cppcheck.supp, tests/tsan.supp; programs: tests/programs/tsan_stress.c,
# tests/valgrind-shmctl.sh.
#   make lint            cppcheck and clang-tidy on src/ tools/ include/,
#                        and lint-atomics (below); any finding fails
#   make sanitize-test   unit suite, tsan_stress and diff_redis under
#                        ASan+UBSan (build-address,undefined/)
#   make tsan            tests/programs/tsan_stress under ThreadSanitizer, built
#                        with clang (TSAN_CC) into build-thread-clang/:
#                        Criterion cannot run under TSan (Criterion #274)
#   make valgrind        every shmctl command under valgrind memcheck

CPPCHECK ?= cppcheck
CLANG_TIDY ?= clang-tidy
LINT_SRCS = $(sort $(wildcard src/*.c tools/*.c))
LINT_CFLAGS = -std=c11 -D_GNU_SOURCE -Iinclude -Isrc $(URCU_CFLAGS) \
	$(SHMCTL_CFLAGS)

.PHONY: lint lint-run lint-cppcheck lint-tidy lint-atomics
lint: deps
	$(Q)$(SUBMAKE) lint-run
# -k: every check reports even when the first finds something.
lint-run:
	$(Q)$(SUBMAKE) -k lint-atomics lint-cppcheck lint-tidy

# One atomics layer: src/atomic.h's wrappers, named by their ordering, are
# the only way to an atomic. src/, tools/, include/ and examples/ may not
# call liburcu's uatomic_* or cmm_* fences, the compiler's __atomic_* or
# __sync_* builtins, C11's <stdatomic.h>, or atomic.h's private macros.
# tests/ may keep <stdatomic.h> for words of their own (report pages,
# counters) but may not call those primitives nor cast to an _Atomic
# pointer (the way a plain segment word would be reached): segment words
# go through the wrappers there too. bench/ is left out: its floors time
# the bare primitives on private memory, never the segment.
ATOMICS_CALLS = \b(uatomic_[a-z_]+|cmm_[a-z_]+|__atomic_[a-z_]+|__sync_[a-z_]+)\b|\bSHMKV_(LOAD_ACQ|STORE_REL|ACQUIRE_FENCE|RELEASE_FENCE)\b
ATOMICS_C11 = stdatomic\.h|\b_Atomic\b|\batomic_[a-z_]+[[:space:]]*\(
ATOMICS_CAST = \([[:space:]]*(const[[:space:]]+)?_Atomic\b[^)]*\*[[:space:]]*\)
lint-atomics:
	$(call quiet,ATOMICS,'src tools include examples tests')found=$$( \
		{ grep -rnE --include='*.[ch]' \
			'$(ATOMICS_CALLS)|$(ATOMICS_C11)' \
			src tools include examples; \
		  grep -rnE --include='*.[ch]' \
			'$(ATOMICS_CALLS)|$(ATOMICS_CAST)' tests; } | \
		grep -v '^src/atomic\.h:'); \
	if [ -n "$$found" ]; then \
		printf '%s\n' "$$found" >&2; \
		echo 'lint: atomics outside src/atomic.h (above): use its' \
			'wrappers (shmkv__load_acquire, shmkv__cas_full, ...),' \
			'adding one there if the ordering you need is missing' >&2; \
		exit 1; \
	fi

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
	$(Q)$(SAN_ENV) $(BUILD)/tests/diff_redis --seed 1 --ops 10000 --backend redis

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
# tests/tsan.supp matches function names: first, one clear line and a
# failure when the runtime cannot name them (tests/tsan-symbols.sh).
tsan-exec: $(BUILD)/tests/tsan_stress
	$(Q)bash tests/tsan-symbols.sh '$(CC)'
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
# Promela models of the slot protocol, the safe lock's takeover, the
# inline value area and online growth's migration;
# MODEL_FULL=1 adds the big 3-process runs.

.PHONY: model model-run
model: deps
	$(Q)$(SUBMAKE) model-run
model-run:
	$(Q)bash tests/model/run.sh $(if $(filter 1,$(MODEL_FULL)),--full)
