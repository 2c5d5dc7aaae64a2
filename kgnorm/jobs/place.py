"""`kgnorm place` as a library: rank, for concepts of a source ontology, the target ontology's
concepts as their parents, and store the top ranks as PREDICTED_IS_A edges (source concept ->
target concept) of one Run.

A parent is scored by two cosines (kgnorm.matching.matcher.dense_candidates): the concept's own
names against the target's (a sibling or the equivalent scores high too), and its source parents'
names against the target's (the parent's equivalent scores high). Their weighted mean (OWN_WEIGHT) favours a target that
is both close to the concept and close to where the source ontology put it. Above both, the hierarchy: the
exactMatch targets (the matcher's decisions) of the concept's nearest ancestors that have one."""
from __future__ import annotations

import csv
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.matching.matcher import Decision, MatchSide, _nearest_mapped, decide, dense_candidates, lexical_pairs
from kgnorm.matching.sssom import EXACT

COLUMNS = ("source_uid", "source_name", "rank", "target_uid", "target_name", "score")
OWN_WEIGHT = 0.3  # own names vs parents' names; dev MRR 0.79 at 0.3, 0.76 at 0.5 (benchmarks/match.py)


@dataclass
class Placement:
    source: MatchSide
    target: MatchSide
    model: Any                      # kgnorm.jobs.match.ModelInfo
    top_k: int
    unmatched_only: bool
    ranked: dict[str, list[tuple[str, float]]]   # source uid -> (target uid, score), best first

    def rows(self) -> list[dict[str, Any]]:
        return [{"source_uid": s, "source_name": self.source.labels.get(s, ""), "rank": i + 1, "target_uid": t,
                 "target_name": self.target.labels.get(t, ""), "score": float(score)}
                for s, ranked in sorted(self.ranked.items()) for i, (t, score) in enumerate(ranked)]


def parents_view(side: MatchSide, uids: list[str]) -> MatchSide:
    """`uids` of `side`, each named by its parents' names: what ranks the parent's equivalent."""
    names = {u: [n for p in side.parents.get(u, ()) for n in side.names.get(p, ())] for u in uids}
    return MatchSide(side.ontology, side.labels, {u: ns for u, ns in names.items() if ns})


def exact_targets(decisions: list[Decision]) -> dict[str, list[tuple[str, float]]]:
    """source uid -> its exactMatch targets with their confidence, surest first."""
    out: dict[str, list[tuple[str, float]]] = {}
    for d in decisions:
        if d.predicate == EXACT:
            out.setdefault(d.source_uid, []).append((d.target_uid, float(d.confidence)))
    return {s: sorted(ts, key=lambda x: (-x[1], x[0])) for s, ts in out.items()}


def rank_parents(encode: Any, source: MatchSide, target: MatchSide, top_k: int, uids: list[str] | None = None,
                 pool: int = 50, mapped: dict[str, list[tuple[str, float]]] | None = None,
                 ) -> dict[str, list[tuple[str, float]]]:
    """source uid (of `uids`, default all) -> its `top_k` target parents by the weighted mean of the two
    cosines (module docstring); a concept's lexical equivalents are left out (not its own parent).

    With `mapped` (source uid -> its exactMatch targets and confidence, :func:`exact_targets`), the
    hierarchy speaks first: the equivalents of the concept's nearest ancestors that have one rank on
    top, scored 1 + their confidence (dev MRR 0.79 -> 0.87: the parent often has no equivalent, the
    grandparent has)."""
    uids = sorted(source.names) if uids is None else uids
    mine = MatchSide(source.ontology, source.labels, {u: source.names[u] for u in uids})
    own = dense_candidates(encode, mine, target, top_k=pool)
    via = dense_candidates(encode, parents_view(source, uids), target, top_k=pool)
    same = lexical_pairs(mine, target)
    out: dict[str, list[tuple[str, float]]] = {}
    for s in uids:
        a, b = dict(own.get(s, ())), dict(via.get(s, ()))
        if not b:  # a root: only its own names speak
            b = a
        floor_a, floor_b = min(a.values(), default=0.0), min(b.values(), default=0.0)
        scores = {t: OWN_WEIGHT * a.get(t, floor_a) + (1 - OWN_WEIGHT) * b.get(t, floor_b)
                  for t in set(a) | set(b) if t not in same.get(s, ())}
        if mapped:
            for a in _nearest_mapped(s, source.parents, mapped):
                for t, conf in mapped[a]:
                    if t not in same.get(s, ()):
                        scores[t] = max(scores.get(t, 0.0), 1.0 + conf)
        out[s] = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:top_k]
    return out


def exact_decisions(encode: Any, source: MatchSide, target: MatchSide, use_ids: bool) -> list[Decision]:
    """The matcher's decisions (dev default threshold), of which `place` uses the exactMatches."""
    cands = dense_candidates(encode, source, target, top_k=1)
    return decide(source, target, cands, use_ids=use_ids)


