"""Uniformly random negatives: names of unrelated concepts."""
from __future__ import annotations

from typing import Iterator


from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.samplers.base import EpochSeeded, Pair, check_k, name_items

__all__ = ["RandomNegativeSampler"]


class RandomNegativeSampler(EpochSeeded):
    """For each (name, concept) item, ``k`` names drawn uniformly from other concepts.

    A negative is never a name of the anchor's concept, never textually one of its names,
    and (with ``exclude_related=True``, the default) never a name of one of its ancestors
    or descendants. With a LevelSplit as ``items`` and ``level`` set, negatives also never
    share a level-``level`` class with the anchor and are drawn from the split's training
    names; otherwise from every name of ``hierarchy``. Anchors for which no negative is
    found in 100 draws per slot get fewer than ``k``.
    """

    def __init__(self, hierarchy: Hierarchy | None, items: object = None, k: int = 1,
                 seed: int = 0, level: int | None = None,
                 exclude_related: bool = True) -> None:
        super().__init__(seed)
        self.hierarchy = hierarchy
        self.k = check_k(k)
        self.items = name_items(hierarchy, items)
        self.exclude_related = exclude_related and hierarchy is not None
        self.level = level
        train = getattr(items, "train", None)
        self._labels: dict[str, frozenset[str]] = {}
        if level is not None:
            if train is None:
                raise KgnormError("RandomNegativeSampler(level=...) needs a LevelSplit as items")
            self._labels = {it.concept_uid: it.labels[level] for it in train}
            self.candidates = list(self.items)
        elif hierarchy is not None:
            self.candidates = name_items(hierarchy, None)
        else:
            self.candidates = list(self.items)
        if not self.candidates:
            raise KgnormError("RandomNegativeSampler: no candidate names")
        self._names: dict[str, set[str]] = {}

    def allowed(self, anchor_uid: str, uid: str, name: str) -> bool:
        if uid == anchor_uid:
            return False
        own = self._names.get(anchor_uid)
        if own is None:
            h = self.hierarchy
            own = set(h.names.get(anchor_uid, ())) if h is not None and anchor_uid in h else set()
            self._names[anchor_uid] = own
        if name in own:
            return False
        if self._labels and self._labels.get(anchor_uid, frozenset()) & \
                self._labels.get(uid, frozenset()):
            return False
        if self.exclude_related and anchor_uid in self.hierarchy and uid in self.hierarchy:
            h = self.hierarchy
            if uid in h.ancestors(anchor_uid) or anchor_uid in h.ancestors(uid):
                return False
        return True

    def sample(self) -> list[Pair]:
        rng = self.rng()
        m = len(self.candidates)
        out: list[Pair] = []
        for name, uid in self.items:
            got = 0
            draws = rng.integers(m, size=100 * self.k)
            for j in draws:
                cn, cu = self.candidates[int(j)]
                if self.allowed(uid, cu, cn):
                    out.append(Pair(name, uid, cn, cu))
                    got += 1
                    if got == self.k:
                        break
        return out

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.sample())
