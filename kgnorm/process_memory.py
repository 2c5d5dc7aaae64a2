"""glibc's malloc keeps one arena per thread that allocates (up to 8 per core), and what a thread
frees stays in its arena: `link`'s search threads (the sparse top-k's, the query calls') each grow
one. Capped at :data:`ARENAS` for a linking run, the freed blocks are reused across threads: the
whole `kgnorm link` on BC5CDR-disease dev with MEDIC (8-bit name vectors) peaked at 449-468 MB instead
of 538-547 MB, walls within the noise of a shared machine (benchmarks/LOG.md, "link memory: malloc
arenas"). ``MALLOC_ARENA_MAX`` set by the user stands; elsewhere than glibc this does nothing."""
from __future__ import annotations

import ctypes
import ctypes.util
import os

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads this process starts from now on; whether it did."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        return bool(libc is not None and hasattr(libc, "mallopt") and libc.mallopt(_M_ARENA_MAX, int(arenas)))
    except OSError:
        return False
