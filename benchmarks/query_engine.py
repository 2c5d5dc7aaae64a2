"""The query engines on dev: `kgnorm link` with the torch query encoder (its precision as the
defaults choose it: bf16 where the CPU declares it) and with the onnx one (ONNX Runtime fp32,
torch-free), each TSV scored by the one strict scorer (`kgnorm eval link --predictions`), and the
rank changes between the two TSVs.

    python benchmarks/query_engine.py --pair NAME=MODEL_DIR=DEV_FILE [--pair ...]

Dev files only (no test split). Each `link` is a fresh process; the export of the onnx engine is
made beforehand (a first onnx run, not scored) so both rows score what a user's runs write. Figures
are appended to benchmarks/LOG.md.
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
from _report import f4, append  # noqa: E402

ENGINES = {"torch": {"KGNORM_QUERY_ENGINE": "torch"}, "onnx": {"KGNORM_QUERY_ENGINE": "onnx"},
           # onnx as before the stored name vectors: every query encoded (kgnorm.methods.biosyn.retrieval)
           "onnx-encode": {"KGNORM_QUERY_ENGINE": "onnx", "KGNORM_NAME_VECTORS": "encode"}}
WHAT = {"torch": "the torch model: for BioSyn the query precision the defaults choose (bf16 where the CPU declares "
                 "amx_bf16/avx512_bf16, else fp32), for DILBERT fp32 queries in padded batches; the bf16 search "
                 "pre-filters where the CPU declares bf16",
        "onnx": "ONNX Runtime fp32 queries, fp32 exact searches, no torch imported; a query that is a dictionary "
                "name takes the name's stored vector (the default)",
        "onnx-encode": "as onnx, every query encoded (`KGNORM_NAME_VECTORS=encode`, the path before stored name "
                       "vectors)"}


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", action="append", required=True, help="NAME=MODEL_DIR=DEV_FILE")
    ap.add_argument("--rows", default="torch,onnx", help="BASELINE,NEW among " + ", ".join(ENGINES))
    args = ap.parse_args()
    base_row, new_row = args.rows.split(",")
    kgnorm = str(Path(sys.executable).with_name("kgnorm"))
    tmp = Path(tempfile.mkdtemp(prefix="kgnorm-qe-"))
    lines = []
    for pair in args.pair:
        name, model, dev = pair.split("=", 2)
        link(kgnorm, model, dev, tmp / "warm.tsv", ENGINES["onnx"])  # the export, once
        tsvs, acc, secs = {}, {}, {}
        for engine, env in ((base_row, ENGINES[base_row]), (new_row, ENGINES[new_row])):
            tsvs[engine] = tmp / f"{name}-{engine}.tsv"
            secs[engine] = link(kgnorm, model, dev, tsvs[engine], env)
            acc[engine] = score(kgnorm, model, dev, tsvs[engine])
        a, b = ranks(tsvs[base_row]), ranks(tsvs[new_row])
        mentions = {m for m, _ in a}
        rank1 = sum(a.get((m, "1")) != b.get((m, "1")) for m in mentions)
        any_rank = sum(any(a.get(k) != b.get(k) for k in set(a) | set(b) if k[0] == m) for m in mentions)
        t, o = acc[base_row]["full"], acc[new_row]["full"]
        lines.append(f"| {name} | {t['n']} | {f4(t['acc1'])} / {f4(t['acc5'])} | "
                     f"{f4(o['acc1'])} / {f4(o['acc5'])} | {o['acc1'] - t['acc1']:+.4f} | {rank1} | {any_rank} | "
                     f"{secs[base_row]:.1f} / {secs[new_row]:.1f} |")
        print(lines[-1], flush=True)
    append(f"query engine on dev: {base_row} against {new_row} (issue 29)",
           "Each TSV is written by `kgnorm link --no-write` in a fresh process with `KGNORM_QUERY_ENGINE` set, and "
           "scored by `kgnorm eval link --model M --gold DEV --predictions TSV --allow-unknown-gold --format json` "
           "(gold ids the model's dictionary lacks count as misses on both rows). "
           f"{base_row} = {WHAT[base_row]}; {new_row} = {WHAT[new_row]}.\n\n"
           f"| dev set | n | {base_row} Acc@1 / Acc@5 | {new_row} Acc@1 / Acc@5 | Δ Acc@1 | rank-1 concept changes | "
           "mentions with any rank change | link s (whole process, one run each) |\n|---|---|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
