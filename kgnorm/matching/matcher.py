"""Decide how the concepts of a source ontology map to those of a target ontology.

Three sources of evidence, strongest first, each with its own SSSOM justification:
the ontologies' own cross-references (curated), equal names after lowercasing or a source name
that is the target's preferred name (lexical), and
the encoder's cosine between any name of the source concept and any name of the target concept
(semantic, kept above a threshold and only where the target is not already another concept's
exact match). A concept left without an equivalent takes a broadMatch to the equivalent of its
nearest ancestor that has one (structural): what a curator would propose before looking closer.

Ranking is separate from deciding (:func:`dense_candidates` then :func:`decide`), so a threshold
sweep or a calibration reuses one ranking."""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from kgnorm.matching.sssom import BROAD, CURATED, EXACT, LEXICAL, NARROW, SEMANTIC, STRUCTURAL

Encode = Callable[[Sequence[str]], np.ndarray]

# Chosen on the dev data only (Disease Ontology cancer slim -> MEDIC 2012, blind; benchmarks/match.py,
# benchmarks/LOG.md "Ontology matching"): the cosine above which an encoder's best target is an exactMatch,
# and the logistic fit of P(correct | cosine) there, which turns a cosine into the confidence written.
DEFAULT_THRESHOLD = 0.87
DEFAULT_SLOPE = 13.7
DEFAULT_CENTER = 0.779
LEXICAL_CONFIDENCE = 0.94   # the lexical baseline's precision on the dev reference
BAG_CONFIDENCE = 0.90       # the same words in another order or number
LABEL_CONFIDENCE = 0.83     # a source name is the target's preferred name: 10 of 12 right on the dev reference
CURATED_CONFIDENCE = 0.99   # an xref the ontology's curators wrote
STRUCTURAL_DISCOUNT = 0.9   # a broadMatch is as sure as the ancestor's equivalence, a little less


@dataclass
class MatchSide:
    """One ontology as the matcher sees it (obsolete concepts already left out)."""

    ontology: str
    labels: dict[str, str]                       # uid -> preferred name
    names: dict[str, list[str]]                  # uid -> every name (preferred first)
    parents: dict[str, list[str]] = field(default_factory=dict)  # uid -> IS_A parents
    ids: dict[str, list[str]] = field(default_factory=dict)      # uid -> xrefs and alt ids

    def without_ids_of(self, other: "MatchSide") -> "MatchSide":
        """A copy whose xrefs and alt ids no longer name `other`'s concepts: a blind run."""
        theirs = set(other.names) | {i for ids in other.ids.values() for i in ids}
        return replace(self, ids={u: [i for i in ids if i not in theirs] for u, ids in self.ids.items()})


@dataclass
class Calibration:
    """The exactMatch threshold on cosine and P(correct | cosine) = 1 / (1 + exp(-slope (cos - center)))."""

    threshold: float = DEFAULT_THRESHOLD
    slope: float = DEFAULT_SLOPE
    center: float = DEFAULT_CENTER
    fitted_on: str = "dev default"

    def confidence(self, score: float) -> float:
        return 1.0 / (1.0 + math.exp(-self.slope * (score - self.center)))


@dataclass
class Decision:
    """One mapping the matcher decided (or took from an xref)."""

    source_uid: str
    target_uid: str
    predicate: str
    confidence: float
    justification: str
    score: float = float("nan")   # the encoder's cosine, where it played a part
    comment: str = ""


def normalize(name: str) -> str:
    return " ".join(name.lower().split())



def curated_pairs(source: MatchSide, target: MatchSide) -> set[tuple[str, str]]:
    """(source, target) where one side's xrefs or alt ids name the other concept or one of its alt ids."""
    by_id: dict[str, set[str]] = {}
    for t in target.names:
        by_id.setdefault(t, set()).add(t)
    for t, ids in target.ids.items():
        for i in ids:
            if i not in source.names:
                by_id.setdefault(i, set()).add(t)
    pairs = {(s, t) for s, ids in source.ids.items() if s in source.names for i in ids for t in by_id.get(i, ())}
    src_of = {s: s for s in source.names}
    for t, ids in target.ids.items():
        pairs.update((src_of[i], t) for i in ids if i in src_of and t in target.names)
    return pairs


_STOP = {"of", "the", "and", "in", "or", "with", "nos", "a", "an"}


