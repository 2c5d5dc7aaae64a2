"""`kgnorm eval link` as a library: score what `link` writes (or any TSV in its layout) against
gold mentions with the one strict scorer.

The CLI only parses options and prints these reports; notebooks call the same functions."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from kgnorm.errors import InputError, KgnormError
from kgnorm.linking.candidates import PartLinker
from kgnorm.mentions.readers import read_mentions_with_abbreviations as read_gold_mentions
from kgnorm.text.pipeline import TextPipeline


def known_ids(linker, meta: dict[str, Any], store: str | None) -> tuple[set[str], dict[str, list[str]]]:
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
    if not known and meta.get("ontology"):
        from kgnorm.graph.views import read_ontology
        from kgnorm.stores import open_store
        with open_store(store, read_only=True) as st:
            snap = read_ontology(st, meta["ontology"], with_edges=False)
        alt, known = snap.alt_ids(), {c.uid for c in snap.concepts}
    if not known:
        raise KgnormError("cannot tell which concepts the model links to (no dictionary, no ontology)")
    for ids in alt.values():
        known.update(ids)
    return known, alt


def ontology_ids(ontology: str, store: str | None) -> tuple[set[str], dict[str, list[str]]]:
    """Concept uids plus alt ids of an ontology in the store, and its alt-id map."""
    from kgnorm.graph.views import read_ontology
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        if st.ontology_info(ontology) is None:
            raise KgnormError(f"no ontology {ontology!r} in {st.uri}")
        snap = read_ontology(st, ontology, with_edges=False)
    alt = snap.alt_ids()
    known = {c.uid for c in snap.concepts}
    for ids in alt.values():
        known.update(ids)
    return known, alt


def evaluate_link(model: Path | None, gold: Path, predictions: Path | None, ontology: str | None,
                  train: Path | None, input_format: str | None, batch_size: int = 256,
                  allow_unknown_gold: bool = False, store: str | None = None, *,
                  linker: PartLinker | None = None, meta: dict[str, Any] | None = None,
                  pipeline: TextPipeline | None = None, consistency: bool = False) -> dict[str, Any]:
    """Score link TSV rows against the gold mentions (kgnorm.evaluation.link_tsv): the rows of the file
    `predictions`, or those `link` writes with `linker` (the model `model` opened, its `meta` and
    text `pipeline`: same rows, same parser, same scorer; `consistency`: as `link --consistency`).

    Gold ids the model or ontology lacks are refused unless `allow_unknown_gold`; then they are
    scored as misses and counted in ``unknown_gold_ids`` / ``unknown_gold_mentions``."""
    from kgnorm.evaluation.link_tsv import align, parse_link_rows, read_link_tsv, score, unknown_gold_ids
    from kgnorm.evaluation.composites import scoring_gold, unsplit_composites
    from kgnorm.evaluation.linking import refined_subset
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
    n_unknown_mentions = 0
    if unknown:
        bad = set(unknown)
        n_unknown_mentions = sum(1 for g in golds if any(x.strip() in bad for p in g for x in p.split("+")))
        where = f"ontology {ontology!r}" if ontology is not None else f"the dictionary of {model}"
        if not allow_unknown_gold:
            raise InputError(f"{len(unknown)} gold id(s) in {n_unknown_mentions} mention(s) are not concepts of "
                             f"{where} (first: {', '.join(unknown[:3])}); pass --allow-unknown-gold to score those "
                             "mentions as misses", path=gold)
    predicted = align(by_id, [m.mention_id for m in mentions], predictions, gold)
    out: dict[str, Any] = {"full": score(predicted, golds, alt_ids)}
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
