"""`kgnorm annotate` as one library call: raw documents in; mentions found, linked and made
consistent per document; annotated documents out (PubTator, BioC, JSONL) and Document, Mention,
IN and LINKED_TO into the store as one Run.

Streams: documents are read lazily and processed `batch_docs` at a time; the output file is
written as it goes (``<name>.partial``, renamed on success) and the store gets each batch through
a :class:`~kgnorm.stores.staged_run.StagedRun`, so a failure or Ctrl-C leaves it unchanged.
Linking is `link`'s own code (open_linker, pipeline_from_meta, link_stream, nil_decision,
edges_for): abbreviations are expanded from the document's own text and composites split by the
same TextPipeline."""
from __future__ import annotations

import time
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

from kgnorm.documents.types import Annotation, TextDocument
from kgnorm.errors import KgnormError
from kgnorm.ner.spans import MentionDetector

DOCUMENT_BATCH = 32
MENTION_COLUMNS = ["doc_id", "start", "end", "text", "type", "concept_uids", "concept_names", "score", "nil",
                   "confidence"]


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


def build_detector(ner: str | Path | MentionDetector, store: str | None, precision: str | None = None,
                   threads: int | None = None) -> tuple[MentionDetector, str]:
    """The detector a ``--ner`` spec names, looked up in the detector table (kgnorm.jobs.detectors:
    ``dictionary:ONT``, the ontology's names in the store; a trained detector's directory, by its
    kgnorm-model.json method, its network on the path `precision` names; a registered name), or a
    detector object as it is; with a label for the Run."""
    from kgnorm.jobs.detectors import DetectorContext, resolve

    if not isinstance(ner, (str, Path)):
        return ner, type(ner).__name__
    return resolve(ner, DetectorContext(store, precision, threads))


def lever_dictionary(detector: MentionDetector | str, store: str | None, ontology: str | None,
                     notes: list[str]) -> tuple[Any, Any]:
    """(levers, dictionary tagger) of a trained detector (an object, or its directory when the Ray
    workers load it): the tagger over the linker's ontology, read from the store, is what the
    ``dictionary`` lever (kgnorm.ner.refine) unions with; None when no lever needs it or the
    ontology is not in the store (then the lever is off, noted)."""
    if isinstance(detector, str):
        from kgnorm.methods.model_dir import read_model_meta
        from kgnorm.ner.refine import levers_from_meta

        ner_meta = read_model_meta(detector)
        levers, types = levers_from_meta(ner_meta), tuple(ner_meta.get("types") or ("Disease",))
    else:
        levers, types = getattr(detector, "levers", None), tuple(getattr(detector, "types", ()) or ("Disease",))
    if levers is None or not levers.dictionary:
        return levers, None
    from kgnorm.graph.views import read_ontology
    from kgnorm.ner.dictionary import DictionaryDetector
    from kgnorm.stores import open_store

    try:
        if not ontology:
            raise KgnormError("the linking model names no ontology")
        with open_store(store, read_only=True) as st:
            snap = read_ontology(st, ontology, with_edges=False)
    except KgnormError as exc:
        notes.append(f"detector: the dictionary lever is off ({exc})")
        return levers, None
    return levers, DictionaryDetector.from_snapshot(snap, type=types[0])


