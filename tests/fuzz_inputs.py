"""A mutation fuzzer over kgnorm's readers (issue 52, "hostile inputs"), shared by
tests/test_fuzz_readers.py (a short, derandomized run) and benchmarks/fuzz_readers.py (a long one).

Each target is a reader and the real-format seed files it starts from (tests/fixtures). Hypothesis
draws a list of byte-level edits (flip, delete, insert a hostile token, duplicate, drop or swap a
line, truncate, splice) and applies them to one seed file (for a release folder: one of its files,
in a copy of the folder); the reader then reads the result to the end. The contract: the input
loads, or the reader raises kgnorm's KgnormError (InputError) with one line naming the file;
never another exception, a message over several lines or without the file, or a hang (more than
`HANG_S` seconds on a small file)."""
from __future__ import annotations

import shutil
import signal
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from kgnorm.errors import KgnormError

FIX = Path(__file__).parent / "fixtures"
HANG_S = 10

TOKENS = [b"\t", b"\n", b"\r\n", b"\r", b"|", b"||", b"\"", b"'", b"<", b">", b"&", b"&#0;", b"&bogus;", b"\x00",
          b"\xff", b"\xc3", b"\xef\xbb\xbf", b"-1", b"0", b"99999999999999999999", b"1e308", b"NaN", b"inf",
          b" ", b"#", b"[", b"]", b"{", b"}", b",", b":", b"!", b"\\", b"]]>", b"<![CDATA[", b"<!--", b"-->",
          b"<?xml version='1.0'?>", b"<!DOCTYPE x [<!ENTITY a \"aaaaaaaaaa\">]>", b"null", b"true", b"[]", b"{}",
          b"is_a: ", b"[Term]\n", b"id: ", b"synonym: \"x\" EXACT []\n", b"\xe2\x80\xa8", b"\xf0\x9f\x98\x80",
          # big things: a field past the csv module's limit, nesting past the parsers' recursion limits
          b"x" * 200_000, b"\"" + b"y" * 200_000, b"[" * 100_000 + b"]" * 100_000, b"{\"a\":" * 50_000 + b"1" + b"}" * 50_000,
          b"<a>" * 20_000 + b"</a>" * 20_000,
          "²".encode(), "１２".encode(), "٣".encode()]  # digits str.isdigit() takes and int() refuses (or takes)

FIELDS = [b"", b" ", b"-1", b"0", b"1", b"99999999999999999999", b"1.5", b"NaN", b"x" * 300, b"x" * 200_000, b"\"", b"a|b", b":",
          b"MESH:", b"C0000000", b"D000000", b"\\", b"2099-13-45", b"\x00", "C00²0001".encode(), "１".encode()]
JSON_VALUES = [None, True, False, 0, -1, 1.5e308, 2 ** 70, "", "x", "-1", [], {}, [[]], [None], {"a": {}}, ["x", 1],
               "\u2028", float("nan"), "x" * 200_000]

