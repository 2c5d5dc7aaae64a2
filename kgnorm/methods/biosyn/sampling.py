"""BioSyn's candidates (Sung et al. 2020): per training query, the sparse top-k names (once:
the tf-idf never changes) merged with the dense top-k of the current encoder (every epoch),
and which of them are gold -- at the concept level, as the linker ranks
(:mod:`kgnorm.linking.concepts`). DILBERT takes its positive names from here too."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kgnorm.linking.dictionary import NameDictionary

__all__ = ["gold_concepts", "positive_rows", "combine_candidates"]


def gold_concepts(dictionary: NameDictionary, golds: list[frozenset[str]]) -> list[dict[int, int]]:
    """Per query, {row: number of the row's concepts that are gold} -- a concept is gold
    through its own uid or its alt ids, never through another concept sharing the name."""
    by_id: dict[str, set[tuple[int, str]]] = {}
    for i, us in enumerate(dictionary.uids):
        for u in us:
            by_id.setdefault(u, set()).add((i, u))
            for a in dictionary.alt_ids.get(u, ()):
                by_id.setdefault(a, set()).add((i, u))
    out = []
    for gs in golds:
        counts: dict[int, int] = {}
        for row, _ in set().union(*(by_id.get(g, set()) for g in gs)):
            counts[row] = counts.get(row, 0) + 1
        out.append(counts)
    return out


def positive_rows(dictionary: NameDictionary, golds: list[frozenset[str]]) -> list[set[int]]:
    """Rows holding at least one gold concept, per query (DILBERT's positive names)."""
    return [set(c) for c in gold_concepts(dictionary, golds)]


def combine_candidates(s_idx: np.ndarray, d_idx: np.ndarray, top_k: int, n_sparse: int,
                       n_names: int, exclude: Sequence[int] | None = None) -> np.ndarray:
    """BioSyn's candidate list: n_sparse sparse, then dense not yet taken, then sparse;
    ``exclude[i]`` (a row, or -1) is never a candidate of query i."""
    out = np.empty((len(s_idx), top_k), np.int64)
    for i in range(len(s_idx)):
        chosen: list[int] = []
        taken: set[int] = {int(exclude[i])} if exclude is not None else set()
        for src in (s_idx[i, :n_sparse], d_idx[i], s_idx[i, n_sparse:]):
            for c in src:
                c = int(c)
                if c >= 0 and c not in taken:
                    taken.add(c)
                    chosen.append(c)
                    if len(chosen) == top_k:
                        break
            if len(chosen) == top_k:
                break
        if len(chosen) < top_k:  # tiny dictionaries: pad with unused rows
            extra = (c for c in range(n_names) if c not in taken)
            chosen.extend(next(extra) for _ in range(top_k - len(chosen)))
        out[i] = chosen
    return out
