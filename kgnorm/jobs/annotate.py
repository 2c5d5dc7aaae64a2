"""`kgnorm annotate` as one library call: raw documents in; mentions found, linked and made
consistent per document; annotated documents out (PubTator, BioC, JSONL) and Document, Mention,
IN and LINKED_TO into the store as one Run.

Runs on the job skeleton (kgnorm.jobs.run: the linking model and its nil decision, the store opened
once, the output complete or not at all, the run staged batch by batch and published, Ray or
in-process); what is annotate's own: documents read lazily and `batch_docs` at a time, each batch
detected and linked (kgnorm.jobs.batch_work, abbreviations expanded from the document's own text),
found mentions under the fitted confidence dropped, and the documents written as they come.
:func:`calibrate_annotate` fits that confidence on dev by annotating it."""
from __future__ import annotations

import time
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from kgnorm.documents.types import Annotation, TextDocument
from kgnorm.errors import KgnormError
from kgnorm.ner.spans import MentionDetector

DOCUMENT_BATCH = 32
MENTION_COLUMNS = ["doc_id", "start", "end", "text", "type", "ontology", "concept_uids", "concept_names", "score",
                   "nil", "confidence"]


@dataclass
class AnnotateReport:
    """What an annotate run did; `rows` (collect=True): one dict per mention (MENTION_COLUMNS, and
    ``features``: what its confidence reads, for `kgnorm calibrate`)."""

    run_uid: str | None = None
    n_documents: int = 0
    n_empty: int = 0
    n_mentions: int = 0
    n_edges: int = 0
    n_propagated: int = 0
    n_harmonized: int = 0
    n_dropped: int = 0  # found mentions under the confidence threshold (not written)
    seconds: float = 0.0
    stage_seconds: dict[str, float] = field(default_factory=dict)  # in-process: detect, link (wall, summed)
    output: str | None = None
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add_edges(self, n: int) -> None:
        self.n_edges += n

    def summary(self) -> list[str]:
        rate = self.n_documents / self.seconds if self.seconds > 0 else 0.0
        lines = [f"annotated {self.n_documents:,} document(s) ({rate:.1f}/s): {self.n_mentions:,} mention(s)"
                 + (f"; {self.n_empty:,} empty document(s) skipped" if self.n_empty else "")]
        if self.n_dropped:
            lines.append(f"mention confidence: {self.n_dropped:,} mention(s) under the threshold dropped")
        if self.n_propagated or self.n_harmonized:
            lines.append(f"document consistency: {self.n_propagated:,} more occurrence(s) tagged, "
                         f"{self.n_harmonized:,} mention(s) relinked to their group's concept")
        if self.output:
            lines.append(f"wrote {self.output}")
        if self.run_uid is not None:
            lines.append(f"wrote {self.n_edges:,} LINKED_TO edge(s) as run {self.run_uid}")
        return lines