def token_bag(name: str) -> str:
    """Words in sorted order, punctuation, stop words and a plural -s dropped: `Carcinoma, Small Cell
    Lung` and `small cell lung carcinomas` agree."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return " ".join(sorted({w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
                            for w in words if w not in _STOP}))


def lexical_pairs(source: MatchSide, target: MatchSide, key: Callable[[str], str] = normalize) -> dict[str, set[str]]:
    """source uid -> the target concepts that share a name with it under `key` (default: lowercased,
    the lexical baseline)."""
    index: dict[str, set[str]] = {}
    for t, names in target.names.items():
        for n in names:
            index.setdefault(key(n), set()).add(t)
    return _source_hits(source, index, key)


def best_lexical(source: MatchSide, target: MatchSide, lexical: dict[str, set[str]],
                 key: Callable[[str], str] = normalize) -> dict[str, set[str]]:
    """Of several targets sharing a name with a source concept, those with the strongest evidence:
    preferred names that agree first, then the most names in common (a synonym such as `breast
    cancer` is often shared by a concept and its narrower neighbours; the preferred names are not)."""
    out: dict[str, set[str]] = {}
    for s, targets in lexical.items():
        if len(targets) == 1:
            out[s] = set(targets)
            continue
        mine = {key(n) for n in source.names[s]}
        label = key(source.labels[s])

        def strength(t: str) -> tuple[int, int]:
            theirs = {key(n) for n in target.names[t]}
            return (label in theirs) + (key(target.labels[t]) in mine), len(mine & theirs)

        top = max(strength(t) for t in targets)
        out[s] = {t for t in targets if strength(t) == top}
    return out


def narrower(name: str, than: str) -> bool:
    """`name` has every word of `than` and more (`Prostate cancer, familial` of `prostate cancer`): a
    qualified, narrower concept rather than an equivalent."""
    mine, theirs = set(token_bag(name).split()), set(token_bag(than).split())
    return bool(theirs) and theirs < mine


def label_pairs(source: MatchSide, target: MatchSide) -> dict[str, set[str]]:
    """source uid -> every target whose preferred name (words in any order or number) is one of the
    source's names. Kept beside the strongest lexical match: an ontology that lists a broader
    heading's name as a synonym maps to that heading too (the Disease Ontology's `bone tissue
    neoplasm`, a synonym of osteosarcoma, is MeSH's `Neoplasms, Bone Tissue`, which its curators
    also xref)."""
    index: dict[str, set[str]] = {}
    for t, label in target.labels.items():
        if t in target.names:
            index.setdefault(token_bag(label), set()).add(t)
    return _source_hits(source, index, token_bag)


def _source_hits(source: MatchSide, index: dict[str, set[str]], key: Callable[[str], str]) -> dict[str, set[str]]:
    """source uid -> the targets `index` holds under the `key` of any of its names (an empty key
    matches nothing)."""
    index.pop("", None)
    out: dict[str, set[str]] = {}
    for s, names in source.names.items():
        hits = set().union(*(index.get(key(n), set()) for n in names)) if names else set()
        if hits:
            out[s] = hits
    return out


def _name_table(side: MatchSide) -> tuple[list[str], list[list[str]]]:
    """Distinct normalized names and, per name, the concepts that have it."""
    owners: dict[str, list[str]] = {}
    for uid, names in side.names.items():
        for n in dict.fromkeys(normalize(x) for x in names):
            owners.setdefault(n, []).append(uid)
    texts = sorted(owners)  # the store's row order varies between reads; the ranking must not
    return texts, [sorted(owners[t]) for t in texts]


def unit(vectors: np.ndarray) -> np.ndarray:
    v = np.asarray(vectors, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def dense_candidates(encode: Encode, source: MatchSide, target: MatchSide, top_k: int = 10,
                     chunk: int = 512, per_name: int = 50) -> dict[str, list[tuple[str, float]]]:
    """source uid -> its `top_k` target concepts by the best cosine between any two of their names.

    The target's names are encoded once; the source's in chunks, and each concept keeps only its
    best targets as it goes, so memory follows the target and the chunk, and grows with the source
    by `top_k` pairs a concept."""
    t_texts, t_owners = _name_table(target)
    t_vecs = unit(encode(t_texts))
    s_texts, s_owners = _name_table(source)
    best: dict[str, dict[str, float]] = {}
    k = min(per_name, len(t_texts))
    for start in range(0, len(s_texts), chunk):
        q = unit(encode(s_texts[start:start + chunk]))
        sims = q @ t_vecs.T
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k] if k < sims.shape[1] else np.tile(
            np.arange(sims.shape[1]), (len(q), 1))
        for row, cols in enumerate(top):
            for uid in s_owners[start + row]:
                mine = best.setdefault(uid, {})
                for c in cols:
                    score = float(sims[row, c])
                    for t in t_owners[c]:
                        if score > mine.get(t, -2.0):
                            mine[t] = score
                if len(mine) > 4 * top_k:  # exact: a target cut here comes back if a later name beats it
                    best[uid] = dict(sorted(mine.items(), key=lambda x: (-x[1], x[0]))[:top_k])
    return {s: sorted(d.items(), key=lambda x: (-x[1], x[0]))[:top_k] for s, d in best.items()}


def decide(source: MatchSide, target: MatchSide, candidates: dict[str, list[tuple[str, float]]],
           calibration: Calibration | None = None, use_ids: bool = True,
           lexical: dict[str, set[str]] | None = None) -> list[Decision]:
    """The mappings: curated (with `use_ids`), then lexical, then semantic exactMatches; broad and
    narrow matches through the hierarchies for concepts left without an equivalent."""
    cal = calibration or Calibration()
    exact: dict[str, list[Decision]] = {}
    if use_ids:
        for s, t in sorted(curated_pairs(source, target)):
            exact.setdefault(s, []).append(Decision(s, t, EXACT, CURATED_CONFIDENCE, CURATED, comment="xref"))
    lexical = best_lexical(source, target, lexical_pairs(source, target)) if lexical is None else lexical
    for s, targets in sorted(lexical.items()):
        broad_enough = {t for t in targets if not narrower(target.labels[t], source.labels[s])}
        targets = broad_enough or targets
        if s not in exact:
            exact[s] = [Decision(s, t, EXACT, LEXICAL_CONFIDENCE, LEXICAL, _score(candidates, s, t))
                        for t in sorted(targets)]
    claimed = {d.target_uid for ds in exact.values() for d in ds}
    bags = best_lexical(source, target, lexical_pairs(source, target, token_bag), token_bag)
    for s, targets in sorted(bags.items()):
        targets = targets - claimed
        if s not in exact and len(targets) == 1:
            t = next(iter(targets))
            exact[s] = [Decision(s, t, EXACT, BAG_CONFIDENCE, LEXICAL, _score(candidates, s, t), "same words")]
    for s, targets in sorted(label_pairs(source, target).items()):
        if any(d.justification == CURATED for d in exact.get(s, ())):
            continue  # the curators' own xrefs say what it maps to
        mine = {d.target_uid for d in exact.get(s, ())}
        targets = {t for t in targets if not narrower(target.labels[t], source.labels[s])} - mine
        if targets:
            exact.setdefault(s, []).extend(Decision(s, t, EXACT, LABEL_CONFIDENCE, LEXICAL, _score(candidates, s, t),
                                                    "target's preferred name") for t in sorted(targets))
    claimed = {d.target_uid for ds in exact.values() for d in ds}
    # best cosine first: where two source concepts want the same target, the closer one has it
    for s in sorted(candidates, key=lambda u: (-candidates[u][0][1] if candidates[u] else 0.0, u)):
        if s in exact or not candidates[s]:
            continue
        t, score = candidates[s][0]
        if score >= cal.threshold and t not in claimed:
            exact[s] = [Decision(s, t, EXACT, round(cal.confidence(score), 4), SEMANTIC, score)]
            claimed.add(t)
    out = [d for s in sorted(exact) for d in exact[s]]
    out += _broad(source, exact) + _narrow(source, target, exact, candidates, cal)
    return out


def _score(candidates: dict[str, list[tuple[str, float]]], s: str, t: str) -> float:
    return next((score for uid, score in candidates.get(s, ()) if uid == t), float("nan"))


def _nearest_mapped(uid: str, parents: dict[str, list[str]], mapped: dict[str, list[Decision]]) -> list[str]:
    """The closest ancestors of `uid` that have an exactMatch (breadth first; all at that distance)."""
    seen, level = {uid}, list(parents.get(uid, ()))
    while level:
        hit = [p for p in level if p in mapped]
        if hit:
            return sorted(set(hit))
        seen.update(level)
        level = [g for p in level for g in parents.get(p, ()) if g not in seen]
    return []


def _broad(source: MatchSide, exact: dict[str, list[Decision]]) -> list[Decision]:
    out = []
    for s in sorted(source.names):
        if s in exact:
            continue
        for a in _nearest_mapped(s, source.parents, exact):
            for d in exact[a]:
                out.append(Decision(s, d.target_uid, BROAD, round(d.confidence * STRUCTURAL_DISCOUNT, 4), STRUCTURAL,
                                    comment=f"ancestor {a} {d.predicate} {d.target_uid}"))
    return out


def _narrow(source: MatchSide, target: MatchSide, exact: dict[str, list[Decision]],
            candidates: dict[str, list[tuple[str, float]]], cal: Calibration) -> list[Decision]:
    """Among a source concept's ranked candidates, the unmatched targets below its own equivalent."""
    if not target.parents:
        return []
    by_target: dict[str, list[Decision]] = {}
    for ds in exact.values():
        for d in ds:
            by_target.setdefault(d.target_uid, []).append(d)
    taken = set(by_target)
    out = []
    for s, ranked in sorted(candidates.items()):
        mine = {d.target_uid for d in exact.get(s, ())}
        for t, score in ranked:
            if t in taken or not mine:
                continue
            if set(_nearest_mapped(t, target.parents, by_target)) & mine:
                out.append(Decision(s, t, NARROW, round(cal.confidence(score) * STRUCTURAL_DISCOUNT, 4), STRUCTURAL,
                                    score, comment="below the source's equivalent"))
    return out


