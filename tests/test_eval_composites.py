"""One rule for gold mentions with several ids (kgnorm.evaluation.composites): a composite needs every
part right, a mention with alternative ids needs one of them; `eval link` reports the composites left
unsplit."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import exit_code, run
from kgnorm.evaluation.composites import is_composite, scoring_gold, unsplit_composites
from kgnorm.mentions.readers import read_mentions
from kgnorm.mentions.types import Mention

FIX = Path(__file__).parent / "fixtures"


def M(text, gold, type="", parts=()):
    return Mention(text=text, gold=list(gold), type=type, parts=list(parts))


def test_the_rule():
    two = ["MESH:D1", "MESH:D2"]
    assert not is_composite(M("fever", ["MESH:D1"]))
    # parts listed (BC5CDR 7th column, '|' in a .concept text) -> composite, whatever the text
    assert is_composite(M("hyperammonemic encephalopathy", two, "Disease", ["hyperammonemic", "encephalopathy"]))
    # NCBI-disease's types decide where the corpus has them
    assert is_composite(M("C6 and C7 deficiencies", two, "CompositeMention"))
    assert not is_composite(M("combined deficiency of C6 and C7", two, "SpecificDisease"))
    assert not is_composite(M("ACTH deficiency", two, "SpecificDisease"))
    # no mark (.concept, BC5CDR's convention): a composite, coordination or not
    assert is_composite(M("cocaine or amphetamine abuse", two, "Disease"))
    assert is_composite(M("hemorrhagic cystitis", two, "Disease"))
    assert scoring_gold(M("ACTH deficiency", ["OMIM:201400", "MESH:C535668"], "SpecificDisease")) == \
        ["OMIM:201400+MESH:C535668"]
    assert scoring_gold(M("ACTH deficiency", ["MESH:D1", "-1"], "SpecificDisease")) == ["MESH:D1"]
    assert scoring_gold(M("acute and chronic pain", two, "Disease")) == two
    assert scoring_gold(M("x", [])) == []
    assert unsplit_composites([M("acute and chronic pain", two), M("hemorrhagic cystitis", two),
                               M("ACTH deficiency", two, "SpecificDisease")], [2, 1, 1]) == (2, 1)


def test_concept_reader_text_with_bar_gives_parts(tmp_path):
    f = tmp_path / "g.concept"
    f.write_text("1||0|29||Disease||cocaine abuse|amphetamine abuse||D019970|D019969\n")
    (m,) = read_mentions(f)
    assert is_composite(m) and m.parts == ["cocaine abuse", "amphetamine abuse"]


TITLE = "Fictional syndrome and toe syndrome in FTS2 carriers with made-up syndromes."


def _pubtator(tmp: Path) -> Path:
    rows = [("Fictional syndrome and toe syndrome", "CompositeMention", "D900001|D900002"),
            ("FTS2", "SpecificDisease", "OMIM:999002|D900002"),
            ("made-up syndromes", "DiseaseClass", "D900001")]
    lines = [f"1|t|{TITLE}", "1|a|"]
    for text, typ, ids in rows:
        start = TITLE.index(text)
        lines.append(f"1\t{start}\t{start + len(text)}\t{text}\t{typ}\t{ids}")
    path = tmp / "gold.txt"
    path.write_text("\n".join(lines) + "\n\n")
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("composites")
    uri = f"ladybug://{tmp}/graph"
    assert exit_code(["ingest", "medic", str(FIX / "medic/CTD_diseases.tsv"), "--ontology", "ctd", "--store", uri,
                      "-q"]) == 0
    return uri


def _tsv(tmp: Path, rows: list[tuple[str, str]]) -> Path:
    ids = [f"1:{TITLE.index(t)}-{TITLE.index(t) + len(t)}" for t in
           ("Fictional syndrome and toe syndrome", "FTS2", "made-up syndromes")]
    path = tmp / "pred.tsv"
    body = [f"{mid}\t{text}\t1\t{uids}\t0.9\t0" for mid, (text, uids) in zip(ids, rows)]
    path.write_text("mention_id\tmention\trank\tconcept_uids\tscore\tnil\n" + "\n".join(body) + "\n")
    return path


def test_eval_link_applies_the_rule(capsys, store, tmp_path):
    gold = _pubtator(tmp_path)
    args = ["eval", "link", "--gold", str(gold), "--ontology", "ctd", "--format", "json", "--store", store]
    # the composite split and both parts right; FTS2 linked to one of its two allowed ids
    split = _tsv(tmp_path, [("x", "MESH:D900001|MESH:D900002"), ("FTS2", "MESH:D900002"),
                            ("made-up syndromes", "MESH:D900001")])
    code, out, err = run(capsys, *args, "--predictions", str(split))
    assert code == 0, err
    rep = json.loads(out)
    assert rep["full"]["acc1"] == 1.0 and rep["composites"] == 1 and rep["composites_unsplit"] == 0
    # the composite left unsplit with one of its concepts: a miss, and counted
    unsplit = _tsv(tmp_path, [("x", "MESH:D900002"), ("FTS2", "OMIM:999002"), ("made-up syndromes", "MESH:D900002")])
    code, out, err = run(capsys, *args, "--predictions", str(unsplit))
    assert code == 0, err
    rep = json.loads(out)
    assert rep["full"]["acc1"] == pytest.approx(1 / 3) and rep["composites_unsplit"] == 1
    code, out, err = run(capsys, *args[:-4], "--ontology", "ctd", "--store", store, "--predictions", str(unsplit))
    assert code == 0 and "left unsplit by the linker (misses): 1" in out
