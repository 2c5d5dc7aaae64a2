"""The skeleton every job that writes a run stands on. A job (`link`, `annotate`, `relink-orphans`,
`hypernyms`, `match`, `place`) supplies what differs: its input, the work of one batch, how a result
becomes output rows and stored mentions, its report. The skeleton does the rest, the same way for
all of them:

- the linking model opened once, with its nil decision made before anything is written
  (:func:`open_linking_model`; a failure there writes nothing);
- the store opened once for the whole job (:class:`~kgnorm.stores.session.StoreSession`): the
  model's ontology checked, dictionaries read and the run written on one connection;
- the run record (:meth:`LinkingModel.run_record`; :func:`model_run` for a job done with a model
  directory it opens itself: hypernyms, match, place);
- the output file opened once, complete or not at all (:func:`open_output`);
- a streamed run staged batch by batch and published at the end (:class:`StreamedRun`: all or
  nothing, Ctrl-C included), with its progress bar; a run computed whole written in one
  transaction (:func:`write_whole_run`);
- the linking done in-process or by Ray actors, in input order either way (:meth:`LinkingModel.stream`).

Only this module and the shared parts (models, detectors, batch work, engines, overlap, store) are
imported by the jobs; no job imports another (lint-imports checks it)."""
from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, TextIO

from kgnorm.errors import KgnormError
from kgnorm.jobs.ray_engine import RayOptions
from kgnorm.stores.base import DocumentRow, GraphStore, RunRecord, RunWrite
from kgnorm.stores.session import StoreSession
from kgnorm.stores.staged_run import BatchResult, StagedMention, StagedRun

# LadybugDB's page cache during a run's streamed writes: by default most of the RAM, filled as the
# store grows. Bounded here; the rest of LadybugDB's memory is returned by reopening the
# database after each batch (kgnorm.stores.ladybug_staging; benchmarks/LOG.md, "link memory").
LINK_BUFFER_POOL_MB = 512


@dataclass
class LinkReport:
    """What a linking run (`link`, `relink-orphans`) did. `notes`: lines the user must see even when
    quiet (the fitted nil decision, repeated mentions); `rows`: the TSV rows as dicts (TSV_HEADER
    keys), with collect=True."""

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


def open_output(stack: ExitStack, output: str | Path | TextIO | None) -> TextIO | None:
    """A path is written as ``<name>.partial`` and renamed when the run succeeds, so a run that
    fails leaves neither a truncated file nor a changed old one (a device such as /dev/null is
    written directly); an open file is written as it is."""
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


def output_label(output: str | Path | TextIO | None) -> str | None:
    """The path a report names (None for an open file or no output)."""
    return str(output) if isinstance(output, (str, Path)) else None


def check_ontology(store: str | GraphStore | StoreSession | None, meta: dict[str, Any], notes: list[str]) -> None:
    """The model's ontology must be in the store (each route's, for a router); a version other
    than the model's is noted."""
    from kgnorm.methods.model_dir import check_ontology_version
    from kgnorm.stores.session import reading

    metas = [m for m in ([meta] if meta.get("ontology") else meta.get("member_meta") or []) if m.get("ontology")]
    if not metas:
        return
    with reading(store) as st:
        for m in metas:
            row = st.ontology_info(m["ontology"])
            if row is None:
                raise KgnormError(f"the model's ontology {m['ontology']!r} is not in {st.uri}")
            check_ontology_version(m, m["ontology"], row.get("version") or "", notes.append)