def annotate_documents(ner: str | Path | MentionDetector, model: str | Path | dict[str, Any], input: str | Path, *,
                       input_format: str = "text", output: str | Path | TextIO | None = None,
                       output_format: str = "pubtator", store: str | None = None, write: bool = True,
                       top_k: int = 1, consistency: bool | None = None, nil_threshold: float | str | None = None,
                       nil_dev: str | Path | None = None, batch_docs: int = DOCUMENT_BATCH,
                       write_batch: int = 20_000, lock_timeout: float = 30.0, progress: bool = True,
                       collect: bool = False, engine: str = "local", ray: Any = None,
                       ner_precision: str | None = None, threads: int | None = None,
                       overlap: bool | None = None, min_confidence: float | str | None = "auto",
                       dictionary_evidence: bool | None = None) -> AnnotateReport:
    """Annotate the documents of `input`; see the module docstring. `model`: a linking model's directory,
    or a router's meta (kgnorm.methods.router: one linker per type). `top_k`: ranks stored as
    LINKED_TO edges (outputs carry rank 1). `engine="ray"`: each batch is detected and linked by
    a pool of Ray actors (`ray`: a kgnorm.jobs.ray_engine.RayOptions), the output the same.
    `ner_precision`: a trained detector's path (auto, fp32, bf16, int8; None: the
    ``KGNORM_NER_PRECISION`` environment variable, else auto); `threads`: torch's (and ONNX
    Runtime's) intra-op threads in-process (None: torch's default); `overlap`: detection of the next
    batch on a second thread while this one is linked (None: where the cores cover both stages,
    kgnorm.jobs.overlap.overlap_plan; the output is the same bytes either way). `min_confidence`:
    ``auto`` drops the mentions whose confidence (kgnorm.nil.confidence) is under the threshold
    `kgnorm calibrate` fitted for this detector and linking model, and keeps every mention when it
    fitted none; a number is that threshold instead; None or ``off`` keeps every mention (each
    still gets its confidence where one was fitted). `dictionary_evidence`: kgnorm.linking.evidence
    (None: the detector's ``evidence_by_default``)."""
    from kgnorm.documents.readers import input_digest, read_documents
    from kgnorm.documents.writers import document_writer
    from kgnorm.jobs.batch_work import AnnotateBatchWork
    from kgnorm.jobs.detectors import detector_for_engine, dictionary_tagger_for
    from kgnorm.jobs.overlap import overlap_plan, torch_threads
    from kgnorm.jobs.ray_engine import check_engine
    from kgnorm.jobs.run import LINK_BUFFER_POOL_MB, StreamedRun, check_ontology, open_linking_model, output_label
    from kgnorm.methods.ner.precision import resolve_precision
    from kgnorm.stores.session import StoreSession

    _check_options(top_k, batch_docs, write_batch, output_format if output is not None else None)
    precision = resolve_precision(ner_precision)   # a bad value fails before anything is read
    check_engine(engine, ray)
    docs, digest, label = read_documents(input, input_format), input_digest(input), str(input)
    report = AnnotateReport()
    with ExitStack() as stack:
        session = stack.enter_context(StoreSession(store, write=write, lock_timeout=lock_timeout,
                                                   buffer_pool_mb=LINK_BUFFER_POOL_MB))
        plan = overlap_plan(overlap if engine == "local" else False, threads)
        detector, ner_label = detector_for_engine(ner, session, engine, precision, plan.threads)
        plan = _plan_for(detector, plan, overlap, threads)
        consistency, dictionary_evidence = _detector_defaults(detector, consistency, dictionary_evidence)
        linking = open_linking_model(model, engine=engine, nil_threshold=nil_threshold, nil_dev=nil_dev, store=session)
        report.notes += [linking.nil.note] if linking.nil.note else []
        confidence = mention_confidence(ner, linking.label, linking.meta, min_confidence, report.notes)
        if write:
            check_ontology(session, linking.meta, report.notes)
        refinements, tagger = dictionary_tagger_for(detector, session, linking.type_ontologies, report.notes)
        run = _run_record(linking, ner_label, digest, label, top_k, consistency, refinements, precision, confidence,
                          dictionary_evidence)
        # rank 2 is read for the confidence's margin; outputs and edges keep top_k
        work = AnnotateBatchWork(detector, linking.source, linking.pipeline, consistency,
                                 linking.link_kw(max(top_k, 2), 256), dictionary_tagger=tagger,
                                 ner_precision=precision, confidence=confidence, evidence=dictionary_evidence)
        started = time.perf_counter()
        stack.enter_context(torch_threads(plan.threads if engine == "local" else None))
        out = StreamedRun(stack, output=output, session=session, run=run if write else None,
                          ontology=linking.ontology, source=label, progress=progress, desc="annotate", unit="doc",
                          write_batch=write_batch, on_batch=lambda r: report.add_edges(r.links_written))
        report.output = output_label(output)
        writer = document_writer(out.file, output_format) if out.file is not None else None
        batches = _batches(docs, batch_docs, report)
        pack = max(1, int(getattr(detector, "pack_documents", 1)) // batch_docs)
        for batch, done in _done_batches(stack, work, detector, linking, batches, engine, ray, plan, report, pack):
            _take(out, writer, batch, done, report, digest, label, top_k, collect)
            out.flush_if_full()
        if writer is not None:
            writer.close()
        out.publish()
    report.seconds = time.perf_counter() - started
    report.notes += linking.unrouted_notes()
    if write:
        report.run_uid = run.uid
    if report.n_documents == 0:
        report.notes.append(f"{label}: no document with text" + (f" ({report.n_empty} empty)" if report.n_empty else ""))
    return report


def _detector_defaults(detector: Any, consistency: bool | None, evidence: bool | None) -> tuple[bool, bool]:
    """Document consistency and dictionary evidence as asked, else what won on dev for this kind of
    detector (benchmarks/LOG.md, "annotate" and "HPO without a corpus")."""
    if consistency is None:
        consistency = bool(getattr(detector, "consistency_by_default", False))
    if evidence is None:
        evidence = bool(getattr(detector, "evidence_by_default", False))
    return consistency, evidence


def _check_options(top_k: int, batch_docs: int, write_batch: int, output_format: str | None) -> None:
    """The sizes and the output format (None: no output), refused before anything is read."""
    from kgnorm.documents.writers import FORMATS

    if top_k < 1 or batch_docs < 1 or write_batch < 1:
        raise KgnormError("--top-k, --batch-size and --write-batch must be >= 1")
    if output_format is not None and output_format not in FORMATS:
        raise KgnormError(f"unknown output format {output_format!r}; use one of {', '.join(FORMATS)}")


def _batches(docs: Iterable[TextDocument], size: int, report: AnnotateReport) -> Iterator[list[TextDocument]]:
    """The documents with text in lists of `size` (the empty ones counted)."""
    from kgnorm.jobs.batch_work import batches_of

    def with_text() -> Iterator[TextDocument]:
        for doc in docs:
            if doc.text.strip():
                yield doc
            else:
                report.n_empty += 1

    return batches_of(with_text(), size)


def _plan_for(detector: Any, plan: Any, overlap: bool | None, threads: int | None) -> Any:
    """The overlap plan, off by default for a detector that holds the GIL (it gains nothing beside
    the linker)."""
    from kgnorm.jobs.overlap import overlap_plan

    if overlap is None and plan.overlap and not getattr(detector, "overlap_by_default", True):
        return overlap_plan(False, threads)
    return plan


def _run_record(linking: Any, ner_label: str, digest: str, label: str, top_k: int, consistency: bool,
                refinements: Any, precision: str | None, confidence: Any, evidence: bool = False) -> Any:
    """The annotate Run. Its key names the detector as the command does, not its content: annotating
    the same input again after the dictionary's ontology or the detector directory changed replaces it."""
    if confidence is None:
        threshold = {}
    elif list(confidence) == [""]:  # one linker: the key Runs have always had
        threshold = {"min_confidence": confidence[""].threshold}
    else:
        threshold = {"min_confidence": {t or "*": c.threshold for t, c in sorted(confidence.items()) if c is not None}}
    nil = linking.nil
    key = dict(ner=ner_label.split("@")[0] if ner_label.startswith("dictionary:") else ner_label, input=digest,
               top_k=top_k, consistency=consistency, nil=nil.threshold, **threshold)
    # "ner_levers": the key Runs have always recorded a trained detector's span refinements under
    params = {"input": label, "ner": ner_label, "write_top_k": top_k, "consistency": consistency,
              **({"ner_levers": refinements.label(), "ner_precision": precision} if refinements is not None else {}),
              "nil_threshold": nil.threshold, **nil.params, **threshold, "dictionary_evidence": evidence}
    return linking.run_record("annotate", key, params)


def _done_batches(stack: ExitStack, work: Any, detector: Any, linking: Any, batches: Iterator[list[TextDocument]],
                  engine: str, ray: Any, plan: Any, report: AnnotateReport,
                  pack: int = 1) -> Iterator[tuple[list[TextDocument], Any]]:
    """(batch, its DocumentsDone) in input order: by Ray actors, or in-process (a mention text
    repeated across the corpus linked once, the query cache), detection of the next batch beside
    the linking of this one where the plan overlaps them (the same bytes). `pack` batches at a time
    go to the detector in one call (the detector's ``pack_documents``: a trained one sorts their
    windows by length together; a Ray block is such a group) and are linked batch by batch."""
    from kgnorm.jobs.batch_work import batches_of

    groups = batches_of(batches, pack)
    if engine == "ray":   # a block is a group: each actor's detector packs it as the in-process one does
        from kgnorm.jobs.ray_engine import RayOptions, ray_map

        return ((batch, d) for group, dones in ray_map(work, groups, ray or RayOptions())
                for batch, d in zip(group, dones))
    from kgnorm.encoders.fixed_shape import query_cores
    from kgnorm.jobs.overlap import overlapped
    from kgnorm.linking.query_cache import with_cache

    linker = with_cache(linking.linker)
    detect, link = (_timed(f, report.stage_seconds, k) for f, k in zip(work.stages(detector, linker), ("detect", "link")))
    if not plan.overlap:
        return _read_ahead(groups, detect, link, _timed(work.prefetch(linker), report.stage_seconds, "link"))
    # the linking stage has its own cores only: no query overlap on the detector's core
    stack.enter_context(query_cores(plan.threads or 1))
    done = stack.enter_context(closing(overlapped(groups, detect, lambda founds: [link(f) for f in founds],
                                                  plan.threads, plan.detectors)))
    return ((batch, d) for group, dones in done for batch, d in zip(group, dones))


def _read_ahead(groups: Iterator[list[list[TextDocument]]], detect: Any, link: Any, prefetch: Any,
                lookahead: int | None = None) -> Iterator[tuple[list[TextDocument], Any]]:
    """(batch, its link(found)) in input order, `detect` given a group of batches at a time and
    returning each one's found mentions; batches detected up to `lookahead` mentions
    (kgnorm.linking.linker.LOOKAHEAD) ahead of the one linked, their queries prefetched: the query
    encoder then fills its fixed-shape calls across batches instead of ending each batch with
    part-filled ones (HPO over 1,692 abstracts: 293 encoder calls, 8,763 of their 9,376 rows copies,
    benchmarks/LOG.md "annotate --ner dictionary:hpo speed"). The same bytes out."""
    from collections import deque

    from kgnorm.linking.linker import LOOKAHEAD

    lookahead = LOOKAHEAD if lookahead is None else lookahead
    ahead: deque[tuple[list[TextDocument], Any]] = deque()
    n_ahead = 0
    for group in groups:
        for batch, found in zip(group, detect(group)):
            prefetch(found)
            ahead.append((batch, found))
            n_ahead += len(found.items)
            while ahead and n_ahead - len(ahead[0][1].items) >= lookahead:
                head, head_found = ahead.popleft()
                n_ahead -= len(head_found.items)
                yield head, link(head_found)
    while ahead:
        head, head_found = ahead.popleft()
        yield head, link(head_found)


def _take(out: Any, writer: Any, batch: list[TextDocument], done: Any, report: AnnotateReport, digest: str,
          label: str, top_k: int, collect: bool) -> None:
    """One done batch into the output file, the report and the staged run."""
    from kgnorm.jobs.run import staged_mention
    from kgnorm.stores import DocumentRow

    report.n_propagated += done.propagated
    report.n_harmonized += done.harmonized
    report.n_dropped += done.dropped
    for doc, lms in zip(batch, done.linked):
        anns = [_annotation(lm) for lm in lms]
        if writer is not None:
            writer.write(doc, anns)
        if collect:
            report.rows.extend(_row(doc, lm, a) for lm, a in zip(lms, anns))
        report.n_mentions += len(lms)
        if out.stores:
            duid = f"{digest[:12]}:{doc.doc_id}"
            out.add(document=DocumentRow(duid, doc.doc_id, label, doc.title, doc.text))
            for lm in lms:
                out.add(staged_mention(lm, digest, label, top_k, document=duid, type=lm.mention.type,
                                       confidence=lm.confidence))
    report.n_documents += len(batch)
    out.bar.update(len(batch))


def mention_confidence(ner: str | Path | MentionDetector, model: str | Path, meta: dict[str, Any],
                       min_confidence: float | str | None, notes: list[str]) -> dict[str, Any] | None:
    """The fitted mention confidence (kgnorm.nil.confidence) of this detector directory and linking
    model, by mention type (one type "" for a single linker; each route's for a router: see
    kgnorm.methods.mention_confidence.stored_confidences), thresholds replaced by a number
    `min_confidence`; None when off or none was fitted (auto: noted; a number: refused, it has no
    probability to compare with)."""
    from dataclasses import replace

    from kgnorm.methods.mention_confidence import stored_confidences

    off = min_confidence is None or (isinstance(min_confidence, str) and min_confidence.strip().lower() == "off")
    auto = isinstance(min_confidence, str) and min_confidence.strip().lower() == "auto"
    threshold = None
    if not off and not auto:
        try:
            threshold = float(min_confidence)  # type: ignore[arg-type]
        except ValueError:
            raise KgnormError(f"--min-confidence {min_confidence!r}: use auto, off or a probability") from None
        if not 0.0 <= threshold <= 1.0:
            raise KgnormError(f"--min-confidence {threshold}: a probability, between 0 and 1")
    fitted: dict[str, Any] = {}
    if isinstance(ner, (str, Path)) and Path(ner).is_dir():
        fitted = stored_confidences(ner, model, meta)
    if not any(fitted.values()):
        if threshold is not None:
            raise KgnormError(f"--min-confidence {threshold}: no mention confidence was fitted for this detector and "
                              f"linking model; run `kgnorm calibrate --ner DIR --model {model} --dev FILE` first")
        if auto and isinstance(ner, (str, Path)) and Path(ner).is_dir():
            notes.append("mention confidence: none fitted for this detector and linking model (`kgnorm calibrate`); "
                         "every found mention kept")
        return None
    missing = sorted(t for t, c in fitted.items() if c is None)
    if missing and auto:
        notes.append(f"mention confidence: none fitted for type(s) {', '.join(t or '(others)' for t in missing)} "
                     "(`kgnorm calibrate`); their mentions kept")
    new = 0.0 if off else threshold
    return {t: (replace(c, threshold=new) if c is not None and new is not None else c) for t, c in fitted.items()}


def _timed(fn: Any, seconds: dict[str, float], key: str) -> Any:
    """`fn`, its wall time added to ``seconds[key]`` (where annotate's time goes, per stage)."""
    def timed(arg: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(arg)
        finally:
            seconds[key] = seconds.get(key, 0.0) + time.perf_counter() - start
    return timed


def _annotation(lm: Any) -> Annotation:
    m = lm.mention
    top = [p[0] for p in lm.parts if p]
    ids = () if lm.nil or not top or len(top) != len(lm.parts) else tuple(h.uid for h in top)
    score = sum(h.score for h in top) / len(top) if top else None
    return Annotation(m.start, m.end, m.text, m.type, ids, score, lm.confidence, top[0].ontology if ids else "")


def _row(doc: TextDocument, lm: Any, a: Annotation) -> dict[str, Any]:
    names = "|".join(p[0].name for p in lm.parts if p) if a.ids else ""
    return {"doc_id": doc.doc_id, "start": a.start, "end": a.end, "text": a.text, "type": a.type,
            "ontology": a.ontology, "concept_uids": "|".join(a.ids), "concept_names": names, "score": a.score, "nil": not a.ids,
            "confidence": lm.confidence, "features": lm.features}


@dataclass
class CalibrationReport:
    """What `kgnorm calibrate` fitted: the threshold, the dev figures before and after it (in-sample:
    the threshold was chosen on those documents; benchmarks/annotate_confidence.py cross-fits two
    halves for the figure to quote), the regression's coefficients. A router (one linker per type)
    gets one fit per type: `by_type` holds each (type -> threshold, fit, coef), and the fields
    above are the first type's."""

    threshold: float
    fit: dict[str, Any]
    coef: dict[str, float]
    notes: list[str] = field(default_factory=list)
    by_type: dict[str, dict[str, Any]] = field(default_factory=dict)

    def summary(self) -> list[str]:
        fits = self.by_type.items() if self.by_type else [("", {"threshold": self.threshold, "fit": self.fit})]
        lines = []
        for typ, f in fits:
            fit, of = f["fit"], f" ({typ})" if typ else ""
            before, after = fit["document_before"], fit["document_after"]
            lines += [f"mention confidence{of} fitted on {fit['dev_documents']:,} dev document(s), "
                      f"{fit['dev_mentions']:,} found mention(s) ({fit['dev_right']:,} linked right)",
                      f"threshold{of} {f['threshold']:.3f}: dev document-level P/R/F1 {before[0]:.4f}/{before[1]:.4f}/"
                      f"{before[2]:.4f} -> {after[0]:.4f}/{after[1]:.4f}/{after[2]:.4f} (in-sample: the threshold "
                      "was chosen on these documents)"]
        return lines


def calibrate_annotate(ner: str | Path, model: str | Path | dict[str, Any], dev: str | Path, *,
                       dev_format: str | None = None, types: list[str] | None = None, store: str | None = None,
                       threads: int | None = None, progress: bool = True) -> CalibrationReport:
    """Fit the mention confidence (kgnorm.nil.confidence) of `ner` (a trained detector's directory)
    with the linking `model` on annotated `dev` documents, and store it in the detector's directory
    (kgnorm.methods.mention_confidence), where `annotate --min-confidence auto` finds it. The dev
    documents are annotated as `annotate` does (no store write, no threshold) and each found
    mention's rank-1 concepts compared with its document's gold (alt ids folded as `kgnorm eval
    annotate` folds them). A router (`model`: its directory or its meta) is fitted type by type,
    each type's mentions against its own gold, stored under that type's linker."""
    from kgnorm.documents.readers import read_documents, sniff_document_format
    from kgnorm.evaluation.annotate_eval import concept_set
    from kgnorm.evaluation.link_predictions import ontology_ids
    from kgnorm.methods.mention_confidence import linkers_by_type, store_confidence
    from kgnorm.methods.registry import model_meta
    from kgnorm.nil.confidence import FEATURES, DevMention, fit_confidence

    if not Path(ner).is_dir():
        raise KgnormError(f"--ner {ner}: the confidence is stored in a detector's model directory (kgnorm train ner)")
    fmt = dev_format or sniff_document_format(dev)
    meta = model_meta(model)
    ontologies = [meta["ontology"]] if meta.get("ontology") else sorted(set((meta.get("ontologies") or {}).values()))
    if not ontologies:
        raise KgnormError(f"{model}: the linking model names no ontology")
    label = model if not isinstance(model, dict) else "router"
    report = annotate_documents(ner, model, dev, input_format=fmt, output=None, write=False, collect=True,
                                min_confidence="off", progress=progress, threads=threads, store=store)
    canonical = {a: uid for o in ontologies for uid, alts in ontology_ids(o, store)[1].items() for a in alts}
    docs = list(read_documents(dev, fmt))
    linkers = linkers_by_type(label, meta)
    wanted = set(types) if types else None
    out, fits = CalibrationReport(0.0, {}, {}, report.notes), []
    for typ, linker in linkers.items():
        def mine(t: str) -> bool:  # the types this fit covers: its own, or (for "") every type no other key names
            return t.strip().casefold() == typ if typ else t.strip().casefold() not in linkers
        gold = {d.doc_id: concept_set([i for a in d.annotations if (wanted is None or a.type in wanted) and
                                       (len(linkers) == 1 or mine(a.type)) for i in a.ids], canonical) for d in docs}
        mentions = [DevMention(r["doc_id"], tuple(r["features"]),
                               concept_set(r["concept_uids"].split("|") if r["concept_uids"] else [], canonical))
                    for r in report.rows if len(linkers) == 1 or mine(r["type"])]
        fits.append(fitted := fit_confidence(mentions, gold, linker, typ))
        if not out.fit:
            out.threshold, out.fit, out.coef = fitted.threshold, fitted.fit, dict(zip(FEATURES, fitted.coef))
        if len(linkers) > 1:
            out.by_type[typ or "*"] = {"threshold": fitted.threshold, "fit": fitted.fit,
                                       "coef": dict(zip(FEATURES, fitted.coef))}
    for fitted in fits:  # stored once every type is fitted: a type that cannot be leaves the directory as it was
        store_confidence(ner, fitted)
    return out
