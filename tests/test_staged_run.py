"""Issue 17: `link` streams to the store in batches and the run stays all or nothing. Store-level
tests run on LadybugDB and over Bolt (the `store` fixture of test_stores)."""
from __future__ import annotations

import csv
import io

import pytest

from cli_runner import run
from kgnorm.errors import InputError, StoreError
from kgnorm.stores import LinkEdge, MentionRow, RunRecord, RunWrite, open_store
from kgnorm.stores.staged_run import StagedMention, StagedRun
from test_stores import make_graph, store  # noqa: F401  (the two-backend fixture)

CONCEPTS = ["T:a", "T:b", "T:c", "T:root"]


def _items(n: int, prefix: str = "f", shift: int = 0) -> list[StagedMention]:
    """n mentions; every third is nil (no edge), every fourth a composite (two edges at rank 1),
    and mention 5 also links to a concept the store lacks (skipped)."""
    out = []
    for i in range(n):
        uid = f"{prefix}:m{i}"
        links = [] if i % 3 == 2 else [LinkEdge(uid, CONCEPTS[(i + shift) % 4], 0.5 + i / 100, 1)]
        if i % 4 == 3:
            links.append(LinkEdge(uid, CONCEPTS[(i + 1) % 4], 0.4, 1))
        if i == 5:
            links.append(LinkEdge(uid, "T:absent", 0.3, 2))
        out.append(StagedMention(MentionRow(uid, f"text {i}", "d1", i, i + 1, mention_id=f"m{i}", source="f.tsv"),
                                 links))
    return out


def _snapshot(st) -> dict:
    def rows(cypher: str) -> list[tuple]:
        return sorted(tuple(r) for r in st.query(cypher).rows)

    return {"mentions": rows("MATCH (m:Mention) RETURN m.uid, m.text, m.doc_id, m.start, m.mention_id, m.source"),
            "links": rows("MATCH (m:Mention)-[l:LINKED_TO]->(c:Concept) "
                          "RETURN m.uid, c.key, l.score, l.rank, l.method, l.run"),
            "runs": rows("MATCH (r:Run) RETURN r.uid, r.kind, r.method, r.params_json"),
            "staged": rows("MATCH (r:Run) WHERE r.uid ENDS WITH '~staging' RETURN r.uid") + _staging_tables(st)}


def _staging_tables(st) -> list[tuple]:
    """LadybugDB: the per-run STAGED_* tables left; Neo4j: the STAGED edges left."""
    if st.uri.startswith("ladybug://"):
        return sorted((r[1],) for r in st.query("CALL show_tables() RETURN *").rows if r[1].startswith("STAGED"))
    return [(n,) for n in st.query("MATCH ()-[s:STAGED]->() RETURN count(s)").rows[0] if n]


def _staged(st, run: RunRecord, items: list[StagedMention], batch: int) -> tuple[int, int]:
    repeats = written = 0
    with StagedRun(st, run, source="f.tsv") as staged:
        for i in range(0, len(items), batch):
            result = staged.add(items[i:i + batch])
            repeats += result.repeats
            written += result.links_written
        staged.publish()
    return repeats, written


def _clear_runs(st) -> None:
    st.query("MATCH (m:Mention) DETACH DELETE m")
    st.query("MATCH (r:Run) DETACH DELETE r")


def test_batches_write_what_one_write_run_writes(store):  # noqa: F811
    store.load_ontology(make_graph())
    items = _items(11)
    run = RunRecord("run-b", "link", "biosyn", params={"input": "f.tsv"})
    store.write_run(RunWrite(run, [it.row for it in items],
                             [e for it in items for e in it.links if e.concept_uid != "T:absent"]))
    whole = _snapshot(store)
    assert len(whole["mentions"]) == 11 and len(whole["runs"]) == 1
    for batch in (11, 4, 1):
        _clear_runs(store)
        assert _staged(store, run, items, batch) == (0, len(whole["links"]))
        assert _snapshot(store) == whole, batch


