"""Linking accuracy: the rules that score ranked concepts against gold ids -- Acc@k with BioSyn's
protocol (docs/architecture.md, "Evaluation protocols"). Everything here works on values in memory;
reading what `kgnorm link` wrote, and the ids a model or ontology knows, is
:mod:`kgnorm.evaluation.link_predictions`.

Rules
-----
* A mention has one gold CURIE per composite part (``"A|B"`` = two parts). A part whose gold
  is ``-1`` (or empty) is unlinkable: a mention with only unlinkable parts is skipped (not
  counted), an unlinkable part of a composite is ignored.
* A conjunction part ``"A+B"`` (one span meaning two concepts) is matched by a concept that
  is *any* of its pieces (BioSyn treats ``+`` like ``|``): with one concept per rank, no
  rank could hold both.
* One concept per rank, exactly as ``kgnorm link`` writes it: a candidate is a single concept
  uid, and it matches a gold piece when the piece is that uid or one of *its* alt ids
  (``alt_ids`` map) -- never through another concept that shares its name (the linker ranks
  such concepts separately, :mod:`kgnorm.linking.concepts`). A candidate holding several
  uids is refused. Matching is by exact string: normalize the id spelling (``MESH:``
  prefixes) before calling.
* A mention's rank is the largest, over its linkable parts, of the 1-based rank of the part's
  first matching candidate; it is right at k when that rank is <= k, i.e. a composite
  mention counts only when **every** part is right at k.
* Parts are aligned by position. When the prediction has a
  different number of parts than the gold, every linkable gold part needs a predicted part of
  its own (the best one-to-one assignment, any order): a composite left unsplit -- one concept
  for a mention of two -- is a miss. A mention the annotators allow several ids for is not a
  composite: give its ids as one conjunction part ``A+B``
  (:func:`kgnorm.evaluation.composites.scoring_gold` decides which is which).

The refined split (:func:`refined_subset`, DILBERT paper): test mentions whose normalized
text never occurs among the normalized training mentions, deduplicated by (text, gold).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

UNLINKABLE = {"", "-1", "CUI-less", "CUI-LESS"}


def gold_pieces(part: str) -> list[str]:
    """The linkable ids of one gold part: a conjunction ``A+B`` split, unlinkable pieces dropped."""
    return [p for p in (x.strip() for x in part.split("+")) if p not in UNLINKABLE]


@dataclass(frozen=True)
class GoldMention:
    """Gold of one mention: one entry per composite part (a conjunction stays ``"A+B"``)."""

    parts: tuple[str, ...]

    @classmethod
    def parse(cls, gold: str | Sequence[str] | GoldMention | None) -> GoldMention:
        if isinstance(gold, GoldMention):
            return gold
        if gold is None:
            return cls(())
        if isinstance(gold, str):
            return cls(tuple(p.strip() for p in gold.split("|")) if gold.strip() else ())
        return cls(tuple(str(p).strip() for p in gold))

    @staticmethod
    def part_linkable(part: str) -> bool:
        return bool(gold_pieces(part))

    @property
    def linkable(self) -> bool:
        return any(self.part_linkable(p) for p in self.parts)

    def key(self) -> tuple[str, ...]:
        return self.parts


def _one_concept(cand: Any) -> str:
    """The single concept uid of one ranked candidate (a uid, a 1-element collection, or an
    object with ``uid``); several uids at one rank are refused -- the lenient rule this
    scorer replaced gave credit when *any* concept sharing a name was gold."""
    if isinstance(cand, str):
        return cand
    uid = getattr(cand, "uid", None)
    if isinstance(uid, str):
        return uid
    uids = tuple(getattr(cand, "uids", cand))
    if len(uids) != 1:
        raise ValueError(f"one concept per rank: a candidate holds {len(uids)} uids {uids!r}; "
                         "rank concepts first (kgnorm.linking.concepts.rank_concepts)")
    return str(uids[0])


@dataclass
class MentionPrediction:
    """Per composite part, the ranked concept uids (best first), one per rank."""

    parts: list[list[str]]

    @classmethod
    def parse(cls, pred: MentionPrediction | Sequence[Sequence[Any]]) -> MentionPrediction:
        if isinstance(pred, MentionPrediction):
            return pred
        return cls([[_one_concept(c) for c in part] for part in pred])


@dataclass
class LinkingReport:
    """Acc@k over the evaluated (linkable) mentions."""

    ks: tuple[int, ...]
    n_total: int
    n_evaluated: int
    n_skipped: int
    hits: dict[int, int]
    accuracy: dict[int, float]
    ranks: list[int | None] = field(default_factory=list)  # per input; None = skipped, 0 = miss

    @property
    def acc1(self) -> float:
        return self.accuracy.get(1, float("nan"))

    @property
    def acc5(self) -> float:
        return self.accuracy.get(5, float("nan"))

    def as_dict(self) -> dict:
        return {"n_total": self.n_total, "n_evaluated": self.n_evaluated,
                "n_skipped": self.n_skipped,
                **{f"acc@{k}": self.accuracy[k] for k in self.ks}}


def _expand(uid: str, alt_ids: Mapping[str, Iterable[str]] | None) -> set[str]:
    """A concept's own ids: its uid and its alt ids."""
    out = {uid}
    if alt_ids:
        out.update(alt_ids.get(uid, ()))
    return out


