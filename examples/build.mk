# examples/build.mk - the demo: shmkv-demo (shmkv-demo.c and the parts,
# demo_*.c) starts shmkv-demo-worker (the pattern lock) and
# shmkv-demo-child (the safe lock's holder and waiter, killed writers).
# Each examples/shmkv-*.c is a program; demo_*.c are linked into
# shmkv-demo only. They use the public headers and the library, nothing
# else: make demo builds the library and these, no test or benchmark.

EXAMPLE_SRCS := $(sort $(wildcard examples/shmkv-*.c))
DEMO_PART_SRCS := $(sort $(wildcard examples/demo_*.c))
EXAMPLES := $(EXAMPLE_SRCS:examples/%.c=$(BUILD)/%)
DEMO := $(BUILD)/shmkv-demo
ALL_OBJS += $(EXAMPLE_SRCS:%.c=$(BUILD)/obj/%.o) \
	$(DEMO_PART_SRCS:%.c=$(BUILD)/obj/%.o)

.PHONY: examples
examples: $(EXAMPLES)

# The parts, linked before the library they call.
$(DEMO): $(DEMO_PART_SRCS:%.c=$(BUILD)/obj/%.o)

$(EXAMPLES): $(BUILD)/%: $(BUILD)/obj/examples/%.o $(LIB_A) $(BUILD)/.sources
	$(call link-prog,$(filter %.o,$^) $(filter %.a,$^),$(LIB_LIBS))
