"""Run the `kgnorm` command in-process for tests: exit code plus what it printed."""
from __future__ import annotations

from kgnorm.cli.app import main


def exit_code(args: list[str]) -> int:
    """Run without capturing output (for fixtures that only need the side effect)."""
    try:
        main(list(args))
        return 0
    except SystemExit as exc:
        return int(exc.code or 0)


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = exit_code(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def ctd_mentions(tmp, train: str, dev: str) -> dict:
    """A store under ``tmp`` holding the invented CTD fixture as ontology ``ctd``, and ``train`` /
    ``dev`` written as .concept files: what the linker + reranker tests start from."""
    from pathlib import Path

    fix = Path(__file__).parent / "fixtures"
    store = f"ladybug://{tmp}/graph"
    assert exit_code(["ingest", "medic", str(fix / "medic/CTD_diseases.tsv"), "--ontology", "ctd",
                      "--store", store, "-q"]) == 0
    (tmp / "train.concept").write_text(train)
    (tmp / "dev.concept").write_text(dev)
    return {"tmp": tmp, "store": store, "train": tmp / "train.concept", "dev": tmp / "dev.concept"}
