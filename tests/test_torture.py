"""Crash torture, the CI version (issue 52; benchmarks/torture.py runs ≥ 50 kills per job): each job
that writes the embedded store SIGKILLed while it writes (right as it first changes the store, and
for the quick ones a moment later), reviews posted to `kgnorm serve` killed mid-session; after each kill the
store opens, `kgnorm check` passes right after the kill and once a writer reopened it, `kgnorm query`
right after the kill shows no half run, every acknowledged review is there, and
the job run again gives what an uninterrupted run gives. Then one I/O fault per kind: a file size
limit and a read-only store folder end the job with one error line and leave the store as it was. A
re-ingest killed as LadybugDB's post-commit checkpoint begins keeps its ontology (the engine's
recovery lost it; kgnorm.stores.ladybug_guard undoes such a recovery)."""
from __future__ import annotations

import pytest

import torture_faults as tf
import torture_jobs as tj
from cli_runner import run


@pytest.fixture(scope="module")
def world(tmp_path_factory, tiny_bert_dir) -> tj.World:
    return tj.build_world(tmp_path_factory.mktemp("torture"), tiny_bert_dir)


# seconds after the job first changed the store; the slow jobs once (the suite's time is bounded)
KILLS = {"ingest": (0.0, 0.15), "reingest": (0.0, 0.05), "link": (0.0, 0.15), "annotate": (0.0,), "place": (0.0,)}


@pytest.mark.parametrize("name", list(KILLS))
def test_a_job_killed_while_it_writes_leaves_a_sound_store_and_runs_again(world, tmp_path, name):
    job = world.jobs[name]
    expected, _ = tj.expected_results(world, job, tmp_path / "ref", timed=False)
    cycles = [tj.kill_cycle(world, job, delay, tmp_path / "kill", expected, after_write=True)
              for delay in KILLS[name]]
    assert [c.why() for c in cycles if c.failed] == []
    assert any(c.touched and not c.finished for c in cycles), "no kill landed while the job wrote the store"


def test_a_reingest_killed_in_the_checkpoint_after_its_commit_keeps_the_ontology(world, tmp_path):
    """LadybugDB 0.22 recovers a store whose writer was killed as its post-commit checkpoint began
    without what that transaction COPYed: a re-ingest came back without its ontology, concepts and
    the links into them (found by the torture). The recovery is undone from a copy of the main file
    (the store as of the checkpoint before): the store as before the re-ingest, which runs again."""
    job = world.jobs["reingest"]
    expected, _ = tj.expected_results(world, job, tmp_path / "ref", timed=False)
    before = tj.snapshot(world.bases[job.base])
    c = tj.kill_cycle(world, job, 0.0, tmp_path / "kill", expected + [before], at_checkpoint=True)
    assert not c.failed, c.why()
    assert not c.finished and c.touched
    assert tj.snapshot(tmp_path / "kill") in expected
    assert not (tmp_path / "kill" / "graph.before-recovery").exists()


def test_reviews_acknowledged_by_a_killed_server_are_kept(world, tmp_path):
    plan = tj.review_plan(world)[:4]
    ref, _ = tj.review_cycle(world, None, tmp_path / "ref", plan, [])
    expected = [tj.snapshot(tmp_path / "ref")]
    assert not ref.failed and len(expected[0]["reviews"]) == len({m for m, _ in plan})
    cycles = [tj.review_cycle(world, delay, tmp_path / "kill", plan, expected, from_ready=True)[0]
              for delay in (0.5,)]
    assert [c.why() for c in cycles if c.failed] == []


