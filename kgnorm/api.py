"""The Python API: one `Workbench` per store, the same library calls the `kgnorm` command makes.

    from kgnorm import Workbench
    wb = Workbench("ladybug:///data/graph")
    wb.ingest("obo", "hp.obo")
    wb.query("MATCH (c:Concept) RETURN count(c) AS n")

Results come back as pandas DataFrames (tables), LoadSummary (ingest), a dict (evaluate) or the
model directory (train); failures raise kgnorm.errors.KgnormError with the CLI's one-line message,
and leave the store as it was. Status lines go to stderr unless ``quiet=True``."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from kgnorm.errors import KgnormError
from kgnorm.stores import check_store_uri

if TYPE_CHECKING:  # pandas and the stores' types load on first use
    import pandas as pd

    from kgnorm.jobs.check import CheckReport
    from kgnorm.stores import LoadSummary, QueryResult
    from kgnorm.stores.ladybug_compact import CompactSummary


def _frame(result: QueryResult) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(result.rows, columns=list(result.columns))


class Workbench:
    """A graph store (a path, ``ladybug:///path`` or a Neo4j URI; None: $KGNORM_STORE or
    ./kgnorm-data/graph) and the work done on it. ``lock_timeout``: seconds to wait for an
    embedded store another process is writing to."""

    def __init__(self, store: str | None = None, *, lock_timeout: float = 30.0) -> None:
        self.store = check_store_uri(store)  # a malformed URI fails here, before any work
        self.lock_timeout = lock_timeout

    def __repr__(self) -> str:
        from kgnorm.stores import redact

        return f"Workbench({redact(self.store)!r})"

    # ------------------------------------------------------------------ the graph
    def ingest(self, format: str, path: str | Path, ontology: str | None = None, allow_dangling: bool = False,
               *, quiet: bool = False, **options: Any) -> LoadSummary:
        """Load an ontology (format: obo, mesh, medic, snomed, meddra, umls; options: the loader's, e.g.
        ``include_noncurrent`` for MedDRA, ``sab=``/``lang=``/``suppress=`` for UMLS), replacing one of
        the same name."""
        from kgnorm.jobs.ingest import ingest

        return ingest(format, path, ontology, allow_dangling, self.store, self.lock_timeout, quiet, **options)

    def compact(self) -> CompactSummary:
        """Reclaim the space an embedded store keeps after ontologies were replaced (`kgnorm
        compact`); returns what it did (MB before and after, nodes, edges, seconds)."""
        from kgnorm.jobs.compact import compact_store

        return compact_store(self.store, self.lock_timeout)[1]

    def check(self) -> CheckReport:
        """Read the whole store (and an embedded store's review journal) for what is inconsistent
        (`kgnorm check`): ``report.sound``, and ``report.findings``, a line each; the store is only read."""
        from kgnorm.jobs.check import check_store

        return check_store(self.store, self.lock_timeout)

    def ontologies(self) -> pd.DataFrame:
        """The ontologies in the store with concept and edge counts."""
        from kgnorm.jobs.query import ontology_counts

        return _frame(ontology_counts(self.store))

    def query(self, cypher: str, write: bool = False, **params: Any) -> pd.DataFrame:
        """One Cypher statement with ``$params`` bound from the keywords; read-only (a write is
        refused by the store) unless ``write=True``."""
        from kgnorm.jobs.query import run_query

        return _frame(run_query(cypher, params, write=write, store=self.store, lock_timeout=self.lock_timeout))

    # ------------------------------------------------------------------ models
    def train(self, method: str, out: str | Path, **options: Any) -> Path:
        """Train ``method`` (biosyn, bne, dan, dilbert, biocom) from the store into ``out``; options
        are the fields of the method's ``kgnorm.methods.<method>.recipe.Options`` (what `kgnorm train
        METHOD` is generated from), e.g. ``ontology="medic", train=Path("train.txt")``."""
        from kgnorm.jobs.train import train

        if "store" in options:
            raise KgnormError("train uses the Workbench's store; make another Workbench for another store")
        return train(method, out, store=self.store, **options)

    def pretrain(self, ontologies: str | Sequence[str], out: str | Path, **options: Any) -> Path:
        """Self-align an encoder on the names of the store's ``ontologies`` (SapBERT's recipe; `kgnorm
        pretrain`) into ``out``, a plain Hugging Face directory every ``encoder=`` option takes.
        Options: ``encoder``, ``max_minutes``, ``threads``, ``resume`` and :class:`PretrainConfig`'s
        fields (``hierarchy=True``, ``epochs``, ``lr`` …)."""
        from kgnorm.jobs.pretrain import pretrain

        if "store" in options:
            raise KgnormError("pretrain uses the Workbench's store; make another Workbench for another store")
        return Path(pretrain(ontologies, out, store=self.store, **options).out_dir)

    def hypernyms(self, model: str | Path, root: str, level: int,
                  names: str | Path | Sequence[str] | None = None, write: bool = True, *,
                  ontology: str | None = None, top_k: int = 5, write_top_k: int = 1,
                  seed: int | None = None) -> pd.DataFrame:
        """Rank the level-``level`` concepts under ``root`` as hypernyms of each name (a file, a list,
        or None: the held-out test names); with ``write`` the top ``write_top_k`` ranks become
        PREDICTED_IS_A edges of one Run. Columns: name, rank, hypernym_uid, hypernym_name, score."""
        import pandas as pd

        from kgnorm.jobs.hypernyms import COLUMNS, rank_names, write_ranking

        ranking = rank_names(model, root, level, names, ontology=ontology, top_k=top_k, seed=seed,
                             store=self.store)
        if write:
            write_ranking(ranking, write_top_k, self.store, self.lock_timeout)
        return pd.DataFrame(ranking.rows(), columns=list(COLUMNS))

    def link(self, model: str | Path, mentions: str | Path | Sequence[str], write: bool = True, top_k: int = 5,
             **options: Any) -> pd.DataFrame:
        """Link a mention file (.concept, PubTator or TSV) or a list of texts (ids "1", "2", …) with a
        trained model; with ``write`` the LINKED_TO edges go into the store as one Run, streamed in
        batches and published at the end. Options: those of
        ``kgnorm.jobs.link.link_mentions`` (nil_threshold, write_top_k, output, write_batch …).
        Columns: mention_id, mention, rank, concept_uids, score, nil -- the rows of link's TSV."""
        import pandas as pd

        from kgnorm.jobs.link import TSV_HEADER, link_mentions

        report = link_mentions(model, mentions, store=self.store, write=write, top_k=top_k,
                               lock_timeout=self.lock_timeout, collect=True, **options)
        frame = pd.DataFrame(report.rows, columns=TSV_HEADER)
        # the TSV's text as values: rank and nil as integers, score as a float (4 decimals, as written)
        return frame.astype({"rank": int, "score": float, "nil": int})

    def relink_orphans(self, model: str | Path, **options: Any) -> Any:
        """``kgnorm link --relink-orphans``: link again the mentions a re-ingest left orphans of the
        model's ontology, as one run; returns its LinkReport (run uid, mentions, edges, notes).
        Options: ``kgnorm.jobs.relink.relink_orphans``'s (top_k, write_top_k, output, batch_size)."""
        from kgnorm.jobs.relink import relink_orphans

        return relink_orphans(model, store=self.store, lock_timeout=self.lock_timeout, **options)

    def annotate(self, ner: str | Path | Any, model: str | Path, input: str | Path, input_format: str = "text",
                 write: bool = True, **options: Any) -> pd.DataFrame:
        """Find mentions in raw documents (``ner``: ``"dictionary:ONT"``, a trained detector's directory or
        a MentionDetector), link them with ``model`` and, with ``write``, store documents, mentions and
        LINKED_TO edges as one Run. Options: ``kgnorm.jobs.annotate.annotate_documents``'s (output,
        output_format, top_k, consistency …). One row per mention: MENTION_COLUMNS."""
        import pandas as pd

        from kgnorm.jobs.annotate import MENTION_COLUMNS, annotate_documents

        report = annotate_documents(ner, model, input, input_format=input_format, store=self.store, write=write,
                                    lock_timeout=self.lock_timeout, collect=True, progress=False, **options)
        return pd.DataFrame(report.rows, columns=MENTION_COLUMNS)

    def calibrate(self, ner: str | Path, model: str | Path, dev: str | Path, **options: Any) -> dict[str, Any]:
        """`kgnorm calibrate`: fit annotate's mention confidence for the detector directory ``ner`` and the
        linking model ``model`` on annotated ``dev`` documents, stored in ``ner``; returns the threshold and
        the dev figures. Options: ``kgnorm.jobs.annotate.calibrate_annotate``'s (dev_format, types, threads)."""
        from kgnorm.jobs.annotate import calibrate_annotate

        report = calibrate_annotate(ner, model, dev, store=self.store, progress=False, **options)
        return {"threshold": report.threshold, "coef": report.coef, **report.fit}

    def evaluate(self, model: str | Path | None, gold: str | Path, **options: Any) -> dict[str, Any]:
        """What `kgnorm eval link --format json` reports: Acc@1/Acc@5 of the rows `link` writes for the
        gold mentions ("full", and "refined" with ``train=``), or of any TSV in link's layout with
        ``predictions=`` (and ``ontology=`` when no model is given); ``nil_fraction=`` adds DILBERT's
        constructed nil evaluation ("nil"). Options: ``kgnorm.jobs.evaluate.evaluate_model``'s."""
        from kgnorm.jobs.evaluate import evaluate_model

        return evaluate_model(model, gold, store=self.store, **options)

    def evaluate_hierarchy(self, model: str | Path, root: str, *, ontology: str | None = None,
                           baselines: bool = True, encoder: str | Path | None = None,
                           seed: int | None = None) -> pd.DataFrame:
        """What `kgnorm eval hierarchy` prints: per scorer (the model, and with ``baselines`` averaged
        word vectors, char tf-idf, MiniLM), semantic-similarity mAP and hypernym-detection MRR per level
        (DAN §4.3). Columns: scorer, level, map, mrr."""
        import pandas as pd

        from kgnorm.jobs.eval_hierarchy import evaluate_model_hierarchy, hierarchy_rows

        results = evaluate_model_hierarchy(model, root, ontology=ontology, baselines=baselines, encoder=encoder,
                                           seed=seed, store=self.store)
        return pd.DataFrame(hierarchy_rows(results), columns=["scorer", "level", "map", "mrr"])

    def relatedness(self, model: str | Path, pairs: str | Path | Sequence[str | Path],
                    baselines: Sequence[str] = ()) -> pd.DataFrame:
        """What `kgnorm eval relatedness --format json` reports: per pairs file and scorer, Spearman
        between cosine similarity and human relatedness scores (``baselines``: ``"word-vectors"``)."""
        import pandas as pd

        from kgnorm.jobs.relatedness import evaluate_relatedness

        files = [pairs] if isinstance(pairs, (str, Path)) else list(pairs)
        return pd.DataFrame(evaluate_relatedness(model, files, baselines).rows)

    def embed(self, model: str | Path, output: str | Path, names: str | Path | Sequence[str] | None = None, *,
              ontology: str | None = None, **options: Any) -> Path:
        """Vectors of ``names`` (a file, one per line, or a list) or of every concept name of
        ``ontology``, written as OUTPUT.npy + OUTPUT.tsv (`kgnorm embed`); returns OUTPUT. Options:
        ``engine="ray"`` and ``ray=RayOptions(...)`` (kgnorm.jobs.ray_engine), as for link and annotate."""
        from kgnorm.jobs.embed import embed_names

        return embed_names(model, output, input=names, ontology=ontology, store=self.store, **options).base

    def build_corpus(self, ontology: str, texts: str | Path | Sequence[str | Path], out: str | Path,
                     **options: Any) -> Path:
        """BioCoM's entity-linked sentence corpus from PubTator or plain-text files (`kgnorm corpus
        build`; options ``cap``, ``seed``, ``abbreviations``); returns the corpus directory."""
        from kgnorm.jobs.corpus import build_corpus

        files = [texts] if isinstance(texts, (str, Path)) else list(texts)
        return Path(build_corpus(ontology, files, out, store=self.store, **options).out_dir)

    # ------------------------------------------------------------------ reviews
    def review(self, mention: str, decision: str, concept: str = "", *, reviewer: str = "",
               ontology: str = "") -> dict[str, Any]:
        """Record a person's decision on a mention, as `kgnorm serve` does (decision: accept, concept,
        nil or not_a_mention; ``concept``: the uid chosen). It is written beside the machine's link,
        which stays; returns the review's record. An embedded store another process is writing keeps
        the review in its journal (``<store>.reviews.jsonl``) until the store is free."""
        from kgnorm.review.desk import ReviewDesk

        desk = ReviewDesk(self.store, lock_timeout=self.lock_timeout)
        try:
            return desk.record(mention, decision, concept, reviewer=reviewer, ontology=ontology).record()
        finally:
            desk.close()

    def reviews(self) -> pd.DataFrame:
        """Every review in the store, newest first (the saved query ``reviews``): review, mention_uid,
        doc_id, mention, decision, concept, ontology, previous_concept, reviewer, created_at, current."""
        from kgnorm.stores import open_store

        with open_store(self.store, read_only=True) as st:
            return _frame(st.run_saved("reviews"))

    # ------------------------------------------------------------------ ontology matching (issue 42)
    def match(self, source: str, target: str, model: str | Path, *, write: bool = True,
              output: str | Path | None = None, threshold: str | float = "auto", xrefs: str = "use",
              top_k: int = 10) -> pd.DataFrame:
        """`kgnorm match`: every concept of ``source`` mapped to ``target`` (exact, broad, narrow), one row
        per mapping: subject_id, subject_label, predicate_id, object_id, object_label,
        mapping_justification, confidence, score, comment. ``output``: also an SSSOM file; ``write``:
        also MAPS_TO edges of one Run."""
        import pandas as pd

        from kgnorm.jobs.match import FRAME_COLUMNS, match_ontologies, write_mappings, write_sssom_file

        result = match_ontologies(source, target, model, threshold=threshold, xrefs=xrefs, top_k=top_k,
                                  store=self.store)
        if output is not None:
            write_sssom_file(result, output)
        if write:
            write_mappings(result, self.store, self.lock_timeout)
        return pd.DataFrame(result.rows(), columns=FRAME_COLUMNS)

    def place(self, source: str, target: str, model: str | Path, *, top_k: int = 5, unmatched_only: bool = False,
              xrefs: str = "use", write: bool = True, write_top_k: int = 1) -> pd.DataFrame:
        """`kgnorm place`: ranked parents in ``target`` for concepts of ``source``: source_uid, source_name,
        rank, target_uid, target_name, score; ``write``: the top ``write_top_k`` as PREDICTED_IS_A edges."""
        import pandas as pd

        from kgnorm.jobs.place import COLUMNS, place_concepts, write_placement

        placement = place_concepts(source, target, model, top_k=top_k, unmatched_only=unmatched_only, xrefs=xrefs,
                                   store=self.store)
        if write:
            write_placement(placement, write_top_k, self.store, self.lock_timeout)
        return pd.DataFrame(placement.rows(), columns=list(COLUMNS))
