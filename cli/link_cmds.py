"""`kgnorm link`, `kgnorm embed`, `kgnorm eval link` (`train biosyn` is in train_cmds.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import numpy as np
import typer

from kgnorm.cli.common import (FormatOpt, LockTimeoutOpt, QuietOpt, StoreOpt, info, json_safe, read_mention_file, setup,
                               warn)
from kgnorm.errors import InputError, KgnormError

AbbrOpt = Annotated[Optional[bool], typer.Option(
    "--abbreviations/--no-abbreviations", help="Expand abbreviations defined in the document.")]
CompOpt = Annotated[Optional[bool], typer.Option(
    "--composites/--no-composites", help="Split composite mentions into parts.")]


NIL_STRATEGIES = ("auto", "min_fp", "max_tp", "weighted", "dev_accuracy", "classifier")


def _parse_nil_option(nil_threshold: str | None, nil_dev: Path | None, nil_strategy: str) -> bool:
    """True for `--nil-threshold auto`; checks every nil option before anything is read or written."""
    if nil_strategy not in NIL_STRATEGIES:
        raise KgnormError(f"unknown --nil-strategy {nil_strategy!r}; valid: {', '.join(NIL_STRATEGIES)}")
    if nil_threshold is not None and nil_threshold.strip().lower() == "auto":
        if nil_dev is None:
            raise KgnormError("--nil-threshold auto needs --nil-dev F: dev mentions with gold, some out-of-KB")
        if not nil_dev.exists():
            raise InputError("nil dev mentions file not found", path=nil_dev)
        return True
    if nil_dev is not None:
        raise KgnormError("--nil-dev is only used with --nil-threshold auto")
    if nil_threshold is not None:
        try:
            value = float(nil_threshold)
        except ValueError:
            raise KgnormError(f"--nil-threshold must be a number or 'auto', got {nil_threshold!r}") from None
        if value != value:  # NaN
            raise KgnormError("--nil-threshold must not be NaN")
    return False


def _auto_nil_threshold(linker, meta: dict[str, Any], pipeline, nil_dev: Path, input_format: str | None,
                        strategy: str, batch_size: int, store: str | None) -> tuple[Any, dict[str, Any]]:
    """Link the dev mentions, then pick DILBERT's distance threshold t (kgnorm.linking.nil);
    `link_stream` takes the score threshold -t (distance = -score). With strategy
    `classifier`, fit a NilClassifier (kgnorm.linking.nil_classifier) instead and return it."""
    from kgnorm.evaluation.linking import GoldMention, MentionPrediction, mention_rank
    from kgnorm.linking.job import candidate_sets, link_stream
    from kgnorm.linking.nil import choose_threshold, from_scores, nil_metrics
    from kgnorm.linking.nil_classifier import DEFAULT_DEPTH
    from kgnorm.mentions.readers import NIL_PART

    from kgnorm.evaluation.link_eval import known_ids

    known, alt = known_ids(linker, meta, store)
    scores: list[float] = []
    in_kb: list[bool] = []
    correct: list[bool] = []
    n_total = n_minus1 = n_unknown = 0
    depth = DEFAULT_DEPTH if strategy == "classifier" else 1
    linked = list(link_stream(linker, pipeline, read_mention_file(nil_dev, input_format), top_k=depth,
                              batch_size=batch_size))
    if not any(lm.mention.gold for lm in linked):
        raise InputError("no dev mention has a gold field: --nil-dev needs gold concepts (-1 for out-of-KB)",
                         path=nil_dev)
    for lm in linked:
        n_total += 1
        gold = list(lm.mention.gold)
        top = [p[0].score for p in lm.parts if p]
        scores.append(min(top) if top else float("-inf"))
        linkable = [g for g in gold if g != NIL_PART]  # a -1 part of a composite is ignored, as in eval
        if not linkable:
            n_minus1 += 1
            kb = False
        else:
            kb = all(any(x in known for x in g.split("+")) for g in linkable)
            n_unknown += not kb
        in_kb.append(kb)
        rank = mention_rank(MentionPrediction(candidate_sets(lm)), GoldMention(tuple(gold)), 1, alt) if kb else 0
        correct.append(rank == 1)
    n_out = n_minus1 + n_unknown
    if n_out == 0:
        raise InputError(f"none of the {n_total} dev mention(s) is out-of-KB (gold -1, or a concept the model's "
                         "dictionary lacks), so no nil threshold can be chosen; give --nil-threshold NUMBER",
                         path=nil_dev)
    if strategy == "classifier":
        return _fit_nil_classifier(linked, in_kb, correct, nil_dev, n_total, n_out)
    examples = from_scores(scores, in_kb, correct)
    t, used = choose_threshold(examples, strategy)
    m = nil_metrics(examples, t)
    return -t, {"nil_strategy": used, "nil_distance_threshold": t, "nil_dev": str(nil_dev),
                "nil_dev_n": n_total, "nil_dev_out_of_kb": n_out, "nil_dev_accuracy": m["accuracy"],
                "nil_dev_f1": None if m["nil_f1"] != m["nil_f1"] else m["nil_f1"]}


def _fit_nil_classifier(linked: list, in_kb: list[bool], correct: list[bool], nil_dev: Path,
                        n_total: int, n_out: int) -> tuple[Any, dict[str, Any]]:
    """Fit the nil classifier on every dev mention's parts (a composite's parts share its
    flags); its accuracy is reported 5-fold cross-validated by document, not on the mentions
    it was fitted on."""
    from kgnorm.linking.nil_classifier import NilClassifier, cross_validated_accuracy, hit_features

    X, kb, ok, docs = [], [], [], []
    for lm, k, c in zip(linked, in_kb, correct):
        for q, hits in zip(lm.queries, lm.parts):
            X.append(hit_features(q, [(h.name, h.score) for h in hits]))
            kb.append(k)
            ok.append(c)
            docs.append(lm.mention.doc_id or lm.mention.mention_id)
    X = np.vstack(X) if X else np.zeros((0, 8))
    try:
        clf = NilClassifier.fit(X, kb, ok)
    except KgnormError as e:
        raise InputError(str(e), path=nil_dev) from None
    cv = cross_validated_accuracy(X, kb, ok, docs)
    return clf, {"nil_strategy": "classifier", "nil_dev": str(nil_dev), "nil_dev_n": n_total,
                 "nil_dev_out_of_kb": n_out, "nil_dev_accuracy": cv,
                 "nil_dev_accuracy_kind": "5-fold cross-validated by document"}


def link_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    input: Annotated[Path, typer.Option("--input", help="Mentions: .concept, PubTator or TSV (id, text …).")],
    input_format: FormatOpt = None,
    top_k: Annotated[int, typer.Option("--top-k")] = 5,
    output: Annotated[Optional[Path], typer.Option("--output", help="TSV to write (default stdout).")] = None,
    write: Annotated[bool, typer.Option("--write/--no-write", help="Store LINKED_TO edges and a Run node.")] = True,
    write_top_k: Annotated[int, typer.Option("--write-top-k", help="Ranks stored as edges.")] = 1,
    nil_threshold: Annotated[Optional[str], typer.Option(
        "--nil-threshold", help="Top-1 score below which a mention is out-of-KB (nil), or 'auto': choose it "
                                "on --nil-dev with DILBERT's strategies.")] = None,
    nil_dev: Annotated[Optional[Path], typer.Option(
        "--nil-dev", help="Dev mentions with gold for --nil-threshold auto; a mention whose gold is -1, or a "
                          "concept the model's dictionary lacks, is out-of-KB.")] = None,
    nil_strategy: Annotated[str, typer.Option(
        "--nil-strategy", help="With auto: min_fp, max_tp, weighted, auto (the best of DILBERT's three on dev), "
                                "dev_accuracy (the most accurate cut on dev), or classifier (gradient-boosted trees "
                                "on the top-5 distances and the lexical overlap with the top-1 name, fitted on "
                                "dev; kgnorm.linking.nil_classifier).")] = "auto",
    batch_size: Annotated[int, typer.Option("--batch-size", help="Mentions linked per batch.")] = 256,
    abbreviations: AbbrOpt = None, composites: CompOpt = None,
    store: StoreOpt = None, lock_timeout: LockTimeoutOpt = 30.0, quiet: QuietOpt = False,
) -> None:
    """Link mentions to concepts; TSV out, LINKED_TO edges into the store."""
    setup(quiet)
    from kgnorm.linking.job import TSV_HEADER, edges_for, link_stream, open_linker, pipeline_from_meta, write_tsv_rows
    from kgnorm.methods.model_dir import check_ontology_version
    from kgnorm.progress import progress_bar
    from kgnorm.stores.run_ids import file_digest, mention_uid, run_uid
    from kgnorm.stores import LinkEdge, MentionRow, RunRecord, RunWrite, open_store

    if top_k < 1 or write_top_k < 1:
        raise KgnormError("--top-k and --write-top-k must be >= 1")
    auto_nil = _parse_nil_option(nil_threshold, nil_dev, nil_strategy)
    mentions = read_mention_file(input, input_format)
    linker, meta = open_linker(model)
    pipeline = pipeline_from_meta(meta, abbreviations=abbreviations, composites=composites)
    nil_value: float | None = None if auto_nil else (None if nil_threshold is None else float(nil_threshold))
    nil_params: dict[str, Any] = {}
    nil_classifier = None
    if auto_nil:  # before the store or the output is touched: a failure here writes nothing
        decision, nil_params = _auto_nil_threshold(linker, meta, pipeline, nil_dev, input_format, nil_strategy,
                                                   batch_size, store)
        dev_note = (f"dev: {nil_params['nil_dev_n']} mention(s), {nil_params['nil_dev_out_of_kb']} out-of-KB")
        if nil_strategy == "classifier":
            nil_classifier = decision
            cv = nil_params["nil_dev_accuracy"]
            typer.echo(f"kgnorm: nil classifier fitted on {decision.n_fit} dev part(s) ({decision.n_fit_nil} "
                       f"out-of-KB); {dev_note}, nil accuracy "
                       + (f"{cv:.4f} (5-fold, by document)" if cv is not None else "n/a (too few documents)"),
                       err=True)
        else:
            nil_value = decision
            typer.echo(f"kgnorm: nil threshold: strategy {nil_params['nil_strategy']}: a top-1 score below "
                       f"{nil_value:.4f} is nil; {dev_note}, nil accuracy "
                       f"{nil_params['nil_dev_accuracy']:.4f}", err=True)
    if write:  # check the store before the work; the write lock is taken only to write (below)
        with open_store(store, read_only=True) as st:
            if meta.get("ontology"):
                info_row = st.ontology_info(meta["ontology"])
                if info_row is None:
                    raise KgnormError(f"the model's ontology {meta['ontology']!r} is not in {st.uri}")
                check_ontology_version(meta, meta["ontology"], info_row.get("version") or "", warn)
    digest = file_digest(input)
    rows: dict[str, MentionRow] = {}
    edges: list[LinkEdge] = []
    n = repeats = 0
    fh = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout
    try:
        fh.write("\t".join(TSV_HEADER) + "\n")
        bar = progress_bar(desc="link", unit="mention")
        for lm in link_stream(linker, pipeline, mentions, top_k=max(top_k, write_top_k),
                              batch_size=batch_size, nil_threshold=nil_value,
                              nil_classifier=nil_classifier):
            write_tsv_rows(fh, lm, top_k)
            n += 1
            bar.update(1)
            if write:
                m = lm.mention
                muid = mention_uid(digest, m.mention_id)
                row = MentionRow(muid, m.text, m.doc_id, m.start, m.end, m.context, m.mention_id, str(input))
                if muid in rows:  # one node per id: a repeat must be the same mention (a duplicated document)
                    if (rows[muid].text, rows[muid].doc_id) != (row.text, row.doc_id):
                        raise InputError(f"mention id {m.mention_id} is given twice, for {rows[muid].text!r} and "
                                         f"{row.text!r}; each mention needs its own id", path=input)
                    repeats += 1
                    continue
                rows[muid] = row
                edges.extend(LinkEdge(muid, uid, score, rank) for uid, rank, score in edges_for(lm, write_top_k))
        bar.close()
    finally:
        if output:
            fh.close()
    if output:
        info(f"wrote {n:,} mention(s) (up to {top_k} rank(s) each) to {output}", quiet)
    if not write:
        return
    uid = run_uid("link", model=str(model.resolve()), input=digest, top_k=write_top_k,
                  nil=nil_value, abbreviations=abbreviations, composites=composites,
                  **({"nil_classifier": file_digest(nil_dev)} if nil_classifier is not None else {}))
    run = RunRecord(uid, "link", linker.method, str(model.resolve()),
                    params={"input": str(input), "write_top_k": write_top_k, "nil_threshold": nil_value,
                            **nil_params})
    with open_store(store, lock_timeout=lock_timeout) as st:
        onto = meta.get("ontology") or ""
        known = st.concept_keys(sorted({e.concept_uid for e in edges}), onto)
        kept = [e for e in edges if e.concept_uid in known]
        st.write_run(RunWrite(run, list(rows.values()), kept, [], ontology=onto))
    if repeats:
        warn(f"{repeats} mention(s) repeat an earlier one of {input} (same id and text, e.g. a duplicated "
             "document): stored once")
    info(f"linked {n:,} mention(s); wrote {len(kept):,} LINKED_TO edge(s) as run {uid}"
         + _edge_count_note(n - repeats, write_top_k, edges, kept), quiet)


def _edge_count_note(n_mentions: int, write_top_k: int, edges: list, kept: list) -> str:
    """Why the edge count differs from mentions x ranks, said in the same line."""
    from collections import Counter

    per_mention = Counter(e.mention_uid for e in edges)
    per_rank = Counter((e.mention_uid, e.rank) for e in edges)
    split = len({m for (m, _), c in per_rank.items() if c > 1})
    none = n_mentions - len(per_mention)
    skipped = len(edges) - len(kept)
    notes = []
    if write_top_k > 1:
        notes.append(f"top {write_top_k} ranks each")
    if split:
        notes.append(f"{split:,} composite mention(s) got one edge per part")
    if none:
        notes.append(f"{none:,} nil mention(s) got none")
    if skipped:
        notes.append(f"{skipped:,} to concepts not in the store skipped")
    return f" ({'; '.join(notes)})" if notes else ""


def embed_cmd(
    model: Annotated[Path, typer.Option("--model", help="A trained model directory.")],
    output: Annotated[Path, typer.Option("--output", help="Writes OUTPUT.npy and OUTPUT.tsv.")],
    input: Annotated[Optional[Path], typer.Option("--input", help="One name per line.")] = None,
    ontology: Annotated[Optional[str], typer.Option("--ontology", help="Embed every concept name of an ontology.")] = None,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Vectors of names (one per line) or of every concept name of an ontology."""
    setup(quiet)
    from kgnorm.mentions.readers import read_names
    from kgnorm.methods.registry import load_encoder

    if (input is None) == (ontology is None):
        raise KgnormError("give exactly one of --input F or --ontology NAME")
    if input is not None:
        texts = read_names(input)
        uids = [""] * len(texts)
    else:
        from kgnorm.graph.views import read_ontology
        from kgnorm.stores import open_store
        with open_store(store, read_only=True) as st:
            snap = read_ontology(st, ontology, with_edges=False)
        pairs = [(c.uid, n) for c in snap.concepts for n in c.all_names()]
        uids, texts = [p[0] for p in pairs], [p[1] for p in pairs]
    enc = load_encoder(model)
    vecs = np.asarray(enc.encode(texts), dtype=np.float32)
    base = output.with_suffix("") if output.suffix in (".npy", ".tsv") else output
    base.parent.mkdir(parents=True, exist_ok=True)
    tmp = base.with_name(base.name + ".partial.npy")
    np.save(tmp, vecs)
    with open(base.with_name(base.name + ".tsv"), "w", encoding="utf-8") as fh:
        fh.write("row\ttext\tuid\n")
        for i, (t, u) in enumerate(zip(texts, uids)):
            fh.write(f"{i}\t{t}\t{u}\n")
    tmp.replace(base.with_name(base.name + ".npy"))
    info(f"{len(texts):,} vectors of dimension {vecs.shape[1] if vecs.ndim == 2 else 0} → {base}.npy / {base}.tsv",
         quiet)


