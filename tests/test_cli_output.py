"""Help, --version and the query table: what a newcomer reads first."""
import json

from kgnorm import __version__
from kgnorm.cli.output import render
from kgnorm.stores import QueryResult

from cli_runner import run


def test_table_shows_four_decimals_json_and_csv_keep_values():
    res = QueryResult(["name", "score", "n", "scores"], [["a", 0.123456789012345, 3, [0.5, 0.987654321]],
                                                        ["b", None, 4, []]])
    table = render(res, "table")
    assert "0.1235" in table and "0.123456789" not in table and "[0.5, 0.9877]" in table
    assert " 3 " in table and "2 row(s)" in table
    assert json.loads(render(res, "json"))[0]["score"] == 0.123456789012345
    assert "0.123456789012345" in render(res, "csv")


def test_version_and_help_without_placeholders(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"kgnorm {__version__}"
    for args in (["--help"], ["ingest", "obo", "--help"], ["link", "--help"], ["train", "biosyn", "--help"]):
        code, out, _ = run(capsys, *args)
        assert code == 0
        assert "<bool>" not in out and "{path}" not in out, args
    code, out, _ = run(capsys, "ingest", "obo", "--help")
    assert "[OPTIONS] PATH" in " ".join(out.split())
