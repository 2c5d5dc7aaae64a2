"""Which ids a file has given so far, in 8 bytes per id: a million-mention TSV is read in flat
memory (a dict of the ids themselves took ~150 MB per million; benchmarks/LOG.md, "link memory")."""
from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

_MASK = (1 << 63) - 1


class SeenIds:
    """63-bit hashes in a sorted array plus a small set of the latest; `add` says whether the id
    was (probably) seen before: a hit is to be confirmed by the caller (a collision is ~1e-7 at
    a billion ids)."""

    def __init__(self, merge_every: int = 65_536) -> None:
        self._sorted = np.empty(0, dtype=np.int64)
        self._recent: set[int] = set()
        self.merge_every = merge_every

    def add(self, key: str) -> bool:
        h = int.from_bytes(hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest(), "little") & _MASK
        if h in self._recent:
            return True
        a = self._sorted
        if a.size:
            i = int(np.searchsorted(a, h))
            if i < a.size and int(a[i]) == h:
                return True
        self._recent.add(h)
        if len(self._recent) >= self.merge_every:
            self._sorted = np.union1d(a, np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)))
            self._recent.clear()
        return False


def first_line_with_id(lines: Iterable[tuple[int, str]], column: int, mid: str, before: int) -> int | None:
    """The line (of a TSV's numbered lines, header first) before `before` whose id column is
    `mid`: the file is read again, since only the ids' hashes were kept."""
    header_seen = False
    for lineno, line in lines:
        if lineno >= before:
            return None
        if not line.strip():
            continue
        if header_seen and line.split("\t")[column].strip() == mid:
            return lineno
        header_seen = True
    return None
