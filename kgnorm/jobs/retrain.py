"""`kgnorm retrain`: the reviews a store holds turned into better models for the next `annotate`.

What goes in: every mention in a stored document whose current review says it is one. The linker
(BioSyn, warm-started from --model) learns each reviewed mention with a concept -- accepted: the
machine's concept, corrected: the one the person chose; nil and not-a-mention teach it nothing. The
detector (warm-started from --ner) learns from documents a person marked done (kgnorm.review.done),
where every found mention was decided and missed spans added: its gold is the reviewed mentions (nil
included: still a mention) and the added spans, without those said not to be mentions; and, with
``partial=True`` (--partial), from the reviewed spans of the other documents: partial labels
(kgnorm.jobs.retrain_labels), the unreviewed rest of those documents adding no loss. Off by default:
measured on least-confident-first reviews of NCBI-disease train (200, mostly not-a-mention), they
lowered the detector's NCBI dev recall more than they raised its precision. A fifth of the
reviewed documents is held back from both: the models before and after are scored on it (linker Acc@1
on its reviewed mentions; with --ner, span-level P/R/F1 of the detector on its reviewed spans and
document-level P/R/F1 of annotate on its done documents), and annotate's mention confidence is fitted
on it (as `kgnorm calibrate` does on dev) for the new pair. The retrained detector is kept only when
held-back reviewed spans exist, its span-level F1 and recall on them are no lower than the given
detector's, and,
where held-back done documents exist, its document-level F1 on them with the new linker is no lower
than the given detector's with that linker; otherwise OUT/ner is the given detector (measured: 11 done
documents taught it their few spans and cost 0.034 F1 on its own corpus's dev;
benchmarks/review_transfer.py). With --replay, the detector's own corpus judges too: the
retrained detector by span F1 on documents of it no step trained on, then the whole pair as OUT
would ship it (refitted threshold included) by document-level F1 on those documents, a part of
the retrain given up when that pair loses (kgnorm.jobs.retrain_judge). The Run written records
the inputs and those scores. Fewer than MIN_DONE_DOCUMENTS done documents to learn from leave the
detector as given (--min-done-documents).

Composite: it annotates the held-back documents through `kgnorm.jobs.annotate` (the very path
`annotate` takes), so it is the one job that calls another."""
from __future__ import annotations

import hashlib
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.jobs.retrain_judge import judge_replayed_pair
from kgnorm.jobs.retrain_out import (commit, copy_detector, inputs_digest, keep_given_detector, publish,
                                     refuse_foreign, rolled_back, settle, staging)
from kgnorm.progress import note

HELD_BACK = 5  # one document in HELD_BACK is held back
# Fewer done documents than this (outside the held-back fifth) and the detector is not retrained:
# measured on 200 least-confident-first BC5CDR reviews (3 done documents, 10 steps), the fine-tuned
# NCBI detector lost 41 and gained 36 of its 850 NCBI dev spans (dev document F1 -0.011), while
# the held-back fifth held 1 reviewed mention and the replayed documents are its own training
# documents, so no check could see it; the measured retrains that taught had 11 or more.
MIN_DONE_DOCUMENTS = 10


