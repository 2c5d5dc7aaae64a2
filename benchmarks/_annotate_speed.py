"""benchmarks/annotate.py --speed: where a trained detector's annotate time goes, and what 1 vs 2
torch threads and bfloat16 autocast (KGNORM_NER_BF16=1) give, on a dev corpus.

Each configuration runs in a child process: the detector's tagging of every abstract (windows of
all documents batched together, shortest first) timed alone, then `annotate --no-write` end to end
(detection + abbreviations + linking + writing the PubTator; model loading excluded), then a
cProfile of the tagging's top functions by own time (first configuration only). The PubTator each
configuration writes is compared with the float32, 1-thread one."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _report import append, run_child

CONFIGS = (("1", "0"), ("2", "0"), ("1", "1"), ("2", "1"))  # (torch threads, bf16)


def speed_child(args: Any) -> None:
    import cProfile
    import io
    import pstats

    import torch

    torch.set_num_threads(int(os.environ["BENCH_THREADS"]))
    from kgnorm.documents.readers import read_documents
    from kgnorm.jobs.annotate import annotate_documents
    from kgnorm.methods.ner.model import load_ner

    texts = [d.text for d in read_documents(args.input, "pubtator") if d.text.strip()]
    det = load_ner(args.ner)
    det.tag(texts[:2])  # warm-up
    started = time.perf_counter()
    prof = cProfile.Profile() if os.environ.get("BENCH_PROFILE") else None
    if prof:
        prof.enable()
    det.tag(texts)
    if prof:
        prof.disable()
    tag_s = time.perf_counter() - started
    rep = annotate_documents(args.ner, args.model, args.input, input_format="pubtator", output=args.output,
                             output_format="pubtator", store=args.store, write=False, progress=False)
    top = ""
    if prof:
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(8)
        top = buf.getvalue()
    Path(args.result).write_text(json.dumps({"docs": len(texts), "tag_s": tag_s, "annotate_s": rep.seconds,
                                             "mentions": rep.n_mentions, "profile": top}))


def speed(args: Any, store: str, model: Path) -> None:
    from annotate import CORPORA, ENV

    key = args.corpora.split(",")[0]
    name, gold, _ = CORPORA[key]
    rows, profile, reference = [], "", None
    for threads, bf16 in CONFIGS:
        out, result = args.work / f"speed-{threads}-{bf16}.pubtator", args.work / "speed.json"
        env = {**ENV, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads, "BENCH_THREADS": threads,
               "KGNORM_NER_BF16": bf16, "BENCH_PROFILE": "1" if not rows else ""}
        wall, rss = run_child([sys.executable, __file__.replace("_annotate_speed", "annotate"), "--child-speed",
                               "--ner", str(args.ner_model), "--model", str(model), "--input", str(gold),
                               "--output", str(out), "--store", store, "--result", str(result)], env=env)
        r = json.loads(result.read_text())
        text = out.read_text(encoding="utf-8")
        reference = reference if reference is not None else text
        profile = profile or r["profile"]
        rows.append(f"| {threads} | {'bf16' if bf16 == '1' else 'fp32'} | {r['docs'] / r['tag_s']:.1f} | "
                    f"{r['docs'] / r['annotate_s']:.1f} | {r['annotate_s'] - r['tag_s']:.1f} s | "
                    f"{'yes' if text == reference else 'no'} | {wall:.0f} s | {rss:,.0f} MB |")
        print(rows[-1], flush=True)
    lines = [ln for ln in profile.splitlines() if ln.strip()][-10:]
    body = (f"{name}, trained detector {args.ner_model}, linker {model}. `tagging`: the detector's "
            "windows over every abstract (tokenize, encoder, decode, merge windows), model loaded and warmed up; "
            "`annotate`: `annotate --no-write` end to end (detection + abbreviations + linking + PubTator; model "
            "loading excluded); `rest`: annotate minus tagging (linking, spans, levers, output). `same`: the "
            "PubTator equals the float32 1-thread one byte for byte. Each row its own process.\n\n"
            "| torch threads | encoder precision | tagging abstracts/s | annotate abstracts/s | rest | same | wall | "
            "peak RSS |\n|---:|---|---:|---:|---:|---|---:|---:|\n" + "\n".join(rows)
            + "\n\nTagging profile (float32, 1 thread; cProfile, top functions by own time):\n\n```\n"
            + "\n".join(lines) + "\n```\n")
    append("annotate speed, trained detector (issue 26)", body)
