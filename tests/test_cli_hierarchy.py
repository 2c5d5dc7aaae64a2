"""`kgnorm train dan`, `hypernyms` and `eval hierarchy` end to end on a small generated
ontology, and their bad-input paths (one-line error, exit != 0, nothing written)."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from cli_runner import exit_code, run

WORDS = ["cardiac", "renal", "ocular", "dermal", "neural", "hepatic"]
SHAPES = ["ring", "cleft", "cyst", "fold"]


def _toy_obo(path: Path) -> None:
    """root → 2 → 4 → 8 → 16 → 48 leaves (3 names each): four class levels and names below."""
    terms: list[str] = []
    n = 0

    def term(uid: str, name: str, parent: str | None, synonyms: tuple[str, ...] = ()) -> None:
        lines = ["[Term]", f"id: {uid}", f"name: {name}"]
        lines += [f'synonym: "{s}" EXACT []' for s in synonyms]
        if parent:
            lines.append(f"is_a: {parent}")
        terms.append("\n".join(lines))

    def grow(parent: str, pname: str, depth: int) -> None:
        nonlocal n
        width = 3 if depth == 5 else 2
        for i in range(width):
            n += 1
            uid = f"TOY:{n:04d}"
            word = WORDS[(n + depth) % len(WORDS)] if depth < 5 else SHAPES[i]
            name = f"{pname} {word}" if depth > 1 else f"{word} anomaly"
            syns = (f"{word} {pname}", f"{name} type {i}") if depth == 5 else ()
            term(uid, name, parent, syns)
            if depth < 5:
                grow(uid, name if depth < 3 else pname + f" {word}", depth + 1)

    term("TOY:0000", "toy root", None)
    grow("TOY:0000", "toy", 1)
    path.write_text("format-version: 1.2\ndata-version: toy/2099-01-01\nontology: toy\n\n"
                    + "\n\n".join(terms) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("toy")
    obo = tmp / "toy.obo"
    _toy_obo(obo)
    store = f"ladybug://{tmp}/graph"
    code = exit_code(["ingest", "obo", str(obo), "--ontology", "toy", "--store", store, "-q"])
    assert code == 0
    return {"store": store, "tmp": tmp}


def _runs(capsys, store: str) -> int:
    code, out, err = run(capsys, "query", "MATCH (r:Run) RETURN count(r) AS n", "--format", "json",
                         "--store", store)
    assert code == 0, err
    return json.loads(out)[0]["n"]


def _predicted(capsys, store: str) -> int:
    code, out, err = run(capsys, "query", "MATCH ()-[p:PREDICTED_IS_A]->() RETURN count(p) AS n",
                         "--format", "json", "--store", store)
    assert code == 0, err
    return json.loads(out)[0]["n"]


def test_train_dan_preset_hypernyms_and_eval(capsys, toy):
    store, model = toy["store"], toy["tmp"] / "dan"
    code, _, err = run(capsys, "train", "dan", "--ontology", "toy", "--root", "TOY:0000", "--level", "2",
                       "--out", str(model), "--preset", "cpu-fast", "--hidden", "32", "--epochs", "3",
                       "--threads", "1", "--store", store, "-q")
    assert code == 0, err
    meta = json.loads((model / "kgnorm-model.json").read_text())
    assert meta["method"] == "dan" and meta["root"] == "TOY:0000" and meta["level"] == 2
    # the preset's settings with the explicit --hidden on top
    assert meta["architecture"]["hidden"] == 32
    assert meta["hyper_parameters"]["lr"] == pytest.approx(2e-3) and meta["hyper_parameters"]["w_context"] == pytest.approx(0.3)

    out_tsv = toy["tmp"] / "hyp.tsv"
    args = ["hypernyms", "--model", str(model), "--root", "TOY:0000", "--level", "2", "--top-k", "3",
            "--output", str(out_tsv), "--store", store, "-q"]
    code, _, err = run(capsys, *args)
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out_tsv.read_text()), delimiter="\t"))
    assert rows and set(rows[0]) == {"name", "rank", "hypernym_uid", "hypernym_name", "score"}
    per_name: dict[str, list[int]] = {}
    for r in rows:
        per_name.setdefault(r["name"], []).append(int(r["rank"]))
    assert all(ranks == [1, 2, 3] for ranks in per_name.values())
    n_edges = _predicted(capsys, store)
    assert n_edges == len(per_name)  # top-1 per held-out name's concept
    assert run(capsys, *args)[0] == 0
    assert _predicted(capsys, store) == n_edges  # same run again: one copy

    code, out, err = run(capsys, "eval", "hierarchy", "--model", str(model), "--root", "TOY:0000",
                         "--no-baselines", "--store", store, "-q")
    assert code == 0, err
    assert "dan" in out and "map" in out.lower() and "mrr" in out.lower()


def test_train_dan_on_encoder_inputs(capsys, toy):
    """--input encoder: the frozen MiniLM's pooled name vectors are the DAN input, kept with
    the model for the split's names; other names are encoded on demand, identically."""
    import numpy as np

    from kgnorm.encoders.encoder_inputs import EncoderInputs
    from kgnorm.encoders.dense import DenseEncoder
    from kgnorm.methods.registry import load_encoder

    store, model = toy["store"], toy["tmp"] / "dan-enc"
    code, _, err = run(capsys, "train", "dan", "--ontology", "toy", "--root", "TOY:0000", "--level", "2",
                       "--out", str(model), "--input", "encoder", "--preset", "cpu-fast", "--hidden", "32",
                       "--epochs", "2", "--threads", "1", "--store", store, "-q")
    assert code == 0, err
    meta = json.loads((model / "kgnorm-model.json").read_text())
    assert meta["word_vectors_info"]["kind"] == "encoder" and meta["architecture"]["dim"] == 384
    enc = load_encoder(model)
    assert isinstance(enc.inputs, EncoderInputs) and enc.wordvecs is None
    kept = (model / "wordvectors" / "names.txt").read_text().splitlines()
    assert "toy root" not in kept and len(kept) > 100
    fresh = DenseEncoder(pooling="mean")
    names = [kept[0], kept[-1], "a name the model never saw"]
    np.testing.assert_allclose(enc.inputs(names), fresh.encode(names), atol=1e-4)
    assert enc.inputs.precompute(kept) == 0 and len(enc.encode(names)) == 3
    code, _, err = run(capsys, "hypernyms", "--model", str(model), "--root", "TOY:0000", "--level", "2",
                       "--no-write", "--store", store, "-q")
    assert code == 0, err


