"""Section 1 of benchmarks/encoders.py: BNE trained on MEDIC's synonyms within the budget,
then synonym-retrieval MAP and coverage@k on held-out synonyms and UMNSRS relatedness, for
BNE, the lexical scorer, the averaged word vectors it starts from and untrained MiniLM."""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from _encoders_data import UMNSRS, CachedEncode, log, run_with_budget
from _report import f4


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



def bne_section(args, ctx: dict) -> list[str]:
    """Train BNE within the budget and run the synonym and relatedness evaluations."""
    from kgnorm.methods.bne.model import concept_names
    from kgnorm.evaluation.relatedness import load_umnsrs, spearman_on, spearman_relatedness, wordvector_can_encode
    from kgnorm.evaluation.synonyms import mean_coverage, synonym_retrieval_map
    from kgnorm.linking.sparse import SparseScorer
    from kgnorm.methods.bne.train import BneConfig, hold_out_synonyms, train_bne
    from kgnorm.encoders.wordvectors import WordVectors, train_word_vectors

    dictionary = ctx["dictionary"]
    seed = args.seed
    all_concepts = concept_names(dictionary)
    train_concepts, held = hold_out_synonyms(all_concepts, 0.05, 2 * args.held_out, seed)
    order = np.random.default_rng([seed, 11]).permutation(len(held))
    half = len(held) // 2
    dev = [held[int(i)] for i in order[:half]]
    test = [(n, next(iter(g))) for n, g in (held[int(i)] for i in order[half:])]
    if args.dev_limit:
        dev, test = dev[:args.dev_limit], test[:args.dev_limit]
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
                   f"({wv.info.get('tokens', 0):,} tokens; the pipe file has no definitions) in "
                   f"{time.perf_counter() - t0:.0f} s, {wv.dim} dimensions.")

    cfg = BneConfig(seed=seed, max_steps_per_epoch=args.max_steps_per_epoch)
    out = ctx["work"] / "bne"
    onto = {"name": "medic", "version": "06Jul2012"}

    def run(n_epochs: int, resume: bool):
        log(f"BNE: training up to epoch {n_epochs} …")
        cfg.max_epochs = n_epochs
        return train_bne(train_concepts, wv, out, dev=dev, config=cfg, alt_ids=dictionary.alt_ids,
                         resume=resume, progress=False, ontology=onto)

    res, t_train = run_with_budget(run, args.bne_minutes * 60, args.bne_epochs,
                                   lambda r: r.epochs_completed, lambda r: r.stopped_early)
    model = res.model
    devs = ", ".join(f"{h['dev']['acc@1']:.4f}" for h in res.history if h.get("dev"))
    log(f"BNE: {res.epochs_completed} epoch(s) in {t_train:.0f}s; encoding the dictionary …")

    names = list(dictionary.names)
    t0 = time.perf_counter()
    bne_enc = CachedEncode(names, model.encode(names, batch_size=512), model.encode)
    t_enc = time.perf_counter() - t0
    scorer = SparseScorer(n_threads=args.threads).fit(names)
    encoders: list[tuple[str, Callable | None]] = [("char tf-idf (lexical)", None),
                                                    (wv_label, wv.average),
                                                    ("BNE", bne_enc)]
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

    rel_rows = []
    minilm = ctx["minilm_encoder"]()
    can_wv = wordvector_can_encode(wv, subwords=True)
    for label, path in UMNSRS.items():
        pairs = load_umnsrs(path)
        reps = [spearman_relatedness(lambda t: model.encode(list(t)), pairs, name="BNE"),
                spearman_relatedness(lambda t: wv.average(list(t)), pairs, can_encode=can_wv,
                                     name=wv_label),
                spearman_relatedness(lambda t: minilm.encode(list(t)), pairs,
                                     name=f"{ctx['encoder_name']} (untrained)")]
        common = np.logical_and.reduce([r.encodable for r in reps])
        scores = [p.score for p in pairs]
        for r in reps:
            rho_c, _ = spearman_on(scores, r.similarities, common)
            unenc = str(r.n_unencodable)
            if r.unencodable:
                more = " …" if r.n_unencodable > 3 else ""
                unenc += " (" + "; ".join(f"{p.term1} / {p.term2}" for p in r.unencodable[:3]) + more + ")"
            rel_rows.append(f"| {label} | {r.name} | {f4(r.spearman)} | {r.n_used} / {r.n_pairs} | {unenc} | "
                            f"{f4(r.spearman_all)} | {f4(rho_c)} ({int(common.sum())}) |")

    n_steps = math.ceil(res.n_train_names / cfg.batch_size)
    if cfg.max_steps_per_epoch:
        n_steps = min(n_steps, cfg.max_steps_per_epoch)
    return [
        "### 1. BNE trained on MEDIC 2012",
        "",
        f"Dictionary: {len(dictionary):,} normalized names of {dictionary.concept_count:,} concepts. "
        f"Held out of training (names carried by one concept, at most one per concept, seed {seed}): "
        f"{len(dev)} synonyms select the epoch (trainer dev Acc@1 against the training names), "
        f"{len(test)} others are the test queries below. " + wv_note,
        "",
        "| BNE training | value |",
        "|---|---|",
        f"| budget | {args.bne_minutes:g} min, at most {args.bne_epochs} epochs |",
        f"| train time (calls to `train_bne`, incl. per-epoch dev evaluation and writing the model) | {t_train:.0f} s |",
        f"| epochs | {res.epochs_completed} (best {res.best_epoch}; stopped early: {res.stopped_early}) |",
        f"| training names / steps per epoch | {res.n_train_names:,} / {n_steps:,} |",
        f"| dev Acc@1 per epoch | {devs or 'n/a'} |",
        f"| encoding all {len(names):,} dictionary names with the selected model | {t_enc:.1f} s |",
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
        "has a word or n-gram vector. The last column scores every method on the pairs all three encode.",
        "",
        "| file | method | Spearman | pairs used | unencodable | Spearman, all pairs (cos 0) | Spearman on common pairs (n) |",
        "|---|---|---|---|---|---|---|",
        *rel_rows,
        "",
    ]