def test_rerun_replaces_and_keeps_mentions_of_other_runs(store):  # noqa: F811
    store.load_ontology(make_graph())
    other = RunRecord("run-other", "link", "x")
    _staged(store, other, _items(6), 4)
    run = RunRecord("run-r", "link", "biosyn")
    _staged(store, run, _items(9), 4)
    _staged(store, run, _items(9, shift=1), 2)  # the same run again, other results: one copy, the new one
    snap = _snapshot(store)
    assert [r[0] for r in snap["runs"]] == ["run-other", "run-r"] and snap["staged"] == []
    mine = [r for r in snap["links"] if r[5] == "run-r"]
    assert ("f:m0", "toy|T:b", 0.5, 1, "biosyn", "run-r") in mine and len(mine) == 8
    assert len(snap["mentions"]) == 9 and len([r for r in snap["links"] if r[5] == "run-other"]) == 5


@pytest.mark.parametrize("fail", ["conflict", "interrupt", "store"])
def test_a_failure_in_batch_3_leaves_the_store_as_it_was(store, fail):  # noqa: F811
    store.load_ontology(make_graph())
    _staged(store, RunRecord("run-f", "link", "biosyn"), _items(7), 3)  # an earlier copy of the same run
    _staged(store, RunRecord("run-o", "link", "x"), _items(4, prefix="g"), 3)
    before = _snapshot(store)
    items = _items(12, shift=2) + _items(3, prefix="g")  # new mentions, mentions of both earlier runs
    if fail == "conflict":  # batch 3 reuses an id of batch 1 for another text
        items[7] = StagedMention(MentionRow("f:m1", "another text", "d1", mention_id="m1"), [])
    elif fail == "store":  # an edge from a mention the store does not have: the store refuses batch 3
        items[7].links.append(LinkEdge("elsewhere", "T:a", 1.0, 1))
    error = {"conflict": InputError, "interrupt": KeyboardInterrupt, "store": StoreError}[fail]
    with pytest.raises(error) as err:
        with StagedRun(store, RunRecord("run-f", "link", "biosyn"), source="f.tsv") as staged:
            for i in range(0, len(items), 3):
                if fail == "interrupt" and i == 6:
                    raise KeyboardInterrupt  # Ctrl-C while batch 3 is being linked
                staged.add(items[i:i + 3])
            staged.publish()
    if fail == "conflict":
        assert "mention id m1 is given twice, for 'text 1' and 'another text'" in str(err.value)
    if fail == "store":  # the store's own refusal, naming the missing node
        assert str(err.value).startswith("writing run run-f failed") and "elsewhere" in str(err.value), err.value
    assert _snapshot(store) == before


def test_repeats_across_batches_are_stored_once(store):  # noqa: F811
    store.load_ontology(make_graph())
    items = _items(6)
    again = [items[0], items[4], items[0]]  # batch 3 repeats batch 1 (twice) and batch 2
    run = RunRecord("run-d", "link", "biosyn")
    assert _staged(store, run, items + again, 3)[0] == 3
    once = _snapshot(store)
    _clear_runs(store)
    _staged(store, run, items, 3)
    assert _snapshot(store) == once


# -- link_mentions: the library call `kgnorm link` wraps ---------------------------------
@pytest.fixture()
def linked_store(capsys, tmp_path, tiny_bert_dir):
    uri = f"ladybug://{tmp_path}/graph"
    obo = tmp_path / "toy.obo"
    obo.write_text("format-version: 1.2\nontology: toy\n\n" + "".join(
        f"[Term]\nid: TOY:000{i}\nname: {name}\n" + (f"is_a: TOY:0000\n" if i else "") + "\n"
        for i, name in enumerate(["toy root", "heart attack", "kidney failure", "breast cancer"])))
    assert run(capsys, "ingest", "obo", str(obo), "--ontology", "toy", "--store", uri, "-q")[0] == 0
    model = tmp_path / "model"
    code, _, err = run(capsys, "train", "biosyn", "--ontology", "toy", "--out", str(model), "--encoder",
                       str(tiny_bert_dir), "--store", uri, "-q")
    assert code == 0, err
    return uri, model


