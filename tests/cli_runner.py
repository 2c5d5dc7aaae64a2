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


def link_then_eval(capsys, model, dev, store: str, tsv, ontology: str = "ctd", top_k: int = 3) -> tuple[list, list]:
    """`kgnorm link --no-write --output TSV` of ``dev`` with ``model``: the TSV's rows, and the `eval link
    --format json` reports of it from the TSV (``--predictions``) and in-process (``--model``)."""
    import csv
    import json

    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(dev), "--top-k", str(top_k),
                       "--no-write", "--output", str(tsv), "-q")
    assert code == 0, err
    with open(tsv, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    reps = []
    for how in (["--predictions", str(tsv), "--ontology", ontology], ["--model", str(model)]):
        code, out, err = run(capsys, "eval", "link", *how, "--gold", str(dev), "--format", "json", "--store", store)
        assert code == 0, err
        reps.append(json.loads(out))
    return rows, reps