# one edit: (kind, position, argument); positions are taken modulo the data's length when applied;
# field, json and xml edits change one field, JSON value or XML element of data that has them
STRUCTURED = st.one_of(
    st.tuples(st.just("field"), st.integers(0, 1 << 20), st.sampled_from(FIELDS)),
    st.tuples(st.just("json"), st.integers(0, 1 << 20), st.sampled_from(range(len(JSON_VALUES)))),
    st.tuples(st.just("xml"), st.integers(0, 1 << 20), st.integers(0, 5)),
    st.tuples(st.just("dupline"), st.integers(0, 1 << 20), st.integers(1, 3)),
    st.tuples(st.just("dropline"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("swaplines"), st.integers(0, 1 << 20), st.integers(0, 1 << 20)))
EDITS = st.one_of(
    STRUCTURED,
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(0, 255)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 20), st.integers(1, 64)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.sampled_from(TOKENS)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("dupline"), st.integers(0, 1 << 20), st.integers(1, 3)),
    st.tuples(st.just("dropline"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("swaplines"), st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
    st.tuples(st.just("truncate"), st.integers(0, 1 << 20), st.just(0)),
    st.tuples(st.just("splice"), st.integers(0, 1 << 20), st.integers(0, 1 << 20)),
    st.tuples(st.just("gzip"), st.integers(0, 1 << 20), st.booleans()),
)


def mutate(data: bytes, edits: list[tuple[str, int, Any]]) -> bytes:
    """`data` with `edits` applied in order (positions modulo its length)."""
    for kind, pos, arg in edits:
        n = len(data)
        at = pos % (n + 1)
        if kind == "flip" and n:
            data = data[:at % n] + bytes([arg]) + data[at % n + 1:]
        elif kind == "delete":
            data = data[:at] + data[at + arg:]
        elif kind == "insert":
            data = data[:at] + arg + data[at:]
        elif kind in ("dupline", "dropline", "swaplines"):
            lines = data.splitlines(keepends=True)
            if not lines:
                continue
            i = pos % len(lines)
            if kind == "dupline":
                lines[i:i + 1] = [lines[i]] * (arg + 1)
            elif kind == "dropline":
                del lines[i]
            else:
                j = arg % len(lines)
                lines[i], lines[j] = lines[j], lines[i]
            data = b"".join(lines)
        elif kind == "replace":  # a kept input, read as it is
            data = arg
        elif kind == "truncate":
            data = data[:at]
        elif kind == "splice" and n:
            src = arg % n
            data = data[:at] + data[src:src + 32] + data[at:]
        elif kind == "gzip":  # loaders read gzip by its magic bytes: whole, or cut short
            import gzip

            packed = gzip.compress(data, mtime=0)
            data = packed[:pos % (len(packed) + 1)] if arg else packed
        elif kind == "field":
            data = _field(data, pos, arg)
        elif kind == "json":
            data = _json_edit(data, pos, JSON_VALUES[arg])
        elif kind == "xml":
            data = _xml_edit(data, pos, arg)
    return data


def _field(data: bytes, pos: int, value: bytes) -> bytes:
    """One field of one line (split on its TAB, '|' or ',') replaced by `value`."""
    lines = data.splitlines(keepends=True)
    if not lines:
        return data
    i = pos % len(lines)
    body = lines[i].rstrip(b"\r\n")
    end = lines[i][len(body):]
    sep = next((d for d in (b"\t", b"|", b",") if d in body), None)
    if sep is None:
        lines[i] = value + end
    else:
        cells = body.split(sep)
        cells[(pos // len(lines)) % len(cells)] = value
        lines[i] = sep.join(cells) + end
    return b"".join(lines)


def _json_edit(data: bytes, pos: int, value: Any) -> bytes:
    """One value of a JSON document (or of one line of a JSON-lines file) replaced by `value`,
    or, where `pos` picks a key, that key removed."""
    import json

    def edit(obj: Any) -> Any:
        nodes: list[tuple[Any, Any]] = []  # (container, key) of every value

        def walk(o: Any) -> None:
            items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
            for k, v in items:
                nodes.append((o, k))
                walk(v)
        walk(obj)
        if not nodes:
            return value
        box, key = nodes[pos % len(nodes)]
        if isinstance(box, dict) and (pos // len(nodes)) % 4 == 0:
            del box[key]
        else:
            box[key] = value
        return obj

    try:
        return json.dumps(edit(json.loads(data))).encode()
    except ValueError:
        pass
    lines = data.splitlines(keepends=True)
    if not lines:
        return data
    i = pos % len(lines)
    try:
        lines[i] = json.dumps(edit(json.loads(lines[i]))).encode() + b"\n"
    except ValueError:
        return data
    return b"".join(lines)


def _xml_edit(data: bytes, pos: int, action: int) -> bytes:
    """One element of an XML document removed, doubled, emptied, or its text or an attribute set
    to a hostile value; data that does not parse is left as it is."""
    import copy

    from lxml import etree

    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False))
    except (etree.XMLSyntaxError, ValueError):
        return data
    elems = list(root.iter())
    el = elems[pos % len(elems)]
    parent = el.getparent()
    token = FIELDS[(pos // len(elems)) % len(FIELDS)].decode("utf-8", "replace").replace("\x00", "")
    if action == 0 and parent is not None:
        parent.remove(el)
    elif action == 1 and parent is not None:
        el.addnext(copy.deepcopy(el))
    elif action == 2:
        el.clear()
    elif action == 3:
        el.text = token
    elif action == 4 and el.attrib:
        el.set(sorted(el.attrib)[pos % len(el.attrib)], token)
    else:
        el.tail = token
    return etree.tostring(root.getroottree(), xml_declaration=True, encoding="utf-8")


@dataclass
class Target:
    """A reader (`read(path)` reads everything the path holds) and its seeds: files, or release
    folders whose files (`members`, a glob) are mutated one at a time in a copy."""

    name: str
    seeds: list[Path]
    read: Callable[[Path], Any]
    members: str = ""


def _consume(items: Any) -> None:
    for _ in items:
        pass


def _loader(fmt: str) -> Callable[[Path], Any]:
    def read(path: Path) -> Any:
        from kgnorm.ontologies.registry import loader

        return loader(fmt)(path)
    return read


def _mentions(fmt: str) -> Callable[[Path], Any]:
    def read(path: Path) -> None:
        from kgnorm.mentions.readers import read_mentions_with_abbreviations

        _consume(read_mentions_with_abbreviations(path, fmt))
    return read


def _documents(fmt: str) -> Callable[[Path], Any]:
    def read(path: Path) -> None:
        from kgnorm.documents.readers import read_documents

        _consume(read_documents(path, fmt))
    return read


def _sssom(path: Path) -> Any:
    from kgnorm.matching.sssom import read_sssom

    return read_sssom(path)


def _model_meta(path: Path) -> Any:
    """What every command reads of a model directory before its weights: the meta, the method
    it names, and the text pipeline it records."""
    from kgnorm.linking.linker import pipeline_from_meta
    from kgnorm.methods.registry import entry_for, model_meta

    meta = model_meta(path.parent)
    entry_for(meta, path.parent)
    return pipeline_from_meta(meta)


def _sparse(path: Path) -> Any:
    from kgnorm.linking.sparse import SparseScorer

    return SparseScorer.load(path)


def _name_index(path: Path) -> Any:
    from kgnorm.linking.name_index import NameIndex

    return NameIndex.load(path, use_gpu=False)


def targets() -> list[Target]:
    fz = FIX / "fuzz"
    return [
        Target("obo", [FIX / "obo/hp_mini.obo", FIX / "obo/real_oddities.obo"], _loader("obo")),
        Target("mesh-xml", [FIX / "mesh/desc_tree.xml", FIX / "mesh/release/supp2099.xml"], _loader("mesh")),
        Target("mesh-tables", [FIX / "mesh/tables"], _loader("mesh"), "*.tsv"),
        Target("table", [FIX / "table/vocab.tsv"], _loader("table")),
        Target("medic", [FIX / "medic/CTD_diseases.tsv", FIX / "medic/CTD_diseases.csv",
                         FIX / "medic/medic_01Jan2099.txt"], _loader("medic")),
        Target("snomed-rf2", [FIX / "snomed/SnomedCT_InternationalRF2_PRODUCTION_20990131T120000Z"],
               _loader("snomed"), "**/*.txt"),
        Target("meddra", [FIX / "meddra/MedDRA_99_0_English"], _loader("meddra"), "**/*.asc"),
        Target("umls-rrf", [FIX / "umls/2099AA"], _loader("umls"), "**/*.RRF"),
        Target("pubtator", [fz / "docs.pubtator"], lambda p: (_mentions("pubtator")(p), _documents("pubtator")(p))),
        Target("bioc", [fz / "docs.bioc.xml"], _documents("bioc")),
        Target("jsonl", [fz / "docs.jsonl"], _documents("jsonl")),
        Target("concept", [fz / "mentions.concept"], _mentions("concept")),
        Target("mention-tsv", [fz / "mentions.tsv"], _mentions("tsv")),
        Target("sssom", [fz / "mappings.sssom.tsv"], _sssom),
        Target("model-json", [fz / "model/kgnorm-model.json"], _model_meta),
        Target("sparse-json", [fz / "model/sparse"], _sparse, "*.json"),  # a model's sparse scorer
        Target("index-json", [fz / "model/index"], _name_index, "*.json"),  # a model's name index
    ]


@dataclass
class Outcome:
    """What one input did: `kind` is loaded, rejected (a KgnormError of one line naming the file)
    or defect; `why` says what was wrong, `where` the innermost kgnorm frame of a traceback."""

    kind: str
    why: str = ""
    where: str = ""
    data: bytes = field(default=b"", repr=False)
    member: str = ""  # the file of a release folder that was mutated
    seed: str = ""  # the seed's name

    def fixture_name(self, i: int) -> str:
        """The name a kept input gets in tests/fixtures/fuzz/regressions/<target>/: ``i~`` and the
        folder member it replaces ('/' as '__') or the seed file it was made from."""
        return f"{i}~{self.member.replace('/', '__') if self.member else self.seed}"

    def key(self) -> tuple[str, str]:
        return self.why.split(":", 1)[0], self.where


class Hang(Exception):
    pass


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    def fire(*_: Any) -> None:
        raise Hang()

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _innermost(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/kgnorm/" in f.filename
              or "/ontologies/" in f.filename]
    f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{Path(f.filename).name}:{f.lineno}"


def run_one(target: Target, seed: Path, member_index: int, edits: list[tuple[str, int, Any]],
            hang_s: int = HANG_S) -> Outcome:
    """Mutate one file of `seed` with `edits`, read it with `target`, and judge the outcome."""
    with tempfile.TemporaryDirectory(prefix="kgnorm-fuzz-") as tmp:
        given, victim, member = _mutated_copy(target, seed, member_index, Path(tmp))
        data = mutate(victim.read_bytes(), edits)
        victim.write_bytes(data)
        try:
            with _deadline(hang_s):
                target.read(given)
        except Hang:
            return Outcome("defect", f"hang: more than {hang_s} s", "", data, member, seed.name)
        except KgnormError as exc:
            return _judge(str(exc), exc, given, victim, Outcome("rejected", str(exc), "", data, member, seed.name))
        except Exception as exc:  # noqa: BLE001  (the fuzzer's finding)
            return Outcome("defect", f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}", _innermost(exc),
                           data, member, seed.name)
        return Outcome("loaded", data=data, member=member, seed=seed.name)


def _mutated_copy(target: Target, seed: Path, member_index: int, tmp: Path) -> tuple[Path, Path, str]:
    """A copy of `seed` under `tmp`: (the path to read, the file to mutate, its name in the folder)."""
    if seed.is_dir():
        root = tmp / seed.name
        shutil.copytree(seed, root)
        files = sorted(root.glob(target.members))
        victim = files[member_index % len(files)]
        return root, victim, str(victim.relative_to(root))
    victim = tmp / seed.name
    if seed.parent.name == "model":  # a model directory holds the file
        victim = tmp / "model" / seed.name
        victim.parent.mkdir()
    shutil.copy(seed, victim)
    return victim, victim, ""


def _judge(message: str, exc: BaseException, given: Path, victim: Path, o: Outcome) -> Outcome:
    if len(message.strip().splitlines()) > 1:
        o.kind, o.why, o.where = "defect", f"message over several lines: {message[:200]!r}", _innermost(exc)
    elif given.name not in message and victim.name not in message:
        o.kind, o.why, o.where = "defect", f"message names no file: {message[:200]!r}", _innermost(exc)
    return o


@dataclass
class Tally:
    """What a fuzz run of one target saw: inputs tried, loaded, rejected, and each distinct defect
    (by its kind and innermost kgnorm frame) with its first input and how often it came."""

    target: str
    tried: int = 0
    loaded: int = 0
    rejected: int = 0
    defects: dict[tuple[str, str], tuple[Outcome, int]] = field(default_factory=dict)

    def add(self, o: Outcome) -> None:
        self.tried += 1
        if o.kind == "loaded":
            self.loaded += 1
        elif o.kind == "rejected":
            self.rejected += 1
        else:
            first, n = self.defects.get(o.key(), (o, 0))
            self.defects[o.key()] = (first, n + 1)

    def lines(self) -> list[str]:
        return [f"{self.target}: {o.why} at {o.where or '?'}{' in ' + o.member if o.member else ''} "
                f"({n} input(s); first: {o.data[:120]!r})" for o, n in self.defects.values()]


def fuzz(target: Target, examples: int, *, seed: int | None = None, max_edits: int = 8) -> Tally:
    """Run `examples` mutated inputs of `target` (Hypothesis' generate phase only: a defect is
    recorded, not raised and shrunk, so one run counts them all); derandomized (the same inputs
    every run) unless a `seed` draws others."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    tally = Tally(target.name)

    @settings(max_examples=examples, derandomize=seed is None, deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(seed=st.sampled_from(target.seeds), member=st.integers(0, 1 << 10),
           edits=st.one_of(st.lists(STRUCTURED, min_size=1, max_size=4),  # the file keeps its syntax
                           st.lists(EDITS, min_size=1, max_size=max_edits)))
    def one(seed: Path, member: int, edits: list[tuple[str, int, Any]]) -> None:
        tally.add(run_one(target, seed, member, edits))

    (with_seed(seed)(one) if seed is not None else one)()
    return tally


# -- through `kgnorm ingest`: one line on stderr, the store as it was, or a sound store ----------
INGESTED = "fuzzed"  # the ontology name the mutated inputs are ingested under


def ingest_formats() -> dict[str, str]:
    """Target name -> `kgnorm ingest` format, for the targets that are ontology loaders."""
    return {"obo": "obo", "mesh-xml": "mesh", "medic": "medic", "snomed-rf2": "snomed", "meddra": "meddra",
            "umls-rrf": "umls"}


def _cli(args: list[str]) -> tuple[int, str]:
    """Run `kgnorm ARGS` in this process: (exit code, what it wrote to stderr)."""
    import contextlib
    import io

    from kgnorm.cli.app import main

    err = io.StringIO()
    code = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(args)
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, err.getvalue()


def _state(store: str) -> tuple:
    from kgnorm.stores import open_store

    with open_store(store, read_only=True) as st:
        return tuple(tuple(r) for r in st.query(
            "MATCH (o:Ontology) OPTIONAL MATCH (c:Concept {ontology: o.name}) "
            "RETURN o.name, o.content_digest, count(c) ORDER BY o.name").rows)


def ingest_one(target: Target, fmt: str, seed: Path, member_index: int, edits: list[tuple[str, int, Any]],
               store: str) -> Outcome:
    """Mutate one file of `seed`, `kgnorm ingest FMT` it into `store`: it must exit 0 and leave a
    sound store (`kgnorm check`), or exit 1 with one stderr line naming the file and the store as
    it was."""
    from kgnorm.jobs.check import check_store

    with tempfile.TemporaryDirectory(prefix="kgnorm-fuzz-") as tmp:
        given, victim, member = _mutated_copy(target, seed, member_index, Path(tmp))
        data = mutate(victim.read_bytes(), edits)
        victim.write_bytes(data)
        before = _state(store)
        with _deadline(HANG_S * 3):
            try:
                code, err = _cli(["ingest", fmt, str(given), "--ontology", INGESTED, "--store", store, "-q"])
            except Hang:
                return Outcome("defect", f"hang: kgnorm ingest ran more than {HANG_S * 3} s", "", data, member,
                               seed.name)
        o = Outcome("loaded", "", "", data, member, seed.name)
        lines = [line for line in err.splitlines() if line.strip()]
        if code == 0:
            report = check_store(store)
            if not report.sound:
                o.kind, o.why = "defect", f"store not sound after ingest: {report.problems()[0].message[:200]}"
            return o
        errors = [line for line in lines if line.startswith("kgnorm: error: ")]
        if code != 1 or len(errors) != 1 or any(line.startswith(("Traceback", "  File ")) for line in lines):
            o.kind, o.why = "defect", f"exit {code}, stderr {err[-300:]!r}"
        elif given.name not in errors[0] and victim.name not in errors[0]:
            o.kind, o.why = "defect", f"message names no file: {errors[0][:200]!r}"
        elif _state(store) != before:
            o.kind, o.why = "defect", "a failed ingest changed the store"
        else:
            o.kind, o.why = "rejected", errors[0]
        return o


def fuzz_ingest(target: Target, examples: int, store: str, *, seed: int | None = None) -> Tally:
    """`examples` mutated inputs of an ontology loader through `kgnorm ingest` into `store`."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    fmt = ingest_formats()[target.name]
    tally = Tally(f"{target.name} (kgnorm ingest)")

    @settings(max_examples=examples, derandomize=seed is None, deadline=None, database=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(seed=st.sampled_from(target.seeds), member=st.integers(0, 1 << 10),
           edits=st.one_of(st.lists(STRUCTURED, min_size=1, max_size=4), st.lists(EDITS, min_size=1, max_size=8)))
    def one(seed: Path, member: int, edits: list[tuple[str, int, Any]]) -> None:
        tally.add(ingest_one(target, fmt, seed, member, edits, store))

    (with_seed(seed)(one) if seed is not None else one)()
    return tally
