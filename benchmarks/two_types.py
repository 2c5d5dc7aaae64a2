"""Chemicals and diseases in one `kgnorm annotate` (issue 49, item 4) on BC5CDR dev, raw text: one
detector trained for both types (`train ner --types Chemical,Disease`) routing each type to its own
linker (Chemical -> the MeSH chemical model, Disease -> the MEDIC model), beside a disease-only
detector trained with the same budget on the same machine at the same time and linked by the same
MEDIC model. Scored by `kgnorm eval annotate` per type: NER strict span, mention (span + concept) and
document-level concept P/R/F1 (BioCreative V's measure; TaggerOne's chemical concept F1 is 0.895).

    python benchmarks/two_types.py --store URI --ner-both DIR --ner-disease DIR \
        --disease-model DIR --chemical-model DIR [--work DIR] [--calibrated]

--calibrated: each run's mention confidence (`kgnorm calibrate`, per type) fitted on the first half
of dev's documents, both runs scored on the second half with it and without it (the detectors are
copied into --work first: calibrate writes the fit into the detector's directory).

The store must hold both ontologies (`ingest mesh DIR --branches D --ontology mesh` and `ingest medic
... --ontology medic`; the routed run is scored with `--ontology medic,mesh`); annotate runs with --no-write and its defaults otherwise. Dev only: the test
split is never read. Appends a section to benchmarks/LOG.md and the rows to results.jsonl."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import add_data_option, append, data_dir, f4, kgnorm_stdout, record, run_child  # noqa: E402

DATA = data_dir()
REUSE = False


def detector_line(ner: Path) -> str:
    """What the detector's training did in its budget (epochs, selected dev F1), from its metadata."""
    meta = json.loads((ner / "kgnorm-model.json").read_text())
    hist, dev = meta.get("history") or [], (meta.get("metrics") or {}).get("dev") or {}
    steps = sum(h.get("steps", 0) for h in hist)
    return (f"{hist[-1]['epoch'] if hist else 0} epoch(s), {steps} steps in its budget; selected dev strict-span "
            f"F1 {dev.get('f1', 0):.4f}")


