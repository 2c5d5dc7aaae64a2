"""Peak memory of `kgnorm link` against the number of mentions (issue 17): is it flat?

For each size, a synthetic mention TSV (random 1-4 word names over a 40-word vocabulary, ids
m1…mN) is linked by `kgnorm link` in its own child process, once with --no-write and once
writing the run to a fresh copy of a LadybugDB store (`--write-batch`, default 50,000). With
`--bolt`, the run is written instead to a live Bolt server (ArcadeDB with its Bolt plugin, the
tests' server, in a child process of its own, fresh for each size), so that the figure is the
memory of kgnorm's process alone; the server's own peak is reported beside it. The
model is an untrained BioSyn (`kgnorm train biosyn` without --train) over a tiny random BERT
(hidden 32, 2 layers; the tests' tiny_bert_dir) and a synthetic 300-concept ontology, so the
figures are those of kgnorm's own streaming, not of a big encoder. The TSV goes to /dev/null.
Peak RSS is the child's ru_maxrss from os.wait4 (resource.getrusage of that one child; this
parent never imports torch, so the fork copies little). One thread: OMP/MKL threads = 1.
Stores and inputs live in a temporary directory (under /tmp) that is deleted at the end.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append  # noqa: E402

WORDS = ["heart", "attack", "kidney", "renal", "failure", "acute", "chronic", "disease", "syndrome",
         "infarction", "myocardial", "parkinson", "cancer", "tumor", "breast", "lung", "liver", "pain",
         "fever", "diabetes", "type", "toe", "finger", "hyper", "hypo", "tension", "itis", "osis", "emia",
         "pathy", "neuro", "cardio", "gastro", "derma", "nephro", "hepato", "osteo", "myo", "angio", "onco"]


def kgnorm(*args: str) -> list[str]:
    return [sys.executable, "-m", "kgnorm.cli.app", *args]


def tiny_bert(d: Path) -> None:
    """The tests' tiny random BERT (tests/conftest.py, tiny_bert_dir), made in a child."""
    code = ("import sys; sys.path.insert(0, 'tests'); import conftest, pathlib;"
            "conftest.tiny_bert_dir.__wrapped__(type('F', (), {'mktemp': lambda self, n: pathlib.Path(sys.argv[1])})())")
    subprocess.run([sys.executable, "-c", code, str(d)], check=True, cwd=Path(__file__).resolve().parent.parent)


def synthetic_obo(path: Path, n: int, rng: random.Random) -> None:
    lines = ["format-version: 1.2", "ontology: syn", ""]
    for i in range(n):
        name = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        lines += ["[Term]", f"id: SYN:{i:05d}", f"name: {name}"] + ([f"is_a: SYN:{(i - 1) // 4:05d}"] if i else []) + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def synthetic_mentions(path: Path, n: int, rng: random.Random, prefix: str = "m") -> None:
    with path.open("w", encoding="utf-8") as fh:
        fh.write("id\ttext\n")
        for i in range(1, n + 1):
            fh.write(f"{prefix}{i}\t{' '.join(rng.choices(WORDS, k=rng.randint(1, 4)))}\n")


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one child, from its own rusage."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd!r} exited with {proc.returncode}: {err.decode()[-2000:]}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024


def server_peak_mb(pid: int) -> float:
    """The peak RSS (VmHWM) of a live process, read before it ends."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def link_more(work: Path, store: str, args: argparse.Namespace, env: dict[str, str],
              rng: random.Random) -> tuple[float, float]:
    """Link --then new mentions into a store a write has filled: (wall, peak RSS)."""
    more = work / "more.tsv"
    synthetic_mentions(more, args.then, rng, prefix="more")
    try:
        return measure(kgnorm("link", "--model", str(work / "model"), "--input", str(more), "--output", "/dev/null",
                              "-q", "--store", store, "--write-batch", str(args.write_batch)), env)
    finally:
        more.unlink()


def bolt_legs(work: Path, n: int, link: list[str], args: argparse.Namespace, env: dict[str, str],
              rng: random.Random) -> list[tuple[int, str, float, float, str]]:
    """Link n mentions into a fresh Bolt server, then --then more into the same one."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from bolt_server import ArcadeDBProcess

    root = work / f"arcadedb-{n}"
    root.mkdir()
    server = ArcadeDBProcess(root)
    env = {**env, "KGNORM_NEO4J_DATABASE": server.database}
    rows = []
    try:
        subprocess.run(kgnorm("ingest", "obo", str(work / "syn.obo"), "--ontology", "syn", "--store", server.uri,
                              "-q"), check=True, env=env)
        wall, rss = measure(link + ["--store", server.uri, "--write-batch", str(args.write_batch)], env)
        rows.append((n, f"Bolt write, --write-batch {args.write_batch:,} (server peak so far "
                        f"{server_peak_mb(server._proc.pid):,.0f} MB)", wall, rss, ""))
        print(rows[-1], flush=True)
        if args.then:
            wall, rss = link_more(work, server.uri, args, env, rng)
            rows.append((args.then, f"then Bolt write into that server ({n:,} mentions in it; server peak so far "
                                    f"{server_peak_mb(server._proc.pid):,.0f} MB)", wall, rss, ""))
            print(rows[-1], flush=True)
    finally:
        server.stop()
    shutil.rmtree(root)
    return rows