def unmatched(encode: Any, source: MatchSide, target: MatchSide, use_ids: bool,
              decisions: list[Decision] | None = None) -> list[str]:
    """The source concepts the matcher finds no exactMatch for."""
    decisions = exact_decisions(encode, source, target, use_ids) if decisions is None else decisions
    matched = {d.source_uid for d in decisions if d.predicate == EXACT}
    return sorted(u for u in source.names if u not in matched)


def place_concepts(source: str, target: str, model: str | Path, *, top_k: int = 5, unmatched_only: bool = False,
                   xrefs: str = "use", store: str | None = None) -> Placement:
    """Rank target parents for every source concept, or (``unmatched_only``) for those with no
    exactMatch in the target (by xrefs when ``xrefs="use"``, names, or the matcher's threshold)."""
    from kgnorm.jobs.ontology_pair import XREF_MODES, model_encoder, read_sides

    if top_k < 1:
        raise KgnormError(f"--top-k must be >= 1, got {top_k}")
    if xrefs not in XREF_MODES:
        raise KgnormError(f"--xrefs must be one of {', '.join(XREF_MODES)}, got {xrefs!r}")
    src, tgt, _ = read_sides(source, target, store)
    if xrefs == "ignore":
        src, tgt = src.without_ids_of(tgt), tgt.without_ids_of(src)
    encode, info = model_encoder(model)
    decisions = exact_decisions(encode, src, tgt, xrefs == "use")
    uids = unmatched(encode, src, tgt, xrefs == "use", decisions) if unmatched_only else None
    ranked = rank_parents(encode, src, tgt, top_k, uids, mapped=exact_targets(decisions))
    return Placement(src, tgt, info, top_k, unmatched_only, ranked)


def write_tsv(placement: Placement, output: str | Path | None) -> None:
    """The ranking as TSV (COLUMNS; score to 4 decimals) to `output` (complete or not at all) or stdout."""
    from kgnorm.jobs.run import open_output

    with ExitStack() as stack:
        fh = open_output(stack, output) if output is not None else sys.stdout
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(COLUMNS)
        for r in placement.rows():
            w.writerow([r["source_uid"], r["source_name"], r["rank"], r["target_uid"], r["target_name"],
                        f"{r['score']:.4f}"])


def read_ranking(path: str | Path) -> dict[str, list[str]]:
    """A `kgnorm place` TSV: source uid -> target uids by rank."""
    from kgnorm.errors import InputError

    path = Path(path)
    if not path.is_file():
        raise InputError("no such file", path)
    out: dict[str, list[tuple[int, str]]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh, delimiter="\t")
        missing = [c for c in ("source_uid", "rank", "target_uid") if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"not a `kgnorm place` TSV: no column {missing[0]}", path, 1)
        for i, row in enumerate(reader, start=2):
            try:
                rank = int(row["rank"])
            except (TypeError, ValueError):
                raise InputError(f"rank {row['rank']!r} is not an integer", path, i) from None
            out.setdefault(row["source_uid"], []).append((rank, row["target_uid"]))
    return {s: [t for _, t in sorted(ranks)] for s, ranks in out.items()}


def write_placement(placement: Placement, write_top_k: int = 1, store: str | None = None,
                    lock_timeout: float = 30.0) -> tuple[str, int]:
    """Ranks up to `write_top_k` as PREDICTED_IS_A edges of one Run (level 0: across ontologies);
    (run uid, edges written). The same placement written again replaces its Run."""
    from kgnorm.jobs.run import model_run, write_whole_run
    from kgnorm.stores import PredictionEdge, RunWrite

    params = {"source": placement.source.ontology, "target": placement.target.ontology, "top_k": placement.top_k,
              "write_top_k": write_top_k, "unmatched_only": placement.unmatched_only}
    edges = [PredictionEdge(s, t, float(score), i + 1, 0) for s, ranked in sorted(placement.ranked.items())
             for i, (t, score) in enumerate(ranked[:write_top_k])]
    run = model_run("place", placement.model.path, placement.model.method, params, params)
    write_whole_run(store, RunWrite(run, predictions=edges), lock_timeout)
    return run.uid, len(edges)


def evaluate_place(gold: str | Path, predictions: str | Path) -> Any:
    """`kgnorm eval place`: MRR and Hits@1/5 of the true parents (the gold file's skos:broadMatch
    rows, or every row where it has none) in a `kgnorm place` TSV."""
    from kgnorm.matching.scores import score_placement
    from kgnorm.matching.sssom import BROAD, read_sssom

    mset = read_sssom(gold)
    rows = [m for m in mset.mappings if m.predicate_id in (BROAD, "rdfs:subClassOf")] or mset.mappings
    truth: dict[str, set[str]] = {}
    for m in rows:
        truth.setdefault(m.subject_id, set()).add(m.object_id)
    return score_placement(read_ranking(predictions), truth)