@dataclass
class RetrainReport:
    out: Path
    reviews: int = 0
    documents: int = 0
    done_documents: int = 0
    held_back_documents: int = 0
    linker: dict[str, Any] = field(default_factory=dict)
    ner: dict[str, Any] = field(default_factory=dict)
    held_back: dict[str, Any] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)
    run_uid: str = ""
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)  # the detector's labels: partial or done only
    replay: dict[str, Any] = field(default_factory=dict)  # scores on --replay documents not trained on, the choice

    def summary(self) -> list[str]:
        lines = [f"retrained on {self.reviews:,} reviewed mention(s) in {self.documents:,} document(s) "
                 f"({self.done_documents:,} done; {self.held_back_documents:,} held back) in {self.seconds:.0f}s"]
        if self.linker:
            kept = f" (not kept: {self.out / 'linker'} is the given linker)" if self.linker.get("kept_given") else ""
            lines.append(f"linker: {self.linker['queries']:,} queries, {self.linker['epochs']} epoch(s){kept} → "
                         f"{self.out / 'linker'}")
        if self.ner:
            kept = f" (not kept: {self.out / 'ner'} is the given detector)" if self.ner.get("kept_given") else ""
            partial = (f" + {self.ner['partial_spans']:,} reviewed span(s) in {self.ner['partial_documents']:,} "
                       "document(s) not done" if self.ner.get("partial_documents") else "")
            lines.append(f"detector: {self.ner['documents']:,} done document(s){partial}, {self.ner['steps']:,} "
                         f"steps{kept} → {self.out / 'ner'}")
        hb = self.held_back
        if hb.get("acc1_before") is not None:
            lines.append(f"held back: linker Acc@1 {hb['acc1_before']:.4f} -> {hb['acc1_after']:.4f} on "
                         f"{hb['mentions']:,} reviewed mention(s)")
        if hb.get("spans_after") is not None:
            b, a = hb["spans_before"], hb["spans_after"]
            lines.append(f"held back: detector span P/R/F1 {b['precision']:.4f}/{b['recall']:.4f}/{b['f1']:.4f} -> "
                         f"{a['precision']:.4f}/{a['recall']:.4f}/{a['f1']:.4f} on {hb['spans']:,} reviewed span(s)")
        if hb.get("document_after") is not None:
            b, a = hb["document_before"], hb["document_after"]
            lines.append(f"held back: document-level P/R/F1 {b[0]:.4f}/{b[1]:.4f}/{b[2]:.4f} -> "
                         f"{a[0]:.4f}/{a[1]:.4f}/{a[2]:.4f} on {hb['documents']:,} done document(s)")
        rp = self.replay
        if rp.get("spans_after") is not None:
            b, a = rp["spans_before"], rp["spans_after"]
            lines.append(f"replayed corpus: detector span F1 {b['f1']:.4f} -> {a['f1']:.4f} on "
                         f"{rp['documents']:,} document(s) it was not retrained on")
        if rp.get("document_after") is not None:
            b, a = rp["document_before"], rp["document_after"]
            lines.append(f"replayed corpus: document-level P/R/F1 {b[0]:.4f}/{b[1]:.4f}/{b[2]:.4f} -> "
                         f"{a[0]:.4f}/{a[1]:.4f}/{a[2]:.4f} on {rp['documents']:,} document(s), as annotate "
                         f"would run the pair; OUT holds the {rp['kept']}")
        if self.calibration:
            replayed = self.calibration.get("documents", {}).get("replayed")
            on = f"the held-back documents and {replayed:,} replayed one(s)" if replayed else "the held-back documents"
            dropped = " (not kept: the retrained pair lost on the replayed corpus)" if self.calibration.get("dropped") else ""
            lines.append(f"mention confidence refitted on {on}: threshold {self.calibration['threshold']:.3f}{dropped}")
        if self.run_uid:
            lines.append(f"run {self.run_uid}")
        return lines


def held_back(document_uid: str) -> bool:
    """Whether a document is in the held-back fifth: by a digest of its uid, so the same document
    is held back by every retrain of the store (its scores stay comparable)."""
    return int(hashlib.sha1(document_uid.encode("utf-8")).hexdigest(), 16) % HELD_BACK == 0


def _check(model: Path, ner: Path | None, out: Path) -> None:
    from kgnorm.methods.biosyn.finetune import check_base
    from kgnorm.methods.ner.finetune import base_types

    for what, p in (("--model", model), ("--ner", ner)):
        if p is not None and not (p / "kgnorm-model.json").is_file():
            raise KgnormError(f"{what} {p}: no model directory there")
    check_base(model)
    if ner is not None:
        base_types(ner)
    refuse_foreign(out)