def test_link_mentions_strings_collect_and_write_batch(linked_store, tmp_path):
    from kgnorm.jobs.link import link_mentions

    uri, model = linked_store
    texts = ["heart attack", "kidney failure", "breast cancer", "heart attack and kidney failure", "toy root"]
    out = io.StringIO()
    rep = link_mentions(model, texts, store=uri, top_k=2, output=out, collect=True, write_batch=2, progress=False)
    assert rep.n_mentions == 5 and rep.run_uid and rep.n_edges >= 5
    assert [r["mention_id"] for r in rep.rows if r["rank"] == "1"] == ["1", "2", "3", "4", "5"]
    assert rep.rows == list(csv.DictReader(io.StringIO(out.getvalue()), delimiter="\t"))
    with open_store(uri, read_only=True) as st:
        small = _snapshot(st)
    assert sorted(r[4] for r in small["mentions"]) == ["1", "2", "3", "4", "5"] and small["staged"] == []
    # one batch writes the same; the same strings are the same run (one copy)
    again = link_mentions(model, texts, store=uri, top_k=2, write_batch=50_000, progress=False)
    assert again.run_uid == rep.run_uid and again.rows == []
    with open_store(uri, read_only=True) as st:
        assert _snapshot(st) == small
    # other strings: another run and other mention nodes
    other = link_mentions(model, texts[:2], store=uri, write=False, collect=True, progress=False)
    assert other.run_uid is None and {r["mention_id"] for r in other.rows} == {"1", "2"}


def test_cli_write_batch_gives_the_same_store(capsys, linked_store, tmp_path):
    uri, model = linked_store
    mentions = tmp_path / "m.tsv"
    mentions.write_text("id\ttext\na\theart attack\nb\tkidney failure\nc\tbreast cancer\nd\ttoy root\n")
    snaps, outs = [], []
    for batch in ("1", "50000"):
        code, out, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--store", uri,
                             "--write-batch", batch)
        assert code == 0 and "linked 4 mention(s)" in err, err
        outs.append(out)
        with open_store(uri, read_only=True) as st:
            snaps.append(_snapshot(st))
    assert snaps[0] == snaps[1] and outs[0] == outs[1] and len(snaps[0]["mentions"]) == 4


@pytest.mark.filterwarnings("ignore:.*duplicate PMID")  # the reader's own notice of the repeated document
def test_cli_repeated_document_across_batches_stored_once(capsys, linked_store, tmp_path):
    uri, model = linked_store
    doc = "11|t|heart attack here\n11|a|and kidney failure.\n11\t0\t12\theart attack\tDisease\tTOY:0001\n\n"
    pub = tmp_path / "dup.pubtator"
    pub.write_text(doc + doc)
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(pub), "--store", uri,
                       "--write-batch", "1", "-q")
    assert code == 0 and "1 mention(s) repeat an earlier one" in err and "stored once" in err, err
    with open_store(uri, read_only=True) as st:
        snap = _snapshot(st)
    assert [r[4] for r in snap["mentions"]] == ["11:0-12"] and len(snap["links"]) == 1 and snap["staged"] == []


def test_seen_ids_remember_ids_in_8_bytes_each():
    from kgnorm.mentions.seen_ids import SeenIds, first_line_with_id

    seen = SeenIds(merge_every=100)  # several merges into the sorted array
    assert not any(seen.add(f"m{i}") for i in range(1000))
    assert all(seen.add(f"m{i}") for i in range(0, 1000, 7)) and not seen.add("m1000")
    assert seen._sorted.dtype.itemsize == 8 and len(seen._recent) < 100
    lines = list(enumerate(["id\ttext", "a\tx", "", "b\ty", "a\tz"], 1))
    assert first_line_with_id(lines, 0, "a", 5) == 2 and first_line_with_id(lines, 0, "b", 4) is None