def test_a_reader_finishes_the_checkpoint_a_killed_writer_left(capsys, world, tmp_path):
    """A writer killed during a checkpoint leaves a shadow file; LadybugDB then refuses read-only
    opens until a read-write open recovers the store. `kgnorm check` (a reader) finishes it instead
    of waiting and blaming a dead process for a lock (found by the torture: the store `kgnorm serve`
    was killed in)."""
    folder = tj.copy_store(world.bases["annotated"], tmp_path / "store")
    (folder / "graph.shadow").touch()
    code, out, err = run(capsys, "check", "--store", tj.uri(folder))
    assert code == 0 and out.startswith("sound: "), err
    assert not (folder / "graph.shadow").exists()
    assert tj.snapshot(folder) == tj.snapshot(world.bases["annotated"])


def test_a_file_size_limit_fails_in_one_line_and_leaves_the_store(world, tmp_path):
    job = world.jobs["link"]
    size = max(p.stat().st_size for p in world.bases[job.base].iterdir())
    f = tf.fault_cycle(world, job, "fsize", tmp_path / "store", fsize=size + 64 * 1024)
    assert not f.failed, f.line()
    assert f.code != 0


def test_a_store_folder_made_read_only_midway_fails_in_one_line(world, tmp_path):
    if tf.read_only_binds() is None:
        pytest.skip("running as root without setpriv: a chmod does not bind")
    f = tf.fault_cycle(world, world.jobs["link"], "read-only", tmp_path / "store", moment=0.0)
    assert not f.failed, f.line()


def test_a_store_whose_creating_ingest_was_killed_is_empty_not_old(capsys, tmp_path):
    """An ingest killed after LadybugDB made the file but before the tables were all created leaves
    a store with no data: `kgnorm check` says so (sound, a note), not that an earlier kgnorm made it
    (found by the torture); the same ingest run again fills it."""
    import ladybug as lb

    folder = tmp_path / "store"
    folder.mkdir()
    db = lb.Database(str(folder / "graph"))
    lb.Connection(db).execute("CREATE NODE TABLE Ontology(name STRING PRIMARY KEY)")
    db.close()
    code, out, err = run(capsys, "check", "--store", tj.uri(folder))
    assert code == 0 and out.startswith("note: empty: ") and "run it again" in out, (out, err)


def test_a_review_on_a_full_disk_waits_in_the_journal_and_lands(world, tmp_path, monkeypatch):
    """With too little room to write the store (ladybug_guard.require_room), a review is kept in
    the journal as pending, not refused after it was journaled; it lands once there is room."""
    import shutil
    from collections import namedtuple

    from kgnorm.review.desk import ReviewDesk
    from kgnorm.stores import ladybug_guard

    folder = tj.copy_store(world.bases["annotated"], tmp_path / "store")
    mention = tj.review_plan(world)[0][0]
    real = shutil.disk_usage
    monkeypatch.setattr(ladybug_guard.shutil, "disk_usage", lambda p: namedtuple("U", "total used free")(1, 1, 2**20))
    desk = ReviewDesk(tj.uri(folder), retry_s=3600)
    try:
        review = desk.record(mention, "nil", reviewer="ann")
        assert [r.uid for r in desk.pending()] == [review.uid]
        monkeypatch.setattr(ladybug_guard.shutil, "disk_usage", real)
        assert desk.flush() == 1 and desk.pending() == []
    finally:
        desk.close()
    assert review.uid in tj.stored_review_uids(folder)


def test_a_retrain_killed_as_it_writes_a_model_leaves_none_half_written_and_runs_again(world, tmp_path):
    """A retrain killed as soon as it began writing a model directory: OUT/linker is not there
    half-written (nothing `annotate --model` would take for a finished model) and the same command
    run again finishes (found by the torture: killed so, a retrain left an OUT/linker that loaded as a
    model though its training had not ended, a second later also an OUT/ner with a half-written
    encoder config, and the run again was refused: 'exists')."""
    job = world.jobs["retrain"]
    expected = tj.snapshot(world.bases[job.base])  # the store gains the Run and nothing else
    expected["runs"] = sorted([*expected["runs"], ("retrain", "biosyn")])
    c = tj.kill_cycle(world, job, 0.0, tmp_path / "kill", [expected], after=tj.model_file_written)
    assert not c.failed, c.why()
    assert not c.finished