def retrain(store: str | None, model: str | Path, out: str | Path, ner: str | Path | None = None, *,
            linker_minutes: float = 4.0, ner_minutes: float = 3.0, linker_epochs: int = 5, ner_epochs: float = 10,
            seed: int = 0, threads: int | None = None, quiet: bool = False, partial: bool = False,
            ner_context: int | None = None, replay: str | Path | None = None,
            min_done_documents: int = MIN_DONE_DOCUMENTS) -> RetrainReport:
    """Fine-tune `model` (and `ner`) on the store's reviews into ``out/linker`` (and ``out/ner``);
    see the module docstring. Budgets in minutes of training, each model's own. `partial`: the
    detector learns the reviewed spans of documents not done too, each read with `ner_context`
    characters either side (None: retrain_labels.CONTEXT_CHARS; 0: the whole document). `replay`:
    the annotated corpus the detector was trained on, a sample of it learnt beside the new texts
    (kgnorm.jobs.retrain_replay). `min_done_documents`: fewer done documents to learn from (outside the
    held-back fifth) leave the detector as given (MIN_DONE_DOCUMENTS)."""
    from kgnorm.jobs.retrain_replay import Replay
    from kgnorm.methods.recipes import set_threads
    from kgnorm.review.done import done_texts_of, rejected_reviews, training_reviews
    from kgnorm.review.export import pending_reviews
    from kgnorm.stores import check_store_uri, open_store

    t0 = time.perf_counter()
    model, out, ner = Path(model), Path(out), (Path(ner) if ner is not None else None)
    _check(model, ner, out)
    if replay is not None and ner is None:
        raise KgnormError("--replay replays a detector's corpus: give the detector with --ner")
    rehearsal = Replay.of(replay) if replay is not None else None
    set_threads(threads)
    uri = check_store_uri(store)
    with open_store(uri, read_only=True) as st:
        reviews = training_reviews(st)
        rejected = rejected_reviews(st) if ner is not None else []  # the guard reads them; --partial learns them
        done_docs = done_texts_of(st)
        waiting = pending_reviews(uri, st)
    report = RetrainReport(out, reviews=len({m for _, m, _ in reviews}), documents=len({d for d, _, _ in reviews}))
    if waiting:
        report.notes.append(f"{waiting:,} review(s) wait in the journal for the store (another process writes it): "
                            "not learnt from; run again once they are written")
    done = set(done_docs)
    if ner is not None:
        report.options = {"partial": partial, "ner_context": ner_context}
        if rehearsal is not None:
            report.options["replay"] = rehearsal.record()
    if not reviews:
        raise KgnormError("the store holds no reviewed mention in a stored document: review some first (kgnorm serve)")
    report.done_documents = len(done)
    train = [r for r in reviews if not held_back(r[0])]
    test = [r for r in reviews if held_back(r[0])]
    report.held_back_documents = len({d for d, _, _ in test})
    labels = report.options if (partial or rehearsal) and report.options else None  # the detector's inputs: digested
    digest = inputs_digest(model, ner, seed, reviews + rejected, done, labels)
    finished = settle(out, digest, uri, report.notes)
    if finished is not None:
        report.run_uid = finished.uid
        report.notes.append(f"{out} already holds the retrain of these reviews and models: nothing trained again")
        return report
    if not test:
        report.notes.append("no reviewed document falls in the held-back fifth: no before/after scores, no "
                            "recalibration (review more documents)")
    stage = staging(out)  # both models trained here, renamed into OUT once whole (kgnorm.jobs.retrain_out)
    with rolled_back(out):  # a failure (no room, read-only) undoes what was written: OUT and the store as before
        stage.mkdir(parents=True)
        report.linker = _linker(model, train, stage / "linker", linker_minutes, linker_epochs, seed, quiet)
        replayed = None
        if ner is not None:
            texts = {d: v for d, v in done_docs.items() if not held_back(d)}
            partly = _partial_labels(train, rejected, done, ner_context) if partial else None
            replayed = _replay_split(ner, rehearsal, seed)  # read once: training's draw and the guard's check
            report.ner = _detector(ner, texts, [r for r in train if r[0] in done], stage / "ner", ner_minutes,
                                   ner_epochs, seed, quiet, report.notes, partly, replayed, min_done_documents)
        test_rejected = [r for r in rejected if held_back(r[0])]  # none held back: no scores
        if replayed is not None and report.ner:  # before the held-back scores: they refit the confidence
            _judge_replay(ner, stage, replayed.check, report, threads)
        also = _replay_calibration(rehearsal, replayed)
        _score_held_back(uri, model, ner, stage, test, done, report, threads, quiet, test_rejected, also)
        judge_replayed_pair(uri, model, ner, stage, also, report, threads, quiet)  # last: the pair as OUT ships
        report.seconds = time.perf_counter() - t0
        run = _run(model, ner, out, report, seed)
        commit(out, run, digest)
        publish(out, run, uri)
    report.run_uid = run.uid
    return report