def annotate(ner: Path, models: list[str], store: str, out: Path, dev: Path | None = None) -> tuple[float, float]:
    """One `kgnorm annotate` of the dev abstracts' raw text: (wall seconds, peak RSS MB); with --reuse,
    an output already written is kept (nan, nan: not timed again)."""
    if REUSE and out.exists():
        return float("nan"), float("nan")
    dev = dev or DATA / "bc5cdr/CDR_DevelopmentSet.PubTator.txt"
    argv = [sys.executable, "-m", "kgnorm.cli", "annotate", "--ner", str(ner), *models, "--input", str(dev),
            "--input-format", "pubtator", "--output", str(out), "--no-write", "--store", store, "--quiet"]
    return run_child(argv, env={"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})


def scores(pred: Path, scope: list[str], store: str, types: str, dev: Path | None = None) -> dict:
    """eval annotate's JSON report; `scope`: --model DIR or --ontology A,B (whose alt ids count)."""
    dev = dev or DATA / "bc5cdr/CDR_DevelopmentSet.PubTator.txt"
    return json.loads(kgnorm_stdout("eval", "annotate", "--gold", dev, "--predictions", pred, *scope,
                                    "--types", types, "--store", store, "--format", "json", "--quiet"))


def timing(seconds: float, rss: float) -> str:
    return "output reused, not timed" if seconds != seconds else f"{seconds:.0f} s, peak RSS {rss:.0f} MB"


def cell(s: dict) -> str:
    return f"{f4(s.get('precision'))} / {f4(s.get('recall'))} / **{f4(s.get('f1'))}**"


def measures(rep: dict, typ: str | None) -> dict:
    """The three measures of one type (or overall) from eval annotate's JSON report."""
    part = rep if typ is None else rep["by_type"][typ]
    return {k: part.get(k) or {} for k in ("ner", "mention", "document")}


def halves(work: Path) -> tuple[Path, Path]:
    """BC5CDR dev's documents in two halves by file order: A fits the confidence, B scores."""
    blocks = (DATA / "bc5cdr/CDR_DevelopmentSet.PubTator.txt").read_text(encoding="utf-8").strip("\n").split("\n\n")
    a, b = work / "devA.pubtator", work / "devB.pubtator"
    a.write_text("\n\n".join(blocks[:len(blocks) // 2]) + "\n\n", encoding="utf-8")
    b.write_text("\n\n".join(blocks[len(blocks) // 2:]) + "\n\n", encoding="utf-8")
    return a, b


def calibrated(args: argparse.Namespace) -> None:
    """--calibrated: each run's mention confidence fitted per type on dev's first half (`kgnorm
    calibrate`, into a copy of the detector: the fit lives in the detector's directory), both runs
    scored on the second half with it and without it (`--min-confidence off`)."""
    import shutil

    work = args.work / "calibrated"
    work.mkdir(parents=True, exist_ok=True)
    dev_a, dev_b = halves(work)
    fitted_ner = {}
    for name, src in (("ner-both", args.ner_both), ("ner-disease", args.ner_disease)):
        fitted_ner[name] = work / name
        if fitted_ner[name].exists():
            shutil.rmtree(fitted_ner[name])
        shutil.copytree(src, fitted_ner[name])
    runs = [("one detector, both types, routed", args.ner_both, fitted_ner["ner-both"], "Chemical,Disease",
             ["--model", f"Disease={args.disease_model}", "--model", f"Chemical={args.chemical_model}"]),
            ("disease-only detector", args.ner_disease, fitted_ner["ner-disease"], "Disease",
             ["--model", str(args.disease_model)])]
    rows, figures = [], {}
    for label, ner, fitted, types, models in runs:
        kgnorm_stdout("calibrate", "--ner", fitted, *models, "--dev", dev_a, "--types", types, "--store", args.store,
                      "--quiet")
        scope = ["--ontology", "medic,mesh"] if "," in types else ["--model", str(args.disease_model)]
        for mode, detector, extra in (("off", ner, ["--min-confidence", "off"]),
                                      ("fitted on the first half", fitted, [])):
            out = work / f"{fitted.name}-{'off' if extra else 'on'}.pubtator"
            annotate(detector, [*models, *extra], args.store, out, dev_b)
            rep = scores(out, scope, args.store, types, dev_b)
            for t in types.split(","):
                m = measures(rep, t if "," in types else None)
                rows.append(f"| {label} | {t} | {mode} | {cell(m['ner'])} | {cell(m['mention'])} | {cell(m['document'])} |")
                figures[(label, t, mode)] = m["document"].get("f1")
    body = "\n".join([
        "BC5CDR dev in two halves by document order (250 abstracts each); each run's mention confidence fitted "
        "per type on the first (`kgnorm calibrate --dev devA --types ...`, into a copy of each detector), "
        "both runs annotating the second from raw text with it and without it (`kgnorm annotate --no-write`, "
        "`--min-confidence off`), "
        "scored there by `kgnorm eval annotate`.", "",
        f"- both types: `--ner {args.ner_both}` ({detector_line(args.ner_both)})",
        f"- disease only: `--ner {args.ner_disease}` ({detector_line(args.ner_disease)})", "",
        "| run | type | mention confidence | ner P / R / F1 | mention P / R / F1 | document P / R / F1 |",
        "|---|---|---|---|---|---|", *rows])
    append("Chemicals and diseases in one annotate, mention confidence fitted (BC5CDR dev halves)", body)
    on = "fitted on the first half"
    cmd = "python benchmarks/two_types.py --calibrated --store S --ner-both D --ner-disease D ..."
    record("annotate", "BC5CDR dev half, both types, fitted: chemical doc F1",
           f4(figures[("one detector, both types, routed", "Chemical", on)]), cmd)
    record("annotate", "BC5CDR dev half, both types, fitted: disease doc F1 (disease-only)",
           f"{f4(figures[('one detector, both types, routed', 'Disease', on)])} "
           f"({f4(figures[('disease-only detector', 'Disease', on)])})", cmd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_option(ap)
    ap.add_argument("--store", required=True)
    ap.add_argument("--ner-both", type=Path, required=True)
    ap.add_argument("--ner-disease", type=Path, required=True)
    ap.add_argument("--disease-model", type=Path, required=True)
    ap.add_argument("--chemical-model", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("/tmp/two_types"))
    ap.add_argument("--reuse", action="store_true", help="keep annotate outputs already in --work (not timed)")
    ap.add_argument("--calibrated", action="store_true",
                    help="fit the mention confidence on dev's first half, score both runs on the second")
    args = ap.parse_args()
    global REUSE
    REUSE = args.reuse
    args.work.mkdir(parents=True, exist_ok=True)
    if args.calibrated:
        calibrated(args)
        return
    routed = ["--model", f"Disease={args.disease_model}", "--model", f"Chemical={args.chemical_model}"]
    single = ["--model", str(args.disease_model)]
    both_out, dis_out = args.work / "both.pubtator", args.work / "disease.pubtator"
    s_both, m_both = annotate(args.ner_both, routed, args.store, both_out)
    s_dis, m_dis = annotate(args.ner_disease, single, args.store, dis_out)
    rep_both = scores(both_out, ["--ontology", "medic,mesh"], args.store, "Chemical,Disease")
    rep_dis = scores(dis_out, single, args.store, "Disease")
    rows = [("one detector, both types, routed", "Chemical", measures(rep_both, "Chemical")),
            ("one detector, both types, routed", "Disease", measures(rep_both, "Disease")),
            ("disease-only detector", "Disease", measures(rep_dis, None))]
    table = ["| run | type | ner P / R / F1 | mention P / R / F1 | document P / R / F1 |", "|---|---|---|---|---|",
             *(f"| {run} | {t} | {cell(m['ner'])} | {cell(m['mention'])} | {cell(m['document'])} |"
               for run, t, m in rows)]
    body = "\n".join([
        "BC5CDR dev (500 abstracts), raw text; `kgnorm annotate --no-write`, defaults otherwise; scored by "
        "`kgnorm eval annotate --types ...`.", "",
        f"- both types: `--ner {args.ner_both}` ({detector_line(args.ner_both)}), routed `--model "
        f"Disease={args.disease_model} --model Chemical={args.chemical_model}`: {timing(s_both, m_both)}",
        f"- disease only: `--ner {args.ner_disease}` ({detector_line(args.ner_disease)}), `--model "
        f"{args.disease_model}`: {timing(s_dis, m_dis)}", "", *table])
    append("Chemicals and diseases in one annotate (BC5CDR dev, raw text)", body)
    chem_doc = rows[0][2]["document"].get("f1")
    dis_doc, dis_only = rows[1][2]["document"].get("f1"), rows[2][2]["document"].get("f1")
    cmd = "python benchmarks/two_types.py --store S --ner-both D --ner-disease D ..."
    record("annotate", "BC5CDR dev, both types in one run: chemical document F1", f4(chem_doc), cmd)
    record("annotate", "BC5CDR dev, both types in one run: disease doc F1 (disease-only)",
           f"{f4(dis_doc)} ({f4(dis_only)})", cmd)


if __name__ == "__main__":
    main()