def test_a_retrain_stopped_while_it_publishes_is_published_by_the_next(capsys, world, tmp_path, monkeypatch):
    """Stopped after its commit point (the staged linker's `retrained_on` block) with OUT/ner renamed
    and OUT/linker not yet, and no Run written: the same command run again trains nothing, writes
    the Run and renames the linker into place."""
    from kgnorm.jobs import retrain as retrain_job
    from kgnorm.jobs.retrain_out import staging

    folder = tj.copy_store(world.bases["reviewed"], tmp_path / "store")
    args = [*world.jobs["retrain"].args(folder), "--store", tj.uri(folder)]

    def stopped(out, run, store):
        (staging(out) / "ner").rename(out / "ner")
        raise KeyboardInterrupt  # as if killed: nothing after this runs

    monkeypatch.setattr(retrain_job, "publish", stopped)
    assert run(capsys, *args)[0] == 130
    out = folder / "retrained"
    assert (out / "ner").exists() and not (out / "linker").exists()
    assert tj.retrain_out_problems(folder, False) == []
    assert "retrain" not in {k for k, _ in tj.snapshot(folder)["runs"]}
    monkeypatch.undo()
    code, _, err = run(capsys, *[a for a in args if a != "-q"])  # not quiet: its notes are printed
    assert code == 0, err
    assert "published the models of a retrain stopped" in err and "nothing trained again" in err
    assert tj.retrain_out_problems(folder, True) == []


@pytest.mark.parametrize("limit", ["below a model file", "below what the store needs"])
def test_a_retrain_that_cannot_write_fails_in_one_line_and_leaves_out_and_the_store(capsys, world, tmp_path, limit):
    """A file size limit reached while retrain writes its models (torch and safetensors wrap the
    short write in their own errors: it came out as a RuntimeError with --debug advice), or only
    when it writes the Run into the store at the end (the staged models were left committed in
    OUT): one line saying what to do, exit 1, OUT as before (here: absent), the store as before."""
    import resource

    folder = tj.copy_store(world.bases["reviewed"], tmp_path / "store")
    before = tj.snapshot(folder)
    largest = max(p.stat().st_size for p in world.model.rglob("*") if p.is_file())
    fsize = largest // 2 if limit.startswith("below a model") else 8 * 2**20
    args = [*world.jobs["retrain"].args(tmp_path), "--linker-minutes", "0.01", "--ner-minutes", "0.01",
            "--store", tj.uri(folder)]
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, hard))
    try:
        code, _, err = run(capsys, *args)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("kgnorm: error: "), err
    assert ("ulimit -f" in lines[0] and "run" in lines[0] and "as before" in lines[0]
            and "--debug" not in lines[0]), lines[0]
    assert not (tmp_path / "retrained").exists()
    assert tj.snapshot(folder) == before


def test_kill_moments_follow_the_duration_measured_now():
    """The torture's moments are fractions of the job's duration as measured in the session (the
    median of the last three whole runs), not of one timing taken under another load; a run timed
    afresh when cycles stop measuring."""
    timed = []
    pacer = tj.Pacer([20.0], retime=lambda: timed.append(1) or 5.0, refresh=2)
    pacer.add(tj.Cycle("x", 1.0, measured=[4.0]))
    pacer.add(tj.Cycle("x", 1.0, measured=[6.0]))
    assert pacer.span() == 6.0  # median of 20, 4, 6
    pacer.add(tj.Cycle("x", 1.0, measured=[5.0]))
    assert pacer.span() == 5.0 and timed == []
    pacer.add(tj.Cycle("x", 1.0))
    pacer.add(tj.Cycle("x", 1.0))
    assert timed == [1] and pacer.seconds[-1] == 5.0
    drawn = list(tj.fractions(4, 0, tries=2))
    assert [s for s, _ in drawn] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(s / 4 <= f < (s + 1) / 4 for s, f in drawn)