def test_a_failed_link_leaves_the_old_tsv_and_the_store(capsys, linked_store, tmp_path):
    """A reused id in batch 4 fails the run: the staged batches are removed and the TSV the user
    named keeps its old content (the new one was written beside it and is dropped)."""
    uri, model = linked_store
    mentions = tmp_path / "m.tsv"
    mentions.write_text("id\ttext\na\theart attack\nb\tkidney failure\nc\tbreast cancer\na\ttoy root\n")
    out = tmp_path / "out.tsv"
    out.write_text("an earlier result\n")
    with open_store(uri, read_only=True) as st:
        before = _snapshot(st)
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--store", uri,
                       "--write-batch", "1", "--output", str(out))
    assert code != 0 and "m.tsv" in err, err
    assert out.read_text() == "an earlier result\n" and sorted(p.name for p in tmp_path.glob("out.tsv*")) == ["out.tsv"]
    with open_store(uri, read_only=True) as st:
        assert _snapshot(st) == before
    mentions.write_text("id\ttext\na\theart attack\nb\tkidney failure\n")
    code, _, err = run(capsys, "link", "--model", str(model), "--input", str(mentions), "--store", uri,
                       "--write-batch", "1", "--output", str(out), "-q")
    assert code == 0, err
    assert out.read_text().startswith("mention_id\tmention\trank\t") and len(out.read_text().splitlines()) == 1 + 2 * 4  # 4 concepts


KILLED = """
import os, signal, sys
sys.path.insert(0, sys.argv[2])
from test_staged_run import _items
from kgnorm.stores import RunRecord, open_store
from kgnorm.stores.staged_run import StagedRun

st = open_store(sys.argv[1])
staged = StagedRun(st, RunRecord("run-killed", "link", "biosyn", params={"input": "k.tsv"}), source="k.tsv")
staged.__enter__()
staged.add(_items(5, prefix="k"))
os.kill(os.getpid(), signal.SIGKILL)  # killed outright: no clean-up of any kind runs
"""


def _kill_a_link_run(store) -> tuple[str, bool]:  # noqa: F811
    """A real child process stages a batch of run "run-killed" and is SIGKILLed; (uri, embedded)."""
    import subprocess
    import sys
    from pathlib import Path

    store.load_ontology(make_graph())
    uri, embedded = store.test_uri, store.test_uri.startswith("ladybug://")
    if embedded:
        store.close()  # one writing process at a time
    child = subprocess.run([sys.executable, "-c", KILLED, uri, str(Path(__file__).parent)], capture_output=True,
                           text=True)
    assert child.returncode == -9, child.stderr
    return uri, embedded


def test_a_killed_process_leaves_a_stage_the_next_run_clears(store):  # noqa: F811
    """A real process staged a batch and was SIGKILLed; the next staged run (another run uid)
    finds the stage's recorded process gone, removes its rows, and says so."""
    uri, embedded = _kill_a_link_run(store)
    st = open_store(uri, read_only=True) if embedded else store  # a reader leaves the stage: it cannot write
    try:
        left = _snapshot(st)
        assert left["staged"] and any(m[0].startswith("k:") for m in left["mentions"])
        assert any(r[1] == "staging" for r in left["runs"])
        if embedded:  # opening it to write removes the stage; the link run then reports it
            st.close()
            st = open_store(uri)
        run = RunRecord("run-next", "link", "biosyn", params={"input": "n.tsv"})
        with StagedRun(st, run, source="n.tsv") as staged:
            staged.add(_items(4, prefix="n"))
            staged.publish()
        assert staged.abandoned == ["run-killed~staging"]
        after = _snapshot(st)
        assert after["staged"] == [] and [r[0] for r in after["runs"]] == ["run-next"]
        assert {m[0].split(":")[0] for m in after["mentions"]} == {"n"}
        assert {link[5] for link in after["links"]} == {"run-next"}
    finally:
        if embedded:
            st.close()


