"""A full-size MRCONSO streams in bounded memory (issue 27), appended to benchmarks/LOG.md.

Writes synthetic MRCONSO.RRF files (the real 18-column layout, invented rows) into a temp
folder, deleted afterwards: a fixed set of `--kept` concepts with MSH names, and filler rows
(other sources and languages, as in a full release) up to each `--sizes` figure. The loader
(`kgnorm.ontologies.umls.load(..., sab="MSH")`: parsing and the in-memory graph, no store
write) runs in a child process per size: wall time, rows/s and the child's peak RSS. Memory
bounded means the peak stays flat while the file grows, because the kept concepts do not.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _report import append, run_child  # noqa: E402

SOURCES = [("SNOMEDCT_US", "PT"), ("SNOMEDCT_US", "FN"), ("NCI", "PT"), ("MDR", "LLT"), ("RXNORM", "IN"),
           ("LNC", "LN"), ("MEDLINEPLUS", "PT"), ("MSHFRE", "MH"), ("MSHGER", "MH")]
LANGS = {"MSHFRE": "FRE", "MSHGER": "GER"}
WORDS = ("acute chronic familial primary secondary juvenile adult benign malignant hereditary congenital "
         "syndrome disease disorder deficiency neoplasm infection fever rash lesion of the heart liver kidney "
         "skin bone blood lung brain type").split()


def _row(cui: int, aui: int, sab: str, tty: str, code: str, text: str, lang: str = "ENG") -> str:
    return (f"C{cui:07d}|{lang}|P|L{aui:07d}|PF|S{aui:07d}|Y|A{aui:08d}||{code}|{code}|{sab}|{tty}|{code}|"
            f"{text}|0|N|256|\n")


def write_mrconso(path: Path, size: int, kept: int, seed: int = 13) -> int:
    """Write about `size` bytes: `kept` CUIs with an MSH MH name, the rest filler; returns rows."""
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(WORDS, k=rng.randint(2, 6))) for _ in range(4096)]
    rows = aui = 0
    written = 0
    cui = 0
    with path.open("w", encoding="utf-8", buffering=1 << 22) as fh:
        while written < size:
            cui += 1
            chunk = []
            if cui <= kept:
                aui += 1
                chunk.append(_row(cui, aui, "MSH", "MH", f"D{cui:06d}", f"Invented heading {cui}"))
            for _ in range(rng.randint(2, 6)):
                aui += 1
                sab, tty = rng.choice(SOURCES)
                chunk.append(_row(cui, aui, sab, tty, str(100000 + aui), texts[aui & 4095], LANGS.get(sab, "ENG")))
            block = "".join(chunk)
            fh.write(block)
            written += len(block)  # ASCII: characters are bytes
            rows += len(chunk)
    return rows


def child(meta: Path, out: Path) -> None:
    """Run in the child process: load with sab=MSH and write the figures to `out`."""
    from kgnorm.ontologies import umls

    t0 = time.perf_counter()
    graph = umls.load(meta, sab="MSH")
    seconds = time.perf_counter() - t0
    out.write_text(json.dumps({"seconds": seconds, "concepts": len(graph.concepts)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="256M,2G", help="MRCONSO sizes to write, e.g. 256M,2G")
    ap.add_argument("--kept", type=int, default=200_000, help="concepts with an MSH name (the ones kept)")
    ap.add_argument("--child", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    sizes = [int(float(s[:-1]) * units[s[-1].upper()]) if s[-1].upper() in units else int(s)
             for s in args.sizes.split(",")]
    lines = []
    with tempfile.TemporaryDirectory(prefix="kgnorm-umls-") as tmp:
        meta = Path(tmp) / "META"
        meta.mkdir()
        for size in sizes:
            t0 = time.perf_counter()
            rows = write_mrconso(meta / "MRCONSO.RRF", size, args.kept)
            t_write = time.perf_counter() - t0
            mb = (meta / "MRCONSO.RRF").stat().st_size / 2**20
            out = Path(tmp) / "result.json"
            wall, rss = run_child([sys.executable, __file__, "--child", str(meta), str(out)])
            res = json.loads(out.read_text())
            lines.append(f"| {mb:,.0f} MB | {rows:,} | {res['concepts']:,} | {res['seconds']:.1f} s "
                         f"({rows / res['seconds']:,.0f} rows/s) | {rss:,.0f} MB | {t_write:.0f} s |")
            print(lines[-1], flush=True)
        shutil.rmtree(meta)
    body = ["Synthetic MRCONSO.RRF (18 columns, invented rows; deleted afterwards), loaded with `sab=\"MSH\"` "
            "by the loader alone (parse + in-memory graph, no store write) in a child process. Shared, loaded "
            "2-core machine (other engineers' jobs ran beside it): rows/s is indicative; peak RSS is the "
            "child's VmHWM and includes the Python interpreter, the imports and the kept graph.", "",
            "| MRCONSO size | rows | concepts kept | loader time (rows/s) | peak RSS | time to write the file |",
            "|---|---|---|---|---|---|", *lines]
    append("UMLS MRCONSO streaming in bounded memory (issue 27)", "\n".join(body))


if __name__ == "__main__":
    main()
