"""The detector table (kgnorm.jobs.detectors): every registered kind resolves its `--ner` spec to a
detector that meets the MentionDetector contract; `annotate --ner` keeps its error lines; and toy
detectors registered at run time -- a regex detector named by ``regex:PATTERN``, one found as a
model directory by its kgnorm-model.json method, one named alone -- run through `kgnorm annotate`."""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from annotate_fixtures import OBO, write_jsonl
from cli_runner import exit_code, run
from kgnorm.documents.readers import read_documents
from kgnorm.jobs.detectors import DETECTORS, DetectorContext, DetectorKind, kind_of, resolve
from kgnorm.ner.spans import MentionDetector, Span

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# the settings a job reads from a detector, with their defaults (MentionDetector's class attributes)
DETECTOR_DEFAULTS = {k: getattr(MentionDetector, k) for k in ("consistency_by_default", "overlap_by_default",
                                                              "refinements", "dictionary_tagger")}


def detector_setting(detector, name: str):
    """``detector.<name>``, or the default :class:`MentionDetector` declares for it (what a job reads
    from a detector that does not subclass it)."""
    return getattr(detector, name, DETECTOR_DEFAULTS[name])

TEXTS = ["Carriers of ataxia telangiectasia (AT) mutations have breast cancer more often; AT is rare.",
         "No link between ovarian cancer and colorectal cancer was seen.", "", "Nothing here."]


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir):
    """A store holding the toy ontology and an untrained BioSyn linker over it (annotate_fixtures)."""
    tmp = tmp_path_factory.mktemp("detectors")
    store = f"ladybug://{tmp}/graph"
    (tmp / "toyd.obo").write_text(OBO, encoding="utf-8")
    assert exit_code(["ingest", "obo", str(tmp / "toyd.obo"), "--ontology", "toyd", "--store", store, "-q"]) == 0
    model = tmp / "biosyn"
    assert exit_code(["train", "biosyn", "--ontology", "toyd", "--out", str(model), "--encoder", str(tiny_bert_dir),
                      "--store", store, "-q"]) == 0
    return store, model


def _trained(tmp_path, tiny_bert_dir):
    from test_annotate_formats import _tiny_detector

    return str(_tiny_detector(tiny_bert_dir, tmp_path / "ner", silent=False))


# kind -> how its contract test names one (a new kind adds its own here)
SPECS = {
    "dictionary": lambda tmp_path, tiny_bert_dir: "dictionary:toyd",
    "ner": _trained,
}


def check_detector(detector, texts=TEXTS) -> list[list[Span]]:
    """What annotate relies on in a detector."""
    types = detector.types
    assert isinstance(types, tuple) and types and all(isinstance(t, str) and t for t in types)
    found = detector.detect(texts)
    assert len(found) == len(texts)
    for text, spans in zip(texts, found):
        end = -1
        for s in spans:
            assert isinstance(s, Span) and text[s.start:s.end] == s.text and s.start < s.end
            assert s.start >= end, "spans sorted by start, non-overlapping"
            assert s.type in types
            end = s.end
    for name in DETECTOR_DEFAULTS:  # every setting a job reads has a value
        detector_setting(detector, name)
    assert isinstance(detector_setting(detector, "consistency_by_default"), bool)
    assert isinstance(detector_setting(detector, "overlap_by_default"), bool)
    return found


def test_every_registered_kind_has_a_spec():
    assert set(DETECTORS) <= set(SPECS), f"add a spec for {sorted(set(DETECTORS) - set(SPECS))}"


@pytest.mark.parametrize("kind", list(DETECTORS))
def test_detector_contract(kind, world, tmp_path, tiny_bert_dir):
    store, _ = world
    entry = DETECTORS[kind]
    assert entry.help and entry.build.count(":") == 1
    spec = SPECS[kind](tmp_path, tiny_bert_dir)
    assert kind_of(spec)[0] is entry
    detector, label = resolve(spec, DetectorContext(store, "fp32", 1))
    assert isinstance(label, str) and label
    check_detector(detector)


def test_the_dictionary_tagger_declares_its_settings(world):
    from kgnorm.jobs.detectors import build_detector

    detector, label = build_detector("dictionary:toyd", world[0])
    assert MentionDetector in type(detector).__mro__ and label == "dictionary:toyd@toyd/2099-01-01"
    assert (detector.consistency_by_default, detector.overlap_by_default, detector.refinements, detector.dictionary_tagger) == (
        True, False, None, None)


def test_bad_specs_keep_their_error_lines(world, tmp_path):
    from kgnorm.errors import KgnormError

    store, model = world
    ctx = DetectorContext(store)
    for spec, message in ((str(tmp_path / "nowhere"), "not a model directory (or use dictionary:ONTOLOGY)"),
                          ("dictionary", "not a model directory (or use dictionary:ONTOLOGY)"),
                          ("dictionary: ", "needs an ontology name (e.g. dictionary:medic)"),
                          (str(model), "holds a 'biosyn' model, not a mention detector (train one with "
                                       "`kgnorm train ner`)")):
        with pytest.raises(KgnormError, match=message.replace("(", r"\(").replace(")", r"\)")):
            resolve(spec, ctx)