@dataclass
class LinkingModel:
    """A linking model opened for a run: its linker (None when Ray workers hold it and no nil
    threshold is fitted here), meta, text pipeline and nil decision. `source` is what a worker
    opens (the directory, or a router's meta given in memory: kgnorm.methods.router), `label`
    what the Run records as its model."""

    path: Path | None  # resolved; None for a model given in memory
    linker: Any
    meta: dict[str, Any]
    pipeline: Any
    nil: Any  # kgnorm.nil.fit.NilDecision
    source: Any = None

    @property
    def ontology(self) -> str:
        """The model's one ontology; "" for a router (each route stamps its own on its hits)."""
        return self.meta.get("ontology") or ""

    @property
    def ontologies(self) -> list[str]:
        """Every ontology the model links into (a router's routes: one each)."""
        return [self.ontology] if self.ontology else sorted(set((self.meta.get("ontologies") or {}).values()))

    @property
    def type_ontologies(self) -> str | dict[str, str]:
        """The model's ontology, or a router's by mention type (``*``: the others) when they differ."""
        return self.ontology or dict(self.meta.get("ontologies") or {})

    @property
    def label(self) -> str:
        if self.path is not None:
            return str(self.path)
        from kgnorm.methods.router.linker import router_label

        return router_label(self.meta)

    def unrouted_notes(self) -> list[str]:
        """A router's mention types that had no linker (in-process runs: the driver's linker counts them)."""
        unrouted = getattr(self.linker, "unrouted", None) or {}
        return [f"{n:,} mention(s) of type {t or '(none)'}: no linker for that type (not linked)"
                for t, n in sorted(unrouted.items())]

    def run_record(self, kind: str, key: dict[str, Any], params: dict[str, Any]) -> RunRecord:
        """The Run of this model: its uid from `key` (the same key again replaces the run)."""
        from kgnorm.jobs.models import linker_method

        return model_run(kind, self.label, linker_method(self.meta), key, params)

    def link_kw(self, top_k: int, batch_size: int) -> dict[str, Any]:
        """What link_stream takes besides the items: ranks, batch and the nil decision."""
        return dict(top_k=top_k, batch_size=batch_size, nil_threshold=self.nil.threshold,
                    nil_classifier=self.nil.classifier)

    def stream(self, items: Iterable[Any], engine: str, ray: RayOptions | None, **link_kw: Any) -> Iterator[Any]:
        """The LinkedMention of each (mention, abbreviations), in input order: in-process (a mention
        text repeated across the input linked once, the query cache) or by Ray actors."""
        if engine == "ray":
            from kgnorm.jobs.ray_engine import ray_link_stream

            return ray_link_stream(self.source, self.pipeline, items, ray or RayOptions(), **link_kw)
        from kgnorm.linking.linker import link_stream
        from kgnorm.linking.query_cache import with_cache

        return link_stream(with_cache(self.linker), self.pipeline, items, **link_kw)


def open_linking_model(model: str | Path | Mapping[str, Any], *, engine: str = "local",
                       nil_threshold: float | str | None = None, nil_dev: str | Path | None = None,
                       nil_strategy: str = "auto", nil_input_format: str | None = None, nil_batch: int = 256,
                       store: str | GraphStore | StoreSession | None = None, **pipeline_kw: Any) -> LinkingModel:
    """The model in `model` (a directory, or a router's meta: kgnorm.methods.router.routes_from_options)
    for a run (with Ray the workers load it: the driver only when it fits a nil threshold on
    `nil_dev`), and its nil decision (kgnorm.nil.fit), made before anything is written.
    `pipeline_kw`: the text pipeline's overrides (abbreviations, composites)."""
    from kgnorm.jobs.models import model_meta, open_linker
    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.nil.fit import nil_decision, parse_nil_option
    from kgnorm.process_memory import limit_malloc_arenas

    limit_malloc_arenas()  # before the search threads start (kgnorm.process_memory)

    auto_nil = parse_nil_option(nil_threshold, nil_dev, nil_strategy)
    source: Any = dict(model) if isinstance(model, Mapping) else str(Path(model).resolve())
    linker, meta = open_linker(source) if engine == "local" or auto_nil else (None, model_meta(source))
    pipeline = pipeline_from_meta(meta, **pipeline_kw)
    nil = nil_decision(linker, meta, pipeline, nil_threshold, nil_dev, nil_strategy, nil_input_format, nil_batch,
                       store)
    path = None if isinstance(model, Mapping) else Path(source)
    return LinkingModel(path, linker, meta, pipeline, nil, source)


