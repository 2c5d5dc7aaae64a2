"""Synonym evaluations of name encoders (BNE, Phan et al. 2019, §4.1 and §4.2).

Both take a concept -> names mapping (``uid -> [normalized names]`` or a
:class:`~kgnorm.linking.dictionary.NameDictionary`) and an ``encode(names) -> vectors``
function; similarity is the cosine of the vectors. Query names come from concepts with at
least two names (``max_queries`` draws a seeded sample of them, or pass ``queries``).

**Synonym retrieval MAP (§4.2)** -- :func:`synonym_retrieval_map`: for a query name ``s``
of concept ``c``, a lexical scorer (BioSyn's character n-gram tf-idf cosine,
:class:`~kgnorm.linking.sparse.SparseScorer`) retrieves the top ``k_concepts`` (20)
concepts -- a concept scores as its best-scoring name; the top ``lexical_depth`` names are
aggregated -- and the candidates are all names of those concepts except ``s`` itself. The
query's own name takes part in the retrieval, so ``c`` is always among the concepts. The
candidates are ranked by the model (cosine, ties by lexical score); relevant = names of
``c``. AP = mean over the relevant candidates of the precision at their rank; MAP = mean AP
over queries. ``encode=None`` ranks by the lexical score itself (the baseline).

**Mean coverage@k (§4.1)** -- :func:`mean_coverage`: for a query name ``s`` with synonym
set ``S(s)`` (the other names of its concepts), ``N_k(s)`` are the ``k`` names nearest to
``s`` among *all* names (``s`` excluded); ``coverage@k(s) = |N_k(s) & S(s)| / min(k,
|S(s)|)`` (1 for a perfect model), averaged over the queries.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kgnorm.errors import KgnormError
from kgnorm.linking.dictionary import NameDictionary
from kgnorm.linking.name_index import NameIndex
from kgnorm.linking.sparse import SparseScorer

__all__ = ["SynonymReport", "synonym_retrieval_map", "mean_coverage", "average_precision",
           "sample_queries"]

Encode = Callable[[list[str]], np.ndarray]


@dataclass
class SynonymReport:
    metric: str
    value: float
    n_queries: int
    mean_candidates: float = float("nan")
    k: int | None = None

    def as_dict(self) -> dict:
        return {"metric": self.metric, "value": self.value, "n_queries": self.n_queries,
                "mean_candidates": self.mean_candidates, "k": self.k}


def _rows(concepts: Mapping[str, Sequence[str]] | NameDictionary
          ) -> tuple[list[str], list[frozenset[str]]]:
    """Distinct names and the uids carrying each."""
    if isinstance(concepts, NameDictionary):
        return list(concepts.names), [frozenset(u) for u in concepts.uids]
    by: dict[str, set[str]] = {}
    for uid, names in concepts.items():
        for n in ([names] if isinstance(names, str) else names):
            if n and n.strip():
                by.setdefault(n, set()).add(str(uid))
    names = sorted(by)
    return names, [frozenset(by[n]) for n in names]


def average_precision(relevant: Sequence[bool]) -> float:
    """AP of a ranked 0/1 list over its relevant items (NaN when none is relevant)."""
    r = np.asarray(relevant, bool)
    if not r.any():
        return float("nan")
    hits = np.cumsum(r)
    return float(np.mean(hits[r] / (np.flatnonzero(r) + 1)))


def sample_queries(names: Sequence[str], uids: Sequence[frozenset[str]],
                   max_queries: int | None = None, seed: int = 0) -> list[tuple[str, str]]:
    """(name, uid) of names whose concept has another name; a seeded sample of at most
    ``max_queries``."""
    size: dict[str, int] = {}
    for us in uids:
        for u in us:
            size[u] = size.get(u, 0) + 1
    cand = [(n, u) for n, us in zip(names, uids) for u in sorted(us) if size[u] > 1]
    if max_queries is not None and len(cand) > max_queries:
        rng = np.random.default_rng(seed)
        cand = [cand[i] for i in sorted(rng.choice(len(cand), int(max_queries), replace=False))]
    return cand


def _vectors(encode: Encode, names: list[str], batch_size: int) -> np.ndarray:
    out = []
    for s in range(0, len(names), batch_size):
        out.append(np.asarray(encode(names[s:s + batch_size]), np.float32))
    v = np.concatenate(out) if out else np.zeros((0, 1), np.float32)
    n = np.linalg.norm(v, axis=1, keepdims=True)
    return v / np.where(n > 0, n, 1.0)


def synonym_retrieval_map(concepts: Mapping[str, Sequence[str]] | NameDictionary,
                          encode: Encode | None = None,
                          queries: Sequence[tuple[str, str]] | None = None,
                          k_concepts: int = 20, lexical_depth: int = 400,
                          max_queries: int | None = 2000, seed: int = 0,
                          scorer: SparseScorer | None = None,
                          batch_size: int = 1024) -> SynonymReport:
    """Synonym retrieval MAP (see the module docstring). ``queries``: (name, uid) pairs
    whose name is one of the names; default a sample from ``concepts``."""
    names, uids = _rows(concepts)
    if not names:
        raise KgnormError("no names to evaluate synonym retrieval on")
    row = {n: i for i, n in enumerate(names)}
    if queries is None:
        queries = sample_queries(names, uids, max_queries, seed)
    queries = [(q, u) for q, u in queries]
    missing = [q for q, _ in queries if q not in row]
    if missing:
        raise KgnormError(f"{len(missing)} query names are not among the names "
                          f"(e.g. {missing[0]!r})")
    if not queries:
        raise KgnormError("no query name has a synonym")
    if scorer is None:
        scorer = SparseScorer().fit(names)
    elif scorer.n_names != len(names):
        scorer.set_names(names)
    by_uid: dict[str, list[int]] = {}
    for i, us in enumerate(uids):
        for u in us:
            by_uid.setdefault(u, []).append(i)
    qnames = [q for q, _ in queries]
    _, lex_i = scorer.topk(qnames, min(int(lexical_depth), len(names)))
    pools: list[list[int]] = []
    for qi, (q, uid) in enumerate(queries):
        concepts_top: list[str] = []
        seen: set[str] = set()
        for r in lex_i[qi]:
            for u in sorted(uids[int(r)]):
                if u not in seen:
                    seen.add(u)
                    concepts_top.append(u)
            if len(concepts_top) >= k_concepts:
                break
        concepts_top = concepts_top[:k_concepts]
        if uid not in seen:           # cannot happen: the query's own name is retrieved
            concepts_top[-1:] = [uid]
        pools.append(sorted({i for u in concepts_top for i in by_uid.get(u, ())} - {row[q]}))
    vecs = None
    if encode is not None:  # encode only the names that take part
        needed = sorted({row[q] for q in qnames}.union(*map(set, pools)))
        pos = np.full(len(names), -1, np.int64)
        pos[needed] = np.arange(len(needed))
        vecs = _vectors(encode, [names[i] for i in needed], batch_size)
    aps, n_cands = [], []
    for qi, (q, uid) in enumerate(queries):
        qrow = row[q]
        cand = pools[qi]
        if not cand:
            continue
        cand_a = np.array(cand)
        lex = scorer.score_pairs([q], cand_a[None, :])[0]
        if vecs is None:
            key = lex
        else:
            key = vecs[pos[cand_a]] @ vecs[pos[qrow]]
        order = np.lexsort((cand_a, -lex, -key))
        rel = [uid in uids[cand[j]] for j in order]
        ap = average_precision(rel)
        if not np.isnan(ap):
            aps.append(ap)
            n_cands.append(len(cand))
    if not aps:
        raise KgnormError("no query had a relevant candidate")
    return SynonymReport("synonym_retrieval_map", float(np.mean(aps)), len(aps),
                         float(np.mean(n_cands)), k_concepts)


def mean_coverage(concepts: Mapping[str, Sequence[str]] | NameDictionary, encode: Encode,
                  k: int = 10, queries: Sequence[tuple[str, str]] | None = None,
                  max_queries: int | None = 2000, seed: int = 0,
                  batch_size: int = 1024) -> SynonymReport:
    """Mean coverage@k (see the module docstring)."""
    names, uids = _rows(concepts)
    row = {n: i for i, n in enumerate(names)}
    if queries is None:
        queries = sample_queries(names, uids, max_queries, seed)
    queries = [(q, u) for q, u in queries if q in row]
    if not queries:
        raise KgnormError("no query name has a synonym")
    by_uid: dict[str, set[int]] = {}
    for i, us in enumerate(uids):
        for u in us:
            by_uid.setdefault(u, set()).add(i)
    vecs = _vectors(encode, names, batch_size)
    index = NameIndex.build(vecs, use_gpu=False)
    qrows = np.array([row[q] for q, _ in queries])
    _, nn = index.search(vecs[qrows], min(int(k) + 1, len(names)))
    covs = []
    for qi, (q, _) in enumerate(queries):
        r = int(qrows[qi])
        syn = set().union(*(by_uid[u] for u in uids[r])) - {r}
        if not syn:
            continue
        top = [int(j) for j in nn[qi] if j >= 0 and j != r][:k]
        covs.append(len(syn.intersection(top)) / min(k, len(syn)))
    if not covs:
        raise KgnormError("no query has a synonym")
    return SynonymReport(f"mean_coverage@{k}", float(np.mean(covs)), len(covs), k=k)
