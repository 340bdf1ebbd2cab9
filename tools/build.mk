# tools/build.mk - shmctl, the inspection and admin tool.

SHMCTL_SRCS := tools/shmctl.c $(sort $(wildcard tools/shmctl_*.c))
SHMCTL_OBJS := $(SHMCTL_SRCS:%.c=$(BUILD)/obj/%.o)
SHMCTL := $(BUILD)/shmctl
ALL_OBJS += $(SHMCTL_OBJS)

# The prompt uses libedit when its header is there (libedit-dev);
# LIBEDIT=0 builds without it, LIBEDIT=1 insists.
ifeq ($(origin LIBEDIT),undefined)
LIBEDIT := $(shell echo '\#include <editline/readline.h>' | \
	$(CC) -E -x c - >/dev/null 2>&1 && echo 1)
endif
ifeq ($(LIBEDIT),1)
SHMCTL_CFLAGS := -DSHMCTL_WITH_LIBEDIT
SHMCTL_LIBS := -ledit
endif
TOOL_LIBS := $(LIB_LIBS) -lm

$(SHMCTL_OBJS): override CFLAGS += $(SHMCTL_CFLAGS)
# info on a Redis store asks each master (src/redis.h): the one file of
# the tool that uses the library's internals.
$(BUILD)/obj/tools/shmctl_rinfo.o: override CFLAGS += -Isrc

.PHONY: tools
tools: $(SHMCTL)

$(SHMCTL): $(SHMCTL_OBJS) $(LIB_A) $(BUILD)/.sources
	$(call link-prog,$^,$(SHMCTL_LIBS) $(TOOL_LIBS))
