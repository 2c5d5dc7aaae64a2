"""The SSSOM file `kgnorm match` writes, checked against the SSSOM spec: by hand (required metadata
and columns, every prefix in the curie map), and with the `sssom` package's own parser and
validators (JSON schema, prefix-map completeness) where it is installed (it is not a dependency:
skipped otherwise)."""
from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
import yaml

from kgnorm.jobs.match import MatchResult, write_sssom_file
from kgnorm.jobs.ontology_pair import ModelInfo
from kgnorm.matching.matcher import (BROAD, CURATED, EXACT, LEXICAL, NARROW, SEMANTIC, STRUCTURAL, Calibration,
                                     Decision, MatchSide)


def _result() -> MatchResult:
    src = MatchSide("doid", {"DOID:1": "breast cancer", "DOID:2": "inflammatory breast cancer",
                             "DOID:3": "osteosarcoma"},
                    {"DOID:1": ["breast cancer"], "DOID:2": ["inflammatory breast cancer"],
                     "DOID:3": ["osteosarcoma", "bone tissue neoplasm"]})
    tgt = MatchSide("medic", {"MESH:D001943": "Breast Neoplasms", "MESH:D012516": "Osteosarcoma",
                              "MESH:D018213": "Neoplasms, Bone Tissue", "OMIM:114480": "BREAST CANCER"},
                    {"MESH:D001943": ["Breast Neoplasms"], "MESH:D012516": ["Osteosarcoma"],
                     "MESH:D018213": ["Neoplasms, Bone Tissue"], "OMIM:114480": ["BREAST CANCER"]})
    decisions = [Decision("DOID:1", "MESH:D001943", EXACT, 0.99, CURATED, comment="xref"),
                 Decision("DOID:3", "MESH:D012516", EXACT, 0.94, LEXICAL, 1.0),
                 Decision("DOID:3", "MESH:D018213", EXACT, 0.7, LEXICAL, 1.0, "target's preferred name"),
                 Decision("DOID:2", "MESH:D001943", BROAD, 0.891, STRUCTURAL, comment="ancestor DOID:1"),
                 Decision("DOID:1", "OMIM:114480", NARROW, 0.8, STRUCTURAL, 0.93),
                 Decision("DOID:2", "OMIM:114480", EXACT, 0.5, SEMANTIC, 0.88)]
    return MatchResult(src, tgt, ("2026-07-31", "06Jul2012"), ModelInfo(Path("/models/biosyn"), "biosyn",
                                                                        "biosyn 2026-11-28 (abc123)"),
                       "use", Calibration(), decisions)


@pytest.fixture
def sssom_file(tmp_path: Path) -> Path:
    out = tmp_path / "m.sssom.tsv"
    write_sssom_file(_result(), out)
    return out


def test_sssom_file_has_what_the_spec_requires(sssom_file: Path):
    text = sssom_file.read_text(encoding="utf-8")
    meta_lines = [line[1:] for line in text.splitlines() if line.startswith("#")]
    meta = yaml.safe_load("\n".join(meta_lines))
    for key in ("curie_map", "mapping_set_id", "license"):        # required by the SSSOM schema
        assert meta.get(key), key
    assert meta["mapping_set_id"].startswith("https://") and meta["license"].startswith("https://")
    body = [line for line in text.splitlines() if not line.startswith("#")]
    header = body[0].split("\t")
    for col in ("subject_id", "predicate_id", "object_id", "mapping_justification"):
        assert col in header, col
    rows = [dict(zip(header, line.split("\t"))) for line in body[1:]]
    assert len(rows) == 6
    used = {r[c].split(":", 1)[0] for r in rows for c in ("subject_id", "predicate_id", "object_id",
                                                          "mapping_justification")}
    assert used <= set(meta["curie_map"])                          # prefix map complete
    for r in rows:
        assert r["mapping_justification"].startswith("semapv:")
        conf = float(r["confidence"])
        assert 0.0 <= conf <= 1.0 and not math.isnan(conf)


def test_sssom_file_validates_with_the_sssom_package(sssom_file: Path):
    pytest.importorskip("sssom")
    from sssom.constants import SchemaValidationType
    from sssom.parsers import parse_sssom_table
    from sssom.validators import validate

    msdf = parse_sssom_table(sssom_file)
    assert len(msdf.df) == 6
    assert set(msdf.df["predicate_id"]) == {EXACT, BROAD, NARROW}
    reports = validate(msdf, [SchemaValidationType.JsonSchema, SchemaValidationType.PrefixMapCompleteness],
                       fail_on_error=False)
    assert all(not report.results for report in reports.values()), reports


def test_sssom_round_trips_through_our_reader(sssom_file: Path):
    from kgnorm.matching.sssom import read_sssom

    mset = read_sssom(sssom_file)
    assert ("DOID:3", "MESH:D018213") in mset.pairs(EXACT)
    assert io.StringIO(sssom_file.read_text()).readline().startswith("#curie_map")
