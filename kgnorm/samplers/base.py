"""Shared pieces of the samplers: per-epoch seeding and (name, concept) item lists."""
from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy

__all__ = ["EpochSeeded", "Pair", "RelatedNameSampler", "Triplet", "name_items"]


class Pair(NamedTuple):
    """An anchor name and one sampled name (a positive or a negative)."""
    anchor: str
    anchor_uid: str
    other: str
    other_uid: str


class Triplet(NamedTuple):
    anchor: str
    positive: str
    negative: str
    anchor_uid: str
    positive_uid: str
    negative_uid: str


class EpochSeeded:
    """Small base class: the random stream of epoch ``e`` is seeded with ``seed + e``.

    Call :meth:`set_epoch` before sampling an epoch; sampling twice for the same epoch gives
    the same result, and different epochs give different results.
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed + self.epoch)


def name_items(hierarchy: Hierarchy | None, items: object = None) -> list[tuple[str, str]]:
    """(name, concept_uid) pairs: from ``items`` (a LevelSplit -> its train part, or any
    iterable of objects/tuples whose first two fields are name and uid), else every name of
    every concept of ``hierarchy``."""
    if items is None:
        if hierarchy is None:
            raise KgnormError("a sampler needs a hierarchy or a list of items")
        return [(n, u) for u in sorted(hierarchy.names) for n in hierarchy.names[u]]
    train = getattr(items, "train", None)
    src: Iterable = train if train is not None else items  # LevelSplit -> train
    out = []
    for it in src:
        out.append((str(it[0]), str(it[1])))
    return out


def check_k(k: int) -> int:
    if int(k) < 1:
        raise KgnormError(f"k must be >= 1 (got {k})")
    return int(k)


def pick(rng: np.random.Generator, pool: Sequence, k: int) -> list:
    """k elements of pool without replacement (all of them when fewer)."""
    if len(pool) <= k:
        idx = rng.permutation(len(pool))
    else:
        idx = rng.choice(len(pool), size=k, replace=False)
    return [pool[i] for i in idx]


class RelatedNameSampler(EpochSeeded):
    """For each (name, concept) item, up to ``k`` names of related concepts, one
    :class:`Pair` each; subclasses say which concepts are related (:meth:`related_names`).
    Pools are computed once per concept and cached."""

    def __init__(self, hierarchy: Hierarchy, items: object = None, k: int = 1,
                 seed: int = 0) -> None:
        super().__init__(seed)
        self.hierarchy = hierarchy
        self.k = check_k(k)
        self.items = name_items(hierarchy, items)
        self._pool: dict[str, list[tuple[str, str]]] = {}

    def related_names(self, uid: str) -> list[tuple[str, str]]:
        raise NotImplementedError

    def pool(self, uid: str) -> list[tuple[str, str]]:
        """(name, related uid) candidates for concept ``uid``."""
        got = self._pool.get(uid)
        if got is None:
            got = self._pool[uid] = self.related_names(uid)
        return got

    def sample(self) -> list[Pair]:
        rng = self.rng()
        out: list[Pair] = []
        for name, uid in self.items:
            if uid not in self.hierarchy:
                continue
            for other, other_uid in pick(rng, self.pool(uid), self.k):
                out.append(Pair(name, uid, other, other_uid))
        return out

    def __iter__(self) -> Iterator[Pair]:
        return iter(self.sample())
