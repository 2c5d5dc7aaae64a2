"""Relatedness evaluation (BNE §4.3; docs/architecture.md, "Evaluation protocols"): Spearman's rho between the cosine
similarity of two terms' vectors and human scores (UMNSRS similarity / relatedness).

UMNSRS CSV columns: ``Mean, Stdev, Term1, Term2, CUI1, CUI2`` (the human score is
``Mean``). Terms are normalized with :func:`kgnorm.text.normalize.normalize` before encoding
(``normalize_terms=True``), like dictionary names.

A pair is **unencodable** when either term is: ``can_encode(term)`` says no (e.g.
:func:`wordvector_can_encode` for averaged word vectors: no token of the term is in the
vocabulary), or the encoder returns a zero / non-finite vector. Unencodable pairs are never
silently dropped: the report counts and lists them, gives rho over the encodable pairs
(``spearman``, the usual number) *and* over all pairs with cosine 0 for the unencodable
ones (``spearman_all``), and keeps the per-pair ``encodable`` mask so that several models
can be compared on their common pairs (:func:`spearman_on`).
"""
from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from kgnorm.errors import InputError, KgnormError
from kgnorm.text.normalize import normalize

__all__ = ["RelatednessPair", "RelatednessReport", "load_umnsrs", "spearman_relatedness",
           "spearman_on", "wordvector_can_encode", "cosine_pairs"]

_COLUMNS = ("Mean", "Term1", "Term2")


@dataclass(frozen=True)
class RelatednessPair:
    term1: str
    term2: str
    score: float
    cui1: str = ""
    cui2: str = ""
    stdev: float = float("nan")


@dataclass
class RelatednessReport:
    name: str
    spearman: float                  # over encodable pairs
    p_value: float
    spearman_all: float              # all pairs, cosine 0 for unencodable ones
    n_pairs: int
    n_used: int
    n_unencodable: int
    unencodable: list[RelatednessPair] = field(default_factory=list)
    similarities: np.ndarray | None = None     # cosine per pair (NaN when unencodable)
    encodable: np.ndarray | None = None        # bool per pair

    def as_dict(self) -> dict:
        return {"name": self.name, "spearman": self.spearman, "p_value": self.p_value,
                "spearman_all": self.spearman_all, "n_pairs": self.n_pairs,
                "n_used": self.n_used, "n_unencodable": self.n_unencodable}


def load_umnsrs(path: str | Path) -> list[RelatednessPair]:
    """Read a UMNSRS CSV (``Mean,Stdev,Term1,Term2,CUI1,CUI2``)."""
    p = Path(path)
    if not p.is_file():
        raise KgnormError(f"relatedness file not found: {p}")
    out: list[RelatednessPair] = []
    with open(p, encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in _COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"missing column(s) {', '.join(missing)} "
                             f"(have {reader.fieldnames})", path=p, line=1)
        for ln, row in enumerate(reader, start=2):
            try:
                score = float(row["Mean"])
            except (TypeError, ValueError):
                raise InputError(f"Mean is not a number: {row.get('Mean')!r}", path=p,
                                 line=ln) from None
            t1, t2 = (row.get("Term1") or "").strip(), (row.get("Term2") or "").strip()
            if not t1 or not t2:
                raise InputError("empty term", path=p, line=ln)
            try:
                sd = float(row.get("Stdev") or "nan")
            except ValueError:
                sd = float("nan")
            out.append(RelatednessPair(t1, t2, score, (row.get("CUI1") or "").strip(),
                                       (row.get("CUI2") or "").strip(), sd))
    if not out:
        raise InputError("no pairs", path=p)
    return out


def wordvector_can_encode(word_vectors, subwords: bool = False) -> Callable[[str], bool]:
    """Predicate for averaged word vectors: a term is encodable when one of its tokens is
    in the vocabulary (``subwords=True`` also accepts fastText n-gram vectors of unknown
    words, i.e. whatever :meth:`WordVectors.average` gives a vector)."""
    from kgnorm.encoders.wordvectors import tokenize

    def can(term: str) -> bool:
        for tok in tokenize(term):
            if tok in word_vectors:
                return True
            if subwords and word_vectors.word_vector(tok) is not None:
                return True
        return False

    return can


def cosine_pairs(v1: np.ndarray, v2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise cosine and a mask of rows where both vectors are non-zero and finite."""
    v1 = np.asarray(v1, np.float64)
    v2 = np.asarray(v2, np.float64)
    n1, n2 = np.linalg.norm(v1, axis=1), np.linalg.norm(v2, axis=1)
    ok = (n1 > 0) & (n2 > 0) & np.isfinite(n1) & np.isfinite(n2)
    cos = np.full(len(v1), np.nan)
    cos[ok] = np.einsum("nd,nd->n", v1[ok], v2[ok]) / (n1[ok] * n2[ok])
    return cos, ok


def spearman_on(scores: Sequence[float], similarities: Sequence[float],
                mask: Sequence[bool] | None = None) -> tuple[float, float]:
    """(rho, p) over the pairs in ``mask`` (all by default); NaN with fewer than 3 pairs."""
    s = np.asarray(scores, np.float64)
    c = np.asarray(similarities, np.float64)
    m = np.ones(len(s), bool) if mask is None else np.asarray(mask, bool)
    if int(m.sum()) < 3:
        return float("nan"), float("nan")
    r = spearmanr(c[m], s[m])
    return float(r.statistic), float(r.pvalue)


def spearman_relatedness(encode: Callable[[list[str]], np.ndarray],
                         pairs: Sequence[RelatednessPair],
                         can_encode: Callable[[str], bool] | None = None,
                         normalize_terms: bool = True, name: str = "") -> RelatednessReport:
    """Spearman between cosine(encode(term1), encode(term2)) and the human scores."""
    if not pairs:
        raise KgnormError("no relatedness pairs")
    prep = (lambda t: normalize(t)) if normalize_terms else (lambda t: t)
    terms = sorted({prep(p.term1) for p in pairs} | {prep(p.term2) for p in pairs})
    row = {t: i for i, t in enumerate(terms)}
    vecs = np.asarray(encode(terms), np.float64)
    if vecs.ndim != 2 or len(vecs) != len(terms):
        raise KgnormError(f"encode returned shape {vecs.shape} for {len(terms)} terms")
    term_ok = np.array([bool(t) and (can_encode is None or bool(can_encode(t)))
                        for t in terms])
    i1 = np.array([row[prep(p.term1)] for p in pairs])
    i2 = np.array([row[prep(p.term2)] for p in pairs])
    cos, ok = cosine_pairs(vecs[i1], vecs[i2])
    ok &= term_ok[i1] & term_ok[i2]
    cos[~ok] = np.nan
    scores = np.array([p.score for p in pairs], np.float64)
    rho, pv = spearman_on(scores, cos, ok)
    rho_all, _ = spearman_on(scores, np.where(ok, cos, 0.0))
    return RelatednessReport(name=name, spearman=rho, p_value=pv, spearman_all=rho_all,
                             n_pairs=len(pairs), n_used=int(ok.sum()),
                             n_unencodable=int((~ok).sum()),
                             unencodable=[p for p, k in zip(pairs, ok) if not k],
                             similarities=cos, encodable=ok)
