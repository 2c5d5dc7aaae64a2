"""Linking accuracy, speed and memory on NCBI-disease dev and BC5CDR-disease dev with MEDIC 2012.

Same process, same preprocessing (kgnorm's text pipeline: abbreviations, composites), same
concept-level ranking for every scorer:
  (a) sparse only (char 1-2-gram tf-idf, exact top-k without a dense matrix),
  (b) dense only, untrained encoder (offline MiniLM, mean pooling, FAISS exact IP),
  (c) sparse + dense untrained (BioSyn scoring with lambda = 1 and 30, the CLI's suggested start),
  (d) trained BioSyn model directories given with --model NAME=DIR (trained by the CLI),
plus a naive baseline (sklearn TfidfVectorizer char 1-2-grams, full sparse product + argsort)
for the throughput ratio. Refined split: dev mentions whose normalized text never occurs in
the corresponding train split (deduplicated). Figures are appended to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir, peak_rss_mb, run_child  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

DATASETS = {
    "ncbi-disease": ("ncbi-disease/NCBItrainset_corpus.txt", "ncbi-disease/NCBIdevelopset_corpus.txt"),
    "bc5cdr-disease": ("bc5cdr-disease/train.concept", "bc5cdr-disease/dev.concept"),
}


def load_dictionary(pipeline):
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.ontologies import medic

    graph = medic.load(DATA / "medic/medic_06Jul2012.txt")
    entries = ((pipeline.normalize_name(n), c.uid) for c in graph.concepts.values() for n in c.names())
    alt = {c.uid: c.alt_ids for c in graph.concepts.values() if c.alt_ids}
    return NameDictionary.from_entries(entries, alt)


def load_split(pipeline, path: Path):
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    mentions, queries = [], []
    for m, abbr in read_mentions_with_abbreviations(path):
        mentions.append(m)
        queries.append(pipeline.prepare(m, abbr) or [pipeline.normalize_name(m.text)])
    return mentions, queries


def concept_ranking(rows: np.ndarray, dictionary, k: int = 5) -> list[str]:
    """The concepts `kgnorm link` would write for rows ranked best first (one per rank,
    kgnorm.linking.concepts; a row's rank stands in for its score)."""
    from kgnorm.linking.concepts import rank_concepts

    rows = [int(i) for i in rows]
    return [c.uid for c in rank_concepts(dictionary, rows, [-float(j) for j in range(len(rows))], k)]


def evaluate(ranked_rows: list[np.ndarray], mentions, queries, dictionary, refined_idx) -> dict:
    """Strict scorer (one concept per rank) on the concepts ranked from each query's rows."""
    from kgnorm.evaluation.composites import scoring_gold
    from kgnorm.evaluation.link_accuracy import accuracy_at_k

    preds, pos = [], 0
    for qs in queries:
        preds.append([concept_ranking(ranked_rows[pos + j], dictionary) for j in range(len(qs))])
        pos += len(qs)
    gold = [scoring_gold(m) for m in mentions]
    full = accuracy_at_k(preds, gold, alt_ids=dictionary.alt_ids)
    ref = accuracy_at_k([preds[i] for i in refined_idx], [gold[i] for i in refined_idx], alt_ids=dictionary.alt_ids)
    return {"acc1": full.accuracy[1], "acc5": full.accuracy[5], "n": full.n_evaluated,
            "r_acc1": ref.accuracy[1], "r_acc5": ref.accuracy[5], "r_n": ref.n_evaluated}


def _training_summary(model_dir: Path) -> str:
    """Epochs, wall time and dev Acc@1 per epoch from a BioSyn model directory's metadata."""
    import json

    ck = model_dir / "checkpoints" / "last.pt"
    if ck.is_file():  # every epoch run, also those after the selected one
        import torch
        hist = torch.load(ck, map_location="cpu", weights_only=True, mmap=True)["history"]
    else:
        meta = json.loads((model_dir / "kgnorm-model.json").read_text())
        hist = ((meta.get("extra") or {}).get("training") or meta.get("training") or {}).get("history") or []
    refit = (json.loads((model_dir / "kgnorm-model.json").read_text()).get("refit") or {})
    warning = (f"REFIT on train + dev ({refit.get('epochs_trained')} epoch(s)): its dev rows are NOT held-out figures "
               f"(the dev-selected model's held-out dev Acc@1 was {refit.get('selected_dev_held_out')}); "
               if refit.get("refit") else "")
    if not hist:
        return warning
    total = sum(h.get("seconds", 0.0) for h in hist)
    devs = ", ".join(f"{h['dev']['acc@1']:.4f}" for h in hist if h.get("dev"))
    return warning + (f"{len(hist)} epoch(s) in {total / 60:.1f} min (λ {hist[-1].get('sparse_weight', float('nan')):.2f});"
            f" dev Acc@1 per epoch (the trainer's evaluation, composite parts scored separately): {devs}")


def _cli_link(model_dir: str, dev: Path, threads: int, output: str = os.devnull,
              extra: tuple[str, ...] = ()) -> tuple[float, float]:
    return run_child([sys.executable, "-m", "kgnorm.cli", "link", "--model", model_dir, "--input", str(dev),
                      "--no-write", "--output", output, "-q", *extra],
                     env={"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)})


def _model_datasets(specs: list[str]):
    """(label, model dir, dataset, train path, dev path) for each LABEL=DIR and the datasets it is scored on
    (a LABEL that is a dataset's name, or ends in @DATASET: that one only)."""
    for spec in specs:
        label, _, path = spec.partition("=")
        only = label.rpartition("@")[2] if "@" in label else label
        for ds, (train_rel, dev_rel) in DATASETS.items():
            if only in DATASETS and only != ds:
                continue
            yield label, path, ds, DATA / train_rel, DATA / dev_rel


def cli_only(args) -> None:
    from kgnorm.mentions.readers import read_mentions_with_abbreviations

    rows = ["| dataset | model | mentions | wall incl. start-up and model load | mentions/s | peak RSS |",
            "|---|---|---|---|---|---|"]
    for label, path, ds, _, dev in _model_datasets(args.model):
        n = sum(1 for _ in read_mentions_with_abbreviations(dev))
        wall, rss = _cli_link(path, dev, args.threads)
        rows.append(f"| {ds} | {label} | {n} | {wall:.1f} s | {n / wall:,.0f} | {rss:,.0f} MB |")
    append("Linking: `kgnorm link --no-write` in a child process", "\n".join(
        [f"torch threads {args.threads}; peak RSS is the child's own VmHWM.", "", *rows]))


def _alt_ids(model_dir: str) -> dict:
    """The alt ids of the BioSyn dictionary behind a model directory: its own, a reranker's linker's, an
    ensemble's first member's (members share the ontology)."""
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.methods.model_dir import read_model_meta
    from kgnorm.methods.registry import WRAPPER, entry_for

    meta = read_model_meta(model_dir)
    if entry_for(meta, model_dir).kind == WRAPPER:  # a reranker names its linker, an ensemble its members
        return _alt_ids(meta.get("linker") or meta["members"][0])
    return NameDictionary.load(Path(model_dir) / "names").alt_ids


def independent_acc1(tsv: Path, dev: Path, model_dir: str) -> float:
    """Acc@1 of a link TSV read with the csv module, without kgnorm's scorer: the rank-1 row of each
    mention (nil = no link); a composite (kgnorm.evaluation.composites' rule) needs each gold part matched
    by a predicted part of its own, a mention with alternative ids one of them; a concept matches a gold id
    through its own uid or its alt ids."""
    from itertools import permutations

    from kgnorm.evaluation.composites import is_composite
    import csv

    from kgnorm.mentions.readers import read_mentions

    alt = _alt_ids(model_dir)
    top: dict[str, list[str] | None] = {}
    with open(tsv, encoding="utf-8", newline="") as fh:
        for r in csv.DictReader(fh, delimiter="\t"):
            if r["rank"] == "1":
                top[r["mention_id"]] = None if r["nil"] == "1" else r["concept_uids"].split("|")

    def ok(uid: str, gold_part: str) -> bool:
        ids = {uid, *alt.get(uid, ())}
        return any(p in ids for p in gold_part.split("+"))

    n = right = 0
    for m in read_mentions(dev):
        linkable = [g for g in m.gold if g not in ("-1", "")]
        if not linkable:
            continue
        n += 1
        pred = top.get(m.mention_id)
        if not pred:
            continue
        if not is_composite(m):
            right += any(ok(p, "+".join(linkable)) for p in pred)
        elif len(pred) == len(m.gold):
            right += all(ok(p, g) for p, g in zip(pred, m.gold) if g not in ("-1", ""))
        else:
            right += any(all(ok(pred[i], g) for i, g in zip(perm, linkable))
                         for perm in permutations(range(len(pred)), len(linkable)))
    return right / n


def _cli_eval(args: list[str], threads: int) -> dict:
    import json
    import subprocess

    out = subprocess.run([sys.executable, "-m", "kgnorm.cli", "eval", "link", *args, "--format", "json"],
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)},
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def scored_tsv(args) -> None:
    """`kgnorm link --no-write --output F` per trained model, F scored by `kgnorm eval link --predictions`,
    cross-checked against `kgnorm eval link --model` (the rows link would write, in-process) and
    :func:`independent_acc1`; plus the ambiguity errors before and after the concept-level linker."""
    from ambiguity import ambiguity_rows

    out_dir = Path(args.tsv_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = ["| dataset | model | Acc@1 | Acc@5 | refined Acc@1 | refined Acc@5 | n / refined n | "
            "`eval link --model` Acc@1 / refined | Acc@1, independent reading of the TSV | gold ids the model's "
            "dictionary lacks (mentions) | composites / left unsplit | s per 1,000 mentions (`link` child, wall) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    amb = ["| dataset | model | written top-1 (old rule: first uid of the top name) | old `eval link` (any uid of "
           "the top name) | ambiguity errors before | written top-1 now (concept ranking) | ambiguity errors now |",
           "|---|---|---|---|---|---|---|"]
    variants = [v.partition("=")[::2] for v in args.variant] or [("", "")]
    for (label, path, ds, train, dev), (vname, vargs) in ((m, v) for m in _model_datasets(args.model)
                                                          for v in variants):
        extra = tuple(vargs.split())
        tsv = out_dir / f"{label}{'.' + vname if vname else ''}.{ds}.tsv"
        wall, _ = _cli_link(path, dev, args.threads, str(tsv), extra)
        label = f"{label} {vname}".strip()
        common = ["--gold", str(dev), "--train", str(train), "--allow-unknown-gold", *extra]
        f = _cli_eval(["--predictions", str(tsv), "--model", path, *common], args.threads)
        m = f if args.skip_model_check else _cli_eval(["--model", path, *common], args.threads)
        ind = independent_acc1(tsv, dev, path)
        checks = [(f"{s} {k}", f[s][k], m[s][k]) for s in ("full", "refined") for k in ("acc1", "acc5")]
        for what, a, b in checks + [("full acc1 (independent TSV reading)", f["full"]["acc1"], ind)]:
            if round(a, 3) != round(b, 3):
                raise SystemExit(f"{label} {ds} {what}: --predictions {a} != {b}")
        fu, re_ = f["full"], f["refined"]
        rows.append(f"| {ds} | {label} | {fu['acc1']:.4f} | {fu['acc5']:.4f} | {re_['acc1']:.4f} | "
                    f"{re_['acc5']:.4f} | {fu['n']} / {re_['n']} | {m['full']['acc1']:.4f} / "
                    f"{m['refined']['acc1']:.4f} | {ind:.4f} | {f['unknown_gold_ids']} ({f['unknown_gold_mentions']}) | "
                    f"{f['composites']} / {f['composites_unsplit']} | "
                    f"{1000 * wall / fu['n']:.1f} |")
        if args.skip_ambiguity:
            continue
        a = ambiguity_rows(path, dev)
        amb.append(f"| {ds} | {label} | {a['old_strict']:.4f} | {a['old_lenient']:.4f} | {a['old_ambiguous']} | "
                   f"{a['new_strict']:.4f} | {a['new_ambiguous']} |")
    lines = [
        "Scored with the one strict scorer: one concept per rank, a concept right only through its own uid or "
        "alt ids. The figures are those of the TSV `kgnorm link --no-write --output F` wrote, scored by "
        "`kgnorm eval link --predictions F --gold DEV --train TRAIN --model DIR --allow-unknown-gold` (gold ids "
        "the model's dictionary lacks -- MEDIC 2012 ids, their alt ids and the training mentions' ids -- count "
        "as misses); `kgnorm eval link --model DIR` (the rows link would write, scored in-process) and an independent reading of the TSV (csv module, rank-1 rows, alt ids of the model's "
        "dictionary; no kgnorm scorer) agree to the 3rd decimal (the script stops otherwise). Figures taken on a "
        "shared, loaded 2-core machine. Several gold ids: a composite (parts listed, NCBI's CompositeMention, or "
        "no mark at all, as in a .concept file) needs every part right, any other mention (NCBI's SpecificDisease, "
        "Modifier, DiseaseClass) one of its ids (kgnorm.evaluation.composites)."
        + (" `--model` cross-check skipped (--skip-model-check)." if args.skip_model_check else ""),
        "", *rows]
    if not args.skip_ambiguity:
        lines += [
            "", "Ambiguity errors: dev mentions whose written top-1 concept is wrong although the top-1 *name* is a "
            "name of a gold concept (a name shared by several concepts). *Before*: the linker wrote the first uid of "
            "the top name and `eval link` credited any uid of it; *now*: concepts of a shared name are ranked by "
            "training evidence (kgnorm.linking.concepts). Same model for both.", "", *amb]
    body = "\n".join(lines)
    append("Linking, strict scorer: what `kgnorm link` writes, scored from its TSV", body)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--model", action="append", default=[],
                    help="LABEL=DIR of a trained model to score too; a LABEL naming a dataset "
                         "(ncbi-disease, bc5cdr-disease) is scored on that dataset only")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--scored-tsv", action="store_true",
                    help="only: link each --model's dev set with `kgnorm link`, score the TSV with `kgnorm eval link "
                         "--predictions`, count ambiguity errors before/after concept ranking")
    ap.add_argument("--variant", action="append", default=[],
                    help="with --scored-tsv: NAME=ARGS, extra `link`/`eval link` options scored as their own row "
                         "(e.g. 'cons=--consistency'); repeat for several")
    ap.add_argument("--skip-model-check", action="store_true",
                    help="with --scored-tsv: do not rerun `eval link --model` in-process (halves the time)")
    ap.add_argument("--skip-ambiguity", action="store_true", help="with --scored-tsv: no ambiguity table")
    ap.add_argument("--tsv-dir", default="/tmp/kgnorm-linking-tsv", help="where --scored-tsv writes link's TSVs")
    ap.add_argument("--cli-only", action="store_true",
                    help="only time `kgnorm link` (child process: wall, peak RSS) for each --model on its dev set")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.cli_only:
        return cli_only(args)
    if args.scored_tsv:
        return scored_tsv(args)
    import torch

    from kgnorm.evaluation.link_accuracy import refined_subset
    from kgnorm.linking.linker import DictionaryLinker
    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.linking.name_index import NameIndex
    from kgnorm.linking.sparse import SparseScorer
    from kgnorm.methods.registry import load_encoder
    from kgnorm.text.pipeline import TextPipeline

    torch.set_num_threads(args.threads)
    pipeline = TextPipeline()
    dictionary = load_dictionary(pipeline)
    names = dictionary.names
    lines = [f"Dictionary: MEDIC 2012, {len(names):,} normalized names of {dictionary.concept_count:,} concepts.", ""]

    t0 = time.perf_counter()
    sparse = SparseScorer().fit(names)
    t_sparse_fit = time.perf_counter() - t0
    timing = [f"| sparse tf-idf fit on the dictionary | {t_sparse_fit:.1f} s |"]
    dense = index = None
    if not args.skip_dense:
        dense = DenseEncoder(pooling="mean")
        t0 = time.perf_counter()
        vecs = dense.encode(names, batch_size=256)
        t_enc = time.perf_counter() - t0
        t0 = time.perf_counter()
        index = NameIndex.build(vecs)
        t_idx = time.perf_counter() - t0
        timing += [f"| dense dictionary encoding (MiniLM, length-bucketed) | {t_enc:.1f} s ({len(names) / t_enc:,.0f} names/s) |",
                   f"| FAISS index build (exact inner product) | {t_idx:.2f} s |"]
    models, models_dir = {}, {}
    for spec in args.model:
        label, _, path = spec.partition("=")
        models[label] = DictionaryLinker(load_encoder(path), "biosyn")
        models_dir[label] = path
        training = _training_summary(Path(path))
        if training:
            timing.append(f"| training of `{label}` ({path}) | {training} |")

    table = ["| dataset | method | Acc@1 | Acc@5 | refined Acc@1 | refined Acc@5 | n / refined n |", "|---|---|---|---|---|---|---|"]
    speed = []
    for ds, (train_rel, dev_rel) in DATASETS.items():
        train_m, _ = load_split(pipeline, DATA / train_rel)
        dev_m, dev_q = load_split(pipeline, DATA / dev_rel)
        train_texts = {pipeline.normalize_name(m.text) for m in train_m}
        refined = refined_subset([pipeline.normalize_name(m.text) for m in dev_m], train_texts,
                                 ["|".join(m.gold) for m in dev_m])
        flat = [q for qs in dev_q for q in qs]
        results = {}
        sparse.topk(flat[:64], 20)  # warm-up: first-call set-up (thread pools, bf16 check) is not per query
        t_sp = float("inf")
        for _ in range(2):  # best of two: the machine is shared
            t0 = time.perf_counter()
            _, s_idx = sparse.topk(flat, 20)
            t_sp = min(t_sp, time.perf_counter() - t0)
        results["(a) sparse only"] = list(s_idx)
        speed.append(f"| {ds} | sparse only (kgnorm, best of 2 after a warm-up) | {len(flat) / t_sp:,.0f} queries/s |")
        # naive baseline: full sparse product + argsort over all names
        from sklearn.feature_extraction.text import TfidfVectorizer
        vec = TfidfVectorizer(analyzer="char", ngram_range=(1, 2))
        dmat = vec.fit_transform(names)
        sub = flat[: min(len(flat), 1000)]
        t_naive = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            scores = (vec.transform(sub) @ dmat.T).toarray()
            np.argsort(-scores, axis=1)[:, :20]
            t_naive = min(t_naive, time.perf_counter() - t0)
        speed.append(f"| {ds} | naive tf-idf baseline (full product + argsort, {len(sub)} queries, best of 2) | "
                     f"{len(sub) / t_naive:,.0f} queries/s (kgnorm sparse is {(len(flat) / t_sp) / (len(sub) / t_naive):.1f}×) |")
        if dense is not None:
            t0 = time.perf_counter()
            qv = dense.encode(flat, batch_size=256)
            _, d_idx = index.search(qv, 20)
            t_de = time.perf_counter() - t0
            results["(b) dense only, untrained MiniLM"] = list(d_idx)
            speed.append(f"| {ds} | dense only (encode + FAISS) | {len(flat) / t_de:,.0f} queries/s |")
            # (c) BioSyn scoring, lambda = 1: union of candidates rescored with sparse + dense
            qs_mat = sparse.transform(flat)
            combos: dict[float, list] = {1.0: [], 30.0: []}
            for i in range(len(flat)):
                cand = np.unique(np.concatenate([s_idx[i], d_idx[i]]))
                cand = cand[cand >= 0]
                s = np.asarray((qs_mat[i] @ sparse.names_matrix[cand].T).todense()).ravel()
                d = vecs[cand] @ qv[i]
                for lam, out in combos.items():
                    out.append(cand[np.argsort(-(lam * s + d), kind="stable")])
            for lam, comb in combos.items():
                results[f"(c) sparse + dense untrained (λ={lam:g})"] = comb
        for label, res in results.items():
            r = evaluate(res, dev_m, dev_q, dictionary, refined)
            table.append(f"| {ds} | {label} | {r['acc1']:.4f} | {r['acc5']:.4f} | {r['r_acc1']:.4f} | "
                         f"{r['r_acc5']:.4f} | {r['n']} / {r['r_n']} |")
        for label, linker in models.items():
            if label in DATASETS and label != ds:
                continue
            from kgnorm.evaluation.link_accuracy import accuracy_at_k
            from kgnorm.linking.linker import candidate_sets, link_stream
            from kgnorm.mentions.readers import read_mentions_with_abbreviations
            t0 = time.perf_counter()
            linked = list(link_stream(linker, pipeline, read_mentions_with_abbreviations(DATA / dev_rel),
                                      top_k=5))
            t_link = time.perf_counter() - t0
            preds = [candidate_sets(lm) for lm in linked]
            from kgnorm.evaluation.composites import scoring_gold
            gold = [scoring_gold(lm.mention) for lm in linked]
            alt = linker.model.dictionary.alt_ids
            full = accuracy_at_k(preds, gold, alt_ids=alt)
            ref = accuracy_at_k([preds[i] for i in refined], [gold[i] for i in refined], alt_ids=alt)
            table.append(f"| {ds} | (d) {label} | {full.accuracy[1]:.4f} | {full.accuracy[5]:.4f} | "
                         f"{ref.accuracy[1]:.4f} | {ref.accuracy[5]:.4f} | {full.n_evaluated} / {ref.n_evaluated} |")
            speed.append(f"| {ds} | {label}: `kgnorm link` path (pipeline + sparse + dense + rescoring) | "
                         f"{len(linked) / t_link:,.0f} mentions/s |")
            # the CLI itself in a child process: start-up, model load, linking, TSV; its own peak RSS
            wall, rss = _cli_link(models_dir[label], DATA / dev_rel, args.threads)
            speed.append(f"| {ds} | {label}: `kgnorm link --no-write` child process, wall incl. start-up and model "
                         f"load | {len(linked) / wall:,.0f} mentions/s ({wall:.1f} s), peak RSS {rss:,.0f} MB |")
    body = "\n".join(lines + table + ["", "| timing | value |", "|---|---|", *timing, "",
                                      "| dataset | throughput | value |", "|---|---|---|", *speed, "",
                                      f"Peak RSS of the benchmark process: {peak_rss_mb():,.0f} MB."])
    append("Linking (BioSyn) on NCBI-disease dev and BC5CDR-disease dev", body)


if __name__ == "__main__":
    main()
