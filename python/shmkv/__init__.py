"""shmkv: a Redis-compatible key store in one POSIX shared-memory segment.

Unrelated processes on one host open the same named store and run Redis
string commands on it as lock-free atomic operations on shared memory::

    import shmkv
    with shmkv.Store.open_or_create("jobs") as st:
        st.set("greeting", "hello", px=1500)
        with st.lock("jobs", lease_ms=5000) as grant:
            st.incr("done")

Everything is implemented in C (shmkv._shmkv, over the library's public
C API); this file only re-exports it. See python/README.md.
"""

from . import _shmkv
from ._shmkv import *  # noqa: F401,F403 - every public name
from ._shmkv import __version__  # noqa: F401

__all__ = [name for name in dir(_shmkv) if not name.startswith("_")]
