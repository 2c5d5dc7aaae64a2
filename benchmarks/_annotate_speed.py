"""benchmarks/annotate.py --speed: a trained detector's inference paths (kgnorm.methods.ner.runtime:
fp32, bf16 autocast, ONNX Runtime int8; 1 or 2 intra-op threads) on NCBI-disease and BC5CDR
(disease) dev, back to back in one run, the first path given as the baseline. A path is one core
(`-1t`: detection then linking, one thread) or two (`-overlap`: the next batch detected on a second
thread while this one is linked, kgnorm.jobs.overlap, one torch thread per stage; `-Ndet`: N blocks
detected at once, else as many as the plan declares); `-small`: the
detector given by --small-ner (e.g. one trained with `train ner --layers 3`) instead of --ner-model.

Per path and corpus, one child process: the detector's tagging of every abstract timed alone
(windows of all documents batched together, shortest first; model loaded and warmed up), then
`annotate --no-write` end to end with the trained linker (detection + levers + linking + PubTator;
model loading excluded); its peak RSS (VmHWM); NER strict-span F1 of the PubTator it wrote
(`kgnorm eval annotate`'s scorer); PubTator lines that differ from the baseline's. The baseline's
child also reports the padding of the detector's batches and a cProfile of the tagging. A last row
times the detector cut to its first 3 encoder layers (tagging only, speed of a distilled
detector, no F1: such a detector is not trained)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _report import append, f4, run_child

# label -> (precision, threads, encoder layers kept (0: all), overlap, detector: "main" or "small",
#           blocks detected at once when overlapped: 0 = the plan's default, kgnorm.jobs.overlap)
PATHS = {"fp32-1t": ("fp32", 1, 0, False, "main", 0), "bf16-1t": ("bf16", 1, 0, False, "main", 0),
         "int8-1t": ("int8", 1, 0, False, "main", 0), "fp32-2t": ("fp32", 2, 0, False, "main", 0),
         "bf16-2t": ("bf16", 2, 0, False, "main", 0), "int8-2t": ("int8", 2, 0, False, "main", 0),
         "fp32-1t-3layers": ("fp32", 1, 3, False, "main", 0), "bf16-1t-3layers": ("bf16", 1, 3, False, "main", 0),
         "bf16-overlap": ("bf16", 1, 0, True, "main", 0), "fp32-overlap": ("fp32", 1, 0, True, "main", 0),
         "bf16-overlap-1det": ("bf16", 1, 0, True, "main", 1), "bf16-overlap-2det": ("bf16", 1, 0, True, "main", 2),
         "bf16-1t-small": ("bf16", 1, 0, False, "small", 0), "bf16-overlap-small": ("bf16", 1, 0, True, "small", 0)}
DEFAULT_PATHS = "bf16-1t,bf16-overlap,bf16-1t-small,bf16-overlap-small"


def padding(det: Any, texts: list[str]) -> dict[str, int]:
    """Tokens of the texts (one window each, specials included), tokens in the detector's windows
    (overlaps read twice), and tokens it computes once batches are padded."""
    windows = det.windows(texts)
    lengths = sorted(len(w.input_ids) for w in windows)
    padded = sum(len(lengths[k:k + det.batch_size]) * max(lengths[k:k + det.batch_size])
                 for k in range(0, len(lengths), det.batch_size))
    text_tokens = sum(len(ids) for ids in det.tokenizer(texts)["input_ids"])
    return {"windows": len(windows), "text_tokens": text_tokens, "tokens": sum(lengths), "padded": padded}


def speed_child(args: Any) -> None:
    import cProfile
    import io
    import pstats

    import torch

    precision, threads, layers = os.environ["BENCH_PRECISION"], int(os.environ["BENCH_THREADS"]), \
        int(os.environ["BENCH_LAYERS"])
    overlap = os.environ.get("BENCH_OVERLAP") == "1"
    torch.set_num_threads(threads)
    from kgnorm.documents.readers import read_documents
    from kgnorm.jobs.annotate import annotate_documents
    from kgnorm.methods.ner.model import keep_layers, load_ner

    texts = [d.text for d in read_documents(args.input, "pubtator") if d.text.strip()]
    det = load_ner(args.ner, precision=precision, threads=threads)
    if layers:
        keep_layers(det.net.encoder, layers)
    det.tag(texts[:2])  # warm-up
    prof = cProfile.Profile() if os.environ.get("BENCH_PROFILE") else None
    started = time.perf_counter()
    if prof:
        prof.enable()
    det.tag(texts)
    if prof:
        prof.disable()
    out: dict[str, Any] = {"docs": len(texts), "tag_s": time.perf_counter() - started}
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(10)
        out["profile"] = buf.getvalue()
        out["padding"] = padding(det, texts)
    if not layers:
        rep = annotate_documents(args.ner, args.model, args.input, input_format="pubtator", output=args.output,
                                 output_format="pubtator", store=args.store, write=False, progress=False,
                                 ner_precision=precision, threads=threads, overlap=overlap)
        out.update(annotate_s=rep.seconds, mentions=rep.n_mentions, stages=rep.stage_seconds)
    Path(args.result).write_text(json.dumps(out))


def _spec(value: Any, corpora: list[str], what: str) -> dict[str, Path]:
    from _annotate_levers import _models

    if value is None:
        raise SystemExit(f"--speed needs {what} ncbi=DIR,bc5cdr=DIR (or one DIR for one corpus)")
    return _models(value, corpora)


def _top() -> str:
    """What else ran when the benchmark started (`ps aux --sort=-%cpu | head -5`)."""
    import subprocess

    out = subprocess.run(["ps", "aux", "--sort=-%cpu"], capture_output=True, text=True).stdout.splitlines()[:5]
    return "Processes by CPU when the run started:\n\n```\n" + "\n".join(ln[:160] for ln in out) + "\n```"


def _changed(text: str, reference: str) -> int:
    """Lines in one PubTator and not the other (both ways), as a multiset difference."""
    from collections import Counter

    a, b = Counter(text.splitlines()), Counter(reference.splitlines())
    return sum(((a - b) + (b - a)).values())


def speed(args: Any, store: str) -> None:
    from annotate import CORPORA, ENV

    from kgnorm.jobs.eval_annotate import evaluate_annotations

    corpora = args.corpora.split(",")
    ners, linkers = _spec(args.ner_model, corpora, "--ner-model"), _spec(args.linker, corpora, "--linker")
    small = _spec(args.small_ner, corpora, "--small-ner") if args.small_ner else {}
    paths = (args.paths or DEFAULT_PATHS).split(",")
    rows, notes = [], [_top()]
    for key in corpora:
        name, gold, types = CORPORA[key]
        reference, base = None, None
        for label in paths:
            precision, threads, layers, overlap, which, detectors = PATHS[label]
            if which == "small" and key not in small:
                continue   # no smaller detector given for this corpus
            out, result = args.work / f"speed-{key}-{label}.pubtator", args.work / "speed.json"
            env = {**ENV, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
                   "BENCH_THREADS": str(threads), "BENCH_PRECISION": precision, "BENCH_LAYERS": str(layers),
                   "BENCH_OVERLAP": "1" if overlap else "", "KGNORM_DETECT_WORKERS": str(detectors or ""),
                   "BENCH_PROFILE": "1" if reference is None else ""}
            load = os.getloadavg()[0]
            wall, rss = run_child([sys.executable, __file__.replace("_annotate_speed", "annotate"), "--child-speed",
                                   "--ner", str((small if which == "small" else ners)[key]), "--model", str(linkers[key]), "--input", str(gold),
                                   "--output", str(out), "--store", store, "--result", str(result)], env=env)
            r = json.loads(result.read_text())
            tag_rate = r["docs"] / r["tag_s"]
            if "profile" in r:
                pad = r["padding"]
                notes.append(f"{name}: {r['docs']} abstracts, {pad['text_tokens']:,} tokens; {pad['windows']} windows "
                             f"of {pad['tokens']:,} tokens (window overlaps: +{100 * (pad['tokens'] / pad['text_tokens'] - 1):.1f}%), "
                             f"{pad['padded']:,} computed once padded (padding: +{100 * (pad['padded'] / pad['tokens'] - 1):.1f}%). "
                             f"Tagging profile ({label}, the baseline path; cProfile, top functions by own time):\n\n```\n"
                             + "\n".join(ln for ln in r["profile"].splitlines()[-12:] if ln.strip()) + "\n```")
            if layers:
                rows.append(f"| {name} | {label} | {tag_rate:.1f} | n/a | n/a | n/a | n/a | n/a | n/a | {wall:.0f} s | "
                            f"{rss:,.0f} MB | {load:.1f} |")
                print(rows[-1], flush=True)
                continue
            text = out.read_text(encoding="utf-8")
            ner = evaluate_annotations(gold, out, model=linkers[key], types=types, store=store)["ner"]
            if reference is None:
                reference, base = text, ner["f1"]
            st = r.get("stages") or {}
            rows.append(f"| {name} | {label} | {tag_rate:.1f} | {r['docs'] / r['annotate_s']:.1f} | "
                        f"{r['annotate_s']:.1f} | {st.get('detect', 0):.1f} / {st.get('link', 0):.1f} | "
                        f"{f4(ner['f1'])} | {ner['f1'] - base:+.4f} | {_changed(text, reference)} | {wall:.0f} s | "
                        f"{rss:,.0f} MB | {load:.1f} |")
            print(rows[-1], flush=True)
    body = (f"Trained detectors {', '.join(f'{k}={v}' for k, v in ners.items())}; trained linkers "
            f"{', '.join(f'{k}={v}' for k, v in linkers.items())}; default levers on, consistency off (annotate's "
            "defaults). Path: precision (kgnorm.methods.ner.runtime: fp32 torch, bf16 autocast, int8 ONNX Runtime "
            "dynamic quantization, export cached) and intra-op threads (torch and ONNX Runtime; OMP/MKL alike). "
            "`detector`: tagging every abstract alone (tokenize, encoder, decode, merge windows), model loaded and "
            "warmed up; `annotate`: `annotate --no-write` end to end (detection + levers + linking + PubTator; model "
            "loading excluded); NER F1: strict span by `kgnorm eval annotate`, Δ against the corpus's first row "
            "(run first); `lines`: PubTator lines that differ from that row's (both ways). `-1t`: one core "
            "(detection then linking, one thread); `-overlap`: two cores (kgnorm.jobs.overlap: the next batch "
            "detected on a second thread while this one is linked, one torch thread per stage; its PubTator must "
            "equal the `-1t` row's of the same detector; `-Ndet`: N blocks detected at once, each on its own thread, "
            "`-overlap` alone: as many as the plan declares, 2 on 2 cores); `-small`: the --small-ner detector"
            + (f" ({', '.join(f'{k}={v}' for k, v in small.items())})" if small else "") + ". `annotate s`: "
            "annotate's own timing; `detect / link s`: the wall seconds of each stage summed over the batches "
            "(overlapped, they run at the same time, so their sum exceeds annotate s). Each row its own child "
            "process, rows back to back; `load`: 1-min load average when the row started. `3layers`: the "
            "detector cut to its first 3 of 6 encoder layers, untrained, tagging speed only.\n\n"
            "| corpus | path | detector abstracts/s | annotate abstracts/s | annotate s | detect / link s | NER F1 | "
            "Δ F1 | lines | wall | peak RSS | load |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            + "\n".join(rows) + "\n\n"
            + "\n\n".join(notes) + "\n")
    append("annotate speed paths: precision and threads (issue 26)", body)
