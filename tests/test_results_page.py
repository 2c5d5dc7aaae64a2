"""docs/results.md is generated: it must be exactly what benchmarks/results.py writes from
benchmarks/results.jsonl (so the page cannot drift from the recorded figures), and its table
rows must stay short enough to read."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _results_module():
    spec = importlib.util.spec_from_file_location("kgnorm_bench_results", ROOT / "benchmarks" / "results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results():
    return _results_module()


def test_page_is_what_the_script_writes(results):
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    expected = results.render(results.read_rows(ROOT / "benchmarks" / "results.jsonl"))
    assert page == expected, "docs/results.md is out of date: run python benchmarks/results.py"


def test_no_row_over_200_characters(results):
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("|")]
    assert rows
    assert [line for line in rows if len(line) > 200] == []
    assert results.long_rows(page) == []


def test_every_recorded_row_is_complete():
    for lineno, line in enumerate((ROOT / "benchmarks" / "results.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(line)
        for field in ("job", "what", "figure", "command", "machine", "date"):
            assert str(row.get(field, "")).strip(), f"results.jsonl:{lineno} lacks {field}"


def test_newest_row_per_measurement_wins(results, tmp_path):
    rows = [
        {"job": "speed", "what": "x", "figure": "1 s", "command": "c", "machine": "m", "date": "2026-01-02"},
        {"job": "speed", "what": "x", "figure": "2 s", "command": "c", "machine": "m", "date": "2026-01-01"},
        {"job": "linking", "what": "y", "figure": "0.5", "command": "a|b", "machine": "m", "date": "2026-01-01"},
        {"job": "speed", "what": "x", "figure": "3 s", "command": "c", "machine": "m2", "date": "2026-01-02"},
    ]
    page = results.render(rows)
    assert "| x | 3 s |" in page and "| 1 s |" not in page and "| 2 s |" not in page
    assert page.index("## Linking") < page.index("## Speed")  # tables in job order
    assert "`a\\|b`" in page  # a pipe in a cell is escaped
    assert page.endswith("1. m2\n2. m\n")  # the machines of the rows shown, numbered


def test_record_appends_a_row(monkeypatch, tmp_path):
    import sys
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    sys.modules.pop("_report", None)
    import _report

    out = tmp_path / "results.jsonl"
    monkeypatch.setattr(_report, "RESULTS", out)
    row = _report.record("serve", "a page", "1.0 ms median", "python benchmarks/x.py")
    assert json.loads(out.read_text(encoding="utf-8")) == row
    assert row["machine"].split(" ")[0].isdigit() and " cores, " in row["machine"]
    assert len(row["date"]) == 10


def test_data_option_defaults_to_shared_data(monkeypatch):
    import argparse
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import _report

    ap = argparse.ArgumentParser()
    _report.add_data_option(ap)
    assert ap.parse_args([]).data == ROOT.parent / "shared" / "data"
    assert _report.data_dir(["--data", "/elsewhere", "--other", "x"]) == Path("/elsewhere").resolve()
    assert _report.data_dir([]) == (ROOT.parent / "shared" / "data").resolve()
