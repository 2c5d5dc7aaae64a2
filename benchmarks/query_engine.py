"""The query engines on dev: `kgnorm link` with the torch query encoder (its precision as the
defaults choose it: bf16 where the CPU declares it) and with the onnx one (ONNX Runtime fp32,
torch-free), or any two rows of ENGINES (e.g. `--rows onnx-fp32,onnx-int8`: the onnx engine's
fp32 and int8 query paths), each TSV scored by the one strict scorer (`kgnorm eval link
--predictions`), the rank changes between the two TSVs, and the whole `link` process's speed in
distinct mention texts per second.

    python benchmarks/query_engine.py --pair NAME=MODEL_DIR=DEV_FILE [--pair ...] [--rows A,B] [--repeats N]

Dev files only (no test split). Each `link` is a fresh process; the exports of the onnx engine are
made beforehand (a first run per row, not scored or timed) so both rows score what a user's runs
write. With --repeats N the two rows' `link` runs alternate N times (A B A B ...: paired on a
shared machine) and each row's fastest run is reported beside all of them. --speed-mentions N adds
a speed-only row on a larger input: benchmarks/throughput.py's corpus (NCBI-disease + BC5CDR train and
dev, N mentions; not scored, it holds training mentions), linked by the --pair models alternately
with each row. Figures are appended to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, f4, record  # noqa: E402

ENGINES = {"torch": {"KGNORM_QUERY_ENGINE": "torch"}, "onnx": {"KGNORM_QUERY_ENGINE": "onnx"},
           # onnx as before the stored name vectors: every query encoded (kgnorm.methods.biosyn.retrieval)
           "onnx-encode": {"KGNORM_QUERY_ENGINE": "onnx", "KGNORM_NAME_VECTORS": "encode"},
           # the onnx engine's two query paths by name (issue 51): fp32, and int8 (kgnorm.encoders.int8_query)
           "onnx-fp32": {"KGNORM_QUERY_ENGINE": "onnx", "KGNORM_QUERY_PRECISION": "fp32"},
           "onnx-int8": {"KGNORM_QUERY_ENGINE": "onnx", "KGNORM_QUERY_PRECISION": "int8"}}
WHAT = {"torch": "the torch model: for BioSyn the query precision the defaults choose (bf16 where the CPU declares "
                 "amx_bf16/avx512_bf16, else fp32), for DILBERT fp32 queries in padded batches; the bf16 search "
                 "pre-filters where the CPU declares bf16",
        "onnx": "ONNX Runtime fp32 queries, fp32 exact searches, no torch imported; a query that is a dictionary "
                "name takes the name's stored vector (the default)",
        "onnx-encode": "as onnx, every query encoded (`KGNORM_NAME_VECTORS=encode`, the path before stored name "
                       "vectors)",
        "onnx-fp32": "the onnx engine with fp32 queries (`KGNORM_QUERY_PRECISION=fp32`)",
        "onnx-int8": "the onnx engine with int8 queries (`KGNORM_QUERY_PRECISION=int8`: per-channel 7-bit weights in "
                     "two passes, the weight and its rounding error, since 2026-11-29 12:00; activations quantized per "
                     "token; kgnorm.encoders.int8_query); dictionary names still take their stored fp32 vectors"}


def link(kgnorm: str, model: str, dev: str, out: Path, env: dict[str, str]) -> float:
    """Wall seconds of the whole `kgnorm link` process (start-up included)."""
    start = time.perf_counter()
    subprocess.run([kgnorm, "link", "--model", model, "--input", dev, "--no-write", "--output", str(out), "-q"],
                   env={**os.environ, **env}, check=True)
    return time.perf_counter() - start


def score(kgnorm: str, model: str, dev: str, tsv: Path) -> dict:
    out = subprocess.run([kgnorm, "eval", "link", "--model", model, "--gold", dev, "--predictions", str(tsv),
                          "--allow-unknown-gold", "--format", "json"], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def ranks(tsv: Path) -> dict[tuple[str, str], str]:
    rows = [line.split("\t") for line in tsv.read_text(encoding="utf-8").splitlines()[1:]]
    return {(r[0], r[2]): r[3] for r in rows}


def distinct_texts(tsv: Path) -> int:
    """Distinct mention texts of a link TSV (its ``mention`` column): what `link` encodes at most once."""
    lines = tsv.read_text(encoding="utf-8").splitlines()
    col = lines[0].split("\t").index("mention")
    return len({line.split("\t")[col] for line in lines[1:]})


def short_command(args) -> str:
    """The command as docs/results.md shows it (the --pair paths are in benchmarks/LOG.md)."""
    return f"python benchmarks/query_engine.py --rows {args.rows} …"


def speed_rows(kgnorm: str, args, base_row: str, new_row: str, tmp: Path, loads: list[float]) -> str:
    """The speed-only table: each --pair model linking the throughput corpus, the rows alternated."""
    from throughput import corpus

    n, texts = corpus(tmp / "speed.pubtator", args.speed_mentions)
    lines = []
    for model in dict.fromkeys(p.split("=", 2)[1] for p in args.pair):
        secs: dict[str, list[float]] = {base_row: [], new_row: []}
        for _ in range(max(1, args.repeats)):
            for row in (base_row, new_row):
                secs[row].append(link(kgnorm, model, str(tmp / "speed.pubtator"), tmp / "speed.tsv", ENGINES[row]))
        loads.append(os.getloadavg()[0])
        rate = {row: texts / min(secs[row]) for row in secs}
        runs = " / ".join(", ".join(f"{x:.1f}" for x in secs[row]) for row in (base_row, new_row))
        lines.append(f"| {model} | {n:,} | {texts:,} | {runs} | {rate[base_row]:,.0f} / {rate[new_row]:,.0f} "
                     f"({rate[new_row] / rate[base_row]:.2f}x) |")
        print(lines[-1], flush=True)
        if args.record:
            record("speed", f"link distinct mentions/s, {new_row} vs {base_row} ({n:,} mentions, {Path(model).name})"
                   .replace("onnx-", ""),
                   f"{rate[new_row]:,.0f} vs {rate[base_row]:,.0f} ({rate[new_row] / rate[base_row]:.2f}x; load "
                   f"{loads[-1]:.1f})", short_command(args))
    return ("\nSpeed only: `link` on benchmarks/throughput.py's corpus (NCBI-disease + BC5CDR train and dev, whole "
            "documents), rows alternated as above; distinct/s over each row's fastest run.\n\n"
            f"| model | mentions | distinct texts | link s, {base_row} / {new_row} | distinct/s, {base_row} / {new_row} |\n"
            "|---|---|---|---|---|\n" + "\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", action="append", required=True, help="NAME=MODEL_DIR=DEV_FILE")
    ap.add_argument("--rows", default="torch,onnx", help="BASELINE,NEW among " + ", ".join(ENGINES))
    ap.add_argument("--repeats", type=int, default=1, help="timed link runs per row, alternated (default 1)")
    ap.add_argument("--record", action="store_true", help="add the Δ Acc@1 figures (and --speed-mentions' speed) "
                    "to results.jsonl")
    ap.add_argument("--speed-mentions", type=int, default=0, help="also time link on this many mentions of the "
                    "throughput corpus (speed only)")
    args = ap.parse_args()
    base_row, new_row = args.rows.split(",")
    kgnorm = str(Path(sys.executable).with_name("kgnorm"))
    tmp = Path(tempfile.mkdtemp(prefix="kgnorm-qe-"))
    lines, loads = [], [os.getloadavg()[0]]
    for pair in args.pair:
        name, model, dev = pair.split("=", 2)
        for row in {base_row, new_row}:
            if row.startswith("onnx"):
                link(kgnorm, model, dev, tmp / "warm.tsv", ENGINES[row])  # the exports, once
        tsvs = {row: tmp / f"{name}-{row}.tsv" for row in (base_row, new_row)}
        secs: dict[str, list[float]] = {base_row: [], new_row: []}
        for _ in range(max(1, args.repeats)):
            for row in (base_row, new_row):
                secs[row].append(link(kgnorm, model, dev, tsvs[row], ENGINES[row]))
        loads.append(os.getloadavg()[0])
        acc = {row: score(kgnorm, model, dev, tsvs[row]) for row in (base_row, new_row)}
        a, b = ranks(tsvs[base_row]), ranks(tsvs[new_row])
        mentions = {m for m, _ in a}
        rank1 = sum(a.get((m, "1")) != b.get((m, "1")) for m in mentions)
        any_rank = sum(any(a.get(k) != b.get(k) for k in set(a) | set(b) if k[0] == m) for m in mentions)
        t, o = acc[base_row]["full"], acc[new_row]["full"]
        texts = distinct_texts(tsvs[base_row])
        rate = {row: texts / min(secs[row]) for row in secs}
        runs = " / ".join(", ".join(f"{x:.1f}" for x in secs[row]) for row in (base_row, new_row))
        lines.append(f"| {name} | {t['n']} | {f4(t['acc1'])} / {f4(t['acc5'])} | "
                     f"{f4(o['acc1'])} / {f4(o['acc5'])} | {o['acc1'] - t['acc1']:+.4f} | {rank1} | {any_rank} | "
                     f"{runs} | {texts} | {rate[base_row]:,.0f} / {rate[new_row]:,.0f} |")
        print(lines[-1], flush=True)
        if args.record:
            record("linking", f"{name} dev Acc@1, {new_row} vs {base_row}".replace("onnx-", ""),
                   f"{f4(o['acc1'])} vs {f4(t['acc1'])} ({o['acc1'] - t['acc1']:+.4f})", short_command(args))
    speed = speed_rows(kgnorm, args, base_row, new_row, tmp, loads) if args.speed_mentions else ""
    append(f"query engine on dev: {base_row} against {new_row}",
           "Each TSV is written by `kgnorm link --no-write` in a fresh process with the row's environment, and "
           "scored by `kgnorm eval link --model M --gold DEV --predictions TSV --allow-unknown-gold --format json` "
           "(gold ids the model's dictionary lacks count as misses on both rows). "
           f"{base_row} = {WHAT[base_row]}; {new_row} = {WHAT[new_row]}. link s: every run of each row (whole "
           f"process, start-up included; the rows alternated {max(1, args.repeats)} time(s)); distinct/s: the dev "
           "set's distinct mention texts over the row's fastest run. 1-min load average "
           + ", ".join(f"{x:.1f}" for x in loads) + " (start, then after each dev set and each speed row).\n\n"
           f"| dev set | n | {base_row} Acc@1 / Acc@5 | {new_row} Acc@1 / Acc@5 | Δ Acc@1 | rank-1 concept changes | "
           f"mentions with any rank change | link s, {base_row} / {new_row} | distinct texts | distinct/s, "
           f"{base_row} / {new_row} |\n|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n" + speed)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