def _linker(model: Path, train: list[tuple[str, str, Any]], out: Path, minutes: float, epochs: int, seed: int,
            quiet: bool) -> dict[str, Any]:
    from kgnorm.methods.biosyn.finetune import finetune_biosyn

    pairs = linker_pairs([m for _, _, m in train])
    note(f"linker: {len(pairs):,} reviewed (query, concept) pair(s), warm-started from the given model", quiet)
    res = finetune_biosyn(model, pairs, out, max_minutes=minutes, epochs=epochs, seed=seed, quiet=quiet)
    return {"queries": res.queries, "pairs": len(pairs), "epochs": res.epochs, "seconds": round(res.seconds, 1)}


def linker_pairs(mentions: list[Any]) -> list[tuple[str, set[str]]]:
    """(normalized query, gold uids) of the reviewed mentions with a concept, under the text pipeline
    `link` uses (abbreviations expanded from the mention's document)."""
    from kgnorm.linking.linker import training_pairs
    from kgnorm.mentions.types import Mention
    from kgnorm.text.abbreviations import find_abbreviations
    from kgnorm.text.pipeline import TextPipeline

    abbr: dict[str, dict[str, str]] = {}
    items = []
    for m in mentions:
        if not m.ids:
            continue
        text = m.doc_text or ""
        if text not in abbr:
            abbr[text] = find_abbreviations(text) if text else {}
        items.append((Mention(m.text, m.doc_id, m.start, m.end, m.type, ["|".join(m.ids)]), abbr[text]))
    return training_pairs(TextPipeline(), items)


def _partial_labels(train: list[tuple[str, str, Any]], rejected: list[tuple[str, str, Any]], done: set[str],
                    ner_context: int | None) -> tuple[list, list, int | None]:
    """--partial: the reviewed mentions and not-mentions of documents not done (outside the held-back
    fifth), and the characters of context either side of each."""
    from kgnorm.jobs.retrain_labels import CONTEXT_CHARS

    ctx = CONTEXT_CHARS if ner_context is None else (ner_context or None)
    return ([r for r in train if r[0] not in done],
            [r for r in rejected if r[0] not in done and not held_back(r[0])], ctx)


