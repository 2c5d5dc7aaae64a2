"""A whole `kgnorm link` run as one library call: mentions in, ranked concepts out (TSV rows,
optionally collected), LINKED_TO edges and a Run node into the store.

Runs on the job skeleton (kgnorm.jobs.run: the linking model and its nil decision, the store opened
once, the TSV complete or not at all, the run staged every `write_batch` mentions and published,
Ray or in-process). What is link's own: mentions read lazily from a file (or given in memory),
linked `batch_size` at a time, written to the TSV as they come, and a PubTator input's documents
stored beside its mentions; memory follows the batch sizes, not the corpus."""
from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

from kgnorm.errors import KgnormError
from kgnorm.jobs.ray_engine import RayOptions
from kgnorm.jobs.run import LinkReport
from kgnorm.linking.linker import TSV_HEADER
from kgnorm.mentions.types import Mention

# Mentions linked per batch. The query encoder runs same-length groups in fixed-shape calls of 32 rows
# (kgnorm.encoders.fixed_shape), filled from the mentions link_stream reads ahead (kgnorm.linking.linker
# LOOKAHEAD), so the batch no longer decides how full the calls are; the output is the same in any batch
# (a query's vector does not depend on it) and memory follows batch + lookahead.
LINK_BATCH = 1024


class EdgeCounts:
    """Why the edge count differs from mentions x ranks, counted as the mentions go by."""

    def __init__(self) -> None:
        self.mentions = self.with_edges = self.split = self.edges = self.kept = 0

    def batch(self, result: Any, report: LinkReport) -> None:
        """What a staged batch wrote (kgnorm.stores.staged_run.BatchResult)."""
        report.repeats += result.repeats
        for it in result.accepted:
            self.add(it.links)
        self.kept += result.links_written

    def add(self, links: list) -> None:
        self.mentions += 1
        self.edges += len(links)
        self.with_edges += bool(links)
        self.split += any(c > 1 for c in Counter(e.rank for e in links).values())

    def note(self, write_top_k: int) -> str:
        notes = []
        if write_top_k > 1:
            notes.append(f"top {write_top_k} ranks each")
        if self.split:
            notes.append(f"{self.split:,} composite mention(s) got one edge per part")
        if self.mentions - self.with_edges:
            notes.append(f"{self.mentions - self.with_edges:,} nil mention(s) got none")
        if self.edges - self.kept:
            notes.append(f"{self.edges - self.kept:,} to concepts not in the store skipped")
        return f" ({'; '.join(notes)})" if notes else ""


@dataclass
class _Input:
    items: Iterable[tuple[Mention, dict[str, str]]]
    digest: str
    label: str  # the Run's "input" and each Mention's source
    path: Path | None
    format: str = ""  # the file's layout (sniffed when not given); "" for mentions given in memory


class DocumentsAlongside:
    """The documents of a PubTator input, read alongside its mentions (which come in document
    order), so that a `link` run stores each document's title and text as `annotate` does and the
    review pages can show mentions in place; memory holds one document, not the corpus."""

    def __init__(self, path: Path, digest: str, label: str) -> None:
        from kgnorm.documents.readers import read_documents

        self._docs = read_documents(path, "pubtator")
        self.prefix, self.label = digest[:12], label
        self._current: Any = None

    def row(self, doc_id: str) -> Any:
        """The DocumentRow of `doc_id` (None when the file has no such document after the last one)."""
        from kgnorm.stores import DocumentRow

        while self._current is None or self._current.doc_id != doc_id:
            self._current = next(self._docs, None)
            if self._current is None:
                return None
        d = self._current
        return DocumentRow(f"{self.prefix}:{d.doc_id}", d.doc_id, self.label, d.title, d.text)


def _input(mentions: str | Path | Sequence[str] | Sequence[Mention], input_format: str | None) -> _Input:
    """A file (read lazily), or mentions given in memory: plain strings get ids "1", "2", …"""
    from kgnorm.mentions.readers import read_mentions_with_abbreviations
    from kgnorm.stores.run_ids import file_digest
    from kgnorm.text.abbreviations import find_abbreviations

    if isinstance(mentions, (str, Path)):
        from kgnorm.mentions.readers import sniff_format

        fmt = (input_format or "").strip().lower() or sniff_format(mentions)
        return _Input(read_mentions_with_abbreviations(mentions, input_format), file_digest(mentions),
                      str(mentions), Path(mentions), fmt)
    given = [Mention(text=m, id=str(i)) if isinstance(m, str) else m for i, m in enumerate(mentions, 1)]
    if not all(isinstance(m, Mention) for m in given):
        raise KgnormError("mentions must be a file, a list of strings or a list of Mention")
    h = hashlib.sha1()
    for m in given:
        h.update(json.dumps([m.mention_id, m.text, m.doc_id, m.start, m.end, m.context]).encode("utf-8") + b"\n")
    kind = "strings" if all(isinstance(m, str) for m in mentions) else "mentions"
    return _Input(((m, find_abbreviations(m.context) if m.context else {}) for m in given), h.hexdigest(),
                  f"<{len(given)} {kind} given in memory>", None)


