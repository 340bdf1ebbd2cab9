# src/build.mk - the library: libshmkv.a, and libshmkv.so with exactly the
# names in src/libshmkv.map exported (everything else is hidden).

LIB_SRCS := $(sort $(wildcard src/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
LIB_MAP := src/libshmkv.map
LIB_A := $(BUILD)/libshmkv.a
LIB_SO_REAL := $(BUILD)/libshmkv.so.$(VERSION)
LIB_SO_MAJOR := $(BUILD)/libshmkv.so.$(MAJOR)
LIB_SO := $(BUILD)/libshmkv.so
LIBS_ALL := $(LIB_A) $(LIB_SO_REAL) $(LIB_SO_MAJOR) $(LIB_SO)
# What a program that links libshmkv.a needs besides (the Redis backends'
# client, hiredis): every binary of the tree links it after the archive.
LIB_LIBS := -lhiredis -lpthread
ALL_OBJS += $(LIB_OBJS)

# Only what include/ marks SHMKV_API is visible outside the library; the
# static archive links the same objects, so tests still reach shmkv__*.
# -fno-semantic-interposition: a call between two exported functions
# (shmkv_get -> shmkv_key_get) may be inlined or made direct. The price:
# interposing one of them (LD_PRELOAD) does not change the library's own
# calls to it, which we do not support anyway.
$(LIB_OBJS): override CFLAGS += -fvisibility=hidden -fno-semantic-interposition

.PHONY: lib
lib: $(LIBS_ALL)

$(LIB_A): $(LIB_OBJS) $(BUILD)/.sources
	@mkdir -p $(@D)
	$(Q)rm -f $@
	$(call quiet,AR,$@)$(AR) rcs $@ $(filter %.o,$^)

$(LIB_SO_REAL): $(LIB_OBJS) $(LIB_MAP) $(BUILD)/.sources
	@mkdir -p $(@D)
	$(call quiet,LINK,$@)$(CC) $(CFLAGS) -shared \
		-Wl,-soname,libshmkv.so.$(MAJOR) \
		-Wl,--version-script=$(LIB_MAP) -Wl,-z,defs \
		$(LDFLAGS) -o $@ $(LIB_OBJS) $(LIB_LIBS) $(LIBS)

$(LIB_SO_MAJOR): $(LIB_SO_REAL)
	$(call quiet,LN,$@)ln -sf $(notdir $<) $@

$(LIB_SO): $(LIB_SO_MAJOR)
	$(call quiet,LN,$@)ln -sf $(notdir $<) $@