def _detector(ner: Path, texts: dict[str, tuple[str, str]], train: list[tuple[str, str, Any]], out: Path,
              minutes: float, epochs: float, seed: int, quiet: bool, notes: list[str],
              partly: tuple[list, list, int | None] | None = None, replayed: Any = None,
              min_done: int = 1) -> dict[str, Any]:
    """Fine-tune the detector on the done documents outside the held-back fifth and (`partly`: the
    reviewed mentions and not-mentions of the other documents, the context in characters) on the
    reviewed spans of the others, with as many documents of `replayed` (a retrain_replay.ReplaySplit)
    beside them; with nothing to learn, or fewer than `min_done` done documents (without `partly`),
    the given detector is copied (so ``out/ner`` always goes with ``out/linker``)."""
    from kgnorm.jobs.retrain_labels import partial_texts
    from kgnorm.methods.ner.finetune import base_types, finetune_ner

    types = base_types(ner)
    docs, dropped = done_texts(texts, train, types)
    part = partial_texts(partly[0], partly[1], types, partly[2]) if partly is not None else None
    dropped += part.dropped if part is not None else 0
    if dropped:
        notes.append(f"{dropped:,} reviewed mention(s) of a type the detector does not tag: not learnt")
    if not any(d.spans for d in docs) and not (part is not None and part.texts):
        notes.append("no done document and no reviewed span outside the held-back fifth: the detector is not "
                     "retrained (copied as it was)" if part is not None else
                     "no done document outside the held-back fifth: the detector is not retrained (copied as "
                     "it was); mark reviewed documents done on their page")
        copy_detector(ner, out)
        return {}
    if part is None and len(docs) < min_done:
        notes.append(f"{len(docs):,} done document(s) outside the held-back fifth, fewer than {min_done:,} "
                     "(--min-done-documents): the detector is not retrained (copied as it was); a detector "
                     "fine-tuned on so few documents shifts on other text while nothing held back can show it")
        copy_detector(ner, out)
        return {}
    new = docs + (part.texts if part is not None else [])
    old = replayed.texts(len(new)) if replayed is not None else []
    res = finetune_ner(ner, new + old, out, max_minutes=minutes, epochs=epochs, seed=seed, quiet=quiet)
    info = {"documents": len(docs), "spans": sum(len(d.spans) for d in docs), "steps": res.steps,
            "seconds": round(res.seconds, 1)}
    if replayed is not None:
        info.update(replayed_documents=len(old))
    if part is not None:
        info.update(partial_documents=part.documents, partial_spans=part.mentions + part.rejected,
                    partial_mentions=part.mentions, partial_rejected=part.rejected, partial_texts=len(part.texts))
    return info


def _replay_split(ner: Path, rehearsal: Any, seed: int) -> Any:
    """The replayed corpus (None without --replay) read once, typed as the detector was trained."""
    if rehearsal is None:
        return None
    from kgnorm.jobs.retrain_replay import replay_split
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.ner.finetune import base_types

    return replay_split(rehearsal, read_model_meta(ner).get("types_map"), base_types(ner), seed)


def done_texts(texts: dict[str, tuple[str, str]], reviews: list[tuple[str, str, Any]],
               types: tuple[str, ...]) -> tuple[list[Any], int]:
    """The done documents (`texts`: uid -> (doc id, text)) as annotated texts, their reviewed
    mentions as gold (a type the detector lacks becomes its only type, or is dropped and counted
    when it has several); (annotated texts, dropped)."""
    from kgnorm.ner.corpus import AnnotatedText, _non_overlapping
    from kgnorm.ner.spans import Span

    docs = {uid: AnnotatedText(doc_id, text) for uid, (doc_id, text) in sorted(texts.items()) if text}
    dropped = 0
    for doc_uid, _, m in sorted(reviews, key=lambda r: (r[0], r[2].start)):
        text = m.doc_text or ""
        if not text or not (0 <= m.start < m.end <= len(text)) or text[m.start:m.end] != m.text:
            continue
        typ = m.type if m.type in types else (types[0] if len(types) == 1 else None)
        doc = docs.get(doc_uid)
        if doc is None:
            continue
        if typ is None:
            dropped += 1
            continue
        doc.spans.append(Span(m.start, m.end, m.text, typ))
    for d in docs.values():
        d.spans = _non_overlapping(d.spans)
    return list(docs.values()), dropped


def _top1(model: Path, mentions: list[Any]) -> list[str]:
    """The linker's rank-1 concept(s) of each mention ("|"-joined over a composite's parts)."""
    from kgnorm.linking.linker import link_stream, pipeline_from_meta
    from kgnorm.mentions.types import Mention
    from kgnorm.methods.registry import open_linker
    from kgnorm.text.abbreviations import find_abbreviations

    linker, meta = open_linker(model)
    items = [(Mention(m.text, m.doc_id, m.start, m.end, m.type, id=str(i)),
              find_abbreviations(m.doc_text) if m.doc_text else {}) for i, m in enumerate(mentions)]
    out = []
    for linked in link_stream(linker, pipeline_from_meta(meta), items, top_k=1, batch_size=256):
        best = next(iter(linked.ranks(1)), None)
        out.append("|".join(h.uid for h in best[1]) if best else "")
    return out


