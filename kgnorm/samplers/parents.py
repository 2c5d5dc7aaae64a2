"""Names of a concept's parents as extra positives."""
from __future__ import annotations

from typing import Iterator

from kgnorm.hierarchy import Hierarchy
from kgnorm.samplers.base import EpochSeeded, Pair, check_k, name_items, pick

__all__ = ["ParentPositiveSampler"]


class ParentPositiveSampler(EpochSeeded):
    """For each (name, concept) item, up to ``k`` names of the concept's direct parents.

    ``items``: a LevelSplit (its train names), an iterable of (name, uid, ...) or ``None``
    for every name of the hierarchy. Items whose concept has no parent (or only nameless
    parents) give no pair. ``sample()`` returns :class:`Pair` (anchor, anchor_uid,
    other=parent name, other_uid=parent uid) for the current epoch.
    """

    def __init__(self, hierarchy: Hierarchy, items: object = None, k: int = 1,
                 seed: int = 0) -> None:
        super().__init__(seed)
        self.hierarchy = hierarchy
        self.k = check_k(k)
        self.items = name_items(hierarchy, items)
        self._pool: dict[str, list[tuple[str, str]]] = {}

    def pool(self, uid: str) -> list[tuple[str, str]]:
        """(name, parent uid) of every name of every parent of ``uid``."""
        got = self._pool.get(uid)
        if got is None:
            got = [(n, p) for p in self.hierarchy.parents(uid)
                   for n in self.hierarchy.names.get(p, ())]
            self._pool[uid] = got
        return got

    def sample(self) -> list[Pair]:
        rng = self.rng()
        out: list[Pair] = []
        for name, uid in self.items:
            if uid not in self.hierarchy:
                continue
            for pn, pu in pick(rng, self.pool(uid), self.k):
                out.append(Pair(name, uid, pn, pu))
        return out

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.sample())