@pytest.mark.parametrize("args,message", [
    (["--root", "TOY:0000", "--level", "2", "--input", "fasttext"], "valid inputs: word-vectors, encoder"),
    (["--root", "TOY:0000", "--level", "2", "--input", "encoder", "--word-vectors", "x.vec"],
     "--word-vectors goes with --input word-vectors"),
    (["--root", "TOY:9999", "--level", "2"], "TOY:9999"),
    (["--root", "TOY:0001", "--level", "2"], "only 4 level(s) below it"),
    (["--root", "TOY:0000", "--level", "5"], "--level must be between 1 and 4"),
    (["--root", "TOY:0000", "--level", "2", "--preset", "fast"], "valid presets: paper, cpu-fast"),
])
def test_train_dan_bad_input_writes_nothing(capsys, toy, args, message):
    out = toy["tmp"] / "bad-model"
    code, _, err = run(capsys, "train", "dan", "--ontology", "toy", "--out", str(out), *args,
                       "--store", toy["store"], "-q")
    assert code != 0
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # nothing written, not even word vectors


@pytest.mark.parametrize("content,message", [
    (b"toy cardiac\n\ntoy renal\n", ":2: empty line"),
    (b"toy \xff\xfe cardiac\n", "UTF-8"),
])
def test_hypernyms_bad_names_file_writes_nothing(capsys, toy, content, message):
    store, model = toy["store"], toy["tmp"] / "dan-bad-names"
    if not (model / "kgnorm-model.json").exists():
        assert run(capsys, "train", "dan", "--ontology", "toy", "--root", "TOY:0000", "--level", "1",
                   "--out", str(model), "--hidden", "16", "--epochs", "1", "--store", store, "-q")[0] == 0
    names = toy["tmp"] / "names.txt"
    names.write_bytes(content)
    before = (_runs(capsys, store), _predicted(capsys, store))
    code, _, err = run(capsys, "hypernyms", "--model", str(model), "--root", "TOY:0000", "--level", "1",
                       "--names", str(names), "--store", store, "-q")
    assert code != 0 and message in err and str(names) in err
    assert (_runs(capsys, store), _predicted(capsys, store)) == before


def test_train_dan_default_is_cpu_fast_on_encoder_and_drops_checkpoint(capsys, toy):
    """Without --preset/--input: cpu-fast on frozen-encoder inputs (the benchmarked recipe);
    --preset paper switches both back; the finished model keeps no checkpoints unless asked."""
    store = toy["store"]
    base = ["train", "dan", "--ontology", "toy", "--root", "TOY:0000", "--level", "2", "--hidden", "16",
            "--epochs", "1", "--threads", "1", "--store", store, "-q"]
    model = toy["tmp"] / "dan-default"
    code, _, err = run(capsys, *base, "--out", str(model))
    assert code == 0, err
    meta = json.loads((model / "kgnorm-model.json").read_text())
    assert meta["word_vectors_info"]["kind"] == "encoder"
    assert meta["hyper_parameters"]["lr"] == pytest.approx(2e-3)
    assert not (model / "checkpoints").exists()
    paper = toy["tmp"] / "dan-paper"
    code, _, err = run(capsys, *base, "--out", str(paper), "--preset", "paper", "--keep-checkpoints")
    assert code == 0, err
    meta = json.loads((paper / "kgnorm-model.json").read_text())
    assert meta["word_vectors_info"]["kind"] != "encoder"
    assert meta["hyper_parameters"]["lr"] == pytest.approx(1e-3)
    assert (paper / "checkpoints" / "last.pt").is_file()
