"""An ontology with no annotated corpus (the HPO recipe, docs/recipes.md): `train biosyn --from-names`
learns from the ontology's own names through the CLI; `annotate --ner dictionary:ONT` finds plurals and
abbreviations the text defines, and types the mentions of an HP-id ontology Phenotype, under
HP:0000118 only."""
from __future__ import annotations

import json
import textwrap

import pytest

from cli_runner import exit_code, run
from kgnorm.documents.readers import read_documents

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# a tiny HPO-like ontology: a root, the phenotypic abnormality branch with siblings and synonyms, and
# a mode-of-inheritance branch outside HP:0000118
OBO = textwrap.dedent("""\
    format-version: 1.2
    data-version: tiny/2026-01-01

    [Term]
    id: HP:0000001
    name: All

    [Term]
    id: HP:0000118
    name: Phenotypic abnormality
    is_a: HP:0000001

    [Term]
    id: HP:0000005
    name: Mode of inheritance
    is_a: HP:0000001

    [Term]
    id: HP:0000006
    name: Autosomal dominant inheritance
    synonym: "Autosomal dominant" EXACT []
    is_a: HP:0000005

    [Term]
    id: HP:0001250
    name: Seizure
    synonym: "Epileptic seizure" EXACT []
    synonym: "Seizures" EXACT []
    is_a: HP:0000118

    [Term]
    id: HP:0200034
    name: Papule
    synonym: "Skin papule" EXACT []
    is_a: HP:0000118

    [Term]
    id: HP:0002671
    name: Basal cell carcinoma
    synonym: "Basal cell epithelioma" EXACT []
    is_a: HP:0000118

    [Term]
    id: HP:0001172
    name: Abnormality of the thumb
    synonym: "Thumb anomaly" EXACT []
    is_a: HP:0000118
    """)

TEXTS = {
    "d1": "Basal cell carcinoma (BCC) was seen with autosomal dominant inheritance. Two BCC grew; papules too.",
    "d2": "Recurrent epileptic seizures and thumb abnormalities.",
}


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("nocorpus")
    store = f"ladybug://{tmp}/graph"
    (tmp / "tiny.obo").write_text(OBO, encoding="utf-8")
    assert exit_code(["ingest", "obo", str(tmp / "tiny.obo"), "--ontology", "tinyhp", "--store", store, "-q"]) == 0
    docs = tmp / "abstracts"
    docs.mkdir()
    for name, text in TEXTS.items():
        (docs / f"{name}.txt").write_text(text, encoding="utf-8")
    return tmp, store, docs


def test_train_biosyn_without_mentions_learns_from_the_ontology_names(world, tiny_bert_dir, capsys):
    tmp, store, _ = world
    model = tmp / "names"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "tinyhp", "--from-names", "--out", str(model),
                       "--encoder", str(tiny_bert_dir), "--epochs", "1", "--batch-size", "4", "--topk", "4",
                       "--store", store)
    assert code == 0, err
    assert "training on the ontology's names" in err
    meta = json.loads((model / "kgnorm-model.json").read_text())
    # every name of a concept with two or more names is a query: 2 + 3 + 2 + 2 + 2 names
    assert meta["training"]["n_queries"] == 11
    assert meta["hyper_parameters"]["hard_negatives"] == 3
    assert meta["refit"] == {"refit": False}
    # the same command without --from-names keeps building the untrained index
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "tinyhp", "--out", str(tmp / "untrained"),
                       "--encoder", str(tiny_bert_dir), "--store", store)
    assert code == 0 and "untrained model" in err
    # --from-names with --train: one error line
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "tinyhp", "--from-names", "--train",
                       str(tmp / "tiny.obo"), "--out", str(tmp / "x"), "--encoder", str(tiny_bert_dir), "--store", store)
    assert code != 0 and "--from-names" in err