def _replay_calibration(rehearsal: Any, replayed: Any) -> list[tuple[Any, list[Any]]]:
    """The replayed check documents with their gold (none without --replay), which the mention
    confidence is refitted on beside the held-back ones (kgnorm.jobs.retrain_replay)."""
    if replayed is None:
        return []
    from kgnorm.jobs.retrain_replay import check_documents

    return check_documents(rehearsal, replayed)


def _score_held_back(uri: str, model: Path, ner: Path | None, out: Path, test: list[tuple[str, str, Any]],
                     done: set[str], report: RetrainReport, threads: int | None, quiet: bool,
                     rejected: list[tuple[str, str, Any]] = (), also: list[tuple[Any, list[Any]]] = ()) -> None:
    """The held-back scores before and after, and (with a detector) the confidence refitted on
    them and on `also` (the replayed check documents)."""
    linked = [m for _, _, m in test if m.ids]
    hb: dict[str, Any] = {"mentions": len(linked)}
    if linked:
        gold = ["|".join(m.ids) for m in linked]
        for when, path in (("before", model), ("after", out / "linker")):
            hb[f"acc1_{when}"] = round(sum(p == g for p, g in zip(_top1(path, linked), gold)) / len(linked), 4)
    if ner is not None:
        if report.ner:
            _judge_spans(ner, out, test, list(rejected), done, hb, report, threads)
        docs = [r for r in test if r[0] in done]
        hb["documents"] = len({d for d, _, _ in docs})
        if docs:
            _score_documents(uri, model, ner, out, docs, hb, report, threads, quiet, list(also))
    report.held_back = hb


def _judge_spans(ner: Path, out: Path, test: list[tuple[str, str, Any]], rejected: list[tuple[str, str, Any]],
                 done: set[str], hb: dict[str, Any], report: RetrainReport, threads: int | None) -> None:
    """The guard's first test (kgnorm.jobs.retrain_labels): span-level F1 and recall on the held-back
    reviews, the retrained detector against the given one; the given one is kept when either is
    lower, or with no evidence. Recall too, since reviews taken least confident first are mostly the
    detector's wrong spans: a detector that finds less looks better on them than on the corpus
    (measured: held-back span F1 0.375 -> 0.500 while NCBI dev strict F1 fell 0.614 -> 0.572)."""
    from kgnorm.jobs.retrain_labels import held_back_spans, judge, loses

    reviewed = held_back_spans([r for r in test if getattr(r[2], "doc_text", None)], rejected, done)
    hb["spans"] = reviewed.spans
    if not reviewed.spans:
        keep_given_detector(ner, out, report, "no held-back reviewed span to check it on")
        return
    hb["spans_before"], hb["spans_after"] = judge(ner, out / "ner", reviewed, threads)
    after, before = hb["spans_after"], hb["spans_before"]
    if loses(before, after):
        keep_given_detector(ner, out, report, f"held-back span F1/recall {after['f1']:.4f}/{after['recall']:.4f} "
                                              f"against {before['f1']:.4f}/{before['recall']:.4f} for the given detector")
        hb["spans_after"] = before


def _judge_replay(ner: Path, out: Path, docs: list[Any], report: RetrainReport, threads: int | None) -> None:
    """The detector's test on the replayed corpus (kgnorm.jobs.retrain_replay): span F1 of both
    detectors on `docs`, the detector's own corpus's documents that no step trained on; a fall
    beyond REPLAY_TOLERANCE keeps the given. Kept beside the whole pair's document-level test
    (kgnorm.jobs.retrain_judge), which comes last: it runs before the confidence is refitted, so
    the threshold is fitted for the detector that ships, and it sees spans, which document F1 (each
    concept counted once a document) does not: a detector that forgets a concept's second mention
    loses nothing there."""
    from kgnorm.jobs.retrain_labels import HeldBackSpans, judge
    from kgnorm.jobs.retrain_replay import REPLAY_TOLERANCE

    if not docs:
        return
    uids = [f"r{i}" for i in range(len(docs))]
    check = HeldBackSpans({u: d.text for u, d in zip(uids, docs)},
                          {u: {(s.start, s.end) for s in d.spans} for u, d in zip(uids, docs)}, {}, set(uids))
    before, after = judge(ner, out / "ner", check, threads)
    report.replay = {"documents": len(docs), "spans_before": before, "spans_after": after}
    if after["f1"] < before["f1"] - REPLAY_TOLERANCE:
        keep_given_detector(ner, out, report, f"span F1 {after['f1']:.4f} against {before['f1']:.4f} for the given "
                                              f"detector on {len(docs)} documents of --replay it was not retrained on")


