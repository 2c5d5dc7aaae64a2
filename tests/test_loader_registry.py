"""The loader registry (kgnorm.ontologies.registry): every registered loader meets the contract on a
tiny fixture (a finalized OntologyGraph the store can take), its `kgnorm ingest` command is
generated from its entry, and a loader registered at run time -- a two-column TSV of id and name,
written into a temporary package -- is ingested through the CLI and read back from the store."""
from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import fields
from pathlib import Path

import pytest

from cli_runner import run
from kgnorm.graph.ontology_graph import OntologyGraph
from kgnorm.ontologies.registry import LOADERS, Loader, loader

FIX = Path(__file__).parent / "fixtures"

# format -> the fixture its contract runs on (a new loader adds its own here)
FIXTURES = {
    "obo": FIX / "obo/hp_mini.obo",
    "mesh": FIX / "mesh/desc_tree.xml",
    "medic": FIX / "medic/CTD_diseases.tsv",
    "snomed": FIX / "snomed/SnomedCT_InternationalRF2_PRODUCTION_20990131T120000Z",
    "meddra": FIX / "meddra/MedDRA_99_0_English",
    "umls": FIX / "umls/2099AA",
    "table": FIX / "table/vocab.tsv",
}


def check_graph(graph: OntologyGraph, fmt: str, name: str) -> None:
    """What the ingest job and the stores rely on in a loader's result."""
    assert isinstance(graph, OntologyGraph)
    assert graph.name == name and graph.format == fmt and graph.source_path
    assert graph.concepts, "no concept"
    for uid, c in graph.concepts.items():
        assert c.uid == uid and ":" in uid, uid                    # keyed by its CURIE
        assert c.ontology == name and c.name and c.code, uid
        assert len(c.synonyms) == len(c.synonym_scopes), uid
        assert len(set(c.synonyms)) == len(c.synonyms), uid
        assert c.depth >= 0, f"{uid}: no depth (finalize not called?)"
    assert len(set(graph.is_a)) == len(graph.is_a)
    for child, parent in graph.is_a:                                 # a clean DAG
        assert child in graph.concepts and parent in graph.concepts and child != parent
        assert 0 < graph.concepts[child].depth <= graph.concepts[parent].depth + 1  # depth: from the nearest root
    assert graph.report.roots >= 1
    assert sum(1 for c in graph.concepts.values() if c.depth == 0) == graph.report.roots


def test_every_registered_loader_has_a_fixture():
    assert set(LOADERS) <= set(FIXTURES), f"add a fixture for {sorted(set(LOADERS) - set(FIXTURES))}"


@pytest.mark.parametrize("fmt", list(LOADERS))
def test_loader_contract(fmt):
    entry = loader(fmt)
    assert entry.name == fmt and entry.reads and entry.load.count(":") == 1
    default = entry(FIXTURES[fmt])
    assert default.name  # the loader's default name
    check_graph(default, fmt, default.name)
    named = entry(FIXTURES[fmt], "renamed")
    check_graph(named, fmt, "renamed")
    assert sorted(named.concepts) == sorted(default.concepts) and named.is_a == default.is_a
    # its declared options are keywords of its load function, and their defaults change nothing
    opts = {f.name: f.default for f in fields(entry.options_class())}
    explicit = entry(FIXTURES[fmt], None, allow_dangling=False, **opts)
    assert sorted(explicit.concepts) == sorted(default.concepts) and explicit.is_a == default.is_a


@pytest.mark.parametrize("fmt", list(LOADERS))
def test_loader_command_is_generated_from_its_entry(capsys, fmt):
    entry = loader(fmt)
    code, out, _ = run(capsys, "ingest", "--help")
    assert code == 0 and fmt in out
    code, out, _ = run(capsys, "ingest", fmt, "--help")
    assert code == 0
    flat = " ".join(out.replace("│", " ").split())
    assert " ".join(entry.reads.split()) in flat
    for f in fields(entry.options_class()):
        for flag in f.metadata["flags"][0].split("/"):  # an on/off switch: --x/--no-x
            assert flag in out
    assert ("--dry-run" in out) == entry.dry_run
    for flag in ("--ontology", "--allow-dangling", "--store", "--lock-timeout", "--quiet"):
        assert flag in out


def test_unknown_format_names_the_registered_ones(tmp_path):
    from kgnorm.errors import KgnormError
    from kgnorm.jobs.ingest import ingest

    with pytest.raises(KgnormError, match="unknown ontology format 'nope' \\(known: obo, mesh, medic, snomed, "
                                          "meddra, umls, table\\)"):
        ingest("nope", tmp_path)