def test_dictionary_annotate_finds_plurals_abbreviations_and_types_phenotype(world, tiny_bert_dir, capsys):
    tmp, store, docs = world
    model = tmp / "untrained"
    if not model.exists():
        assert exit_code(["train", "biosyn", "--ontology", "tinyhp", "--out", str(model), "--encoder",
                          str(tiny_bert_dir), "--store", store, "-q"]) == 0
    out = tmp / "out.pubtator"
    code, _, err = run(capsys, "annotate", "--ner", "dictionary:tinyhp", "--model", str(model), "--input", str(docs),
                       "--output", str(out), "--no-write", "--store", store)
    assert code == 0, err
    got = {d.doc_id: [(a.text, a.type) for a in d.annotations] for d in read_documents(out, "pubtator")}
    texts = {k: [t for t, _ in v] for k, v in got.items()}
    assert {t for v in got.values() for _, t in v} == {"Phenotype"}
    # the short form the text defines is tagged wherever it occurs; "papules" is the name "Papule"
    assert texts["d1"] == ["Basal cell carcinoma", "BCC", "BCC", "papules"]
    # outside HP:0000118 (a mode of inheritance) nothing is tagged; a plural and another word order are
    assert "autosomal dominant inheritance" not in " ".join(texts["d1"]).lower()
    assert texts["d2"] == ["epileptic seizures", "thumb abnormalities"]


def test_dictionary_spec_options(world, tiny_bert_dir, capsys):
    from kgnorm.jobs.detectors import DetectorContext, resolve

    _, store, _ = world
    text = ["Autosomal dominant inheritance of seizures."]
    whole, label = resolve("dictionary:tinyhp,root=none,type=Sign", DetectorContext(store))
    assert [(s.text, s.type) for s in whole.detect(text)[0]] == [("Autosomal dominant inheritance", "Sign"),
                                                                  ("seizures", "Sign")]
    assert label.startswith("dictionary:tinyhp,type=Sign@")
    default, label = resolve("dictionary:tinyhp", DetectorContext(store))
    assert [s.text for s in default.detect(text)[0]] == ["seizures"]
    assert label.startswith("dictionary:tinyhp,root=HP:0000118,type=Phenotype@")
    for bad in ("dictionary:tinyhp,depth=2", "dictionary:tinyhp,root=HP:9999999"):
        with pytest.raises(Exception, match="root"):
            resolve(bad, DetectorContext(store))
    plain, label = resolve("dictionary:tinyhp,coordinations=off", DetectorContext(store))
    assert plain.coordinations is False and label.startswith("dictionary:tinyhp,root=HP:0000118,type=Phenotype,"
                                                              "coordinations=off@")
    with pytest.raises(Exception, match="coordinations"):
        resolve("dictionary:tinyhp,coordinations=maybe", DetectorContext(store))


def test_name_queries_take_sibling_names_as_hard_negatives():
    import numpy as np

    from kgnorm.graph.hierarchy import Hierarchy
    from kgnorm.linking.dictionary import NameDictionary
    from kgnorm.methods.biosyn.train import with_hard_negatives
    from kgnorm.training.ontology_names import ontology_name_queries

    names = {"R": ["root"], "A": ["left ventricle", "lv"], "B": ["right ventricle", "rv"], "C": ["atrium"]}
    d = NameDictionary.from_entries((n, u) for u, ns in names.items() for n in ns)
    h = Hierarchy.from_edges(names, [("A", "R"), ("B", "R"), ("C", "R")])
    q = ontology_name_queries(d, h)
    # C has one name: no query; A's negatives are B's and C's names, never its own
    assert [p for p, _ in q.pairs] == ["left ventricle", "lv", "right ventricle", "rv"]
    rows = {d.names[r] for r in q.negatives[0]}
    assert rows == {"right ventricle", "rv", "atrium"}
    gold = [{d.index_of("lv"): 1}]
    cand = np.array([[d.index_of("lv"), d.index_of("root"), d.index_of("left ventricle")]])
    out = with_hard_negatives(cand, [q.negatives[0]], gold, 1, np.random.default_rng(0))
    assert out[0, 0] == d.index_of("lv")  # the gold candidate stays
    assert d.names[out[0, 2]] in rows and out[0, 1] == d.index_of("root")
