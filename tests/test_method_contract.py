"""The contract every registered method keeps (kgnorm.methods.registry's docstring), one case per entry of
``METHODS``: `kgnorm train <name>` (generated from its Options) writes a tiny model directory on a toy
ontology, and what the method's kind promises holds -- a linker (``index``, ``context``, ``wrapper``)
opens through ``open_linker``, its meta is readable without weights, ``link_parts`` answers one ranked
list per query part and `kgnorm link` writes rows for every mention; an ``encoder`` encodes names and
refuses to link; a ``detector`` refuses both. A new entry is tested by registering it: its required
options are filled by name (ontology, train, linker, member, route, corpus ...); ``TINY`` only keeps the
built-in methods small."""
from __future__ import annotations

import csv
import io
import json
from dataclasses import MISSING, fields
from pathlib import Path

import numpy as np
import pytest

from cli_runner import exit_code, run
from kgnorm.methods.registry import METHODS

pytestmark = pytest.mark.usefixtures("one_torch_thread")

FAMILIES = {"toe": ["toe pain", "toe swelling"], "hand": ["hand tremor", "hand cramp"],
            "skin": ["skin rash", "skin itch"]}


def toy_obo(path: Path) -> list[str]:
    """A root, three families, two leaves each with synonyms, and below each leaf a chain three deep:
    names every method can learn from. Its ids."""
    terms = ["[Term]\nid: T:0000\nname: toy disease"]
    for i, (family, leaves) in enumerate(FAMILIES.items(), 1):
        fid = f"T:{i}000"
        terms.append(f'[Term]\nid: {fid}\nname: {family} disorder\nsynonym: "{family} disease" EXACT []\n'
                     f"is_a: T:0000")
        for j, leaf in enumerate(leaves, 1):
            terms.append(f'[Term]\nid: T:{i}00{j}\nname: {leaf}\nsynonym: "{leaf} syndrome" EXACT []\n'
                         f'synonym: "painful {leaf}" RELATED []\nis_a: {fid}')
            parent, name = f"T:{i}00{j}", leaf
            for k, word in enumerate(("mild", "early", "left"), 1):
                name = f"{name} {word}"
                terms.append(f"[Term]\nid: T:{i}{j}0{k}\nname: {name}\nis_a: {parent}")
                parent = f"T:{i}{j}0{k}"
    path.write_text("format-version: 1.2\ndata-version: toy/2099-01-01\nontology: toy\n\n"
                    + "\n\n".join(terms) + "\n", encoding="utf-8")
    return [t.split("\n")[1][4:] for t in terms]


MENTIONS = [("toe pain", "T:1001"), ("swelling of the toe", "T:1002"), ("hand tremors", "T:2001"),
            ("skin itching", "T:3002"), ("skin disease", "T:3000"), ("hand cramps", "T:2002")]


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    tmp = tmp_path_factory.mktemp("contract")
    obo = tmp / "toy.obo"
    ids = set(toy_obo(obo))
    store = f"ladybug://{tmp}/graph"
    assert exit_code(["ingest", "obo", str(obo), "--ontology", "toy", "--store", store, "-q"]) == 0
    from test_cli_hierarchy import _toy_obo  # a deeper, wider tree: DAN's level split needs one

    _toy_obo(tmp / "deep.obo")
    assert exit_code(["ingest", "obo", str(tmp / "deep.obo"), "--ontology", "deep", "--store", store, "-q"]) == 0
    concept = tmp / "train.concept"
    concept.write_text("".join(f"{i}||0|{len(t)}||Disease||{t}||{u}\n" for i, (t, u) in enumerate(MENTIONS)))
    text = " ".join(f"The patient had {t}." for t, _ in MENTIONS)
    pubtator = [f"1|t|Case\n1|a|{text}"]
    for t, u in MENTIONS:  # the abstract starts at 5: after "Case" and a space
        start = 5 + text.index(t)
        pubtator.append(f"1\t{start}\t{start + len(t)}\t{t}\tDisease\t{u}")
    docs = tmp / "docs.pubtator"
    docs.write_text("\n".join(pubtator) + "\n\n", encoding="utf-8")
    corpus = tmp / "corpus"
    assert exit_code(["corpus", "build", "--ontology", "toy", "--text", str(docs), "--out", str(corpus),
                      "--store", store, "-q"]) == 0
    bases = []
    for name in ("base", "base2"):  # untrained BioSyn: the linkers a wrapper wraps
        bases.append(tmp / name)
        assert exit_code(["train", "biosyn", "--ontology", "toy", "--out", str(bases[-1]), "--encoder",
                          str(tiny_bert_dir), "--store", store, "-q"]) == 0
    mentions = tmp / "mentions.tsv"
    mentions.write_text("id\ttext\tcontext\n" + "".join(f"m{i}\t{t}\tThe patient had {t}.\n"
                                                       for i, (t, _) in enumerate(MENTIONS)))
    return {"tmp": tmp, "store": store, "concept": concept, "pubtator": docs, "corpus": corpus, "bases": bases,
            "mentions": mentions, "tiny": str(tiny_bert_dir), "ids": ids}