def lexically_mapped(source: MatchSide, target: MatchSide, candidates: dict[str, list[tuple[str, float]]]) -> set[str]:
    """The source concepts that the lexical rules give an exactMatch without any xref: the cosine
    threshold never decides them."""
    return {d.source_uid for d in decide(source, target, candidates, Calibration(threshold=math.inf), use_ids=False)
            if d.predicate == EXACT}


def calibrate(candidates: dict[str, list[tuple[str, float]]], reference: set[tuple[str, str]],
              min_pairs: int = 20, min_precision: float = 0.95, lexical: set[str] | frozenset[str] = frozenset(),
              ) -> Calibration:
    """Fit the threshold and P(correct | cosine) on concepts with a reference equivalent (the xrefs
    the two ontologies share): the best top-1 cosine F1 whose precision stays >= `min_precision`.
    Concepts in `lexical` (:func:`lexically_mapped`) are left out: the threshold only decides concepts
    without a lexical match, and those with one crowd the top cosines (on the dev data, fitting on all
    of them chose thresholds of 0.90-1.00 that lost up to 1.9 F1 points on the held-out half against the
    default, 1.0 on average). Too few such concepts, or no wrong top-1 among them: the dev defaults."""
    gold: dict[str, set[str]] = {}
    for s, t in reference:
        if s not in lexical:
            gold.setdefault(s, set()).add(t)
    rows = [(ranked[0][1], ranked[0][0] in gold[s]) for s, ranked in candidates.items()
            if s in gold and ranked and s not in lexical]
    if len(rows) < min_pairs or all(ok for _, ok in rows) or not any(ok for _, ok in rows):
        return Calibration()
    rows.sort(key=lambda r: -r[0])
    best: tuple[float, float] | None = None
    right = 0
    for i, (score, ok) in enumerate(rows):
        right += ok
        precision, recall = right / (i + 1), right / len(gold)
        f1 = 2 * precision * recall / (precision + recall) if right else 0.0
        if precision >= min_precision and (best is None or f1 > best[0]):
            best = (f1, score)
    from sklearn.linear_model import LogisticRegression

    x = np.array([[r[0]] for r in rows])
    y = np.array([int(r[1]) for r in rows])
    fit = LogisticRegression(C=100.0).fit(x, y)
    slope = float(fit.coef_[0][0])
    center = -float(fit.intercept_[0]) / slope if slope else DEFAULT_CENTER
    threshold = best[1] if best else DEFAULT_THRESHOLD
    return Calibration(threshold, slope, center, f"{len(rows)} shared xref(s)")
