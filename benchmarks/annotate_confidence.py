"""annotate's mention confidence on NCBI-disease and BC5CDR (disease) dev: document-level, mention and
NER P/R/F1 from `kgnorm eval annotate` on the PubTator `kgnorm annotate` wrote, three ways per corpus:

- off: every found mention kept (`--min-confidence off`), what annotate wrote before calibration;
- held out: dev split in two halves by document (alternating); `kgnorm calibrate` on one half, the
  other half annotated with the default `--min-confidence auto`, and the other way round; the two
  written halves scored together. The figure to quote: no document is scored by a threshold
  chosen on it;
- in-sample: `kgnorm calibrate` on the whole dev set, the whole dev set annotated (what a user
  who calibrated on dev gets on dev: optimistic).

Each calibration goes to a copy of the detector directory (the given one is never changed).

    python benchmarks/annotate_confidence.py --ner ncbi=DIR,bc5cdr=DIR --linker ncbi=DIR,bc5cdr=DIR \
        --store ladybug:///PATH/graph [--work DIR] [--data DIR]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, f4, record  # noqa: E402
from _report import kgnorm_stdout as kgnorm  # noqa: E402

CORPORA = {"ncbi": ("NCBI-disease dev", "ncbi-disease/NCBIdevelopset_corpus.txt", None),
           "bc5cdr": ("BC5CDR dev (Disease)", "bc5cdr/CDR_DevelopmentSet.PubTator.txt", "Disease")}


def pairs(spec: str) -> dict[str, Path]:
    return {k: Path(v) for k, v in (p.split("=", 1) for p in spec.split(","))}


def split(dev: Path, work: Path) -> tuple[Path, Path]:
    """The dev PubTator in two files, documents alternating (blank-line separated blocks)."""
    blocks = [b for b in dev.read_text(encoding="utf-8").split("\n\n") if b.strip()]
    halves = (work / "half_a.pubtator", work / "half_b.pubtator")
    for i, path in enumerate(halves):
        path.write_text("\n\n".join(b.strip("\n") for b in blocks[i::2]) + "\n\n", encoding="utf-8")
    return halves


def scored(gold: Path, pred: Path, linker: Path, store: str, types: str | None) -> dict:
    args = ["eval", "annotate", "--gold", str(gold), "--predictions", str(pred), "--model", str(linker),
            "--format", "json", "--store", store]
    out = kgnorm(*args, *(["--types", types] if types else []))
    return json.loads(out)


def calibrated_copy(ner: Path, work: Path, name: str, linker: Path, dev: Path, store: str, types: str | None) -> Path:
    copy = work / name
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(ner, copy)
    kgnorm("calibrate", "--ner", str(copy), "--model", str(linker), "--dev", str(dev), "--store", store, "-q",
           *(["--types", types] if types else []))
    return copy


def annotate(ner: Path, linker: Path, docs: Path, out: Path, store: str, *extra: str) -> float:
    start = time.perf_counter()
    kgnorm("annotate", "--ner", str(ner), "--model", str(linker), "--input", str(docs), "--input-format", "pubtator",
           "--output", str(out), "--no-write", "--store", store, "-q", *extra)
    return time.perf_counter() - start


def run_corpus(key: str, ner: Path, linker: Path, args: argparse.Namespace) -> list[tuple[str, dict, float]]:
    label, rel, types = CORPORA[key]
    dev = args.data / rel
    work = args.work / key
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    wall = annotate(ner, linker, dev, work / "off.pubtator", args.store, "--min-confidence", "off")
    rows.append(("off", scored(dev, work / "off.pubtator", linker, args.store, types), wall))
    a, b = split(dev, work)
    parts = []
    for name, fit_on, apply_to in (("fit_a", a, b), ("fit_b", b, a)):
        copy = calibrated_copy(ner, work, name, linker, fit_on, args.store, types)
        annotate(copy, linker, apply_to, work / f"{name}.pubtator", args.store)
        parts.append(work / f"{name}.pubtator")
    joined = work / "held_out.pubtator"
    joined.write_text("".join(p.read_text(encoding="utf-8") for p in parts), encoding="utf-8")
    rows.append(("held out (calibrated on the other half)", scored(dev, joined, linker, args.store, types), 0.0))
    full = calibrated_copy(ner, work, "fit_all", linker, dev, args.store, types)
    wall = annotate(full, linker, dev, work / "in_sample.pubtator", args.store)
    rows.append(("in-sample (calibrated on all of dev)", scored(dev, work / "in_sample.pubtator", linker, args.store,
                                                               types), wall))
    meta = json.loads((full / "kgnorm-model.json").read_text(encoding="utf-8"))["mention_confidence"][-1]
    rows.append(("threshold (all of dev)", {"threshold": meta["threshold"], "coef": meta["coef"]}, 0.0))
    return [(f"{label}: {name}", rep, w) for name, rep, w in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ner", required=True, help="corpus=DIR,...: trained detectors (kgnorm train ner)")
    ap.add_argument("--linker", required=True, help="corpus=DIR,...: linking models")
    ap.add_argument("--store", required=True, help="the store holding the linkers' ontology (MEDIC)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/kgnorm-annotate-confidence"))
    add_data_option(ap)
    args = ap.parse_args()
    ners, linkers = pairs(args.ner), pairs(args.linker)
    lines = ["| corpus: setting | NER P / R / F1 | mention F1 | document P / R / F1 | annotate wall |",
             "|---|---|---|---|---|"]
    for key in ners:
        for name, rep, wall in run_corpus(key, ners[key], linkers[key], args):
            if "threshold" in rep:
                lines.append(f"| {name} | threshold {rep['threshold']:.3f}, coef "
                             f"{', '.join(f'{c:.2f}' for c in rep['coef'])} | | | |")
                continue
            n, m, d = rep["ner"], rep["mention"], rep["document"]
            lines.append(f"| {name} | {f4(n['precision'])} / {f4(n['recall'])} / **{f4(n['f1'])}** | {f4(m['f1'])} | "
                         f"{f4(d['precision'])} / {f4(d['recall'])} / **{f4(d['f1'])}** | "
                         f"{f'{wall:.0f} s' if wall else ''} |")
            if name.endswith("held out (calibrated on the other half)"):
                record("annotate", f"{name.split(' dev')[0]} dev, calibrated, held out: doc P/R/F1",
                       f"{f4(d['precision'])} / {f4(d['recall'])} / {f4(d['f1'])} (NER F1 {f4(n['f1'])})",
                       "benchmarks/annotate_confidence.py")
    append("annotate: mention confidence (kgnorm calibrate)", "\n".join(lines) + "\n\nDetectors: "
           + ", ".join(f"{k}={v}" for k, v in ners.items()) + "; linkers: "
           + ", ".join(f"{k}={v}" for k, v in linkers.items()) + ".")


if __name__ == "__main__":
    main()
