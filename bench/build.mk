# bench/build.mk - the microbenchmarks (bench/run.sh runs them): one
# program per bench/*.c, sharing bench/lib/.

BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_LIB_SRCS := $(sort $(wildcard bench/lib/*.c))
BENCH_LIB_OBJS := $(BENCH_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
BENCHES := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)
BENCH_LIBS := -lurcu-cds -lurcu -lurcu-common $(LIB_LIBS) -lm
ALL_OBJS += $(BENCH_SRCS:%.c=$(BUILD)/obj/%.o) $(BENCH_LIB_OBJS)

$(BUILD)/obj/bench/%.o: override CFLAGS += $(PROG_CFLAGS) -Ibench

.PHONY: bench-build
bench-build: $(BENCHES)

$(BENCHES): $(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(BENCH_LIB_OBJS) \
		$(LIB_A) $(BUILD)/.sources
	$(call link-prog,$^,$(BENCH_LIBS))

# bench_backends starts its 3-master cluster with the tests' fixture:
# only the objects it needs (no Criterion), so a test helper that does
# not compile cannot stop a benchmark build.
BENCH_FIXTURES := $(addprefix $(BUILD)/obj/tests/helpers/,redis_cluster.o \
	redis_server.o resp.o)
$(BUILD)/obj/bench/bench_backends.o: override CFLAGS += -Itests
$(BUILD)/bench/bench_backends: $(BENCH_FIXTURES)

# The table-growth test (not timed): 20 growths from 2^10 to 2^17 slots
# under 2 writers, every key read back and shmkv_check run after each;
# exit 1 on a failed command. Not part of `make test` yet.
.PHONY: bench-check
bench-check: $(BUILD)/bench/bench_tablegrow
	$(Q)$(RUN_ENV) $(BUILD)/bench/bench_tablegrow --check 20
