"""Hostile inputs (issue 52): every reader, fed mutated copies of the real-format fixtures, loads
the input or raises kgnorm's InputError/KgnormError with one line naming the file; never another
exception or a hang (tests/fuzz_inputs.py). A short, derandomized run of each reader here (the
same inputs every time); `python benchmarks/fuzz_readers.py --examples 1000` is the long one.
The inputs that found defects are kept in tests/fixtures/fuzz/regressions and read on every run."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from fuzz_inputs import FIX, INGESTED, _cli, fuzz, fuzz_ingest, ingest_formats, run_one, targets

EXAMPLES = 150  # per reader: 2 to 5 s each on one core, under a minute in all
THROUGH_INGEST = 4  # per ontology loader, through `kgnorm ingest` into a store (about a second each)
REGRESSIONS = FIX / "fuzz" / "regressions"


@pytest.fixture(autouse=True)
def _quiet_readers():
    with warnings.catch_warnings():  # readers warn about oddities they accept (a duplicate PMID …)
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("target", targets(), ids=lambda t: t.name)
def test_mutated_inputs_load_or_fail_in_one_line(target):
    tally = fuzz(target, EXAMPLES)
    assert tally.tried == EXAMPLES
    assert not tally.defects, "\n".join(tally.lines())


@pytest.mark.parametrize("target", [t for t in targets() if t.name in ingest_formats()], ids=lambda t: t.name)
def test_mutated_ontologies_through_ingest_leave_the_store_as_it_was_or_sound(tmp_path, target):
    store = f"ladybug://{tmp_path}/graph"
    code, err = _cli(["ingest", ingest_formats()[target.name], str(target.seeds[0]), "--ontology", INGESTED,
                      "--store", store, "-q"])
    assert code == 0, err
    tally = fuzz_ingest(target, THROUGH_INGEST, store)
    assert tally.tried == THROUGH_INGEST
    assert not tally.defects, "\n".join(tally.lines())


def _regressions() -> list[tuple[str, Path]]:
    """(target name, file) of every kept input: regressions/<target>/<i>~<name>, where <name> is the
    release folder's member it replaces ('__' for '/') or the seed file it was made from."""
    if not REGRESSIONS.is_dir():
        return []
    return [(d.name, f) for d in sorted(REGRESSIONS.iterdir()) if d.is_dir() for f in sorted(d.iterdir())]


@pytest.mark.parametrize("name,path", _regressions(), ids=lambda x: x if isinstance(x, str) else x.name)
def test_inputs_that_found_defects_fail_in_one_line(name, path):
    target = next(t for t in targets() if t.name == name)
    made_from = path.name.split("~", 1)[1]
    member = 0
    if target.members:  # the kept file replaces that member of the release folder
        seed = target.seeds[0]
        files = [str(p.relative_to(seed)) for p in sorted(seed.glob(target.members))]
        member = files.index(made_from.replace("__", "/"))
    else:
        seed = next(s for s in target.seeds if s.name == made_from)
    outcome = run_one(target, seed, member, [("replace", 0, path.read_bytes())])
    assert outcome.kind in ("loaded", "rejected"), outcome.why
