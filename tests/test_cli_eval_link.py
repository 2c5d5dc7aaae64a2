"""`kgnorm eval link` scores what `link` writes: --predictions on link's TSV, --model on the same rows,
an independent reading of the TSV, all three agree; bad predictions/gold files fail with one line."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from cli_runner import run

FIX = Path(__file__).parent / "fixtures"
GOLD = ("1||0|18||Disease||fictional syndrome||D900001\n"
        "2||0|11||Disease||toe disease||D900002\n"
        "3||0|4||Disease||fts2||999002\n"
        "4||0|19||Disease||made-up syndromes||D900001\n"
        "5||0|36||Disease||fictional syndrome and toe syndrome||D900001|D900002\n"
        "6||0|8||Disease||toe pain||-1\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    """A store with the fixture ontology, a 1-epoch BioSyn model, gold mentions and link's TSV of them."""
    from cli_runner import exit_code

    tmp = tmp_path_factory.mktemp("evallink")
    store = f"ladybug://{tmp}/graph"
    assert exit_code(["ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--ontology", "ctd",
                      "--store", store, "-q"]) == 0
    gold = tmp / "gold.concept"
    gold.write_text(GOLD)
    model = tmp / "model"
    assert exit_code(["train", "biosyn", "--ontology", "ctd", "--out", str(model), "--train", str(gold),
                      "--encoder", str(tiny_bert_dir), "--epochs", "1", "--topk", "4", "--store", store,
                      "-q"]) == 0
    tsv = tmp / "links.tsv"
    assert exit_code(["link", "--model", str(model), "--input", str(gold), "--top-k", "5", "--no-write",
                      "--output", str(tsv), "-q"]) == 0
    return {"store": store, "gold": gold, "model": model, "tsv": tsv, "tmp": tmp}


def _doc(mention_id: str) -> str:
    """The .concept document of a mention id (``doc:start-end``)."""
    return mention_id.split(":")[0]


def _independent_acc1(tsv: Path) -> float:
    """Rank-1 concepts read straight from the TSV against GOLD (alt ids play no role here): parts aligned by
    position; a composite left unsplit is a miss (GOLD's one several-id mention is a coordination)."""
    gold = {}
    for line in GOLD.splitlines():
        f = line.split("||")
        ids = [("OMIM:" if g.isdigit() else "MESH:") + g for g in f[4].split("|")]
        if f[4] != "-1":
            gold[f[0]] = ids
    top = {_doc(r["mention_id"]): r["concept_uids"].split("|") for r in csv.DictReader(tsv.open(), delimiter="\t")
           if r["rank"] == "1" and r["nil"] == "0"}
    right = sum(1 for mid, g in gold.items() if mid in top and (
        top[mid] == g))
    return right / len(gold)


def test_predictions_model_and_independent_scoring_agree(capsys, world):
    code, out, err = run(capsys, "eval", "link", "--predictions", str(world["tsv"]), "--gold", str(world["gold"]),
                         "--ontology", "ctd", "--format", "json", "--store", world["store"])
    assert code == 0, err
    from_file = json.loads(out)
    code, out, err = run(capsys, "eval", "link", "--model", str(world["model"]), "--gold", str(world["gold"]),
                         "--format", "json", "--store", world["store"])
    assert code == 0, err
    from_model = json.loads(out)
    assert from_file["full"] == from_model["full"]
    assert from_file["full"]["n"] == 5 and from_file["full"]["skipped"] == 1
    assert from_file["full"]["acc1"] == pytest.approx(_independent_acc1(world["tsv"]))


def test_composite_rule_same_from_tsv_and_model(capsys, world):
    """A typed PubTator gold (NCBI's CompositeMention / SpecificDisease): the TSV `link` writes and
    `eval link --model` give the same figures and the same composite counts (document consistency on in both)."""
    title = "Fictional syndrome and toe syndrome in FTS2 carriers."
    lines = [f"1|t|{title}", "1|a|"]
    for text, typ, ids in [("Fictional syndrome and toe syndrome", "CompositeMention", "D900001|D900002"),
                           ("FTS2", "SpecificDisease", "OMIM:999002|D900002")]:
        s = title.index(text)
        lines.append(f"1\t{s}\t{s + len(text)}\t{text}\t{typ}\t{ids}")
    gold = world["tmp"] / "typed.txt"
    gold.write_text("\n".join(lines) + "\n\n")
    tsv = world["tmp"] / "typed.tsv"
    code, _, err = run(capsys, "link", "--model", str(world["model"]), "--input", str(gold), "--top-k", "5",
                       "--no-write", "--output", str(tsv), "-q", "--consistency")
    assert code == 0, err
    reps = []
    for how in (["--predictions", str(tsv), "--ontology", "ctd"], ["--model", str(world["model"]), "--consistency"]):
        code, out, err = run(capsys, "eval", "link", *how, "--gold", str(gold), "--format", "json",
                             "--store", world["store"])
        assert code == 0, err
        reps.append(json.loads(out))
    assert reps[0]["full"] == reps[1]["full"] and reps[0]["full"]["n"] == 2
    assert (reps[0]["composites"], reps[0]["composites_unsplit"]) == (reps[1]["composites"],
                                                                      reps[1]["composites_unsplit"])
    assert reps[0]["composites"] == 1


