# examples/build.mk - the demo: shmkv-demo starts shmkv-demo-worker
# processes that share a counter under a SETNX lock.

EXAMPLE_SRCS := $(sort $(wildcard examples/*.c))
EXAMPLES := $(EXAMPLE_SRCS:examples/%.c=$(BUILD)/%)
DEMO := $(BUILD)/shmkv-demo
ALL_OBJS += $(EXAMPLE_SRCS:%.c=$(BUILD)/obj/%.o)

.PHONY: examples
examples: $(EXAMPLES)

$(EXAMPLES): $(BUILD)/%: $(BUILD)/obj/examples/%.o $(LIB_A) $(BUILD)/.sources
	$(call link-prog,$^,-lpthread)
