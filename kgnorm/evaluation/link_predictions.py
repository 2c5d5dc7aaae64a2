"""Link predictions scored: ``kgnorm eval link`` as a library. What `kgnorm link` writes (its TSV
layout) is read back, aligned to the gold mentions and judged by the one strict scorer
(:mod:`kgnorm.evaluation.link_accuracy`), against the ids the model or ontology knows.

``kgnorm eval link --predictions F --gold G`` scores any file in this layout (another system's
output too), and ``kgnorm eval link --model M`` scores the rows ``link`` would write for the
same model (:func:`kgnorm.linking.linker.tsv_rows`) through the same parser -- so the two agree by
construction, and the accuracy is that of the concepts a user gets. The CLI only parses options
and prints these reports; notebooks call the same functions.

Layout (docs/formats.md, "What link writes"): a header ``mention_id mention rank concept_uids score nil``, then per
mention one row per rank (1, 2, ...), ``concept_uids`` one concept per composite part joined
by ``|``. A mention whose ``nil`` is 1 has no link (the graph gets no edge), so it scores as a
miss when its gold is linkable. A mention id may repeat (a file that lists one span twice);
a row with rank 1 starts its next occurrence, and occurrences are matched to the gold
mentions with that id in order.
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError
from kgnorm.evaluation.link_accuracy import accuracy_at_k, gold_pieces, refined_subset, unknown_gold_ids
from kgnorm.linking.candidates import PartLinker
from kgnorm.mentions.readers import read_mentions_with_abbreviations as read_gold_mentions
from kgnorm.text.pipeline import TextPipeline

HEADER = ["mention_id", "mention", "rank", "concept_uids", "score", "nil"]


@dataclass
class PredictedMention:
    """One mention's ranked concepts per part, as a link TSV shows them."""

    mention_id: str
    text: str
    parts: list[list[str]] = field(default_factory=list)
    nil: bool = False

    def ranked(self) -> list[list[str]]:
        """What the user gets: nothing for a nil mention, else the ranked concepts."""
        return [] if self.nil else self.parts


def parse_link_rows(rows: Iterable[Sequence[str]], source: str | Path | None = None,
                    first_line: int = 2) -> dict[str, list[PredictedMention]]:
    """{mention id: its occurrences in file order} from link TSV rows (no header)."""
    out: dict[str, list[PredictedMention]] = {}
    for ln, row in enumerate(rows, start=first_line):
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) != len(HEADER):
            raise InputError(f"expected {len(HEADER)} tab-separated fields ({' '.join(HEADER)}), "
                             f"got {len(row)}", path=source, line=ln)
        mid, text, rank_s, uids, score, nil = row
        try:
            rank = int(rank_s)
            float(score)
        except ValueError:
            raise InputError(f"rank {rank_s!r} or score {score!r} is not a number",
                             path=source, line=ln) from None
        if nil not in ("0", "1"):
            raise InputError(f"nil must be 0 or 1, got {nil!r}", path=source, line=ln)
        parts = uids.split("|")
        if not mid or any(not p.strip() for p in parts):
            raise InputError("empty mention_id or concept uid", path=source, line=ln)
        occ = out.setdefault(mid, [])
        if rank == 1:
            occ.append(PredictedMention(mid, text, [[p] for p in parts], nil == "1"))
            continue
        cur = occ[-1] if occ else None
        if cur is None or rank != len(cur.parts[0]) + 1:
            want = 1 if cur is None else len(cur.parts[0]) + 1
            raise InputError(f"mention {mid}: rank {rank} where rank {want} was expected "
                             "(ranks of a mention are 1, 2, ... in order)", path=source, line=ln)
        if len(parts) != len(cur.parts):
            raise InputError(f"mention {mid}: {len(parts)} part(s) at rank {rank}, "
                             f"{len(cur.parts)} at rank 1", path=source, line=ln)
        if (nil == "1") != cur.nil:
            raise InputError(f"mention {mid}: nil differs between its ranks", path=source, line=ln)
        for ranked, uid in zip(cur.parts, parts):
            ranked.append(uid)
    return out


