"""BNE's training data per epoch: the names, the held-out dev slice, one synonym per anchor,
and the sibling / parent names the shared samplers (:mod:`kgnorm.samplers`) draw from the
ontology's IS_A graph. Every draw of epoch ``e`` is a function of ``seed + e``, so a resumed
run sees the batches of an uninterrupted one.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.samplers import ParentPositiveSampler, SiblingNegativeSampler

__all__ = ["hold_out_synonyms", "TrainingNames", "epoch_synonyms", "HierarchyDraws"]


def hold_out_synonyms(concepts: Mapping[str, Sequence[str]], fraction: float = 0.05,
                      max_names: int = 1000, seed: int = 0
                      ) -> tuple[dict[str, list[str]], list[tuple[str, set[str]]]]:
    """Seeded dev slice: returns (training concepts, dev [(name, {uid})]).

    Only names carried by exactly one concept whose concept keeps at least one other name
    are eligible; ``round(fraction * n_names)`` of them (at most ``max_names``) are held
    out, at most one per concept."""
    carriers: dict[str, int] = {}
    for names in concepts.values():
        for n in set(names):
            carriers[n] = carriers.get(n, 0) + 1
    eligible_by_concept: list[tuple[str, list[str]]] = []
    for uid in sorted(concepts):
        names = list(dict.fromkeys(concepts[uid]))
        if len(names) < 2:
            continue
        ok = [n for n in names if carriers.get(n) == 1]
        if ok:
            eligible_by_concept.append((uid, ok))
    n_total = sum(len(set(v)) for v in concepts.values())
    want = min(int(max_names), int(round(float(fraction) * n_total)), len(eligible_by_concept))
    rng = np.random.default_rng(seed)
    picked = rng.permutation(len(eligible_by_concept))[:max(want, 0)]
    dev: list[tuple[str, set[str]]] = []
    held: dict[str, str] = {}
    for i in sorted(picked):
        uid, ok = eligible_by_concept[int(i)]
        name = ok[int(rng.integers(len(ok)))]
        held[uid] = name
        dev.append((name, {uid}))
    train = {u: [n for n in dict.fromkeys(ns) if held.get(u) != n] for u, ns in concepts.items()}
    return train, dev


@dataclass
class TrainingNames:
    """Item i = training name ``names[i]`` of concept ``uids[concept[i]]`` (concepts sorted,
    names in dictionary order, one item per distinct (name, concept))."""

    uids: list[str]
    names: list[str]
    concept: list[int]
    members: list[list[int]]            # concept -> its items
    name_concepts: dict[str, set[int]]  # name -> every concept carrying it

    @classmethod
    def build(cls, concepts: Mapping[str, Sequence[str]]) -> "TrainingNames":
        uids = sorted(u for u, ns in concepts.items() if ns)
        names: list[str] = []
        concept: list[int] = []
        for c, u in enumerate(uids):
            for n in dict.fromkeys(concepts[u]):
                names.append(n)
                concept.append(c)
        members: list[list[int]] = [[] for _ in uids]
        name_concepts: dict[str, set[int]] = {}
        for i, (n, c) in enumerate(zip(names, concept)):
            members[c].append(i)
            name_concepts.setdefault(n, set()).add(c)
        return cls(uids, names, concept, members, name_concepts)

    def __len__(self) -> int:
        return len(self.names)

    def by_concept(self) -> dict[str, list[str]]:
        return {u: [self.names[i] for i in self.members[c]] for c, u in enumerate(self.uids)}


def epoch_synonyms(data: TrainingNames, rng: np.random.Generator) -> np.ndarray:
    """One other name of the same concept per item (-1: the concept has no other name)."""
    n = len(data)
    syn = np.full(n, -1, np.int64)
    for i in range(n):
        mem = data.members[data.concept[i]]
        if len(mem) > 1:
            j = mem[int(rng.integers(len(mem) - 1))]
            syn[i] = j if j != i else mem[-1]
    return syn


class HierarchyDraws:
    """Sibling names (hard negatives) and parent names (positives) per training item, drawn by
    :class:`~kgnorm.samplers.SiblingNegativeSampler` and
    :class:`~kgnorm.samplers.ParentPositiveSampler` over the IS_A graph of ``hierarchy`` with
    the *training* names only (a held-out dev name is never drawn). ``k = 0`` turns a
    sampler off."""

    def __init__(self, data: TrainingNames, hierarchy: Hierarchy, siblings_k: int = 0,
                 parents_k: int = 0, seed: int = 0) -> None:
        if siblings_k < 0 or parents_k < 0:
            raise KgnormError("siblings_k and parents_k must be >= 0")
        if hierarchy.graph.number_of_edges() == 0:
            raise KgnormError("sibling and parent sampling need IS_A edges and the hierarchy "
                              "has none; set siblings_k and parents_k to 0")
        self.view = Hierarchy(hierarchy.graph, data.by_concept())
        items = [(n, data.uids[c]) for n, c in zip(data.names, data.concept)]
        self.row = {it: i for i, it in enumerate(items)}
        self.n = len(items)
        self.siblings = (SiblingNegativeSampler(self.view, items=items, k=siblings_k, seed=seed)
                         if siblings_k else None)
        self.parents = (ParentPositiveSampler(self.view, items=items, k=parents_k, seed=seed)
                        if parents_k else None)

    def _draw(self, sampler, epoch: int) -> list[list[int]] | None:
        if sampler is None:
            return None
        sampler.set_epoch(epoch)
        out: list[list[int]] = [[] for _ in range(self.n)]
        for p in sampler.sample():
            j = self.row.get((p.other, p.other_uid))
            if j is not None:
                out[self.row[(p.anchor, p.anchor_uid)]].append(j)
        return out

    def draw(self, epoch: int) -> tuple[list[list[int]] | None, list[list[int]] | None]:
        """(sibling items, parent items) of every item for ``epoch``."""
        return self._draw(self.siblings, epoch), self._draw(self.parents, epoch)

    def coverage(self) -> dict[str, int]:
        """How many items can get a sibling / a parent at all (for the training record)."""
        out = {}
        for key, s in (("items_with_siblings", self.siblings), ("items_with_parents", self.parents)):
            if s is not None:
                out[key] = sum(1 for _, u in s.items if u in self.view and s.pool(u))
        return out