def eval_link_cmd(
    model: Annotated[Optional[Path], typer.Option("--model", help="A trained model directory: link --gold with it "
                                                  "and score the rows `link` would write.")] = None,
    input: Annotated[Optional[Path], typer.Option("--gold", "--input", help="Gold mentions (.concept, PubTator or "
                                                  "TSV with gold).")] = None,
    predictions: Annotated[Optional[Path], typer.Option(
        "--predictions", help="Score this TSV in `kgnorm link`'s layout (any system's output) instead of linking.")] = None,
    ontology: Annotated[Optional[str], typer.Option(
        "--ontology", help="With --predictions and no --model: the ontology in the store whose alt ids match and "
                           "whose concepts the gold ids must be.")] = None,
    allow_unknown_gold: Annotated[bool, typer.Option(
        "--allow-unknown-gold", help="Score mentions whose gold id is not a concept of the ontology as misses "
                                     "(counted in the report) instead of refusing the gold file.")] = False,
    train: Annotated[Optional[Path], typer.Option("--train", help="Training mentions: also report the refined "
                                                  "split (mentions whose text never occurs in train).")] = None,
    input_format: FormatOpt = None,
    batch_size: Annotated[int, typer.Option("--batch-size")] = 256,
    abbreviations: AbbrOpt = None, composites: CompOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
    nil_fraction: Annotated[Optional[float], typer.Option(
        "--nil-fraction", help="Also evaluate nil detection on DILBERT's constructed dev set: this fraction of "
                               "the input's gold concepts (e.g. 0.2) is removed from the model's dictionary; every "
                               "--nil-strategy is fitted on half of the documents and scored on the other half "
                               "(3 seeded splits).")] = None,
    nil_seed: Annotated[int, typer.Option("--nil-seed", help="Seed of the removed concepts.")] = 0,
    store: StoreOpt = None, quiet: QuietOpt = False,
) -> None:
    """Acc@1/Acc@5 of what `link` writes: one concept per rank, a concept right only through its own uid or
    alt ids (composites need every part; gold -1 skipped; a nil row is no link)."""
    setup(quiet)
    if input is None:
        raise KgnormError("give --gold F (gold mentions)")
    if model is None and predictions is None:
        raise KgnormError("give --model DIR (link and score) or --predictions F (score a link TSV)")
    if predictions is not None and model is None and ontology is None:
        raise KgnormError("--predictions needs --ontology NAME (or --model DIR) for the concepts' alt ids")
    if nil_fraction is not None:
        if model is None:
            raise KgnormError("--nil-fraction needs --model DIR")
        if not 0.0 < nil_fraction < 1.0:
            raise KgnormError(f"--nil-fraction must be between 0 and 1 (exclusive), got {nil_fraction}")
    from kgnorm.evaluation.link_eval import evaluate_link, evaluate_nil_detection

    report = evaluate_link(model, input, predictions, ontology, train, input_format, batch_size, abbreviations,
                           composites, allow_unknown_gold, store)
    if report["unknown_gold_ids"]:
        where = f"ontology {ontology!r}" if ontology is not None else f"the dictionary of {model}"
        warn(f"{report['unknown_gold_ids']} gold id(s) of {input} are not concepts of {where}; their "
             f"{report['unknown_gold_mentions']} mention(s) are scored as misses")
    if nil_fraction is not None:
        info(f"nil: removing {nil_fraction:g} of the gold concepts from the dictionary and linking again …", quiet)
        report["nil"] = evaluate_nil_detection(model, input, input_format, nil_fraction, nil_seed,
                                               abbreviations, composites)
    if fmt == "json":
        typer.echo(json.dumps(json_safe(report), indent=2))
        return
    for split, r in report.items():
        if split in ("full", "refined"):
            typer.echo(f"{split:8s} n={r['n']:5d}  Acc@1 {r['acc1']:.4f}  Acc@5 {r['acc5']:.4f}")
    if report.get("unknown_gold_ids"):
        typer.echo(f"gold ids the model or ontology lacks: {report['unknown_gold_ids']} (their "
                   f"{report['unknown_gold_mentions']} mention(s) scored as misses)")
    if "nil" in report:
        nil = report["nil"]
        typer.echo(f"nil: {nil['removed']} concept(s) removed, {nil['queries']} queries from {nil['documents']} "
                   f"document(s), {nil['out_of_kb']} out-of-KB; fitted on half of the documents, scored on the "
                   f"other half (mean of {len(nil['splits'])} splits)")
        from kgnorm.evaluation.nil import strategy_summaries

        for strategy, m, error, _ in strategy_summaries(nil["strategies"]):
            if m is None:
                typer.echo(f"  {strategy:12s} n/a ({error})")
                continue
            typer.echo(f"  {strategy:12s} accuracy {m['accuracy']:.4f}  nil P {m['nil_precision']:.4f}  "
                       f"R {m['nil_recall']:.4f}  F1 {m['nil_f1']:.4f}  in-KB accuracy {m['in_kb_accuracy']:.4f}")