def link_mentions(model: str | Path, mentions: str | Path | Sequence[str] | Sequence[Mention], *,
                  store: str | None = None, write: bool = True, top_k: int = 5, write_top_k: int = 1,
                  output: str | Path | TextIO | None = None, input_format: str | None = None,
                  nil_threshold: float | str | None = None, nil_dev: str | Path | None = None,
                  nil_strategy: str = "auto", batch_size: int = LINK_BATCH, write_batch: int = 50_000,
                  abbreviations: bool | None = None, composites: bool | None = None,
                  lock_timeout: float = 30.0, progress: bool = True,
                  collect: bool = False, consistency: bool | None = None, engine: str = "local",
                  ray: RayOptions | None = None) -> LinkReport:
    """Link `mentions` with the model in `model`; write the TSV to `output` (a path or an open
    text file; None: none), the run to `store` unless write=False; `collect` keeps the rows;
    `consistency`: one concept per document for mentions that say the same thing
    (kgnorm.linking.consistency; None: the model's setting or the default); `engine="ray"`: linked
    by a pool of Ray actors (`ray`: where and how many; kgnorm.jobs.ray_engine), the output the same."""
    from kgnorm.jobs.ray_engine import check_engine
    from kgnorm.jobs.run import LINK_BUFFER_POOL_MB, StreamedRun, check_ontology, open_linking_model, output_label
    from kgnorm.linking.consistency import consistency_on, consistent_stream
    from kgnorm.stores.session import StoreSession
    from kgnorm.stores.staged_run import abandoned_note

    if top_k < 1 or write_top_k < 1:
        raise KgnormError("--top-k and --write-top-k must be >= 1")
    check_engine(engine, ray)  # before any work: Ray installed, the cluster there
    if write_batch < 1 or batch_size < 1:
        raise KgnormError("--batch-size and --write-batch must be >= 1")
    source = _input(mentions, input_format)
    report, counts = LinkReport(None, top_k=top_k), EdgeCounts()
    with ExitStack() as stack:
        session = stack.enter_context(StoreSession(store, write=write, lock_timeout=lock_timeout,
                                                   buffer_pool_mb=LINK_BUFFER_POOL_MB))
        linking = open_linking_model(model, engine=engine, nil_threshold=nil_threshold, nil_dev=nil_dev,
                                     nil_strategy=nil_strategy, nil_input_format=input_format, nil_batch=batch_size,
                                     store=session, abbreviations=abbreviations, composites=composites)
        report.notes += [linking.nil.note] if linking.nil.note else []
        consistent = consistency_on(consistency, linking.meta)
        if write:  # check the store before the work
            check_ontology(session, linking.meta, report.notes)
        run = _run_record(linking, source, write_top_k, abbreviations, composites, consistent, nil_dev)
        out = StreamedRun(stack, output=output, session=session, run=run if write else None,
                          ontology=linking.ontology, source=source.path, progress=progress, desc="link",
                          unit="mention", write_batch=write_batch, on_batch=lambda r: counts.batch(r, report))
        report.output = output_label(output)
        tsv = csv.writer(out.file, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL) if out.file is not None else None
        if tsv is not None:
            out.file.write("\t".join(TSV_HEADER) + "\n")
        alongside = (DocumentsAlongside(source.path, source.digest, source.label)
                     if out.stores and source.format == "pubtator" else None)
        # with Ray the blocks come back in input order: everything below is as in-process
        stream = linking.stream(source.items, engine, ray, **linking.link_kw(max(top_k, write_top_k), batch_size))
        for lm in consistent_stream(stream) if consistent else stream:
            _take(out, tsv, lm, report, source, alongside, top_k, write_top_k, collect)
            out.flush_if_full()
        out.publish()
    report.notes += linking.unrouted_notes()
    if not write:
        return report
    if out.staged.abandoned:
        report.notes.append(abandoned_note(out.staged.abandoned))
    report.run_uid, report.n_edges, report.edge_note = run.uid, counts.kept, counts.note(write_top_k)
    if report.repeats:
        report.notes.append(f"{report.repeats} mention(s) repeat an earlier one of {source.label} (same id and "
                            "text, e.g. a duplicated document): stored once")
    return report


def _run_record(linking: Any, source: _Input, write_top_k: int, abbreviations: bool | None,
                composites: bool | None, consistent: bool, nil_dev: str | Path | None) -> Any:
    """The link Run: the same model, input and settings again replace it."""
    from kgnorm.stores.run_ids import file_digest

    nil = linking.nil
    key = dict(input=source.digest, top_k=write_top_k, nil=nil.threshold, abbreviations=abbreviations,
               composites=composites, **({"consistency": True} if consistent else {}),
               **({"nil_classifier": file_digest(nil_dev)} if nil.classifier is not None else {}))
    return linking.run_record("link", key, {"input": source.label, "write_top_k": write_top_k,
                                            "nil_threshold": nil.threshold, **nil.params})


def _take(out: Any, tsv: Any, lm: Any, report: LinkReport, source: _Input, alongside: DocumentsAlongside | None,
          top_k: int, write_top_k: int, collect: bool) -> None:
    """One linked mention into the TSV, the report and the staged run (with its document, when the
    input is PubTator)."""
    from kgnorm.jobs.run import staged_mention
    from kgnorm.linking.linker import tsv_rows

    rows = tsv_rows(lm, top_k)
    if tsv is not None:
        tsv.writerows(rows)
    if collect:
        report.rows.extend(dict(zip(TSV_HEADER, r)) for r in rows)
    report.n_mentions += 1
    out.bar.update(1)
    if out.stores:
        m = lm.mention
        doc = alongside.row(m.doc_id) if alongside is not None and m.doc_id else None
        out.add(staged_mention(lm, source.digest, source.label, write_top_k, document=doc.uid if doc else "",
                               type=m.type if doc is not None else ""), doc)
