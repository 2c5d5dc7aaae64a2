"""kgnorm.Workbench, the Python API the CLI wraps: ingest, ontologies, query (read-only unless
write=True), train through the method recipes, link, hypernyms, evaluate, evaluate_hierarchy,
relatedness, embed, build_corpus and compact, called directly."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from cli_runner import run
from test_cli_hierarchy import _toy_obo

from kgnorm import Workbench
from kgnorm.errors import InputError, KgnormError

FIX = Path(__file__).parent / "fixtures"
GOLD = ("1||0|18||Disease||fictional syndrome||D900001\n"
        "2||0|11||Disease||toe disease||D900002\n"
        "3||0|4||Disease||fts2||999002\n")


@pytest.fixture(scope="module")
def wb(tmp_path_factory) -> Workbench:
    """A store holding the invented HPO fixture as `hp`, loaded through the API."""
    tmp = tmp_path_factory.mktemp("api")
    bench = Workbench(f"ladybug://{tmp}/graph")
    summary = bench.ingest("obo", FIX / "obo/hp_mini.obo", ontology="hp", quiet=True)
    assert summary.ontology == "hp" and summary.concepts == 6 and summary.is_a == 6 and not summary.replaced
    return bench


def _concepts(bench: Workbench) -> int:
    return int(bench.query("MATCH (c:Concept) RETURN count(c) AS n")["n"][0])


def test_import_kgnorm_is_light():
    """`import kgnorm` and naming kgnorm.Workbench load neither torch nor pandas."""
    code = ("import sys, kgnorm; w = kgnorm.Workbench('ladybug:///nonexistent/x'); "
            "print(sorted(m for m in ('torch', 'transformers', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_ontologies_and_query(wb):
    onts = wb.ontologies()
    row = onts[onts["ontology"] == "hp"].iloc[0]
    assert row["concepts"] == 6 and row["is_a_edges"] == 6
    names = wb.query("MATCH (c:Concept {uid: $uid}) RETURN c.name AS name", uid="HP:9990001")
    assert list(names.columns) == ["name"] and names["name"].tolist() == ["Fictional finger curl"]
    assert _concepts(wb) == 6


@pytest.fixture(params=["ladybug", "bolt"])
def any_store(request, tmp_path, monkeypatch) -> tuple[str, str]:
    """(uri, kind) of an empty store of either backend (Bolt: the tests' server)."""
    if request.param == "ladybug":
        return f"ladybug://{tmp_path}/graph", "ladybug"
    uri, database, kind = request.getfixturevalue("bolt_server")
    if database:
        monkeypatch.setenv("KGNORM_NEO4J_DATABASE", database)
    Workbench(uri).query("MATCH (n) DETACH DELETE n", write=True)
    return uri, kind


def test_query_write_is_refused_unless_asked(any_store):
    uri, _ = any_store
    bench = Workbench(uri)
    bench.ingest("obo", FIX / "obo/hp_mini.obo", ontology="hp", quiet=True)
    set_name = "MATCH (c:Concept {uid: $uid}) SET c.name = $name RETURN c.name AS name"
    name_of = "MATCH (c:Concept {uid: $uid}) RETURN c.name AS n"
    assert bench.ontologies()["concepts"].tolist() == [6]
    # on ArcadeDB (which runs writes in READ access mode) the refusal and rollback are kgnorm's own
    with pytest.raises(KgnormError, match="the store is opened read-only: pass --write to change it"):
        bench.query(set_name, uid="HP:9990001", name="renamed")
    assert bench.query(name_of, uid="HP:9990001")["n"].tolist() == ["Fictional finger curl"]
    assert bench.query(set_name, write=True, uid="HP:9990001", name="renamed")["name"].tolist() == ["renamed"]
    assert bench.query(name_of, uid="HP:9990001")["n"].tolist() == ["renamed"]


def test_ingest_again_replaces_and_bad_input_leaves_the_store(wb, tmp_path, capsys):
    again = wb.ingest("obo", FIX / "obo/hp_mini.obo", ontology="hp")
    assert again.replaced and again.unchanged and again.concepts == 6
    err = capsys.readouterr().err  # the CLI's status lines, on stderr
    assert err.startswith("replaced hp hp/releases/2099-01-01: 6 concepts") and "kgnorm: hp: kept 0 link(s)" in err
    with pytest.raises(InputError, match="no such file"):
        wb.ingest("obo", tmp_path / "missing.obo", ontology="hp")
    with pytest.raises(KgnormError):
        wb.ingest("obo", FIX / "obo/error_page.obo", ontology="hp")  # not OBO at all
    with pytest.raises(KgnormError, match="unknown ontology format"):
        wb.ingest("owl", FIX / "obo/hp_mini.obo")
    assert _concepts(wb) == 6 and wb.ontologies()["ontology"].tolist() == ["hp"]


def test_bad_store_uri_fails_at_once():
    with pytest.raises(KgnormError, match="unknown store URI scheme"):
        Workbench("http://example.org/graph")


@pytest.fixture(scope="module")
def medic(tmp_path_factory, tiny_bert_dir) -> dict:
    """A store with the MEDIC fixture and a one-step BioSyn model trained through Workbench.train."""
    tmp = tmp_path_factory.mktemp("api-medic")
    bench = Workbench(f"ladybug://{tmp}/graph")
    bench.ingest("medic", FIX / "medic/CTD_diseases.tsv", ontology="ctd", quiet=True)
    gold = tmp / "gold.concept"
    gold.write_text(GOLD)
    model = bench.train("biosyn", tmp / "model", ontology="ctd", train=gold, encoder=tiny_bert_dir, epochs=1,
                        max_steps=1, top_k=4, quiet=True)
    return {"wb": bench, "model": model, "gold": gold, "tmp": tmp}


def test_train_biosyn_through_the_recipe(medic):
    model = medic["model"]
    meta = json.loads((model / "kgnorm-model.json").read_text())
    assert model == medic["tmp"] / "model"
    assert meta["method"] == "biosyn" and meta["ontology"] == "ctd"
    assert meta["text_pipeline"]["composites"] is True
    assert not list(model.glob("checkpoint*"))  # dropped once the model is written (no keep_checkpoints)


def test_train_refusals(medic, tmp_path):
    bench = medic["wb"]
    with pytest.raises(KgnormError, match="unknown model method"):
        bench.train("word2vec", tmp_path / "m", ontology="ctd")
    with pytest.raises(KgnormError, match="--preset"):
        bench.train("biosyn", tmp_path / "m", ontology="ctd", preset="fast")
    with pytest.raises(KgnormError, match="unexpected keyword argument 'epoch'.*its options: ontology"):
        bench.train("biosyn", tmp_path / "m", ontology="ctd", epoch=1)
    with pytest.raises(KgnormError, match="missing a required argument: 'root'"):
        bench.train("dan", tmp_path / "m", ontology="ctd", level=1)
    with pytest.raises(KgnormError, match="Workbench's store"):
        bench.train("biosyn", tmp_path / "m", ontology="ctd", store="elsewhere")
    assert not (tmp_path / "m").exists()


def test_evaluate_matches_eval_link(medic, capsys):
    report = medic["wb"].evaluate(medic["model"], medic["gold"])
    assert report["full"]["n"] == 3 and 0.0 <= report["full"]["acc1"] <= report["full"]["acc5"] <= 1.0
    code, out, err = run(capsys, "eval", "link", "--model", str(medic["model"]), "--gold", str(medic["gold"]),
                         "--format", "json", "--store", medic["wb"].store, "-q")
    assert code == 0, err
    assert json.loads(out)["full"] == report["full"]
    with pytest.raises(KgnormError, match="--nil-fraction"):
        medic["wb"].evaluate(medic["model"], medic["gold"], nil_fraction=1.5)


def test_link_returns_the_tsv_rows_and_writes_the_edges(medic, tmp_path, capsys):
    """Workbench.link: a file or a list of texts; the frame is what `kgnorm link` writes, and the
    store gets one run whose LINKED_TO edges are the rank-1 rows."""
    bench, model = medic["wb"], medic["model"]
    frame = bench.link(model, medic["gold"], top_k=3, write=False)
    code, out, err = run(capsys, "link", "--model", str(model), "--input", str(medic["gold"]), "--top-k", "3",
                         "--no-write", "--store", bench.store, "-q")
    assert code == 0, err
    tsv = pd.read_csv(io.StringIO(out), sep="\t", dtype=str, keep_default_na=False)
    assert list(frame.columns) == list(tsv.columns) == ["mention_id", "mention", "rank", "concept_uids", "score", "nil"]
    assert frame.astype(str).assign(score=frame["score"].map("{:.4f}".format)).equals(tsv)
    texts = ["fictional syndrome", "toe disease"]
    linked = bench.link(model, texts, top_k=2, write_batch=1)
    assert sorted(set(linked["mention_id"])) == ["1", "2"] and linked["rank"].max() <= 2
    edges = bench.query("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) WHERE m.mention_id IN $ids "
                        "RETURN m.mention_id AS id, c.uid AS uid ORDER BY id", ids=["1", "2"])
    top = linked[linked["rank"] == 1].sort_values("mention_id")
    assert edges["uid"].tolist() == top["concept_uids"].tolist()


def test_every_command_has_its_workbench_call(medic, tmp_path, capsys):
    """embed, eval relatedness, corpus build and compact through the Workbench: the same files and
    figures as the commands."""
    import numpy as np

    bench, model = medic["wb"], medic["model"]
    base = bench.embed(model, tmp_path / "vec", names=["toe disease", "fictional syndrome"])
    assert base == tmp_path / "vec" and np.load(tmp_path / "vec.npy").shape[0] == 2
    code, _, err = run(capsys, "embed", "--model", str(model), "--input", str(medic["gold"]), "--output",
                       str(tmp_path / "cli-vec"), "--store", bench.store, "-q")
    assert code == 0, err
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("Mean,Stdev,Term1,Term2,CUI1,CUI2\n1500,10,toe disease,toe syndrome,C1,C2\n"
                     "900,10,fictional syndrome,made-up syndrome,C3,C4\n100,10,toe disease,fts2,C1,C5\n")
    frame = bench.relatedness(model, pairs)
    code, out, err = run(capsys, "eval", "relatedness", "--model", str(model), "--pairs", str(pairs), "--format",
                         "json")
    assert code == 0, err
    assert frame["spearman"].tolist() == [r["spearman"] for r in json.loads(out)]
    assert frame["name"].tolist() == ["biosyn"] and frame["n_pairs"].tolist() == [3]
    text = tmp_path / "docs.txt"
    text.write_text("Patients with fictional syndromes were seen. One had FTS2 and one made-up syndrome.\n")
    corpus = bench.build_corpus("ctd", text, tmp_path / "corpus", cap=5)
    assert json.loads((corpus / "corpus.json").read_text())["counts"]["rows"] >= 2
    with pytest.raises(KgnormError, match="unknown ontology"):
        bench.build_corpus("nope", text, tmp_path / "c2")
    before = bench.query("MATCH (c:Concept) RETURN c.uid AS uid ORDER BY uid")
    summary = bench.compact()
    assert summary.nodes >= len(before) and bench.query("MATCH (c:Concept) RETURN c.uid AS uid ORDER BY uid").equals(before)


def test_train_dan_and_hypernyms(tmp_path, tiny_bert_dir):
    obo = tmp_path / "toy.obo"
    _toy_obo(obo)
    bench = Workbench(f"ladybug://{tmp_path}/graph")
    bench.ingest("obo", obo, ontology="toy", quiet=True)
    model = bench.train("dan", tmp_path / "dan", ontology="toy", root="TOY:0000", level=2, encoder=tiny_bert_dir,
                        hidden=16, epochs=1, threads=1, quiet=True)
    assert json.loads((model / "kgnorm-model.json").read_text())["level"] == 2

    hits = bench.hypernyms(model, "TOY:0000", 2, top_k=3)
    assert list(hits.columns) == ["name", "rank", "hypernym_uid", "hypernym_name", "score"]
    assert set(hits.groupby("name")["rank"].apply(list).map(tuple)) == {(1, 2, 3)}
    n_names = hits["name"].nunique()
    edges = "MATCH ()-[p:PREDICTED_IS_A]->() RETURN count(p) AS n"
    assert bench.query(edges)["n"][0] == n_names  # top-1 per held-out name's concept
    bench.hypernyms(model, "TOY:0000", 2, top_k=3)
    assert bench.query(edges)["n"][0] == n_names  # the same run again: one copy

    free = bench.hypernyms(model, "TOY:0000", 2, names=["cardiac ring", "ocular cleft"], write=False, top_k=1)
    assert free["name"].tolist() == ["cardiac ring", "ocular cleft"]
    assert free["hypernym_uid"].str.startswith("TOY:").all()
    assert bench.query(edges)["n"][0] == n_names  # write=False wrote nothing
    with pytest.raises(KgnormError, match="--level"):
        bench.hypernyms(model, "TOY:0000", 7)
    with pytest.raises(KgnormError, match="not a concept"):
        bench.hypernyms(model, "TOY:9999", 2, write=False)

    scores = bench.evaluate_hierarchy(model, "TOY:0000", baselines=False)  # `kgnorm eval hierarchy`
    assert list(scores.columns) == ["scorer", "level", "map", "mrr"]
    assert scores["scorer"].unique().tolist() == ["dan"] and scores["level"].tolist() == [1, 2, 3, 4]
    assert scores[["map", "mrr"]].stack().between(0, 1).all()


def test_train_commands_pass_the_recipes_keywords():
    """Each `kgnorm train METHOD` is generated from its recipe's Options: the same names and the
    same defaults, so the CLI and Workbench.train run the same thing."""
    import inspect
    from dataclasses import MISSING, fields

    from kgnorm.cli.train_cmds import command_for
    from kgnorm.methods.registry import METHODS

    for name, entry in METHODS.items():
        opts = {f.name: inspect.Parameter.empty if f.default is MISSING else f.default
                for f in fields(entry.options())}
        command = inspect.signature(command_for(name)).parameters
        assert set(command) == set(opts) | {"store", "quiet"}, name
        assert {k: command[k].default for k in opts} == opts, name