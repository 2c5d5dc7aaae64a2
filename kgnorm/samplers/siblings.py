"""Names of sibling concepts (sharing a parent) as hard negatives."""
from __future__ import annotations

from typing import Iterator

from kgnorm.hierarchy import Hierarchy
from kgnorm.samplers.base import EpochSeeded, Pair, check_k, name_items, pick

__all__ = ["SiblingNegativeSampler"]


class SiblingNegativeSampler(EpochSeeded):
    """For each (name, concept) item, up to ``k`` names of sibling concepts.

    Siblings share a parent and are neither the concept itself nor one of its ancestors
    or descendants (possible only when shortcut edges were kept); a sibling name that is
    textually one of the anchor concept's own names is never used. ``sample()`` returns
    :class:`Pair` (other = negative name, other_uid = sibling uid).
    """

    def __init__(self, hierarchy: Hierarchy, items: object = None, k: int = 1,
                 seed: int = 0) -> None:
        super().__init__(seed)
        self.hierarchy = hierarchy
        self.k = check_k(k)
        self.items = name_items(hierarchy, items)
        self._pool: dict[str, list[tuple[str, str]]] = {}

    def pool(self, uid: str) -> list[tuple[str, str]]:
        """(name, sibling uid) candidates for concept ``uid``."""
        got = self._pool.get(uid)
        if got is None:
            h = self.hierarchy
            related = h.ancestors(uid) | h.descendants(uid)
            own = set(h.names.get(uid, ()))
            got = [(n, s) for s in h.siblings(uid) if s not in related
                   for n in h.names.get(s, ()) if n not in own]
            self._pool[uid] = got
        return got

    def sample(self) -> list[Pair]:
        rng = self.rng()
        out: list[Pair] = []
        for name, uid in self.items:
            if uid not in self.hierarchy:
                continue
            for sn, su in pick(rng, self.pool(uid), self.k):
                out.append(Pair(name, uid, sn, su))
        return out

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.sample())
