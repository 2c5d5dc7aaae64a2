"""The last test of `kgnorm retrain --replay`: the pair OUT would ship, judged on the old corpus.

The span check (kgnorm.jobs.retrain._judge_replay) sees the detector alone; the linker and the
refitted confidence threshold can cost the old corpus too, and did: NCBI-disease models retrained
on 200 BC5CDR reviews taken least confident first, the detector's span F1 on the replayed check
documents stayed 0.9894 while NCBI dev document F1 fell 0.7859 -> 0.7748 (benchmarks/LOG.md,
"Review transfer", 2026-11-29 15:41). So the replayed check documents (their raw text, never
trained on in this retrain) are annotated as `annotate` would with its defaults (the detector's
stored confidence for that linker applied, `--min-confidence auto`) by the given pair and by what
OUT holds, and scored by document-level F1 against their gold concepts, the measure and code of the
held-back documents' "before and after" (:func:`document_scores`).

When OUT's pair loses more than REPLAY_TOLERANCE there, the candidates below are tried in order,
each removing one more part of what the retrain made, and the first that does not lose is
shipped: the retrained pair without its refitted threshold; the given detector with the retrained
linker; the retrained detector with the given linker; the given pair (which cannot lose: it is the
reference). Kept in that order because the threshold is the cheapest thing to give up (annotate
then keeps every mention), and the linker learnt from every review while the detector already
passed its own checks. Each candidate is scored as it would ship (a given detector copied into OUT
holds no confidence for a retrained linker, so it is scored with none). The reviewed corpus does
not choose among them: its held-back documents are few (one to four of them at 200 reviews) and
scored without the threshold.

Its blind spot, measured on the case that motivated it (same reviews, this judge on): the check
documents are the given models' training documents, the linker's dictionary holding their mention
names, so the pair scored 0.9231 -> 0.9231 there and was kept while NCBI dev fell 0.011, from the
detector's spans on unseen text (41 of 850 gone, 36 new; 2 concepts changed). It catches what the
retrain made the pair forget, not how it moved on new text of that corpus. That case's fall came
from a detector fine-tuned on 3 done documents, which kgnorm.jobs.retrain.MIN_DONE_DOCUMENTS now
leaves as given."""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

RETRAINED = "retrained pair"
CANDIDATES = ("retrained pair, no refitted threshold", "given detector, retrained linker",
              "retrained detector, given linker", "given pair")


def write_gold(path: Path, texts: list[tuple[Any, list[Any]]]) -> dict[str, frozenset[str]]:
    """`texts` ((document, annotations)) written as PubTator at `path`: each document's gold concepts."""
    from kgnorm.review.export import _write_documents

    with open(path, "w", encoding="utf-8") as fh:
        _write_documents(fh, "pubtator", texts)
    gold: dict[str, set[str]] = {}
    for doc, anns in texts:
        gold.setdefault(doc.doc_id, set()).update(i for a in anns for i in a.ids)
    return {d: frozenset(ids) for d, ids in gold.items()}


def document_scores(uri: str, ner: Path, linker: Path, gold_file: Path, gold: dict[str, frozenset[str]],
                    threads: int | None, quiet: bool, min_confidence: str = "off") -> list[float]:
    """Document-level [P, R, F1] of `annotate` (kgnorm.jobs.annotate, no store write) with the pair on
    the documents of `gold_file`, against `gold` (doc id -> concepts). `min_confidence="off"`: every
    mention kept (the held-back documents' scores); "auto": as annotate ships it."""
    from kgnorm.jobs.annotate import annotate_documents

    rep = annotate_documents(ner, linker, gold_file, input_format="pubtator", output=None, write=False, collect=True,
                             min_confidence=min_confidence, progress=not quiet, threads=threads, store=uri)
    return [round(v, 4) for v in document_prf(rep.rows, gold)]


def document_prf(rows: list[dict[str, Any]], gold: dict[str, frozenset[str]]) -> tuple[float, float, float]:
    from kgnorm.nil.confidence import DevMention
    from kgnorm.nil.confidence import document_prf as prf

    mentions = [DevMention(r["doc_id"], (), frozenset(r["concept_uids"].split("|")) if r["concept_uids"] else frozenset())
                for r in rows]
    return prf(mentions, gold, lambda i: True)


