"""Build and install the shmkv module: pip install ./python (offline).

The extension compiles the C library's sources (../src/*.c) in, rather
than linking a libshmkv built by make, so that this works on a checkout
where nothing has been built and the installed module needs no
libshmkv.so at run time (README.md: "How the module gets the library").
Debian's setuptools and wheel suffice:

    /usr/bin/python3 -m venv --system-site-packages VENV
    VENV/bin/python -m pip install --no-build-isolation ./python
"""

import glob
import os
import re

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rel(path):
    # setuptools wants source paths relative to setup.py's directory.
    return os.path.relpath(path, HERE)


def version():
    with open(os.path.join(ROOT, "include", "shmkv.h")) as f:
        m = re.search(r'#define SHMKV_VERSION_STRING "([^"]+)"', f.read())
    return m.group(1)


module_srcs = sorted(glob.glob(os.path.join(HERE, "src", "*.c")))
library_srcs = sorted(glob.glob(os.path.join(ROOT, "src", "*.c")))
if not library_srcs:
    raise SystemExit(
        "shmkv: the library's sources (../src/*.c) are not next to "
        "python/: install from a shmkv checkout (pip install ./python)"
    )

ext = Extension(
    "shmkv._shmkv",
    sources=[rel(p) for p in module_srcs + library_srcs],
    include_dirs=[rel(os.path.join(ROOT, "include")), rel(os.path.join(ROOT, "src"))],
    define_macros=[("_GNU_SOURCE", None)],
    # The project's flags (mk/config.mk), and the library's hidden
    # visibility (src/build.mk): only PyInit__shmkv is exported.
    extra_compile_args=[
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-Wshadow",
        "-fvisibility=hidden",
        "-fno-semantic-interposition",
    ],
    # The Redis backends' client (Debian: libhiredis-dev).
    libraries=["hiredis"],
    extra_link_args=["-pthread"],
)

setup(
    name="shmkv",
    version=version(),
    description="A Redis-compatible key store in one POSIX shared-memory segment",
    packages=["shmkv"],
    package_data={"shmkv": ["py.typed", "*.pyi"]},
    ext_modules=[ext],
    python_requires=">=3.9",
    zip_safe=False,
)
