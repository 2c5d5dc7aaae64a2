"""A whole `kgnorm link` run as one library call: mentions in, ranked concepts out (TSV rows,
optionally collected), LINKED_TO edges and a Run node into the store.

Memory follows the batch sizes, not the corpus: mentions are read lazily, linked `batch_size`
at a time, written to the TSV as they come, and sent to the store every `write_batch`
mentions through a :class:`~kgnorm.stores.staged_run.StagedRun`, which keeps the run all or
nothing (staged, then published; removed on any failure or Ctrl-C)."""
from __future__ import annotations

import csv
import hashlib
import json
import os
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence, TextIO

from kgnorm.errors import KgnormError
from kgnorm.jobs.ray_engine import RayOptions
from kgnorm.linking.linker import TSV_HEADER
from kgnorm.mentions.types import Mention

# LadybugDB's page cache during a link run's writes: by default most of the RAM, filled as the
# store grows. Bounded here; the rest of LadybugDB's memory is returned by reopening the
# database after each batch (kgnorm.stores.ladybug_staging; benchmarks/LOG.md, "link memory").
LINK_BUFFER_POOL_MB = 512
# Mentions linked per batch. The query encoder runs same-length groups in fixed-shape calls of 32 rows
# (kgnorm.encoders.fixed_shape), filled from the mentions link_stream reads ahead (kgnorm.linking.linker
# LOOKAHEAD), so the batch no longer decides how full the calls are; the output is the same in any batch
# (a query's vector does not depend on it) and memory follows batch + lookahead.
LINK_BATCH = 1024


@dataclass
class LinkReport:
    """What a link run did. `notes`: lines the user must see even when quiet (the fitted nil
    decision, repeated mentions); `rows`: the TSV rows as dicts (TSV_HEADER keys), with collect=True."""

    run_uid: str | None
    n_mentions: int = 0
    n_edges: int = 0
    repeats: int = 0
    notes: list[str] = field(default_factory=list)
    rows: list[dict[str, str]] = field(default_factory=list)
    top_k: int = 5
    output: str | None = None  # the TSV's path, when one was written to a file
    edge_note: str = ""

    def summary(self) -> list[str]:
        """Status lines (the CLI prints them unless --quiet)."""
        lines = []
        if self.output:
            lines.append(f"wrote {self.n_mentions:,} mention(s) (up to {self.top_k} rank(s) each) to {self.output}")
        if self.run_uid is not None:
            lines.append(f"linked {self.n_mentions:,} mention(s); wrote {self.n_edges:,} LINKED_TO edge(s) as run "
                         f"{self.run_uid}{self.edge_note}")
        return lines


