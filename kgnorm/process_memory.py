"""What `link` does to keep its resident memory down (issue 51).

Malloc arenas. glibc's malloc keeps one arena per thread that allocates (up to 8 per core), and what a thread
frees stays in its arena: `link`'s search threads (the sparse top-k's, the query calls') each grow
one. Capped at :data:`ARENAS` for a linking run, the freed blocks are reused across threads: the
whole `kgnorm link` on BC5CDR-disease dev with MEDIC (8-bit name vectors) peaked at 449-468 MB instead
of 538-547 MB, walls within the noise of a shared machine (benchmarks/LOG.md, "link memory: malloc
arenas"). ``MALLOC_ARENA_MAX`` set by the user stands; elsewhere than glibc this does nothing.

Mapped pages. The name index is a read-only memory map of its file (kgnorm.linking.name_index):
a flat scan reads every page of it, and each page read stays in the process's resident set until
the map goes (110 MB for MEDIC's 72k fp32 names), under everything the run allocates after it.
:func:`release_mapped_pages` hands a scanned block's pages back (they stay in the page cache)."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import numpy as np

ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for the threads this process starts from now on; whether it did."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    libc = _libc()
    return bool(libc is not None and hasattr(libc, "mallopt") and libc.mallopt(_M_ARENA_MAX, int(arenas)))


_MADV_DONTNEED = 4  # linux/mman.h
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def release_mapped_pages(view: np.ndarray) -> bool:
    """Drop the pages under `view` from this process's resident set. Only for a view of a
    read-only *file* mapping (the name index faiss maps, ``NameIndex.mapped``): its pages stay in
    the page cache and a later read faults them back in unchanged. On anonymous memory this would
    zero it: never call it on a heap array. Whether it did (False: not Linux, or madvise refused)."""
    if view.size == 0 or not view.flags.c_contiguous or not hasattr(os, "sysconf") or os.uname().sysname != "Linux":
        return False
    start = view.__array_interface__["data"][0]
    lo = start - start % _PAGE  # the mapping starts on a page: rounding down stays inside it
    hi = start + view.nbytes
    hi += -hi % _PAGE  # so does the end: the file's last page is mapped whole
    libc = _libc()
    if libc is None or not hasattr(libc, "madvise"):
        return False
    return libc.madvise(ctypes.c_void_p(lo), ctypes.c_size_t(hi - lo), _MADV_DONTNEED) == 0


def maps_file(view: np.ndarray, path: str | os.PathLike) -> bool:
    """Whether all of `view` lies in a mapping of the file `path` (``/proc/self/maps``): what makes
    :func:`release_mapped_pages` safe on it. False where the maps cannot be read."""
    if view.size == 0:
        return False
    start = view.__array_interface__["data"][0]
    end, inode = start + view.nbytes, os.stat(path).st_ino
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split(maxsplit=5)
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                if lo <= start and end <= hi:
                    return len(fields) > 4 and fields[4] == str(inode) and "r" in fields[1]
    except (OSError, ValueError, IndexError):
        return False
    return False


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name, use_errno=True) if name else None
    except OSError:
        return None