def _detector(ner: str | Path | MentionDetector, store: str | None, engine: str, precision: str | None,
              threads: int | None) -> tuple[Any, str]:
    """With Ray a trained detector's directory is loaded by each worker, not by the driver (the
    dictionary tagger is built here: it reads the store)."""
    if engine == "ray" and isinstance(ner, (str, Path)) and Path(ner).is_dir():
        path = str(Path(ner).resolve())
        return path, path
    return build_detector(ner, store, precision, threads)


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `threads` (kgnorm.methods.recipes.set_threads) for the
    block, restored after it (None: left as they are)."""
    if not threads:
        yield
        return
    import torch

    from kgnorm.methods.recipes import set_threads

    before = torch.get_num_threads()
    set_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _batches(docs: Iterable[TextDocument], size: int, report: AnnotateReport) -> Iterator[list[TextDocument]]:
    from kgnorm.jobs.blocks import blocks_of

    def with_text() -> Iterator[TextDocument]:
        for doc in docs:
            if doc.text.strip():
                yield doc
            else:
                report.n_empty += 1

    return blocks_of(with_text(), size)


def annotate_documents(ner: str | Path | MentionDetector, model: str | Path, input: str | Path, *,
                       input_format: str = "text", output: str | Path | TextIO | None = None,
                       output_format: str = "pubtator", store: str | None = None, write: bool = True,
                       top_k: int = 1, consistency: bool | None = None, nil_threshold: float | str | None = None,
                       nil_dev: str | Path | None = None, batch_docs: int = DOCUMENT_BATCH,
                       write_batch: int = 20_000, lock_timeout: float = 30.0, progress: bool = True,
                       collect: bool = False, engine: str = "local", ray: Any = None,
                       ner_precision: str | None = None, threads: int | None = None,
                       overlap: bool | None = None, min_confidence: float | str | None = "auto") -> AnnotateReport:
    """Annotate the documents of `input`; see the module docstring. `top_k`: ranks stored as
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
    still gets its confidence where one was fitted)."""
    from kgnorm.documents.readers import input_digest, read_documents
    from kgnorm.documents.writers import document_writer
    from kgnorm.encoders.fixed_shape import query_cores
    from kgnorm.jobs.blocks import AnnotateBlocks
    from kgnorm.jobs.link import LINK_BUFFER_POOL_MB, check_ontology, open_output
    from kgnorm.jobs.models import linker_method, model_meta, open_linker
    from kgnorm.jobs.overlap import overlap_plan, overlapped
    from kgnorm.jobs.ray_engine import check_engine
    from kgnorm.linking.linker import edges_for, pipeline_from_meta
    from kgnorm.linking.query_cache import with_cache
    from kgnorm.nil.fit import nil_decision, parse_nil_option
    from kgnorm.progress import progress_bar
    from kgnorm.stores import DocumentRow, LinkEdge, MentionRow, RunRecord, open_store
    from kgnorm.stores.run_ids import mention_uid, run_uid
    from kgnorm.stores.staged_run import StagedMention, StagedRun
    from tqdm.auto import tqdm

    if top_k < 1 or batch_docs < 1 or write_batch < 1:
        raise KgnormError("--top-k, --batch-size and --write-batch must be >= 1")
    from kgnorm.documents.writers import FORMATS as OUT_FORMATS
    if output is not None and output_format not in OUT_FORMATS:
        raise KgnormError(f"unknown output format {output_format!r}; use one of {', '.join(OUT_FORMATS)}")
    from kgnorm.methods.ner.runtime import resolve_precision

    precision = resolve_precision(ner_precision)   # a bad value fails before anything is read
    auto_nil = parse_nil_option(nil_threshold, nil_dev, "auto")
    check_engine(engine, ray)
    plan = overlap_plan(overlap if engine == "local" else False, threads)
    asked_threads, threads = threads, plan.threads
    docs = read_documents(input, input_format)
    digest, label = input_digest(input), str(input)
    detector, ner_label = _detector(ner, store, engine, precision, threads)
    if overlap is None and plan.overlap and not getattr(detector, "overlap_by_default", True):
        plan = overlap_plan(False, asked_threads)   # a detector that holds the GIL gains nothing beside the linker
        threads = plan.threads
    if consistency is None:  # what won on dev for this kind of detector (benchmarks/LOG.md, "annotate")
        consistency = bool(getattr(detector, "consistency_by_default", False))
    model = Path(model)
    # with Ray the workers hold the models; the driver loads the linker only to fit nil on dev
    linker, meta = open_linker(model) if engine == "local" or auto_nil else (None, model_meta(model))
    pipeline = pipeline_from_meta(meta)
    nil = nil_decision(linker, meta, pipeline, nil_threshold, nil_dev, "auto", None, 256, store)
    report = AnnotateReport(notes=[nil.note] if nil.note else [])
    confidence = mention_confidence(ner, model, meta, min_confidence, report.notes)
    if write:
        check_ontology(store, meta, report.notes)
    levers, union = lever_dictionary(detector, store, meta.get("ontology"), report.notes)
    # the run key names the detector as the command does, not its content: annotating the same input
    # again after the dictionary's ontology or the detector directory changed replaces the run
    uid = run_uid("annotate", ner=ner_label.split("@")[0] if ner_label.startswith("dictionary:") else ner_label,
                  model=str(model.resolve()), input=digest, top_k=top_k, consistency=consistency, nil=nil.threshold,
                  **({"min_confidence": confidence.threshold} if confidence is not None else {}))
    run = RunRecord(uid, "annotate", linker_method(meta), str(model.resolve()),
                    params={"input": label, "ner": ner_label, "write_top_k": top_k, "consistency": consistency,
                            **({"ner_levers": levers.label(), "ner_precision": precision} if levers is not None else {}),
                            "nil_threshold": nil.threshold, **nil.params,
                            **({"min_confidence": confidence.threshold} if confidence is not None else {})})
    started = time.perf_counter()
    work = AnnotateBlocks(detector, str(model.resolve()), pipeline, consistency,
                          # rank 2 is read for the confidence's margin; outputs and edges keep top_k
                          dict(top_k=max(top_k, 2), batch_size=256, nil_threshold=nil.threshold,
                               nil_classifier=nil.classifier),
                          union=union, ner_precision=precision, confidence=confidence)
    with ExitStack() as stack:
        stack.enter_context(torch_threads(threads if engine == "local" else None))
        fh = open_output(stack, output)
        if isinstance(output, (str, Path)):
            report.output = str(output)
        writer = document_writer(fh, output_format) if fh is not None else None
        staged = None
        if write:
            st = stack.enter_context(open_store(store, lock_timeout=lock_timeout, buffer_pool_mb=LINK_BUFFER_POOL_MB))
            staged = stack.enter_context(StagedRun(st, run, ontology=meta.get("ontology") or "", source=label))
        bar = stack.enter_context(progress_bar(desc="annotate", unit="doc") if progress else tqdm(disable=True))
        pending: list[StagedMention] = []
        pending_docs: list[DocumentRow] = []

        def flush() -> None:
            report.n_edges += staged.add(pending, pending_docs).links_written
            pending.clear()
            pending_docs.clear()

        batches = _batches(docs, batch_docs, report)
        if engine == "ray":  # the batches come back in input order: everything below is as in-process
            from kgnorm.jobs.ray_engine import RayOptions, ray_map
            done_batches = ray_map(work, batches, ray or RayOptions())
        else:  # a mention text repeated across the corpus is linked once (the query cache)
            detect, link = (_timed(f, report.stage_seconds, k)
                            for f, k in zip(work.stages(detector, with_cache(linker)), ("detect", "link")))
            if plan.overlap:  # detection of batch k+1 beside the linking of batch k: the same bytes
                # the linking stage has its own cores only: no query overlap on the detector's core
                stack.enter_context(query_cores(threads or 1))
                done_batches = stack.enter_context(closing(overlapped(batches, detect, link, threads,
                                                                      plan.detectors)))
            else:
                done_batches = ((b, link(detect(b))) for b in batches)
        for batch, done in done_batches:
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
                if staged is not None:
                    duid = f"{digest[:12]}:{doc.doc_id}"
                    pending_docs.append(DocumentRow(duid, doc.doc_id, label, doc.title, doc.text))
                    for lm in lms:
                        m = lm.mention
                        muid = mention_uid(digest, m.mention_id)
                        pending.append(StagedMention(
                            MentionRow(muid, m.text, m.doc_id, m.start, m.end, m.context, m.mention_id, label, m.type,
                                       lm.confidence),
                            [LinkEdge(muid, c, score, rank) for c, rank, score in edges_for(lm, top_k)], duid))
            report.n_documents += len(batch)
            bar.update(len(batch))
            if staged is not None and len(pending) >= write_batch:
                flush()
        if writer is not None:
            writer.close()
        if staged is not None:
            if pending or pending_docs:
                flush()
            staged.publish()
    report.seconds = time.perf_counter() - started
    if write:
        report.run_uid = uid
    if report.n_documents == 0:
        report.notes.append(f"{label}: no document with text" + (f" ({report.n_empty} empty)" if report.n_empty else ""))
    return report


def mention_confidence(ner: str | Path | MentionDetector, model: Path, meta: dict[str, Any],
                       min_confidence: float | str | None, notes: list[str]) -> Any:
    """The fitted mention confidence (kgnorm.nil.confidence) of this detector directory and linking
    model, its threshold replaced by a number `min_confidence`; None when off or none was fitted
    (auto: noted; a number: refused, it has no probability to compare with)."""
    from dataclasses import replace

    from kgnorm.methods.mention_confidence import linker_identity, stored_confidence

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
    fitted = None
    if isinstance(ner, (str, Path)) and Path(ner).is_dir():
        fitted = stored_confidence(ner, linker_identity(model, meta))
    if fitted is None:
        if threshold is not None:
            raise KgnormError(f"--min-confidence {threshold}: no mention confidence was fitted for this detector and "
                              f"linking model; run `kgnorm calibrate --ner DIR --model {model} --dev FILE` first")
        if auto and isinstance(ner, (str, Path)) and Path(ner).is_dir():
            notes.append("mention confidence: none fitted for this detector and linking model (`kgnorm calibrate`); "
                         "every found mention kept")
        return None
    if off:
        return replace(fitted, threshold=0.0)
    return replace(fitted, threshold=threshold) if threshold is not None else fitted


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
    return Annotation(m.start, m.end, m.text, m.type, ids, score, lm.confidence)


def _row(doc: TextDocument, lm: Any, a: Annotation) -> dict[str, Any]:
    names = "|".join(p[0].name for p in lm.parts if p) if a.ids else ""
    return {"doc_id": doc.doc_id, "start": a.start, "end": a.end, "text": a.text, "type": a.type,
            "concept_uids": "|".join(a.ids), "concept_names": names, "score": a.score, "nil": not a.ids,
            "confidence": lm.confidence, "features": lm.features}