class EdgeCounts:
    """Why the edge count differs from mentions x ranks, counted as the mentions go by."""

    def __init__(self) -> None:
        self.mentions = self.with_edges = self.split = self.edges = self.kept = 0

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
    from kgnorm.jobs.models import linker_method, model_meta, open_linker
    from kgnorm.jobs.ray_engine import check_engine
    from kgnorm.linking.consistency import consistency_on, consistent_stream
    from kgnorm.linking.linker import edges_for, link_stream, pipeline_from_meta, tsv_rows
    from kgnorm.linking.query_cache import with_cache
    from kgnorm.nil.fit import nil_decision, parse_nil_option
    from kgnorm.progress import progress_bar
    from kgnorm.stores import LinkEdge, MentionRow, RunRecord, open_store
    from kgnorm.stores.run_ids import file_digest, mention_uid, run_uid
    from kgnorm.stores.staged_run import StagedMention, StagedRun, abandoned_note
    from tqdm.auto import tqdm

    if top_k < 1 or write_top_k < 1:
        raise KgnormError("--top-k and --write-top-k must be >= 1")
    check_engine(engine, ray)  # before any work: Ray installed, the cluster there
    if write_batch < 1 or batch_size < 1:
        raise KgnormError("--batch-size and --write-batch must be >= 1")
    auto_nil = parse_nil_option(nil_threshold, nil_dev, nil_strategy)
    source = _input(mentions, input_format)
    model = Path(model)
    # with Ray the workers hold the model; the driver loads it only to fit a nil threshold on dev
    linker, meta = open_linker(model) if engine == "local" or auto_nil else (None, model_meta(model))
    pipeline = pipeline_from_meta(meta, abbreviations=abbreviations, composites=composites)
    nil = nil_decision(linker, meta, pipeline, nil_threshold, nil_dev, nil_strategy, input_format, batch_size,
                       store)  # before the store or the output is touched: a failure here writes nothing
    report = LinkReport(None, top_k=top_k, notes=[nil.note] if nil.note else [])
    onto = meta.get("ontology") or ""
    if write:  # check the store before the work
        check_ontology(store, meta, report.notes)
    uid = run_uid("link", model=str(model.resolve()), input=source.digest, top_k=write_top_k,
                  nil=nil.threshold, abbreviations=abbreviations, composites=composites,
                  **({"consistency": True} if consistency_on(consistency, meta) else {}),
                  **({"nil_classifier": file_digest(nil_dev)} if nil.classifier is not None else {}))
    run = RunRecord(uid, "link", linker_method(meta), str(model.resolve()),
                    params={"input": source.label, "write_top_k": write_top_k, "nil_threshold": nil.threshold,
                            **nil.params})
    counts = EdgeCounts()
    with ExitStack() as stack:
        fh = open_output(stack, output)
        if isinstance(output, (str, Path)):
            report.output = str(output)
        staged = None
        if write:
            st = stack.enter_context(open_store(store, lock_timeout=lock_timeout, buffer_pool_mb=LINK_BUFFER_POOL_MB))
            staged = stack.enter_context(StagedRun(st, run, ontology=onto, source=source.path))
        tsv = csv.writer(fh, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL) if fh else None
        if fh is not None:
            fh.write("\t".join(TSV_HEADER) + "\n")
        bar = stack.enter_context(progress_bar(desc="link", unit="mention") if progress else tqdm(disable=True))
        pending: list[StagedMention] = []
        pending_docs: dict[str, Any] = {}
        alongside = (DocumentsAlongside(source.path, source.digest, source.label)
                     if staged is not None and source.format == "pubtator" else None)

        def flush() -> None:
            result = staged.add(pending, list(pending_docs.values()))
            pending_docs.clear()
            report.repeats += result.repeats
            for it in result.accepted:
                counts.add(it.links)
            counts.kept += result.links_written
            pending.clear()

        link_kw = dict(top_k=max(top_k, write_top_k), batch_size=batch_size, nil_threshold=nil.threshold,
                       nil_classifier=nil.classifier)
        if engine == "ray":  # the blocks come back in input order: everything below is as in-process
            from kgnorm.jobs.ray_engine import ray_link_stream
            stream = ray_link_stream(str(model.resolve()), pipeline, source.items, ray or RayOptions(), **link_kw)
        else:
            stream = link_stream(with_cache(linker), pipeline, source.items, **link_kw)
        for lm in consistent_stream(stream) if consistency_on(consistency, meta) else stream:
            rows = tsv_rows(lm, top_k)
            if tsv is not None:
                tsv.writerows(rows)
            if collect:
                report.rows.extend(dict(zip(TSV_HEADER, r)) for r in rows)
            report.n_mentions += 1
            bar.update(1)
            if staged is not None:
                m = lm.mention
                muid = mention_uid(source.digest, m.mention_id)
                doc = alongside.row(m.doc_id) if alongside is not None and m.doc_id else None
                if doc is not None:
                    pending_docs[doc.uid] = doc
                pending.append(StagedMention(
                    MentionRow(muid, m.text, m.doc_id, m.start, m.end, m.context, m.mention_id, source.label,
                               m.type if doc is not None else ""),
                    [LinkEdge(muid, c, score, rank) for c, rank, score in edges_for(lm, write_top_k)],
                    doc.uid if doc is not None else ""))
                if len(pending) >= write_batch:
                    flush()
        if staged is not None:
            if pending:
                flush()
            staged.publish()
    if not write:
        return report
    if staged.abandoned:
        report.notes.append(abandoned_note(staged.abandoned))
    report.run_uid, report.n_edges, report.edge_note = uid, counts.kept, counts.note(write_top_k)
    if report.repeats:
        report.notes.append(f"{report.repeats} mention(s) repeat an earlier one of {source.label} (same id and "
                            "text, e.g. a duplicated document): stored once")
    return report


def open_output(stack: ExitStack, output: str | Path | TextIO | None) -> TextIO | None:
    """A TSV path is written as ``<name>.partial`` and renamed when the run succeeds, so a run that
    fails leaves neither a truncated TSV nor a changed old one (a device such as /dev/null is
    written directly)."""
    if output is None or not isinstance(output, (str, Path)):
        return output
    final = Path(output)
    if final.exists() and not final.is_file():
        return stack.enter_context(open(final, "w", encoding="utf-8", newline=""))
    partial = final.with_name(final.name + ".partial")
    fh = open(partial, "w", encoding="utf-8", newline="")

    def finish(exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        fh.close()
        if exc_type is None:
            os.replace(partial, final)
        else:
            partial.unlink(missing_ok=True)

    stack.push(finish)
    return fh


def check_ontology(store: str | None, meta: dict[str, Any], notes: list[str]) -> None:
    """The model's ontology must be in the store; a version other than the model's is noted."""
    from kgnorm.methods.model_dir import check_ontology_version
    from kgnorm.stores import open_store

    if not meta.get("ontology"):
        return
    with open_store(store, read_only=True) as st:
        row = st.ontology_info(meta["ontology"])
        if row is None:
            raise KgnormError(f"the model's ontology {meta['ontology']!r} is not in {st.uri}")
        check_ontology_version(meta, meta["ontology"], row.get("version") or "", notes.append)