def _score_documents(uri: str, model: Path, ner: Path, out: Path, docs: list[tuple[str, str, Any]],
                     hb: dict[str, Any], report: RetrainReport, threads: int | None, quiet: bool,
                     also: list[tuple[Any, list[Any]]]) -> None:
    from kgnorm.jobs.annotate import calibrate_annotate
    from kgnorm.jobs.retrain_judge import document_scores, write_gold
    from kgnorm.review.export import ExportReport, _write_documents, as_documents
    from kgnorm.review.records import now

    with tempfile.TemporaryDirectory(prefix="kgnorm-retrain-") as tmp:
        gold_file = Path(tmp) / "held_back.pubtator"
        ids = {d: f"h{i}" for i, d in enumerate(sorted({d for d, _, _ in docs}))}  # doc ids PubTator can hold
        mentions = [replace(m, doc_id=ids[d]) for d, _, m in docs]
        texts = as_documents(mentions, ExportReport(gold_file, "pubtator"))
        gold = write_gold(gold_file, texts)
        pairs = [("before", (ner, model)), ("after", (out / "ner", out / "linker"))]
        if report.ner and not report.ner.get("kept_given"):  # judged beside the given one, both with the new linker
            pairs.append(("given_detector", (ner, out / "linker")))
        for when, (n, m) in pairs:
            hb[f"document_{when}"] = document_scores(uri, n, m, gold_file, gold, threads, quiet)
        given = hb.pop("document_given_detector", None)
        if given is not None and hb["document_after"][2] < given[2]:
            keep_given_detector(ner, out, report, f"held-back document F1 {hb['document_after'][2]:.4f} against "
                                                  f"{given[2]:.4f} for the given detector, both with the new linker")
            hb["document_after"] = given
        cal_file = gold_file
        if also:  # the replayed check documents too: the pair serves both corpora
            cal_file = Path(tmp) / "calibration.pubtator"
            with open(cal_file, "w", encoding="utf-8") as fh:
                _write_documents(fh, "pubtator", texts + also)
        try:
            cal = calibrate_annotate(out / "ner", out / "linker", cal_file, dev_format="pubtator", store=uri,
                                     threads=threads, progress=not quiet)
            report.calibration = {"threshold": cal.threshold, "fit": cal.fit, "at": now(),
                                  "documents": {"held_back": len(texts), "replayed": len(also)}}
        except KgnormError as exc:
            report.notes.append(f"mention confidence not refitted: {exc}")


def _run(model: Path, ner: Path | None, out: Path, report: RetrainReport, seed: int) -> Any:
    """The Run to record, naming the models where they will be once published (OUT/linker)."""
    from kgnorm.jobs.run import model_run
    from kgnorm.methods.model_dir import read_model_meta

    linker_meta = read_model_meta(staging(out) / "linker")
    params = {"model": str(model.resolve()), "ner": str(ner.resolve()) if ner else None, "out": str(out.resolve()),
              "reviews": report.reviews, "documents": report.documents, "done_documents": report.done_documents,
              "held_back_documents": report.held_back_documents, "seed": seed, "linker": report.linker,
              "ner_training": report.ner, **({"ner_labels": report.options} if report.options else {})}
    metrics = {"held_back": report.held_back, **({"replay": report.replay} if report.replay else {}),
               "calibration": report.calibration, "seconds": round(report.seconds, 1)}
    return model_run("retrain", (out / "linker").resolve(), "biosyn", {"created_at": linker_meta.get("created_at", "")},
                     params, metrics)