TOY = '''
import json
import re
from pathlib import Path

from kgnorm.ner.spans import MentionDetector, Span


class RegexDetector(MentionDetector):
    """Every match of a pattern, as one type; the other settings are MentionDetector's defaults."""

    def __init__(self, pattern, type="Disease"):
        self.pattern, self.types = re.compile(pattern), (type,)

    def detect(self, texts):
        return [[Span(m.start(), m.end(), m.group(), self.types[0]) for m in self.pattern.finditer(t)]
                for t in texts]


class Cancers:
    """A structural detector (no subclassing): annotate reads its settings with the defaults."""

    types = ("Disease",)

    def detect(self, texts):
        return RegexDetector(r"\\b\\w+ cancer\\b").detect(texts)


def build(arg, ctx):
    return RegexDetector(arg), f"regex:{arg}"


def build_dir(arg, ctx):
    meta = json.loads((Path(arg) / "kgnorm-model.json").read_text())
    return RegexDetector(meta["pattern"], meta["type"]), str(Path(arg).resolve())


def build_cancers(arg, ctx):
    return Cancers(), "cancers"
'''


@pytest.fixture
def toy_detectors(tmp_path, monkeypatch):
    from kgnorm.jobs import detectors

    pkg = tmp_path / "plugins" / "toydet"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "regex.py").write_text(textwrap.dedent(TOY))
    monkeypatch.syspath_prepend(str(tmp_path / "plugins"))
    monkeypatch.setattr(detectors, "DETECTORS", dict(detectors.DETECTORS))
    for entry in (DetectorKind("regex", "toydet.regex:build", arg="PATTERN", help="Matches of a regular expression."),
                  DetectorKind("regexdir", "toydet.regex:build_dir", directory=True, help="A saved pattern."),
                  DetectorKind("cancers", "toydet.regex:build_cancers", help="Every '<word> cancer'.")):
        detectors.register(entry)
    yield
    for mod in [m for m in sys.modules if m.startswith("toydet")]:
        del sys.modules[mod]


def _annotate(capsys, world, ner, src, out, *extra):
    store, model = world
    code, _, err = run(capsys, "annotate", "--ner", ner, "--model", str(model), "--input", str(src),
                       "--input-format", "jsonl", "--output", str(out), "--store", store, "-q", *extra)
    assert code == 0, err
    return {d.doc_id: [(a.start, a.end, a.text, a.type) for a in d.annotations]
            for d in read_documents(out, "pubtator")}


def test_a_registered_detector_runs_through_kgnorm_annotate(toy_detectors, world, tmp_path, capsys):
    import re

    store, _ = world
    pattern = r"\b(?:breast|ovarian) cancer\b"
    for spec in (f"regex:{pattern}", "cancers"):
        detector, _ = resolve(spec, DetectorContext(store))
        check_detector(detector)                         # the same contract as the built-in kinds
    src = write_jsonl(tmp_path / "docs.jsonl")
    got = _annotate(capsys, world, f"regex:{pattern}", src, tmp_path / "regex.pubtator")
    docs = {d.doc_id: d.text for d in read_documents(src, "jsonl")}
    want = {doc_id: [(m.start(), m.end(), m.group(), "Disease") for m in re.finditer(pattern, text)]
            for doc_id, text in docs.items() if text.strip()}
    assert got == want and sum(map(len, want.values())) == 3
    code, out, err = run(capsys, "query", "MATCH (r:Run) WHERE r.kind = 'annotate' RETURN r.params_json AS p",
                         "--format", "json", "--store", store)
    assert code == 0, err
    params = [json.loads(r["p"]) for r in json.loads(out)]
    assert {"ner": f"regex:{pattern}", "consistency": False} in [
        {k: p[k] for k in ("ner", "consistency")} for p in params]   # MentionDetector's default: off
    # a directory whose kgnorm-model.json names a registered directory kind
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "kgnorm-model.json").write_text(json.dumps({"method": "regexdir", "pattern": pattern, "type": "Cancer"}))
    by_dir = _annotate(capsys, world, str(saved), src, tmp_path / "dir.pubtator", "--no-write")
    assert by_dir == {k: [(s, e, t, "Cancer") for s, e, t, _ in v] for k, v in want.items()}
    # a kind named alone; a structural detector gets the defaults (consistency off, so no more spans)
    alone = _annotate(capsys, world, "cancers", src, tmp_path / "alone.pubtator", "--no-write")
    assert alone == {doc_id: [(m.start(), m.end(), m.group(), "Disease") for m in re.finditer(r"\b\w+ cancer\b", text)]
                     for doc_id, text in docs.items() if text.strip()}