@pytest.mark.parametrize("writer", ["query", "ingest"])
def test_any_writer_opening_the_store_clears_a_killed_link_stage(store, writer, capsys, tmp_path):  # noqa: F811
    """Issue 25 item 6: not only the next link run; `query --write` or `ingest` (any writer) removes
    what the killed run staged when it opens the store, and says so; the ontology stays."""
    from pathlib import Path

    uri, _ = _kill_a_link_run(store)
    with open_store(uri, read_only=True) as ro:
        assert _snapshot(ro)["staged"]  # opened read-only: left as it was
    if writer == "query":
        code, out, err = run(capsys, "query", "--write", "--format", "csv", "MATCH (c:Concept) RETURN count(c) AS n",
                             "--store", uri)
        assert code == 0 and out.split() == ["n", "4"], err
    else:
        obo = Path(__file__).parent / "fixtures" / "obo" / "hp_mini.obo"
        code, _, err = run(capsys, "ingest", "obo", str(obo), "--ontology", "hp", "--store", uri, "-q")
        assert code == 0, err
    assert "removed what 1 earlier link run(s) left in the store when their process was killed: " \
           "run-killed~staging" in err
    with open_store(uri, read_only=True) as st:
        after = _snapshot(st)
        assert after["staged"] == [] and after["runs"] == [] and after["mentions"] == []
        assert st.ontology_info("toy") is not None


def test_a_stage_is_cleared_only_when_its_process_is_gone():
    import json
    import socket
    import subprocess

    from kgnorm.stores.stages import owner_is_gone, stage_owner

    done = subprocess.Popen(["true"])
    done.wait()
    host = socket.gethostname()
    assert owner_is_gone(json.dumps({"owner": {"pid": done.pid, "host": host}}))
    assert not owner_is_gone(json.dumps({"owner": stage_owner()}))                 # this process
    assert not owner_is_gone(json.dumps({"owner": {"pid": done.pid, "host": host + "-other"}}))  # can't tell
    assert not owner_is_gone(json.dumps({"edge_run": "x"})) and not owner_is_gone(None)  # written before owners


def test_link_writes_through_a_bounded_buffer_pool(linked_store, monkeypatch):
    """`link` opens the store it writes with LadybugDB's buffer pool bounded (512 MB, raised to the
    store file's size: test_buffer_pool_bound_grows_with_the_store_file), not LadybugDB's default
    of most of the RAM. Every open is recorded at the store's own `_open`, wherever link lives."""
    from kgnorm.jobs.link import link_mentions
    from kgnorm.jobs.run import LINK_BUFFER_POOL_MB
    from kgnorm.stores.ladybug_store import LadybugStore

    uri, model = linked_store
    opened: list[tuple[bool, int]] = []
    real_open = LadybugStore._open

    def recorded(self, lock_timeout):
        opened.append((self.read_only, self.pool_mb()))
        return real_open(self, lock_timeout)

    monkeypatch.setattr(LadybugStore, "_open", recorded)
    rep = link_mentions(model, ["heart attack", "kidney failure"], store=uri, progress=False)
    assert rep.run_uid and rep.n_edges >= 2
    writers = {pool for read_only, pool in opened if not read_only}
    assert writers == {LINK_BUFFER_POOL_MB}, opened


def test_buffer_pool_bound_grows_with_the_store_file(tmp_path):
    """A bound on LadybugDB's buffer pool is raised to the store file's size, so a big store's
    checkpoint does not run out of pool; no bound stays LadybugDB's default."""
    from kgnorm.jobs.run import LINK_BUFFER_POOL_MB
    from kgnorm.stores.ladybug_store import pool_mb_for

    big = tmp_path / "big"
    with big.open("wb") as fh:
        fh.truncate(3 * LINK_BUFFER_POOL_MB * 2**20 + 1)  # a sparse file: the size without the disk
    assert pool_mb_for(LINK_BUFFER_POOL_MB, big) == 3 * LINK_BUFFER_POOL_MB + 1
    assert pool_mb_for(LINK_BUFFER_POOL_MB, tmp_path / "new") == LINK_BUFFER_POOL_MB
    assert pool_mb_for(None, big) == 0
    uri = f"ladybug://{tmp_path}/graph"
    with open_store(uri, create=True) as st:
        st.load_ontology(make_graph())
        assert st.pool_mb() == 0
    with open_store(uri, buffer_pool_mb=LINK_BUFFER_POOL_MB) as st:  # a small store: the bound as given
        assert st.pool_mb() == LINK_BUFFER_POOL_MB