def tiny_args(name: str, w: dict) -> list[str]:
    """What keeps a built-in method's run small (a registered one trains on its defaults)."""
    fast = ["--threads", "1"]
    return {
        "biosyn": ["--encoder", w["tiny"]],  # untrained: a dictionary and an index
        "bne": ["--epochs", "1", "--hidden", "8", "--dim", "8", "--batch-size", "4", "--siblings-k", "1",
                "--parents-k", "1", *fast],
        "dan": ["--ontology", "deep", "--root", "TOY:0000", "--level", "2", "--preset", "cpu-fast", "--hidden", "16",
                "--epochs", "1", *fast],
        "dilbert": ["--encoder", w["tiny"], "--epochs", "1", "--batch-size", "16", "--max-steps-per-epoch", "2",
                    *fast],
        "biocom": ["--encoder", w["tiny"], "--epochs", "1", "--max-steps", "2"],
        "ner": ["--train", str(w["pubtator"]), "--encoder", w["tiny"], "--types", "Disease", "--max-length", "32",
                "--stride", "8", "--batch-size", "4", "--epochs", "1", *fast],
        "rerank": ["--encoder", w["tiny"], "--epochs", "1", "--top-k", "3", "--batch-size", "2", *fast],
        "ensemble": [],
    }.get(name, [])


def required_args(name: str, w: dict, given: list[str], out: Path) -> list[str]:
    """The method's required options, filled by their field names."""
    from kgnorm.methods.options import flags_of

    values = {"ontology": ["toy"], "out": [str(out)], "train": [str(w["concept"])], "corpus": [str(w["corpus"])],
              "linker": [str(w["bases"][0])], "member": [str(b) for b in w["bases"]],
              "route": [f"Disease={w['bases'][0]}", str(w["bases"][1])]}
    args = []
    for f in fields(METHODS[name].options()):
        flag = flags_of(f)[0]
        if f.default is not MISSING or flag in given:
            continue
        if f.name not in values:
            pytest.fail(f"{name}: the contract test has no value for its required {flag}; add it to tiny_args")
        args += [a for v in values[f.name] for a in (flag, v)]
    return args


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_registered_method_keeps_the_contract(name, world, capsys):
    from kgnorm.errors import KgnormError
    from kgnorm.jobs.models import linker_method
    from kgnorm.linking.candidates import Hit
    from kgnorm.mentions.types import Mention
    from kgnorm.methods.registry import (CONTEXT, DETECTOR, ENCODER, INDEX, WRAPPER, load_encoder, model_meta,
                                         open_linker)

    entry, out = METHODS[name], world["tmp"] / f"m-{name}"
    given = tiny_args(name, world)
    code, _, err = run(capsys, "train", name, *required_args(name, world, given, out), *given,
                       "--store", world["store"], "-q")
    assert code == 0, err
    assert json.loads((out / "kgnorm-model.json").read_text())["method"] == name

    if entry.kind == DETECTOR:
        with pytest.raises(KgnormError, match="mention detector"):
            open_linker(out)
        return
    if entry.kind == ENCODER:
        vecs = load_encoder(out).encode(["toe pain", "skin rash"])
        assert vecs.shape[0] == 2 and np.isfinite(vecs).all()
        with pytest.raises(KgnormError, match="no name index"):
            open_linker(out)
        return
    assert entry.kind in (INDEX, CONTEXT, WRAPPER)
    meta = model_meta(out)  # no weights: what a Ray driver reads
    assert meta["method"] == name and meta["ontology"] == "toy" and meta.get("text_pipeline") is not None
    linker, opened = open_linker(out)
    assert opened["method"] == name and linker.method == linker_method(opened) == name
    queries = [t for t, _ in MENTIONS[:3]]
    mentions = [Mention(text=q, id=f"q{i}", context=f"The patient had {q}.") for i, q in enumerate(queries)]
    parts = linker.link_parts(queries, mentions, [True] * len(queries), 3)
    ids = world["ids"]
    assert len(parts) == len(queries)
    assert all(1 <= len(p) <= 3 and all(isinstance(h, Hit) and h.uid in ids for h in p) for p in parts)
    assert {h.ontology for p in parts for h in p} == {"toy"}  # every hit names the concept's ontology
    code, printed, err = run(capsys, "link", "--model", str(out), "--input", str(world["mentions"]), "--top-k", "2",
                             "--no-write", "--store", world["store"], "-q")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(printed), delimiter="\t"))
    assert {r["mention_id"] for r in rows} == {f"m{i}" for i in range(len(MENTIONS))}
    assert all(r["concept_uids"] in ids and r["rank"] in ("1", "2") for r in rows)
