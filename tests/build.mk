# tests/build.mk - the test binaries: one Criterion binary of every
# tests/unit/<area>/test_*.c, one program per tests/programs/*.c, and the
# archive of tests/helpers/ they share. tests/run-tests.sh runs them.

UNIT_SRCS := $(sort $(wildcard tests/unit/*/test_*.c))
UNIT := $(BUILD)/tests/unit
HELPER_SRCS := $(sort $(wildcard tests/helpers/*.c))
HELPER_OBJS := $(HELPER_SRCS:%.c=$(BUILD)/obj/%.o)
HELPER_A := $(BUILD)/tests/libhelpers.a
TEST_PROG_SRCS := $(sort $(wildcard tests/programs/*.c))
TEST_PROGS := $(TEST_PROG_SRCS:tests/programs/%.c=$(BUILD)/tests/%)
TEST_LIBS := -lcriterion $(LIB_LIBS) -lm
TEST_PROG_LIBS := -lcriterion $(LIB_LIBS) -lm
ALL_OBJS += $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o) $(HELPER_OBJS) \
	$(TEST_PROG_SRCS:%.c=$(BUILD)/obj/%.o)

# Tests may include the library's internal headers (src/internal.h) and
# their helpers ("helpers/mp.h").
$(BUILD)/obj/tests/%.o: override CFLAGS += $(PROG_CFLAGS) -Itests -Isrc

.PHONY: tests-build
tests-build: $(UNIT) $(TEST_PROGS)

$(HELPER_A): $(HELPER_OBJS) $(BUILD)/.sources
	@mkdir -p $(@D)
	$(Q)rm -f $@
	$(call quiet,AR,$@)$(AR) rcs $@ $(filter %.o,$^)

# Standalone programs take only the helpers they call (an archive).
$(TEST_PROGS): $(BUILD)/tests/%: $(BUILD)/obj/tests/programs/%.o $(HELPER_A) \
		$(LIB_A) $(BUILD)/.sources
	$(call link-prog,$^,$(TEST_PROG_LIBS))

# The unit tests exec the programs, shmctl and the demo: built first.
$(UNIT): $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o) $(HELPER_OBJS) $(LIB_A) \
		$(BUILD)/.sources | $(TEST_PROGS) $(SHMCTL) $(EXAMPLES)
	$(call link-prog,$^,$(TEST_LIBS))