TOY = '''
from dataclasses import dataclass
from pathlib import Path

from kgnorm.errors import InputError
from kgnorm.graph.ontology_graph import Concept, OntologyGraph
from kgnorm.ontologies.common import finish, iter_lines, require_path
from kgnorm.ontologies.registry import option


@dataclass(kw_only=True)
class Options:
    prefix: str = option("TOY", "--prefix", help="CURIE prefix of the ids.")
    lowercase: bool = option(False, "--lowercase", help="Store the names in lower case.")


def load(path, name=None, *, allow_dangling=False, prefix="TOY", lowercase=False):
    """id<TAB>name per line; a third column, when there, names the parent id."""
    path = require_path(path, "TSV file")
    graph = OntologyGraph(name=name or "toy", format="tsv2", source_path=str(path))
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        cols = line.split("\\t")
        if len(cols) < 2:
            raise InputError("expected id<TAB>name", path=f"{path}:{lineno}")
        uid = f"{prefix}:{cols[0]}"
        graph.add_concept(Concept(uid=uid, code=cols[0], name=cols[1].lower() if lowercase else cols[1]))
        if len(cols) > 2 and cols[2]:
            graph.add_is_a(uid, f"{prefix}:{cols[2]}", origin=f"{path}:{lineno}")
    return finish(graph, allow_dangling)
'''


@pytest.fixture
def toy_loader(tmp_path, monkeypatch):
    from kgnorm.ontologies import registry

    pkg = tmp_path / "plugins" / "toyload"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "tsv.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.setattr(registry, "LOADERS", dict(registry.LOADERS))
    entry = registry.register(Loader("tsv2", "toyload.tsv:load", "A two-column TSV: id and name (and a parent id).",
                                     options="toyload.tsv:Options"))
    yield entry
    for mod in [m for m in sys.modules if m.startswith("toyload")]:
        del sys.modules[mod]


def test_a_registered_loader_ingests_through_the_cli(toy_loader, tmp_path, capsys):
    src = tmp_path / "toy.tsv"
    src.write_text("1\tDisease\n2\tBreast Cancer\t1\n3\tFever\t1\n", encoding="utf-8")
    check_graph(toy_loader(src), "tsv2", "toy")          # the same contract as the built-in loaders
    code, out, _ = run(capsys, "ingest", "--help")
    assert code == 0 and "tsv2" in out and "A two-column TSV" in out
    code, out, _ = run(capsys, "ingest", "tsv2", "--help")
    assert code == 0 and "--lowercase" in out and "--prefix" in out and "--dry-run" in out
    store = f"ladybug://{tmp_path}/graph"
    code, _, err = run(capsys, "ingest", "tsv2", str(src), "--ontology", "toyo", "--lowercase", "--prefix", "TSV",
                       "--store", store)
    assert code == 0, err
    assert "loaded toyo: 3 concepts, 2 IS_A" in err
    code, out, err = run(capsys, "query", "MATCH (c:Concept) WHERE c.ontology = 'toyo' RETURN c.uid AS uid, "
                         "c.name AS name, c.depth AS depth ORDER BY uid", "--format", "json", "--store", store)
    assert code == 0, err
    assert json.loads(out) == [{"uid": "TSV:1", "name": "disease", "depth": 0},
                               {"uid": "TSV:2", "name": "breast cancer", "depth": 1},
                               {"uid": "TSV:3", "name": "fever", "depth": 1}]
    code, out, err = run(capsys, "ingest", "tsv2", str(src), "--ontology", "toyo", "--prefix", "TSV", "--dry-run",
                           "--store", store)
    assert code == 0 and "dry run: replacing toyo" in err and "concepts: 0 removed" in err
    # a dangling parent fails as every loader's does, unless --allow-dangling
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\tDisease\t9\n", encoding="utf-8")
    code, _, err = run(capsys, "ingest", "tsv2", str(bad), "--store", store)
    assert code == 1 and "names unknown id TOY:9" in err
    assert run(capsys, "ingest", "tsv2", str(bad), "--allow-dangling", "--store", store, "-q")[0] == 0
    # the library call finds it too
    from kgnorm.api import Workbench

    summary = Workbench(store).ingest("tsv2", src, ontology="toyo", prefix="TSV")
    assert summary.replaced and summary.concepts == 3
