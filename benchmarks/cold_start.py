"""Cold start and model size: `kgnorm link` on one mention in a fresh process, and what a
model directory holds on disk.

    python benchmarks/cold_start.py --model DIR [--runs 5] [--threads 1]

Each run is a new `kgnorm link --no-write` process (imports, model load, one mention, TSV
out), with the previous query path (PREVIOUS), the torch query engine (KGNORM_QUERY_ENGINE=torch:
bf16 where the CPU declares it) and the current defaults interleaved, one of each per round (the
onnx engine's export is made by the unmeasured first run); the figures are the wall time of the whole process, best and median of --runs, and the
import time of the CLI alone (`python -c "import kgnorm.cli.app"`), plus the time to import
torch + transformers + faiss (what a model load needs) in a fresh interpreter. The model
directory is listed per top-level entry. Figures are appended to benchmarks/LOG.md.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, run_child  # noqa: E402

from kgnorm.linking.cpu_features import query_engine  # noqa: E402


# the query path before issue 29's changes: fp32 queries in 8-row calls, fp32 dense search
PREVIOUS = {"KGNORM_QUERY_ENGINE": "torch", "KGNORM_QUERY_PRECISION": "fp32", "KGNORM_QUERY_ROWS": "8",
            "KGNORM_DENSE_PRECISION": "fp32"}
TORCH = {"KGNORM_QUERY_ENGINE": "torch"}  # the torch query engine with its defaults (bf16 where declared)


def dir_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def mb(n: float) -> str:
    return f"{n / 2**20:,.1f} MB"


def timed(cmd: list[str], runs: int, env: dict) -> tuple[list[float], float]:
    walls, peak = [], 0.0
    for _ in range(runs):
        wall, rss = run_child(cmd, env=env)
        walls.append(wall)
        peak = max(peak, rss)
    return walls, peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True, help="a BioSyn model directory")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1, help="OMP/MKL threads of the child processes")
    ap.add_argument("--mention", default="hereditary breast cancer")
    args = ap.parse_args()
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(args.threads), "MKL_NUM_THREADS": str(args.threads)}
    kgnorm = [sys.executable, "-m", "kgnorm.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        mentions = Path(tmp) / "one.tsv"
        mentions.write_text(f"id\ttext\tdoc_id\nm1\t{args.mention}\td1\n", encoding="utf-8")
        out = Path(tmp) / "links.tsv"
        link = [*kgnorm, "link", "--model", str(args.model), "--input", str(mentions), "--no-write",
                "--output", str(out), "--quiet"]
        timed(link, 1, env)  # warm the page cache (and make a cached export): "cold" is a fresh process
        timed(link, 1, {**env, **TORCH})
        prev_walls, torch_walls, link_walls, torch_rss, link_rss = [], [], [], 0.0, 0.0
        for _ in range(args.runs):  # interleaved: a load change hits every path alike
            prev_walls += timed(link, 1, {**env, **PREVIOUS})[0]
            walls, rss = timed(link, 1, {**env, **TORCH})
            torch_walls, torch_rss = torch_walls + walls, max(torch_rss, rss)
            walls, rss = timed(link, 1, env)
            link_walls, link_rss = link_walls + walls, max(link_rss, rss)
        top = " · ".join(out.read_text(encoding="utf-8").splitlines()[1].split("\t"))
    cli_walls, _ = timed([sys.executable, "-c", "import kgnorm.cli.app"], args.runs, env)
    libs_walls, _ = timed([sys.executable, "-c", "import torch, transformers, faiss"], args.runs, env)
    ort_walls, _ = timed([sys.executable, "-c", "import onnxruntime, tokenizers, faiss"], args.runs, env)

    rows = [f"| `kgnorm link` on one mention, previous query path ({' '.join(f'{k}={v}' for k, v in PREVIOUS.items())}; "
            f"best / median of {args.runs}) | {min(prev_walls):.2f} s / {statistics.median(prev_walls):.2f} s |",
            f"| `kgnorm link` on one mention, torch query engine (KGNORM_QUERY_ENGINE=torch; best / median of "
            f"{args.runs}) | {min(torch_walls):.2f} s / {statistics.median(torch_walls):.2f} s |",
            f"| peak RSS of that process | {torch_rss:,.0f} MB |",
            f"| `kgnorm link` on one mention, whole process, current defaults (query engine "
            f"{query_engine()}; best / median of {args.runs}) | "
            f"{min(link_walls):.2f} s / {statistics.median(link_walls):.2f} s |",
            f"| peak RSS of that process | {link_rss:,.0f} MB |",
            f"| `import kgnorm.cli.app` (best / median) | {min(cli_walls):.2f} s / {statistics.median(cli_walls):.2f} s |",
            f"| `import torch, transformers, faiss` (best / median) | {min(libs_walls):.2f} s / "
            f"{statistics.median(libs_walls):.2f} s |",
            f"| `import onnxruntime, tokenizers, faiss` (best / median) | {min(ort_walls):.2f} s / "
            f"{statistics.median(ort_walls):.2f} s |"]
    sizes = sorted(((p.name + ("/" if p.is_dir() else ""), dir_size(p)) for p in args.model.iterdir()),
                   key=lambda x: -x[1])
    size_rows = [f"| `{name}` | {mb(n)} |" for name, n in sizes]
    body = (f"Model: `{args.model}` (BioSyn). Mention: \"{args.mention}\" → `{top}`. Child processes with "
            f"{args.threads} OMP/MKL thread(s), page cache warm (one unmeasured run first). The machine is shared "
            f"with other jobs (2 cores): the load average above says how busy it was.\n\n"
            "| cold start | value |\n|---|---|\n" + "\n".join(rows) + "\n\n"
            f"Model directory: {mb(dir_size(args.model))} in all.\n\n"
            "| entry | size |\n|---|---|\n" + "\n".join(size_rows) + "\n")
    append("Cold start and model size", body)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
