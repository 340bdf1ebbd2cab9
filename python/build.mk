# python/build.mk - the CPython extension module shmkv (python/), built
# against Debian's interpreter ($(PYTHON)) into $(BUILD)/python, so that
#   PYTHONPATH=$(BUILD)/python $(PYTHON) -c 'import shmkv'
# works. It links the static library (its objects are -fPIC, as the shared
# library's are), so the module needs no libshmkv.so at run time; pip
# install ./python compiles the library's sources in instead
# (python/setup.py): python/README.md says why.

PYTHON ?= /usr/bin/python3
# Lazy (=): asked of the interpreter only when the module is built. Quiet:
# the rule's name asks too, when `make test` is read before make deps has
# installed the interpreter, and its sub-make asks again afterwards.
PY_INCLUDE = $(shell $(PYTHON) -c \
	'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
PY_EXT_SUFFIX = $(shell $(PYTHON) -c \
	'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' \
	2>/dev/null)

PY_SRCS := $(sort $(wildcard python/src/*.c))
PY_OBJS := $(PY_SRCS:%.c=$(BUILD)/obj/%.o)
PY_PKG_FILES := $(sort $(wildcard python/shmkv/*.py python/shmkv/*.pyi)) \
	python/shmkv/py.typed
PY_OUT := $(BUILD)/python/shmkv
PY_EXT = $(PY_OUT)/_shmkv$(PY_EXT_SUFFIX)
ALL_OBJS += $(PY_OBJS)

# Python's headers are not written for -Wmissing-prototypes or
# -Wstrict-prototypes; the module's own code is held to them anyway by
# its prototypes in pyshmkv.h. Only PyInit__shmkv is exported.
$(PY_OBJS): override CFLAGS += -isystem $(PY_INCLUDE) -fvisibility=hidden \
	-fno-strict-aliasing

.PHONY: python
python: $(PY_EXT) $(PY_PKG_FILES:python/shmkv/%=$(PY_OUT)/%)

# The archive's symbols stay inside the module (--exclude-libs): another
# extension or program in the process that uses libshmkv.so gets its own.
$(PY_EXT): $(PY_OBJS) $(LIB_A) $(BUILD)/.sources
	@mkdir -p $(@D)
	$(call quiet,LINK,$@)$(CC) $(CFLAGS) -shared $(LDFLAGS) \
		-Wl,--exclude-libs,ALL -o $@ $(PY_OBJS) $(LIB_A) \
		$(LIB_LIBS) $(LIBS)

$(PY_OUT)/%: python/shmkv/%
	@mkdir -p $(@D)
	$(call quiet,CP,$@)cp $< $@