def judge_replayed_pair(uri: str, model: Path, ner: Path, stage: Path, check: list[tuple[Any, list[Any]]],
                        report: Any, threads: int | None, quiet: bool) -> None:
    """Judge OUT's pair (staged in `stage`) against the given one on the replayed check documents
    `check` (kgnorm.jobs.retrain_replay.check_documents); ship the first candidate that does not
    lose (module docstring). Writes report.replay's document_* fields and the choice."""
    from kgnorm.jobs.retrain_replay import REPLAY_TOLERANCE

    if not check:
        return
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kgnorm-retrain-replay-") as tmp:
        gold_file = Path(tmp) / "replayed.pubtator"
        gold = write_gold(gold_file, check)

        def score(n: Path, m: Path) -> list[float]:
            return document_scores(uri, n, m, gold_file, gold, threads, quiet, min_confidence="auto")

        before = score(ner, model)
        tried = {RETRAINED: score(stage / "ner", stage / "linker")}
        rep = report.replay
        rep.update(documents=rep.get("documents", len(check)), document_before=before, tolerance=REPLAY_TOLERANCE)
        floor = before[2] - REPLAY_TOLERANCE
        kept = RETRAINED
        if tried[RETRAINED][2] < floor:
            why = (f"document F1 {tried[RETRAINED][2]:.4f} against {before[2]:.4f} for the given pair on "
                   f"{len(check)} documents of --replay not retrained on")
            dropped = _drop_refit(stage, report)  # every candidate below ships without it
            kept = "given pair"
            for name, pair in _candidates(model, ner, stage, report, dropped):
                tried[name] = score(*pair)
                if tried[name][2] >= floor:
                    kept = name
                    break
            _ship(kept, model, ner, stage, report, why)
            tried.setdefault("given pair", before)
        rep.update(document_after=tried[kept], document_tried=tried, kept=kept,
                   document_seconds=round(time.perf_counter() - t0, 1))


def _candidates(model: Path, ner: Path, stage: Path, report: Any, dropped: bool) -> list[tuple[str, tuple[Path, Path]]]:
    """The fallbacks worth scoring, in order (one that would ship what was already scored is left out)."""
    out = [(CANDIDATES[0], (stage / "ner", stage / "linker"))] if dropped else []
    if report.ner and not report.ner.get("kept_given"):  # a retrained detector in OUT
        out += [(CANDIDATES[1], (ner, stage / "linker")), (CANDIDATES[2], (stage / "ner", model))]
    return out


def _ship(kept: str, model: Path, ner: Path, stage: Path, report: Any, why: str) -> None:
    """Make OUT hold the candidate `kept` (`why`: the retrained pair's loss, recorded)."""
    from kgnorm.jobs.retrain_out import copy_detector, keep_given_detector, keep_given_linker

    if kept == CANDIDATES[1]:
        keep_given_detector(ner, stage, report, why)
    if kept in (CANDIDATES[2], "given pair"):
        keep_given_linker(model, stage, report, why)
    if kept == "given pair":  # the given detector as it was, with its confidence for the given linker
        shutil.rmtree(stage / "ner")
        copy_detector(ner, stage / "ner", confidence=True)
        if report.ner:
            report.ner = {**report.ner, "kept_given": report.ner.get("kept_given") or why}
    report.notes.append(f"replayed corpus: the retrained pair lost ({why}); OUT holds the {kept}")


def _drop_refit(stage: Path, report: Any) -> bool:
    """Remove the confidence refitted for OUT's pair from OUT/ner (annotate then keeps every
    mention); whether there was one."""
    from kgnorm.methods.mention_confidence import KEY, linker_identity
    from kgnorm.methods.model_dir import read_model_meta, write_model_meta

    if not report.calibration:
        return False
    me = linker_identity(stage / "linker")
    meta = read_model_meta(stage / "ner")
    kept = [e for e in meta.get(KEY, []) if not (e.get("linker", {}).get("method") == me["method"]
                                                 and e.get("linker", {}).get("created_at") == me["created_at"])]
    write_model_meta(stage / "ner", {**meta, KEY: kept})
    report.calibration = {**report.calibration, "dropped": "the retrained pair lost document F1 on the replayed corpus"}
    return True
