"""A new method is a folder and one registry line: a toy method written into a temporary package,
registered, then trained through `kgnorm train toy` (the command generated from its Options) on
the shared TrainingLoop, and loaded back through `load_encoder`."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cli_runner import run

FIX = Path(__file__).parent / "fixtures"

RECIPE = '''
from dataclasses import dataclass
from pathlib import Path

import torch

from kgnorm.methods.options import option, out_option, seed
from kgnorm.methods.recipes import read_snapshot
from kgnorm.methods.model_dir import write_model_meta
from kgnorm.training.loop import LoopConfig, TrainingLoop
from kgnorm.training.task import TrainingTask


@dataclass(kw_only=True)
class Options:
    """Train the toy: one vector per character, names as their mean, synonyms pulled together."""

    ontology: str = option(help="Ontology name in the store.")
    out: Path = out_option()
    epochs: int = option(3, help="Passes over the names.")
    dim: int = option(8, "--dim", help="Vector size.")
    seed: int = seed()


class ToyTask(TrainingTask):
    def __init__(self, names, groups, dim):
        self.names, self.groups = names, torch.tensor(groups)
        self.module = torch.nn.EmbeddingBag(128, dim, mode="mean")
        self.optimizer = torch.optim.SGD(self.module.parameters(), lr=0.5)

    def start_epoch(self, epoch, saved):
        return 1

    def loss(self, step):
        vec = torch.nn.functional.normalize(encode(self.module, self.names), dim=-1)
        same = (self.groups[:, None] == self.groups[None, :]).float()
        return ((vec @ vec.T - same) ** 2).mean()


def encode(module, names):
    ids = [torch.tensor([min(ord(c), 127) for c in n] or [0]) for n in names]
    return module(torch.cat(ids), torch.tensor([0] + [len(i) for i in ids][:-1]).cumsum(0))


def train(opts, store=None, quiet=False):
    _, snap, _ = read_snapshot(store, opts.ontology, hierarchy=False)
    names, groups = [], []
    for i, c in enumerate(snap.concepts):
        for n in c.all_names():
            names.append(n)
            groups.append(i)
    loop = TrainingLoop(LoopConfig(epochs=opts.epochs, seed=opts.seed, progress=False), opts.out)
    task = ToyTask(names, groups, opts.dim)
    res = loop.run(task, {"names": names, "dim": opts.dim})
    torch.save(task.module.state_dict(), Path(opts.out) / "toy.pt")
    write_model_meta(opts.out, {"method": "toy", "dim": opts.dim, "epochs": res.epochs_completed,
                                "loss": [h["loss"] for h in res.history]})
    return Path(opts.out)
'''

MODEL = '''
import json
from pathlib import Path

import torch

from toyplug.toy.recipe import encode


class Toy:
    def __init__(self, model_dir):
        meta = json.loads((Path(model_dir) / "kgnorm-model.json").read_text())
        self.module = torch.nn.EmbeddingBag(128, meta["dim"], mode="mean")
        self.module.load_state_dict(torch.load(Path(model_dir) / "toy.pt"))

    def encode(self, names):
        with torch.no_grad():
            return encode(self.module, list(names)).numpy()


def load_toy(model_dir):
    return Toy(model_dir)
'''


@pytest.fixture
def toy_method(tmp_path, monkeypatch):
    from kgnorm.methods import registry

    pkg = tmp_path / "plugins" / "toyplug"
    (pkg / "toy").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "toy" / "__init__.py").write_text("")
    (pkg / "toy" / "recipe.py").write_text(textwrap.dedent(RECIPE))
    (pkg / "toy" / "model.py").write_text(textwrap.dedent(MODEL))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    registry.register(registry.Method("toy", "toyplug.toy.model:load_toy", package="toyplug.toy"))
    yield
    for mod in [m for m in sys.modules if m.startswith("toyplug")]:
        del sys.modules[mod]


def test_a_registered_method_trains_through_kgnorm_train(toy_method, tmp_path, capsys):
    from kgnorm.methods.registry import load_encoder

    code, out, _ = run(capsys, "train", "--help")
    assert code == 0 and "toy" in out and "biosyn" in out
    code, out, _ = run(capsys, "train", "toy", "--help")
    assert code == 0 and "--dim" in out and "Vector size." in out and "--store" in out
    store = f"ladybug://{tmp_path}/graph"
    assert run(capsys, "ingest", "obo", str(FIX / "obo/hp_mini.obo"), "--ontology", "hp", "--store", store,
               "-q")[0] == 0
    model = tmp_path / "toy"
    code, _, err = run(capsys, "train", "toy", "--ontology", "hp", "--out", str(model), "--epochs", "4",
                       "--store", store, "-q")
    assert code == 0, err
    meta = json.loads((model / "kgnorm-model.json").read_text())
    assert meta["epochs"] == 4 and meta["dim"] == 8 and meta["loss"][-1] < meta["loss"][0]
    vecs = load_encoder(model).encode(["seizure", "seizures"])
    assert vecs.shape == (2, 8) and np.isfinite(vecs).all()
    code, _, err = run(capsys, "train", "toy", "--out", str(tmp_path / "x"), "--store", store)
    assert code != 0 and "--ontology" in err


LOOKUP_RECIPE = '''
from dataclasses import dataclass
from pathlib import Path

from kgnorm.linking.dictionary import ontology_dictionary
from kgnorm.methods.model_dir import write_model_meta
from kgnorm.methods.options import option, out_option
from kgnorm.methods.recipes import PIPELINE, read_snapshot
from kgnorm.text.pipeline import TextPipeline


@dataclass(kw_only=True)
class Options:
    """Train the lookup: a concept is found by one of its names, lowercased, exactly."""

    ontology: str = option(help="Ontology name in the store.")
    out: Path = out_option()


def train(opts, store=None, quiet=False):
    _, snap, _ = read_snapshot(store, opts.ontology, hierarchy=False)
    ontology_dictionary(snap, TextPipeline().normalize_name).save(Path(opts.out) / "names")
    write_model_meta(opts.out, {"method": "lookup", "ontology": opts.ontology, "ontology_version": snap.version,
                                "text_pipeline": PIPELINE})
    return Path(opts.out)
'''

LOOKUP_MODEL = '''
from pathlib import Path

from kgnorm.linking.candidates import Candidate
from kgnorm.linking.dictionary import NameDictionary


class Lookup:
    """An ``index`` kind model: a dictionary, and ``link`` -> Candidate rows per query."""

    def __init__(self, model_dir):
        self.dictionary = NameDictionary.load(Path(model_dir) / "names")

    def link(self, queries, top_k=5, batch_size=512):
        d = self.dictionary
        rows = [d.index_of(q.lower()) for q in queries]
        return [[] if r is None else [Candidate(r, tuple(d.uids[r]), d.names[r], 1.0)] for r in rows]


def load_lookup(model_dir):
    return Lookup(model_dir)
'''


def test_a_registered_linker_links_through_kgnorm_link(tmp_path, monkeypatch, capsys):
    """The README's "Adding a method": a folder with recipe.py and model.py and one `register` call make
    `kgnorm train lookup` and let `kgnorm link` use its directory, no CLI file or job touched."""
    from kgnorm.methods import registry

    pkg = tmp_path / "plugins" / "lookplug"
    (pkg / "lookup").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "lookup" / "__init__.py").write_text("")
    (pkg / "lookup" / "recipe.py").write_text(textwrap.dedent(LOOKUP_RECIPE))
    (pkg / "lookup" / "model.py").write_text(textwrap.dedent(LOOKUP_MODEL))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    registry.register(registry.Method("lookup", "lookplug.lookup.model:load_lookup", package="lookplug.lookup"))
    try:
        store = f"ladybug://{tmp_path}/graph"
        assert run(capsys, "ingest", "obo", str(FIX / "obo/hp_mini.obo"), "--ontology", "hp", "--store", store,
                   "-q")[0] == 0
        model = tmp_path / "lookup"
        code, _, err = run(capsys, "train", "lookup", "--ontology", "hp", "--out", str(model), "--store", store, "-q")
        assert code == 0, err
        mentions = tmp_path / "m.tsv"
        mentions.write_text("id\ttext\nq1\tCurly Finger\nq2\tfictional nail ridge\nq3\tno such thing\n")
        code, out, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--store", store, "-q")
        assert code == 0, err
        rows = [line.split("\t") for line in out.strip().splitlines()]
        assert rows[0] == ["mention_id", "mention", "rank", "concept_uids", "score", "nil"]
        assert [(r[0], r[2], r[3], r[4]) for r in rows[1:]] == [("q1", "1", "HP:9990001", "1.0000"),
                                                               ("q2", "1", "HP:9990003", "1.0000")]
        code, out, err = run(capsys, "query", "MATCH (r:Run) RETURN r.method AS m", "--format", "json",
                             "--store", store)
        assert code == 0 and json.loads(out) == [{"m": "lookup"}], err
    finally:
        for mod in [m for m in sys.modules if m.startswith("lookplug")]:
            del sys.modules[mod]