def store_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f.is_file()) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--write-batch", type=int, default=50_000)
    ap.add_argument("--concepts", type=int, default=300)
    ap.add_argument("--then", type=int, default=10_000,
                    help="after each write, link this many new mentions into the same store (0: skip): "
                         "does peak RSS follow the input or the store's size?")
    ap.add_argument("--bolt", action="store_true",
                    help="write to a live Bolt server (ArcadeDB, a fresh one per size) instead of LadybugDB")
    ap.add_argument("--no-append", action="store_true", help="print only, do not append to benchmarks/LOG.md")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = random.Random(0)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgnorm-link-memory-", dir="/tmp") as tmp:
        work = Path(tmp)
        (work / "bert").mkdir()
        tiny_bert(work / "bert")
        synthetic_obo(work / "syn.obo", args.concepts, rng)
        base = work / "base" / "graph"
        subprocess.run(kgnorm("ingest", "obo", str(work / "syn.obo"), "--ontology", "syn", "--store", str(base), "-q"),
                       check=True, env=env)
        subprocess.run(kgnorm("train", "biosyn", "--ontology", "syn", "--out", str(work / "model"), "--encoder",
                              str(work / "bert"), "--store", str(base), "--threads", "1", "-q"), check=True, env=env)
        for n in sizes:
            mentions = work / f"m{n}.tsv"
            synthetic_mentions(mentions, n, rng)
            link = kgnorm("link", "--model", str(work / "model"), "--input", str(mentions), "--output", "/dev/null",
                          "-q")
            if args.bolt:
                rows += bolt_legs(work, n, link, args, env, rng)
                mentions.unlink()
                continue
            wall, rss = measure(link + ["--no-write", "--store", str(base)], env)
            rows.append((n, "--no-write", wall, rss, ""))
            print(rows[-1], flush=True)
            store = work / f"s{n}" / "graph"
            store.parent.mkdir()
            for f in base.parent.glob(base.name + "*"):
                shutil.copy2(f, store.parent / f.name)
            wall, rss = measure(link + ["--store", str(store), "--write-batch", str(args.write_batch)], env)
            rows.append((n, f"LadybugDB write, --write-batch {args.write_batch:,}", wall, rss,
                         f"{store_mb(store):,.0f} MB"))
            print(rows[-1], flush=True)
            if args.then:
                wall, rss = link_more(work, str(store), args, env, rng)
                rows.append((args.then, f"then LadybugDB write into that store ({n:,} mentions in it)", wall, rss,
                             f"{store_mb(store):,.0f} MB"))
                print(rows[-1], flush=True)
            shutil.rmtree(store.parent)
            mentions.unlink()
    lines = ["`kgnorm link` on synthetic mentions, each run its own child process; peak RSS from the child's "
             "rusage (os.wait4). Untrained BioSyn over a tiny random BERT (hidden 32) and a "
             f"{args.concepts}-concept synthetic ontology, TSV to /dev/null, 1 thread (OMP/MKL)."
             + (" The store is a live Bolt server (ArcadeDB + Bolt plugin, arcadedb-embedded) in a child process "
                "of its own, fresh for each size; its peak RSS (VmHWM, JVM included) is given in the mode column."
                if args.bolt else ""), "",
             "| mentions | mode | wall | peak RSS | store after |", "|---:|---|---:|---:|---:|"]
    lines += [f"| {n:,} | {mode} | {wall:,.0f} s | {rss:,.0f} MB | {size} |" for n, mode, wall, rss, size in rows]
    body = "\n".join(lines)
    if args.no_append:
        print(body)
    else:
        append("link memory: peak RSS against the number of mentions (issue 17)", body)


if __name__ == "__main__":
    main()
