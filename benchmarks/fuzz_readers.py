"""Hostile inputs (issue 52): a mutation fuzzer over every reader (tests/fuzz_inputs.py), `--examples`
mutated copies of the real-format fixtures in tests/fixtures per reader. Each input must load, or
fail with kgnorm's InputError/KgnormError in one line naming the file; anything else (another
exception, a message over several lines or naming no file, more than 10 s on a small file) is a
defect. Reports, per reader, the inputs tried, loaded and rejected and the distinct defects (by
exception and innermost kgnorm frame) with how many inputs hit each; `--keep DIR` writes the first
input of each defect there (the test suite keeps the fixed ones in tests/fixtures/fuzz/regressions).

    python benchmarks/fuzz_readers.py --examples 1000 [--ingest 50] [--reader obo …] [--seed N] [--keep DIR] [--no-record]

`--ingest N` then feeds N mutated inputs of each ontology loader through `kgnorm ingest` into an
embedded store holding the seed: each must exit 0 and leave a store `kgnorm check` finds sound, or
exit 1 with one stderr line naming the file and leave the store as it was (no half-written store).

`--seed N` draws other inputs (default: derandomized, the same inputs every run, as in the tests).
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _report import append, record  # noqa: E402
from fuzz_inputs import HANG_S, INGESTED, Tally, _cli, fuzz, fuzz_ingest, ingest_formats, targets  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=1000, help="mutated inputs per reader (default 1000)")
    ap.add_argument("--ingest", type=int, default=50, help="mutated inputs per ontology loader through "
                    "`kgnorm ingest` into a store (default 50; 0: none)")
    ap.add_argument("--reader", action="append", help="only this reader (repeatable); default all")
    ap.add_argument("--seed", type=int, default=None, help="draw other inputs (default: derandomized)")
    ap.add_argument("--keep", type=Path, default=None, help="write the first input of each defect here")
    ap.add_argument("--no-record", action="store_true", help="print only; no LOG.md section, no results row")
    args = ap.parse_args()
    chosen = [t for t in targets() if not args.reader or t.name in args.reader]
    tallies: list[tuple[Tally, float]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # readers warn about oddities they accept
        for t in chosen:
            t0 = time.perf_counter()
            tally = fuzz(t, args.examples, seed=args.seed)
            tallies.append((tally, time.perf_counter() - t0))
            print(f"{t.name}: {tally.tried} tried, {tally.loaded} loaded, {tally.rejected} rejected, "
                  f"{len(tally.defects)} defect(s)", flush=True)
            if args.keep:
                _keep(args.keep, tally)
        for t in (t for t in chosen if args.ingest and t.name in ingest_formats()):
            t0 = time.perf_counter()
            tally = _through_ingest(t, args.ingest, args.seed)
            tallies.append((tally, time.perf_counter() - t0))
            print(f"{tally.target}: {tally.tried} tried, {tally.loaded} loaded, {tally.rejected} rejected, "
                  f"{len(tally.defects)} defect(s)", flush=True)
            if args.keep:
                _keep(args.keep, tally)
    body = _table(tallies, args.examples)
    defects = sum(len(t.defects) for t, _ in tallies)
    if args.no_record:
        print(body)
    else:
        n_read = sum(1 for t, _ in tallies if "(" not in t.target)
        through = f", {len(tallies) - n_read} loaders x {args.ingest} through kgnorm ingest" if n_read < len(tallies) else ""
        append(f"Fuzzing the readers: {n_read} readers x {args.examples} mutated inputs{through}", body)
        if not args.reader:
            read = [t for t, _ in tallies if "(" not in t.target]
            ingested = [t for t, _ in tallies if "(" in t.target]
            record("reliability", "Fuzzed readers: defects",
                   f"{sum(len(t.defects) for t in read)} in {sum(t.tried for t in read):,} inputs ({len(read)} formats)")
            if ingested:
                record("reliability", "Fuzzed ontologies through kgnorm ingest: defects",
                       f"{sum(len(t.defects) for t in ingested)} in {sum(t.tried for t in ingested):,} inputs "
                       "(store as it was, or sound)")
    return 1 if defects else 0


def _table(tallies: list[tuple[Tally, float]], examples: int) -> str:
    lines = [f"Each reader got {examples} mutated copies of its fixtures (byte edits, hostile tokens, "
             f"fields, JSON values and XML elements changed); a defect is any outcome but loading or one "
             f"KgnormError line naming the file, or more than {HANG_S} s.", "",
             "| reader | tried | loaded | rejected (one line) | defects | inputs hitting one | seconds |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for t, s in tallies:
        hit = sum(n for _, n in t.defects.values())
        lines.append(f"| {t.target} | {t.tried} | {t.loaded} | {t.rejected} | {len(t.defects)} | {hit} | {s:.1f} |")
    found = [line for t, _ in tallies for line in t.lines()]
    if found:
        lines += ["", "Defects:", ""] + [f"- {line}" for line in found]
    return "\n".join(lines) + "\n"


def _through_ingest(target, examples: int, seed: int | None) -> Tally:
    """A fresh embedded store holding the target's first seed, then the mutated inputs ingested over it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kgnorm-fuzz-store-") as tmp:
        store = f"ladybug://{tmp}/graph"
        code, err = _cli(["ingest", ingest_formats()[target.name], str(target.seeds[0]), "--ontology", INGESTED,
                          "--store", store, "-q"])
        if code:
            raise SystemExit(f"ingesting the seed {target.seeds[0]} failed: {err}")
        return fuzz_ingest(target, examples, store, seed=seed)


def _keep(folder: Path, tally: Tally) -> None:
    for i, (o, _) in enumerate(tally.defects.values()):
        d = folder / tally.target.replace(" (kgnorm ingest)", "")
        d.mkdir(parents=True, exist_ok=True)
        (d / o.fixture_name(i)).write_bytes(o.data)


if __name__ == "__main__":
    sys.exit(main())
