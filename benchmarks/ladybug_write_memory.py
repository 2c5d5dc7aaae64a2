"""LadybugDB alone (no kgnorm code): the memory one small write costs against the size of the table
it goes into. Issue 17 asks `kgnorm link`'s peak RSS to stay flat from 10k to 1M mentions; with
the embedded write it does not (benchmarks/link_memory.py). This script asks whether that growth is
kgnorm's or the database's.

For each size N, a store with kgnorm's shape is built in batches of 50,000 (COPY from a DataFrame,
reopened after each batch, as kgnorm's staged write does): a Mention table keyed by a 20-character
STRING uid (kgnorm's ``<digest>:<id>``), 300 Concepts and N LINKED_TO edges. Then a fresh child
process opens a copy of that store (buffer pool 512 MB, kgnorm's) and writes 10,000 new mentions:
the Mention rows alone, or the rows and their edges (each as one COPY, then a commit at close). Its
peak RSS (ru_maxrss) is reported next to the RSS after opening, with both storage directions of the
relationship table: ``both`` (LadybugDB's default, kgnorm's schema) and ``fwd`` (forward only).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append  # noqa: E402

BATCH = 50_000
NEW = 10_000

CHILD = r"""
import resource, sys
import ladybug as lb
import pandas as pd

path, mode, direction, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

def mentions(lo, hi):
    return pd.DataFrame({"uid": [f"abcdef123456:m{i}" for i in range(lo, hi)],
                         "text": [f"some mention text {i % 977}" for i in range(lo, hi)]})

def links(lo, hi):
    return pd.DataFrame({"from": [f"abcdef123456:m{i}" for i in range(lo, hi)],
                         "to": [f"C{i % 300}" for i in range(lo, hi)], "score": 0.5})

def opendb():
    db = lb.Database(path, buffer_pool_size=512 * 2**20)
    return db, lb.Connection(db)

if mode == "build":
    db, c = opendb()
    c.execute("CREATE NODE TABLE Mention(uid STRING PRIMARY KEY, text STRING)")
    c.execute("CREATE NODE TABLE Concept(uid STRING PRIMARY KEY)")
    c.execute("CREATE REL TABLE LINKED_TO(FROM Mention TO Concept, score DOUBLE)"
              + (" WITH (storage_direction = 'fwd')" if direction == "fwd" else ""))
    frame = pd.DataFrame({"uid": [f"C{i}" for i in range(300)]})
    c.execute("COPY Concept FROM frame")
    for lo in range(0, n, BATCH):
        frame = mentions(lo, min(n, lo + BATCH))
        c.execute("COPY Mention FROM frame")
        frame = links(lo, min(n, lo + BATCH))
        c.execute("COPY LINKED_TO FROM frame")
        c.close(); db.close(); db, c = opendb()
    sys.exit()
db, c = opendb()
opened = peak()
base = 10**8
frame = mentions(base, base + NEW)
c.execute("COPY Mention FROM frame")
if mode == "rows+edges":
    frame = links(base, base + NEW)
    c.execute("COPY LINKED_TO FROM frame")
c.close(); db.close()
print(f"{opened:.0f} {peak():.0f}")
""".replace("BATCH", str(BATCH)).replace("NEW", str(NEW))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10000,1000000,3000000")
    ap.add_argument("--no-append", action="store_true")
    args = ap.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    rows = []
    with tempfile.TemporaryDirectory(prefix="kgnorm-lbmem-") as tmp:
        for direction in ("both", "fwd"):
            for n in (int(s) for s in args.sizes.split(",")):
                store = Path(tmp) / f"{direction}-{n}"
                subprocess.run([sys.executable, "-c", CHILD, str(store), "build", direction, str(n)], check=True, env=env)
                size = sum(f.stat().st_size for f in Path(tmp).glob(store.name + "*")) / 2**20
                for mode in ("rows", "rows+edges"):
                    probe = Path(tmp) / "probe"
                    for f in Path(tmp).glob("probe*"):
                        f.unlink()
                    for f in Path(tmp).glob(store.name + "*"):
                        shutil.copy(f, probe.with_name(f.name.replace(store.name, "probe")))
                    out = subprocess.run([sys.executable, "-c", CHILD, str(probe), mode, direction, str(n)],
                                         check=True, env=env, capture_output=True, text=True).stdout.split()
                    rows.append(f"| {direction} | {n:,} ({size:,.0f} MB) | {NEW:,} {mode} | {out[0]} MB | **{out[1]} MB** |")
                    print(rows[-1], flush=True)
                for f in Path(tmp).glob(store.name + "*"):
                    f.unlink()
    body = "\n".join([__doc__.split("\n\n", 1)[1].strip(), "",
                      "| LINKED_TO storage | mentions already in the table (store file) | write | RSS after open | peak RSS |",
                      "|---|---:|---|---:|---:|", *rows])
    if args.no_append:
        print(body)
    else:
        append("LadybugDB alone: memory of a 10,000-mention write against the table's size (issue 17)", body)


if __name__ == "__main__":
    main()