def test_nil_rows_are_no_link(capsys, world):
    tsv = world["tmp"] / "all_nil.tsv"
    lines = world["tsv"].read_text().splitlines()
    tsv.write_text("\n".join([lines[0]] + [ln[:-1] + "1" for ln in lines[1:]]) + "\n")
    code, out, err = run(capsys, "eval", "link", "--predictions", str(tsv), "--gold", str(world["gold"]),
                         "--ontology", "ctd", "--format", "json", "--store", world["store"])
    assert code == 0, err
    assert json.loads(out)["full"]["acc5"] == 0.0


def _one_error(code: int, err: str, *needles: str) -> None:
    assert code != 0
    lines = [ln for ln in err.strip().splitlines() if ln.startswith("kgnorm: error")]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], lines[0]
    assert "Traceback" not in err


def test_bad_predictions_and_gold(capsys, world):
    tmp, lines = world["tmp"], world["tsv"].read_text().splitlines()
    base = ["eval", "link", "--gold", str(world["gold"]), "--ontology", "ctd", "--store", world["store"]]
    wrong = tmp / "wrong.tsv"
    wrong.write_text("id\ttext\tuid\n1\tx\tMESH:D900001\n")
    _one_error(*run(capsys, *base, "--predictions", str(wrong))[::2], "wrong.tsv:1", "header")
    missing = tmp / "missing.tsv"
    ids = {_doc(ln.split("\t")[0]): ln.split("\t")[0] for ln in lines[1:]}
    missing.write_text("\n".join(ln for ln in lines if _doc(ln.split("\t")[0]) not in ("3", "4")) + "\n")
    _one_error(*run(capsys, *base, "--predictions", str(missing))[::2], "missing.tsv", "2 gold mention id(s)",
               f"first: {ids['3']}, {ids['4']}")
    extra = tmp / "extra.tsv"
    extra.write_text("\n".join(lines + ["99\tghost\t1\tMESH:D900001\t0.5000\t0"]) + "\n")
    _one_error(*run(capsys, *base, "--predictions", str(extra))[::2], "not in the gold file", "first: 99")
    skipped = tmp / "skipped.tsv"
    skipped.write_text("\n".join(ln for ln in lines if not (_doc(ln) == "1" and "\t2\t" in ln)) + "\n")
    _one_error(*run(capsys, *base, "--predictions", str(skipped))[::2], "skipped.tsv:", "rank 3 where rank 2")
    unknown = tmp / "unknown.concept"
    unknown.write_text(GOLD + "7||0|18||Disease||ghost||D123456\n8||0|18||Disease||ghost||D123456\n")
    ok = tmp / "ok_unknown.tsv"
    ok.write_text("\n".join(lines + [f"{ids['1'].replace('1:', d + ':', 1)}\tghost\t1\tMESH:D900001\t0.5000\t0"
                                      for d in ("7", "8")]) + "\n")
    args = ["eval", "link", "--gold", str(unknown), "--predictions", str(ok), "--ontology", "ctd",
            "--store", world["store"], "--format", "json"]
    _one_error(*run(capsys, *args)[::2], "unknown.concept", "1 gold id(s) in 2 mention(s)", "MESH:D123456")
    code, out, err = run(capsys, *args, "--allow-unknown-gold")
    assert code == 0, err
    rep = json.loads(out)
    assert rep["full"]["n"] == 7 and rep["unknown_gold_ids"] == 1 and rep["unknown_gold_mentions"] == 2
    # beside all mentions, the mentions whose gold concept is in the store: the 2 unknown ones left out
    assert rep["in_store"]["n"] == 5 and rep["in_store"]["acc1"] == pytest.approx(rep["full"]["acc1"] * 7 / 5)
    assert "scored as misses" in err
    _one_error(*run(capsys, "eval", "link", "--gold", str(world["gold"]), "--predictions", str(world["tsv"]))[::2],
               "--ontology")