class StreamedRun:
    """A run's writes as results stream in: the output file (complete or not at all), the Run staged
    in the store batch by batch (`run` None: nothing stored) and published by :meth:`publish`, the
    progress bar. Mentions queued with :meth:`add` go to the store every `write_batch`
    (:meth:`flush_if_full`); `on_batch` hears what each batch wrote. Leaving the stack without
    publishing removes what was staged (kgnorm.stores.staged_run)."""

    def __init__(self, stack: ExitStack, *, output: str | Path | TextIO | None, session: StoreSession | None,
                 run: RunRecord | None, ontology: str = "", source: str | Path | None = None,
                 progress: bool = True, desc: str = "", unit: str = "it", write_batch: int = 50_000,
                 on_batch: Callable[[BatchResult], None] | None = None) -> None:
        from tqdm.auto import tqdm

        from kgnorm.progress import progress_bar

        self.file = open_output(stack, output)
        self.staged: StagedRun | None = None
        if run is not None and session is not None:
            self.staged = stack.enter_context(StagedRun(session.get(), run, ontology=ontology, source=source))
        self.bar = stack.enter_context(progress_bar(desc=desc, unit=unit) if progress else tqdm(disable=True))
        self.write_batch, self.on_batch = write_batch, on_batch
        self._mentions: list[StagedMention] = []
        self._documents: dict[str, DocumentRow] = {}

    @property
    def stores(self) -> bool:
        return self.staged is not None

    def add(self, mention: StagedMention | None = None, document: DocumentRow | None = None) -> None:
        """Queue a mention and/or the document it is IN (a document stored once per uid)."""
        if mention is not None:
            self._mentions.append(mention)
        if document is not None:
            self._documents[document.uid] = document

    def flush_if_full(self) -> None:
        if len(self._mentions) >= self.write_batch:
            self.flush()

    def flush(self) -> None:
        result = self.staged.add(self._mentions, list(self._documents.values()))
        self._mentions, self._documents = [], {}
        if self.on_batch is not None:
            self.on_batch(result)

    def publish(self) -> None:
        """The last batch sent and the run swapped in, in one transaction (nothing when not storing)."""
        if self.staged is None:
            return
        if self._mentions or self._documents:
            self.flush()
        self.staged.publish()


def staged_mention(lm: Any, source_digest: str, source_label: str, write_top_k: int, *, document: str = "",
                   type: str = "", confidence: float | None = None) -> StagedMention:
    """A linked mention as the store takes it: its Mention row (uid from the input's digest and the
    mention's id) and LINKED_TO edges of ranks up to `write_top_k`, IN `document` (a uid, or none)."""
    from kgnorm.linking.linker import edges_for
    from kgnorm.stores.base import LinkEdge, MentionRow
    from kgnorm.stores.run_ids import mention_uid

    m = lm.mention
    muid = mention_uid(source_digest, m.mention_id)
    return StagedMention(MentionRow(muid, m.text, m.doc_id, m.start, m.end, m.context, m.mention_id, source_label,
                                    type, confidence),
                         [LinkEdge(muid, c.uid, score, rank, c.ontology) for c, rank, score in edges_for(lm, write_top_k)],
                         document)


def model_run(kind: str, model: str | Path, method: str, key: dict[str, Any], params: dict[str, Any],
              metrics: dict[str, Any] | None = None) -> RunRecord:
    """The Run of a job done with a model (every job that writes one): its uid from the model and
    `key`, so the same model and key again replace it."""
    from kgnorm.stores.run_ids import run_uid

    return RunRecord(run_uid(kind, model=str(model), **key), kind, method, str(model), params=params,
                     metrics=dict(metrics or {}))


def write_whole_run(store: str | None, write: RunWrite, lock_timeout: float = 30.0) -> None:
    """A run computed whole (hypernyms, match, place) written in one transaction; the same run uid
    again replaces it."""
    from kgnorm.jobs.store import open_writer

    with open_writer(store, lock_timeout=lock_timeout) as st:
        st.write_run(write)
