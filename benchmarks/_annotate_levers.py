"""benchmarks/annotate.py --levers: a trained detector's inference-time levers (kgnorm.ner.refine)
on NCBI-disease and BC5CDR (disease) dev, NER strict-span P/R/F1 by `kgnorm eval annotate`'s scorer.

The detector tags each corpus once (cached in --work, keyed by the model directory); every
configuration then only re-reads the tags, so all 24 (3 BIO repairs x 8 subsets of the other
three levers) cost seconds."""
from __future__ import annotations

import itertools
import pickle
import time
from pathlib import Path
from typing import Any

from _report import append, f4

REPAIRS = ("lenient", "drop", "bridge")
SWITCHES = ("dictionary", "abbreviations", "propagate")


def _models(spec: Path | None, corpora: list[str]) -> dict[str, Path]:
    if spec is None:
        raise SystemExit("--levers needs --ner-model ncbi=DIR,bc5cdr=DIR (or one DIR for one corpus)")
    text = str(spec)
    if "=" not in text:
        return {corpora[0]: Path(text)}
    return {k.strip(): Path(v.strip()) for k, v in (part.split("=", 1) for part in text.split(","))}


def _tags(det: Any, model: Path, docs: list, work: Path, key: str) -> tuple[list, float]:
    cache = work / f"tags-{key}-{model.resolve().as_posix().replace('/', '_')}.pkl"
    if cache.exists():
        return pickle.loads(cache.read_bytes())
    started = time.perf_counter()
    tagged = det.tag([d.text for d in docs])
    out = (tagged, time.perf_counter() - started)
    cache.write_bytes(pickle.dumps(out))
    return out


def _score(docs: list, spans: list, gold: Path, types: list[str] | None, store: str, out: Path) -> dict:
    from kgnorm.documents.types import Annotation
    from kgnorm.documents.writers import document_writer
    from kgnorm.jobs.eval_annotate import evaluate_annotations

    with out.open("w", encoding="utf-8") as fh:
        writer = document_writer(fh, "pubtator")
        for d, ss in zip(docs, spans):
            writer.write(d, [Annotation(s.start, s.end, s.text, s.type, (), s.score) for s in ss])
        writer.close()
    return evaluate_annotations(gold, out, ontology="medic", types=types, store=store)["ner"]


def levers(args: Any, store: str) -> None:
    import torch

    torch.set_num_threads(1)
    from annotate import CORPORA

    from kgnorm.documents.readers import read_documents
    from kgnorm.graph.views import read_ontology
    from kgnorm.methods.ner.model import load_ner
    from kgnorm.ner.bio import tags_to_spans
    from kgnorm.ner.dictionary import DictionaryDetector
    from kgnorm.ner.refine import SpanRefinements, refine_spans
    from kgnorm.stores import open_store

    corpora = args.corpora.split(",")
    models = _models(args.ner_model, corpora)
    with open_store(store, read_only=True) as st:
        snap = read_ontology(st, "medic", with_edges=False)
    results: dict[str, dict[str, dict]] = {}
    notes = []
    for key in corpora:
        name, gold, types = CORPORA[key]
        docs = [d for d in read_documents(gold, "pubtator") if d.text.strip()]
        det = load_ner(models[key])
        dictionary = DictionaryDetector.from_snapshot(snap, type=det.types[0])
        tagged, seconds = _tags(det, models[key], docs, args.work, key)
        notes.append(f"{name}: {len(docs)} abstracts tagged by {models[key]} in {seconds:.0f} s")
        texts = [d.text for d in docs]
        for repair in REPAIRS:
            base = [tags_to_spans(t, offs, tg, sc, det.labels, repair) for t, (offs, tg, sc) in zip(texts, tagged)]
            for k in range(len(SWITCHES) + 1):
                for on in itertools.combinations(SWITCHES, k):
                    lv = SpanRefinements(repair, **{s: True for s in on})
                    spans = refine_spans(texts, base, lv, dictionary)
                    r = _score(docs, spans, gold, types, store, args.work / f"levers-{key}.pubtator")
                    results.setdefault(lv.label(), {})[key] = r
                    print(key, lv.label(), f4(r["f1"]), flush=True)
    base_label = SpanRefinements().label()

    def mean_gain(label: str) -> float:
        return sum(results[label][k]["f1"] - results[base_label][k]["f1"] for k in corpora) / len(corpora)

    wins_both = [lb for lb in results if all(results[lb][k]["f1"] > results[base_label][k]["f1"] for k in corpora)]
    best = max(wins_both, key=mean_gain) if wins_both else base_label
    rows = []
    for label in sorted(results, key=lambda lb: (lb != base_label, lb.count("+"), -mean_gain(lb))):
        cells = " | ".join(f"{f4(results[label][k]['precision'])} / {f4(results[label][k]['recall'])} / "
                           f"**{f4(results[label][k]['f1'])}**" for k in corpora)
        mark = " (best on both)" if label == best and label != base_label else ""
        rows.append(f"| {label}{mark} | {cells} | {mean_gain(label):+.4f} |")
    header = " | ".join(f"{CORPORA[k][0]} ner P / R / F1" for k in corpora)
    body = ("The trained detectors' inference-time levers (kgnorm.ner.refine), no retraining: BIO repair of "
            "ill-formed tag sequences (`lenient`: an I after O starts a span, the earlier behaviour; `drop`: it is "
            "read as O; `bridge`: it continues the span that ended one token before), `dictionary`: union with the "
            "MEDIC 2012 dictionary tagger's multi-word matches that overlap no detected span, `abbreviations`: the "
            "short form the document defines (Schwartz-Hearst) next to a detected long form is tagged at every "
            "occurrence, and the long form of a detected short form, `propagate`: a string tagged once is tagged at "
            "its other word-bounded occurrences in the document. Applied in that order. Scored with `kgnorm eval "
            "annotate`'s scorer (strict span; BC5CDR: Disease) on the PubTator of the spans; no linking. "
            "Detectors tagged each corpus once (1 torch thread): " + "; ".join(notes) + ". "
            f"Best on both (highest mean gain among the configurations that beat `{base_label}` on both dev sets): "
            f"**{best}**.\n\n| levers | {header} | mean F1 gain |\n|---|" + "---|" * len(corpora) + "---:|\n"
            + "\n".join(rows) + "\n")
    append("NER inference-time levers, trained detectors, dev (issue 26)", body)
