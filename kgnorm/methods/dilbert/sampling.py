"""DILBERT's per-mention training data (Miftahutdinov et al. 2021): positives, negatives by
strategy, and their triplets; the strategies are described in :mod:`kgnorm.methods.dilbert.train`.

The shared samplers (:mod:`kgnorm.samplers`) draw random, parent and sibling names from the
graph; this module composes them per mention with the model's current ranking (resampling).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from kgnorm.methods.bne.model import concept_names
from kgnorm.errors import KgnormError
from kgnorm.graph.hierarchy import Hierarchy
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.samplers import (EpochSeeded, ParentPositiveSampler, RandomNegativeSampler,
                             SiblingNegativeSampler)
from kgnorm.methods.biosyn.sampling import positive_rows

__all__ = ["STRATEGIES", "PAIRINGS", "BATCHINGS", "check_strategy", "MentionSample",
           "DilbertSampler", "make_triplets"]

STRATEGIES = ("random", "random+parents", "resampling", "resampling+siblings")
PAIRINGS = ("product", "cycle")
BATCHINGS = ("shuffled", "mention")


def check_strategy(strategy: str) -> str:
    if strategy not in STRATEGIES:
        raise KgnormError(f"unknown DILBERT sampling strategy {strategy!r} "
                          f"(valid: {', '.join(STRATEGIES)})")
    return strategy


# ---------------------------------------------------------------------- sampling
@dataclass
class MentionSample:
    """One mention's epoch sample. ``positives``: (name, uid, kind) with kind ``synonym``
    (a gold concept's name) or ``parent``; ``negatives``: (name, row uids, kind) with kind
    ``random``, ``hard`` or ``sibling``."""

    query: str
    golds: frozenset[str]
    positives: list[tuple[str, str, str]]
    negatives: list[tuple[str, tuple[str, ...], str]]


def _view(dictionary: NameDictionary, hierarchy: Hierarchy | None) -> Hierarchy:
    """The hierarchy's graph (or none) over every dictionary concept, with the
    dictionary's names (what the shared samplers draw from)."""
    names = concept_names(dictionary, ontology_only=True)
    for u, ns in concept_names(dictionary).items():  # mention-only concepts too
        names.setdefault(u, ns)
    g = hierarchy.graph.copy() if hierarchy is not None else nx.DiGraph()
    g.add_nodes_from(sorted(names))
    return Hierarchy(g, names)


class DilbertSampler(EpochSeeded):
    """Positives and negatives of every training mention for one epoch."""

    def __init__(self, dictionary: NameDictionary, queries: Sequence[str],
                 golds: Sequence[frozenset[str]], strategy: str = "random",
                 hierarchy: Hierarchy | None = None, max_positives: int = 30,
                 n_negatives: int = 5, k_parents: int = 1, k_siblings: int = 1,
                 seed: int = 0) -> None:
        super().__init__(seed)
        self.strategy = check_strategy(strategy)
        if strategy in ("random+parents", "resampling+siblings") and hierarchy is None:
            raise KgnormError(f"strategy {strategy!r} needs a hierarchy (parents/siblings); "
                              "use 'random' or 'resampling' for a flat ontology")
        if int(n_negatives) < 1 or int(max_positives) < 1:
            raise KgnormError("n_negatives and max_positives must be >= 1")
        self.dictionary = dictionary
        self.max_positives, self.n_negatives = int(max_positives), int(n_negatives)
        self.k_parents, self.k_siblings = int(k_parents), int(k_siblings)
        rows = positive_rows(dictionary, list(golds))
        keep = [i for i, r in enumerate(rows) if r]
        self.n_skipped = len(queries) - len(keep)
        self.queries = [queries[i] for i in keep]
        self.golds = [frozenset(golds[i]) for i in keep]
        self.gold_rows = [frozenset(rows[i]) for i in keep]
        self.view = _view(dictionary, hierarchy)
        # one concept per mention for the shared samplers: a gold uid that is a dictionary
        # concept (first in sorted order), else the first uid of a gold row
        items = []
        for q, gs, gr in zip(self.queries, self.golds, self.gold_rows):
            prim = sorted(g for g in gs if g in self.view.graph)
            uid = prim[0] if prim else dictionary.uids[min(gr)][0]
            items.append((q, uid))
        self.items = items
        self._random = RandomNegativeSampler(self.view, items=items, k=self.n_negatives,
                                             seed=seed)
        self._parents = (ParentPositiveSampler(self.view, items=items, k=self.k_parents,
                                               seed=seed)
                         if strategy == "random+parents" else None)
        self._siblings = (SiblingNegativeSampler(self.view, items=items, k=self.k_siblings,
                                                 seed=seed)
                          if strategy == "resampling+siblings" else None)

    @property
    def needs_ranking(self) -> bool:
        return self.strategy.startswith("resampling")

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        for s in (self._random, self._parents, self._siblings):
            if s is not None:
                s.set_epoch(epoch)

    def __len__(self) -> int:
        return len(self.queries)

    @staticmethod
    def _grouped(pairs) -> dict[tuple[str, str], list]:
        out: dict[tuple[str, str], list] = {}
        for p in pairs:
            out.setdefault((p.anchor, p.anchor_uid), []).append(p)
        return out

    def sample(self, ranked: np.ndarray | None = None) -> list[MentionSample]:
        """The epoch's samples (:meth:`set_epoch` first). ``ranked [n_queries, depth]``:
        dictionary rows ranked by the current model for each query (resampling)."""
        if self.needs_ranking and ranked is None:
            raise KgnormError(f"strategy {self.strategy!r} needs the current model's ranking")
        if ranked is not None and len(ranked) != len(self.queries):
            raise KgnormError(f"ranking has {len(ranked)} rows for {len(self.queries)} queries")
        rng = self.rng()
        d = self.dictionary
        rand = self._grouped(self._random.sample()) if not self.needs_ranking else {}
        parents = self._grouped(self._parents.sample()) if self._parents else {}
        sibs = self._grouped(self._siblings.sample()) if self._siblings else {}
        out: list[MentionSample] = []
        n_rows = len(d)
        for i, (q, item) in enumerate(zip(self.queries, self.items)):
            gr = self.gold_rows[i]
            gset = self.golds[i]
            # positives: names of gold rows
            cand = sorted(r for r in gr if d.names[r] != q)
            if len(cand) > self.max_positives:
                cand = sorted(rng.choice(cand, size=self.max_positives, replace=False).tolist())
            pos = []
            for r in cand:
                uid = next((u for u in d.uids[r] if u in gset), None) or \
                    next((u for u in d.uids[r] if set(d.alt_ids.get(u, ())) & gset), d.uids[r][0])
                pos.append((d.names[r], uid, "synonym"))
            for p in parents.get(item, ()):
                r = d.index_of(p.other)
                if r is None or r in gr or p.other == q:
                    continue
                pos.append((p.other, p.other_uid, "parent"))
            # negatives
            neg: list[tuple[str, tuple[str, ...], str]] = []
            taken: set[int] = set()

            def add(r: int | None, kind: str) -> None:
                if r is None or r < 0 or r in gr or r in taken or d.names[r] == q:
                    return
                taken.add(r)
                neg.append((d.names[r], d.uids[r], kind))

            if ranked is not None and self.needs_ranking:
                row = [int(r) for r in ranked[i] if r >= 0]
                first_gold = next((k for k, r in enumerate(row) if r in gr), len(row))
                for r in row[:first_gold]:          # outrank the gold: hardest first
                    if len(neg) >= self.n_negatives:
                        break
                    add(r, "hard")
                for r in row[first_gold:]:          # then the next-ranked wrong names
                    if len(neg) >= self.n_negatives:
                        break
                    add(r, "hard")
            else:
                for p in rand.get(item, ()):
                    if len(neg) >= self.n_negatives:
                        break
                    add(d.index_of(p.other), "random")
            tries = 0
            while len(neg) < self.n_negatives and tries < 50 * self.n_negatives and n_rows > 1:
                tries += 1
                r = int(rng.integers(n_rows))
                if self._random.allowed(item[1], d.uids[r][0], d.names[r]):
                    add(r, "random")
            for p in sibs.get(item, ()):
                add(d.index_of(p.other), "sibling")
            out.append(MentionSample(q, gset, pos, neg))
        return out


def make_triplets(samples: Sequence[MentionSample], pairing: str = "product",
                  rng: np.random.Generator | None = None,
                  batching: str = "shuffled") -> list[tuple[str, str, str]]:
    """(anchor, positive, negative) texts of the samples; with ``rng``, shuffled as a whole
    (``batching="shuffled"``) or mention by mention, each mention's triplets kept together
    (``"mention"``)."""
    if pairing not in PAIRINGS:
        raise KgnormError(f"unknown pairing {pairing!r} (choose from {', '.join(PAIRINGS)})")
    if batching not in BATCHINGS:
        raise KgnormError(f"unknown batching {batching!r} (choose from {', '.join(BATCHINGS)})")
    groups: list[list[tuple[str, str, str]]] = []
    for s in samples:
        if not s.positives or not s.negatives:
            continue
        if pairing == "product":
            groups.append([(s.query, p[0], n[0]) for p in s.positives for n in s.negatives])
        else:
            k = max(len(s.positives), len(s.negatives))
            groups.append([(s.query, s.positives[i % len(s.positives)][0],
                            s.negatives[i % len(s.negatives)][0]) for i in range(k)])
    if rng is None:
        return [t for g in groups for t in g]
    if batching == "mention":
        grouped: list[tuple[str, str, str]] = []
        for gi in rng.permutation(len(groups)):
            g = groups[int(gi)]
            grouped.extend(g[int(i)] for i in rng.permutation(len(g)))
        return grouped
    out = [t for g in groups for t in g]
    return [out[int(i)] for i in rng.permutation(len(out))]