def read_link_tsv(path: str | Path) -> dict[str, list[PredictedMention]]:
    """Parse a file written by ``kgnorm link --output`` (or any file in its layout)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", path=p)
    with open(p, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        header = next(reader, None)
        if header != HEADER:
            raise InputError(f"not a link TSV: the header must be {' '.join(HEADER)} "
                             f"(tab-separated), got {header!r}", path=p, line=1)
        try:
            return parse_link_rows(reader, p)
        except csv.Error as e:
            raise InputError(f"malformed TSV ({e})", path=p, line=reader.line_num) from None


def _first(ids: Iterable[str], n: int = 3) -> str:
    ids = list(ids)
    return ", ".join(ids[:n]) + (", …" if len(ids) > n else "")


def align(predictions: Mapping[str, list[PredictedMention]], gold_ids: Sequence[str],
          pred_source: str | Path | None = None, gold_source: str | Path | None = None
          ) -> list[PredictedMention]:
    """The prediction of each gold mention, in gold order; every gold mention needs exactly
    one and every prediction a gold mention, else the first missing ids are named."""
    want: dict[str, int] = {}
    for mid in gold_ids:
        want[mid] = want.get(mid, 0) + 1
    missing = [m for m in want if len(predictions.get(m, ())) < want[m]]
    if missing:
        raise InputError(f"{len(missing)} gold mention id(s) of {gold_source} have no prediction "
                         f"(first: {_first(missing)})", path=pred_source)
    extra = [m for m, occ in predictions.items() if len(occ) > want.get(m, 0)]
    if extra:
        raise InputError(f"{len(extra)} mention id(s) are not in the gold file {gold_source} "
                         f"(first: {_first(extra)})", path=pred_source)
    seen: dict[str, int] = {}
    out = []
    for mid in gold_ids:
        k = seen.get(mid, 0)
        seen[mid] = k + 1
        out.append(predictions[mid][k])
    return out


def score(predicted: Sequence[PredictedMention], golds: Sequence[Sequence[str]],
          alt_ids: Mapping[str, Iterable[str]] | None, indices: Sequence[int] | None = None,
          ks: Sequence[int] = (1, 5)) -> dict:
    """{n, skipped, acc1, acc5} of the aligned predictions (strict scorer, one concept per
    rank, nil = no link) over ``indices`` (default all)."""
    if len(predicted) != len(golds):
        raise KgnormError(f"{len(predicted)} predictions for {len(golds)} gold mentions")
    idx = range(len(golds)) if indices is None else indices
    rep = accuracy_at_k([predicted[i].ranked() for i in idx], [list(golds[i]) for i in idx],
                        ks=ks, alt_ids=alt_ids)
    return {"n": rep.n_evaluated, "skipped": rep.n_skipped,
            **{f"acc{k}": rep.accuracy[k] for k in rep.ks}}


def _with_alt_ids(known: set[str], alt: dict[str, list[str]]) -> tuple[set[str], dict[str, list[str]]]:
    """``known`` grown by every alt id (a gold id may be one), and the alt-id map."""
    for ids in alt.values():
        known.update(ids)
    return known, alt


def _snapshot_ids(st, ontology: str) -> tuple[set[str], dict[str, list[str]]]:
    """Concept uids and alt-id map of ``ontology`` as the open store ``st`` holds it."""
    from kgnorm.graph.views import read_ontology

    snap = read_ontology(st, ontology, with_edges=False)
    return {c.uid for c in snap.concepts}, snap.alt_ids()


def known_ids(linker, meta: dict[str, Any], store: Any) -> tuple[set[str], dict[str, list[str]]]:
    """Concept ids (with alt ids) the model can link to, and its alt-id map: what decides
    whether a dev mention's gold is in the KB."""
    model = getattr(linker, "model", None)
    dictionary = getattr(model, "dictionary", None)
    if dictionary is not None:
        alt = {u: list(v) for u, v in (dictionary.alt_ids or {}).items()}
        known = {u for us in dictionary.uids for u in us}
    elif getattr(model, "uids", None) is not None:
        alt, known = {}, set(model.uids)
    else:
        alt, known = {}, set()
    # the model's ontology; a router's routes' (one each) when they differ
    names = [meta["ontology"]] if meta.get("ontology") else sorted(set((meta.get("ontologies") or {}).values()))
    if not known and names:
        from kgnorm.stores.session import reading
        with reading(store) as st:  # a URI, or the job's open store (kgnorm.stores.session)
            for name in names:
                ids, alts = _snapshot_ids(st, name)
                known |= ids
                alt.update({u: [*alt.get(u, []), *a] for u, a in alts.items()})
    if not known:
        raise KgnormError("cannot tell which concepts the model links to (no dictionary, no ontology)")
    return _with_alt_ids(known, alt)


