"""Each distinct query text of a run is linked once: a corpus repeats its mentions (25k mentions
of NCBI-disease + BC5CDR train/dev hold 6k distinct texts), and a dictionary model's ranking
depends on the normalized query text alone, so a repeat is answered from memory.

Only for linkers whose answer is a function of the query (`DictionaryLinker`); a context
linker (BioCoM) embeds the mention's sentence and is passed through. The cache is bounded
(`max_entries`, oldest dropped first), so memory still follows the batch size, not the corpus.
`KGNORM_LINK_CACHE=0` turns it off (the previous code path, for benchmarks)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from kgnorm.linking.candidates import Candidate, Hit, PartLinker
from kgnorm.linking.linker import DictionaryLinker
from kgnorm.mentions.types import Mention

DEFAULT_MAX_ENTRIES = 200_000


def link_each_text_once(queries: Sequence[str],
                        link_distinct: Callable[[list[str]], list[list[Candidate]]]) -> list[list[Candidate]]:
    """A model's ``link`` over repeated texts: ``link_distinct`` of the distinct ones, the rows handed
    back per query in order (a repeat gets its own copy of the list)."""
    queries = list(queries)
    uniq = list(dict.fromkeys(queries))
    out = link_distinct(uniq)
    if len(uniq) == len(queries):
        return out
    row = dict(zip(uniq, out))
    return [list(row[q]) for q in queries]


class CachedLinker:
    """A :class:`PartLinker` that links each distinct (query, depth) once and repeats the answer."""

    def __init__(self, inner: PartLinker, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        self.inner = inner
        self.method = inner.method
        self.max_entries = max(1, int(max_entries))
        self.cache: dict[tuple[str, int], tuple[Hit, ...]] = {}
        self.hits = self.misses = 0

    def __getattr__(self, name: str) -> Any:  # the wrapped linker's model, dictionary, …
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def link_parts(self, queries: list[str], mentions: list[Mention], whole: list[bool],
                   top_k: int) -> list[list[Hit]]:
        new: dict[str, int] = {}  # first position of each query not cached yet
        for i, q in enumerate(queries):
            if (q, top_k) not in self.cache and q not in new:
                new[q] = i
        self.misses += len(new)
        self.hits += len(queries) - len(new)
        got: dict[str, tuple[Hit, ...]] = {}
        if new:
            pos = list(new.values())
            found = self.inner.link_parts([queries[i] for i in pos], [mentions[i] for i in pos],
                                          [whole[i] for i in pos], top_k)
            got = {q: tuple(h) for q, h in zip(new, found)}
        out = [list(got[q]) if q in got else list(self.cache[(q, top_k)]) for q in queries]
        self._store({(q, top_k): h for q, h in got.items()})
        return out

    def prefetch(self, queries: list[str], top_k: int) -> None:
        """Queries a later call will link; those answered from the cache are not passed on."""
        ahead = getattr(self.inner, "prefetch", None)
        if ahead is not None:
            ahead([q for q in dict.fromkeys(queries) if (q, top_k) not in self.cache], top_k)

    def _store(self, fresh: dict[tuple[str, int], tuple[Hit, ...]]) -> None:
        excess = len(self.cache) + len(fresh) - self.max_entries
        if excess > 0:  # dicts keep insertion order: drop the oldest
            for key in list(self.cache)[:excess]:
                del self.cache[key]
        self.cache.update(fresh)


def cache_enabled() -> bool:
    return os.environ.get("KGNORM_LINK_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def with_cache(linker: PartLinker, enabled: bool | None = None) -> PartLinker:
    """`linker` behind a query cache where its answer depends on the query text alone."""
    if enabled is None:
        enabled = cache_enabled()
    if not enabled or not isinstance(linker, DictionaryLinker):
        return linker
    return CachedLinker(linker)