def _matches(cand_ids: set[str], gold_part: str) -> bool:
    return any(p in cand_ids for p in gold_pieces(gold_part))


def _first_rank(ranked: list[str], golds: list[str],
                alt_ids: Mapping[str, Iterable[str]] | None, depth: int) -> int:
    """1-based rank of the first candidate matching any of ``golds``; 0 if none in depth."""
    for r, cand in enumerate(ranked[:depth], start=1):
        ids = _expand(cand, alt_ids)
        if any(_matches(ids, g) for g in golds):
            return r
    return 0


def _assigned_rank(pred_parts: list[list[str]], golds: list[str],
                   alt_ids: Mapping[str, Iterable[str]] | None, depth: int) -> int:
    """Best over one-to-one assignments of predicted parts to gold parts of the worst part's
    rank (0 = some gold part has no predicted part of its own that matches within depth)."""
    if len(pred_parts) < len(golds):
        return 0
    ranks = [[_first_rank(p, [g], alt_ids, depth) or depth + 1 for p in pred_parts]
             for g in golds]
    best = min((max(ranks[g][i] for g, i in enumerate(perm))
                for perm in permutations(range(len(pred_parts)), len(golds))), default=depth + 1)
    return 0 if best > depth else best


def mention_rank(pred: MentionPrediction, gold: GoldMention, depth: int,
                 alt_ids: Mapping[str, Iterable[str]] | None = None) -> int | None:
    """Rank at which the whole mention becomes right (0 = not within ``depth``;
    None = skipped because no part is linkable)."""
    if not gold.linkable:
        return None
    if len(pred.parts) != len(gold.parts):
        linkable = [g for g in gold.parts if GoldMention.part_linkable(g)]
        return _assigned_rank(pred.parts, linkable, alt_ids, depth)
    pairs = [(pred.parts[i], [g]) for i, g in enumerate(gold.parts) if GoldMention.part_linkable(g)]
    worst = 0
    for ranked, golds in pairs:
        r = _first_rank(ranked, golds, alt_ids, depth)
        if r == 0:
            return 0
        worst = max(worst, r)
    return worst


def accuracy_at_k(predictions: Sequence[MentionPrediction | Sequence[Sequence[Iterable[str]]]],
                  gold: Sequence[str | Sequence[str] | GoldMention],
                  ks: Sequence[int] = (1, 5),
                  alt_ids: Mapping[str, Iterable[str]] | None = None,
                  conjunction: str = "any") -> LinkingReport:
    """Acc@k for each k in ``ks``.

    ``predictions[i]`` is mention i's prediction: per part, the ranked concepts, each a uid
    string (or an object with ``uid``, or a one-element collection); ``gold[i]`` its gold -- a string
    ``"A|B"``, a list of per-part CURIEs, or a :class:`GoldMention`.
    """
    if len(predictions) != len(gold):
        raise ValueError(f"{len(predictions)} predictions for {len(gold)} gold mentions")
    if conjunction != "any":
        raise ValueError("conjunction must be 'any' (one concept per rank cannot hold a whole "
                         "conjunction)")
    ks = tuple(sorted({int(k) for k in ks}))
    if not ks or ks[0] < 1:
        raise ValueError("ks must be positive")
    depth = ks[-1]
    ranks: list[int | None] = []
    for p, g in zip(predictions, gold):
        ranks.append(mention_rank(MentionPrediction.parse(p), GoldMention.parse(g), depth, alt_ids))
    evaluated = [r for r in ranks if r is not None]
    hits = {k: sum(1 for r in evaluated if 0 < r <= k) for k in ks}
    n = len(evaluated)
    acc = {k: (hits[k] / n if n else float("nan")) for k in ks}
    return LinkingReport(ks=ks, n_total=len(ranks), n_evaluated=n,
                         n_skipped=len(ranks) - n, hits=hits, accuracy=acc, ranks=ranks)


def refined_subset(test_texts: Sequence[str], train_texts: Iterable[str],
                   test_gold: Sequence[str | Sequence[str] | GoldMention] | None = None
                   ) -> list[int]:
    """Indices (first occurrences) of test mentions whose normalized text never occurs in
    the normalized training mentions, deduplicated by (text, gold) -- by text alone when
    ``test_gold`` is None. Pass texts normalized the same way on both sides."""
    if test_gold is not None and len(test_gold) != len(test_texts):
        raise ValueError("test_gold must have one entry per test mention")
    seen_train = set(train_texts)
    seen: set = set()
    keep: list[int] = []
    for i, text in enumerate(test_texts):
        if text in seen_train:
            continue
        key = (text, GoldMention.parse(test_gold[i]).key() if test_gold is not None else None)
        if key in seen:
            continue
        seen.add(key)
        keep.append(i)
    return keep


def unknown_gold_ids(golds: Iterable[Sequence[str]], known: set[str]) -> list[str]:
    """Distinct gold ids (conjunction pieces included) that are not concepts of the ontology
    (``known`` holds uids and alt ids), in first-seen order."""
    out: dict[str, None] = {}
    for parts in golds:
        for part in parts:
            for piece in gold_pieces(part):
                if piece not in known:
                    out.setdefault(piece, None)
    return list(out)