def ontology_ids(ontology: str, store: str | None) -> tuple[set[str], dict[str, list[str]]]:
    """Concept uids plus alt ids of an ontology in the store, and its alt-id map."""
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        if st.ontology_info(ontology) is None:
            raise KgnormError(f"no ontology {ontology!r} in {st.uri}")
        known, alt = _snapshot_ids(st, ontology)
    return _with_alt_ids(known, alt)


def evaluate_link(model: Path | None, gold: Path, predictions: Path | None, ontology: str | None,
                  train: Path | None, input_format: str | None, batch_size: int = 256,
                  allow_unknown_gold: bool = False, store: str | None = None, *,
                  linker: PartLinker | None = None, meta: dict[str, Any] | None = None,
                  pipeline: TextPipeline | None = None, consistency: bool = False) -> dict[str, Any]:
    """Score link TSV rows against the gold mentions: the rows of the file `predictions`, or those
    `link` writes with `linker` (the model `model` opened, its `meta` and text `pipeline`: same
    rows, same parser, same scorer; `consistency`: as `link --consistency`).

    Gold ids the model or ontology lacks are refused unless `allow_unknown_gold`; then they are
    scored as misses and counted in ``unknown_gold_ids`` / ``unknown_gold_mentions``, and the report
    adds "in_store": the same score over the mentions whose every gold id is a known concept."""
    from kgnorm.evaluation.composites import scoring_gold, unsplit_composites
    from kgnorm.evaluation.retired import resolve_retired, retired_successors
    from kgnorm.linking.consistency import consistent_stream
    from kgnorm.linking.linker import link_stream, tsv_rows

    pipeline = pipeline or TextPipeline()
    known, alt_ids = (ontology_ids(ontology, store) if ontology is not None
                      else known_ids(linker, meta, store))
    mentions = [m for m, _ in read_gold_mentions(gold, input_format)] if predictions is not None else []
    if predictions is not None:
        by_id = read_link_tsv(predictions)
    else:
        rows: list[list[str]] = []
        stream = link_stream(linker, pipeline, read_gold_mentions(gold, input_format), top_k=5,
                             batch_size=batch_size)
        for lm in consistent_stream(stream) if consistency else stream:
            mentions.append(lm.mention)
            rows.extend(tsv_rows(lm, 5))
        by_id = parse_link_rows(rows, source=f"the rows `link` writes for {model}")
    if not mentions:
        raise InputError("no mentions", path=gold)
    golds = [scoring_gold(m) for m in mentions]  # one rule for several ids (kgnorm.evaluation.composites)
    resolved = resolve_retired(golds, known, retired_successors(ontology or (meta or {}).get("ontology"), store),
                               alt_ids)
    golds = resolved.golds
    unknown = unknown_gold_ids(golds, known)
    bad = set(unknown)
    lacking = [any(x in bad for p in g for x in gold_pieces(p)) for g in golds]  # a gold id the store lacks
    n_unknown_mentions = sum(lacking)
    if unknown:
        where = f"ontology {ontology!r}" if ontology is not None else f"the dictionary of {model}"
        if not allow_unknown_gold:
            raise InputError(f"{len(unknown)} gold id(s) in {n_unknown_mentions} mention(s) are not concepts of "
                             f"{where} (first: {', '.join(unknown[:3])}); pass --allow-unknown-gold to score those "
                             "mentions as misses", path=gold)
    predicted = align(by_id, [m.mention_id for m in mentions], predictions, gold)
    out: dict[str, Any] = {"full": score(predicted, golds, alt_ids)}
    if unknown:  # the figure a dictionary can reach: mentions whose every gold id is in it
        out["in_store"] = score(predicted, golds, alt_ids, [i for i, miss in enumerate(lacking) if not miss])
    if train is not None:
        train_texts = {pipeline.normalize_name(m.text) for m, _ in read_gold_mentions(train, input_format)}
        texts = [pipeline.normalize_name(m.text) for m in mentions]
        idx = refined_subset(texts, train_texts, ["|".join(g) for g in golds])
        out["refined"] = score(predicted, golds, alt_ids, idx)
    out["composites"], out["composites_unsplit"] = unsplit_composites(mentions, [len(p.parts) for p in predicted])
    out["unknown_gold_ids"] = len(unknown)
    out["retired_gold_ids"], out["retired_gold_mentions"] = resolved.ids, resolved.mentions
    out["unknown_gold_mentions"] = n_unknown_mentions
    return out
