"""The shared training loop on a toy task (a linear model with dropout, seeded batches):
budgets, resume == uninterrupted, epoch-0 selection, patience, refusal."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kgnorm.errors import KgnormError
from kgnorm.training.loop import CHECKPOINT, LoopConfig, TrainingLoop, run_fingerprint
from kgnorm.training.task import TrainingTask


class Toy(TrainingTask):
    """Regression with dropout (so resume must restore or reseed the torch RNG) and an
    epoch-seeded permutation (so resume must restore the epoch's order)."""

    def __init__(self, dev_scores: list[float] | None = None, fail_at: int | None = None,
                 batch: int = 4):
        torch.manual_seed(0)
        g = np.random.default_rng(0)
        self.x = torch.from_numpy(g.normal(size=(20, 5)).astype(np.float32))
        self.y = self.x @ torch.arange(5, dtype=torch.float32)
        self.net = self.module = torch.nn.Sequential(torch.nn.Dropout(0.2), torch.nn.Linear(5, 1))
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=0.05)
        self.batch, self.dev_scores, self.fail_at = batch, list(dev_scores or []), fail_at
        self.steps_run, self.saved, self.perm = 0, [], None

    def start_epoch(self, epoch, saved):
        self.perm = (torch.as_tensor(saved["perm"]) if saved is not None
                     else torch.from_numpy(np.random.default_rng(epoch).permutation(20)))
        return 5

    def epoch_state(self):
        return {"perm": self.perm}

    def loss(self, step):
        if self.fail_at is not None and self.steps_run == self.fail_at:
            raise KeyboardInterrupt
        self.steps_run += 1
        self.net.train()
        sel = self.perm[step * self.batch:(step + 1) * self.batch]
        return ((self.net(self.x[sel]).squeeze(-1) - self.y[sel]) ** 2).mean()

    def end_epoch(self):
        return {"norm": float(self.net[1].weight.detach().norm())}

    def evaluate(self):
        if not self.dev_scores:
            return None
        return {"acc@1": self.dev_scores.pop(0)}

    def save(self, record, history):
        self.saved.append(record["epoch"])


def _run(task, out, resume=True, **kw):
    kw = {"epochs": 3, "progress": False, **kw}
    return TrainingLoop(LoopConfig(**kw), out, resume=resume).run(task, "fp")


def _weights(task):
    return torch.cat([p.detach().flatten() for p in task.net.parameters()])


def test_no_dev_selects_every_epoch_and_checkpoints(tmp_path):
    t = Toy()
    r = _run(t, tmp_path / "ck.pt")
    assert r.epochs_completed == 3 and r.global_step == 15 and r.stop_reason == "epochs"
    assert [h["epoch"] for h in r.history] == [1, 2, 3] and t.saved == [1, 2, 3]
    assert r.best_epoch == 3 and r.best_value is None
    assert all(np.isfinite(h["loss"]) and h["steps"] == 5 and "norm" in h for h in r.history)
    assert r.history[-1]["loss"] < r.history[0]["loss"]
    ck = torch.load(tmp_path / "ck.pt" / CHECKPOINT, weights_only=True)
    assert ck["epoch"] == 3 and "model" in ck and "optimizer" in ck


def test_resume_after_an_epoch_equals_uninterrupted(tmp_path):
    full = Toy()
    rf = _run(full, tmp_path / "full.pt")
    part = Toy()
    _run(part, tmp_path / "part.pt", epochs=1)
    again = Toy()
    rr = _run(again, tmp_path / "part.pt")
    assert rr.resumed_from == {"epoch": 1, "step": 0} and rr.epochs_completed == 3
    assert torch.allclose(_weights(full), _weights(again))
    assert [h["loss"] for h in rr.history] == pytest.approx([h["loss"] for h in rf.history])
    done = _run(Toy(), tmp_path / "part.pt")              # finished: nothing left to do
    assert done.resumed_from == {"epoch": 3, "step": 0} and done.global_step == 15


def test_resume_inside_an_epoch_equals_uninterrupted(tmp_path):
    full = Toy()
    rf = _run(full, tmp_path / "full.pt")
    with pytest.raises(KeyboardInterrupt):
        _run(Toy(fail_at=7), tmp_path / "cut.pt", checkpoint_every_steps=1)
    ck = torch.load(tmp_path / "cut.pt" / CHECKPOINT, weights_only=True)
    assert (ck["epoch"], ck["step"]) == (1, 2) and len(ck["losses"]) == 2
    res = Toy()
    rr = _run(res, tmp_path / "cut.pt", checkpoint_every_steps=1)
    assert rr.resumed_from == {"epoch": 1, "step": 2} and res.steps_run == 8
    assert torch.allclose(_weights(full), _weights(res))
    assert [h["loss"] for h in rr.history] == pytest.approx([h["loss"] for h in rf.history])


def test_epoch_budget_stops_before_an_epoch_that_would_end_past_it(tmp_path):
    r = _run(Toy(), tmp_path / "b.pt", max_seconds=0.0)
    assert r.epochs_completed == 1 and r.stop_reason == "max_seconds"
    r2 = _run(Toy(), tmp_path / "b.pt", max_seconds=None)     # a larger budget continues
    assert r2.resumed_from == {"epoch": 1, "step": 0} and r2.epochs_completed == 3
    r3 = _run(Toy(), tmp_path / "c.pt", max_seconds=3600.0)
    assert r3.epochs_completed == 3 and r3.stop_reason == "epochs"


def test_step_budget_stops_inside_an_epoch_evaluates_it_and_resumes(tmp_path):
    full = Toy(dev_scores=[0.1, 0.2, 0.3])
    _run(full, tmp_path / "full.pt", budget="step", step_seed=5)
    cut = Toy(dev_scores=[0.5, 0.6])
    r = _run(cut, tmp_path / "cut.pt", budget="step", step_seed=5, max_steps=7)
    assert r.global_step == 7 and r.stop_reason == "max_steps" and r.epochs_completed == 1
    assert r.history[-1]["partial"] and r.history[-1]["epoch"] == 1.4
    assert r.best_epoch == 1.4 and r.best_value == 0.6 and cut.saved == [1, 1.4]
    res = Toy(dev_scores=[0.9, 0.95])
    r2 = _run(res, tmp_path / "cut.pt", budget="step", step_seed=5)
    assert r2.resumed_from == {"epoch": 1, "step": 2} and r2.global_step == 15
    assert torch.allclose(_weights(full), _weights(res))
    with pytest.raises(KgnormError, match="budget"):
        LoopConfig(epochs=1, budget="hours").check()


def test_epoch_zero_is_a_candidate_and_wins_when_training_hurts(tmp_path):
    t = Toy(dev_scores=[0.9, 0.5, 0.6, 0.7])
    r = _run(t, tmp_path / "z.pt", eval_initial=True)
    assert [h["epoch"] for h in r.history] == [0, 1, 2, 3]
    assert r.history[0]["loss"] is None and r.history[0]["dev"]["acc@1"] == 0.9
    assert r.best_epoch == 0 and r.best_value == 0.9 and t.saved == [0]
    # a resumed run does not evaluate epoch 0 again
    _run(Toy(dev_scores=[0.9, 0.5]), tmp_path / "y.pt", eval_initial=True, epochs=1)
    t2 = Toy(dev_scores=[0.95, 0.1])
    r2 = _run(t2, tmp_path / "y.pt", eval_initial=True)
    assert [h["epoch"] for h in r2.history] == [0, 1, 2, 3] and r2.best_epoch == 2
    assert t2.saved == [2]


def test_patience_and_step_evaluations(tmp_path):
    t = Toy(dev_scores=[0.5, 0.4, 0.3, 0.2])
    r = _run(t, tmp_path / "p.pt", patience=2, epochs=10)
    assert r.stop_reason == "patience" and r.epochs_completed == 3 and r.best_epoch == 1
    t = Toy(dev_scores=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    r = _run(t, tmp_path / "s.pt", eval_every_steps=2, epochs=2)
    assert [h["epoch"] for h in r.history] == [0.4, 0.8, 1, 1.4, 1.8, 2]
    assert r.best_epoch == 2 and r.history[0]["steps"] == 2


def test_eval_every_skips_epochs_but_not_the_last(tmp_path):
    t = Toy(dev_scores=[0.3, 0.2])
    r = _run(t, tmp_path / "e.pt", eval_every=2)
    assert ["dev" in h for h in r.history] == [False, True, True] and r.best_epoch == 2


def test_other_fingerprint_or_corrupt_checkpoint_is_refused(tmp_path):
    _run(Toy(), tmp_path / "f.pt", epochs=1)
    with pytest.raises(KgnormError, match="other data or settings"):
        TrainingLoop(LoopConfig(epochs=2, progress=False), tmp_path / "f.pt").run(Toy(), "other")
    r = TrainingLoop(LoopConfig(epochs=1, progress=False), tmp_path / "f.pt",
                     resume=False).run(Toy(), "other")
    assert r.resumed_from is None and r.epochs_completed == 1
    (tmp_path / "bad.pt" / CHECKPOINT).parent.mkdir(parents=True)
    (tmp_path / "bad.pt" / CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(KgnormError, match="unreadable checkpoint"):
        _run(Toy(), tmp_path / "bad.pt")


def test_the_loop_seeds_where_it_is_made_and_hashes_fingerprint_dicts(tmp_path):
    """``seed`` seeds torch, numpy and random when the loop is made (before the task's model);
    a fingerprint dict is hashed the same whatever its key order."""
    import random

    draws = []
    for _ in range(2):
        TrainingLoop(LoopConfig(epochs=1, progress=False, seed=3), tmp_path / "s")
        draws.append((torch.rand(2).tolist(), np.random.rand(), random.random()))
    assert draws[0] == draws[1]
    TrainingLoop(LoopConfig(epochs=1, progress=False, seed=4), tmp_path / "s")
    assert torch.rand(2).tolist() != draws[0][0]
    assert run_fingerprint({"a": 1, "b": [2]}) == run_fingerprint({"b": [2], "a": 1}) != run_fingerprint({"a": 2})


def test_progress_is_the_tightest_bound_and_counts_the_step_in_flight(tmp_path):
    """What a schedule ending with the run reads, inside the scheduler's step: epochs, a step cap
    or a step-time budget, whichever ends the run first."""
    seen: dict[str, list[float]] = {}
    for name, kw in {"epochs": {}, "max_steps": {"max_steps": 6}, "budget": {"max_seconds": 3600.0}}.items():
        task = Toy()
        loop = TrainingLoop(LoopConfig(epochs=2, progress=False, budget="step", **kw), tmp_path / name)
        seen[name] = got = []
        task.scheduler = torch.optim.lr_scheduler.LambdaLR(
            task.optimizer, lambda k, got=got, loop=loop: got.append(loop.progress()) or 1.0)
        got.clear()  # the scheduler's own call when it is made
        loop.run(task, "fp")
        assert loop.progress() == 1.0
    assert seen["epochs"] == pytest.approx([k / 10 for k in range(1, 11)])  # 2 epochs of 5 steps
    assert seen["max_steps"] == pytest.approx([k / 6 for k in range(1, 7)])
    assert seen["budget"] == pytest.approx([k / 10 for k in range(1, 11)])  # an hour away: epochs bound it
    loop = TrainingLoop(LoopConfig(epochs=2, progress=False, budget="step", max_seconds=10.0), tmp_path / "t")
    loop._step_seconds = 7.5  # a run 7.5 s into a 10 s step budget, before its first epoch
    assert loop.progress() == pytest.approx(0.75)


class _Clock:
    """A stand-in for the loop's ``time`` module: a step takes 1 s, a dev evaluation 3 s."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


class TimedToy(Toy):
    def __init__(self, clock: _Clock, **kw) -> None:
        super().__init__(**kw)
        self.clock = clock

    def loss(self, step):
        self.clock.now += 1.0
        return super().loss(step)

    def evaluate(self):
        self.clock.now += 3.0
        return super().evaluate()


def test_wall_budget_ends_the_run_its_last_evaluation_included_within_it(tmp_path, monkeypatch):
    """budget="wall" counts evaluations too and stops inside an epoch so that the step it would
    start and the evaluation after it still fit: epoch 1 ends at 5 s, its evaluation at 8 s, then
    steps at 8-9 and 9-10 s, and the stopped part's evaluation ends at 13 s of a 14 s budget (a
    step budget of 14 s counts the steps only: 14 steps and 3 evaluations, 23 s)."""
    import kgnorm.training.loop as loop_module

    clock = _Clock()
    monkeypatch.setattr(loop_module, "time", clock)
    task = TimedToy(clock, dev_scores=[0.1, 0.2, 0.3])
    loop = TrainingLoop(LoopConfig(epochs=3, progress=False, budget="wall", max_seconds=14.0), tmp_path / "w")
    r = loop.run(task, "fp")
    assert r.stop_reason == "max_seconds" and r.global_step == 7 and clock.now == 13.0
    assert [h["epoch"] for h in r.history] == [1, 1.4] and r.history[-1]["partial"]
    assert loop.progress() == 1.0
    clock.now = 0.0  # the loop's clock starts when it is made
    fresh = TrainingLoop(LoopConfig(epochs=3, progress=False, budget="wall", max_seconds=14.0), tmp_path / "p")
    fresh.history, fresh._last_step_seconds = [{"seconds_dev": 3.0}], 1.0
    clock.now = 3.0  # 3 s in, with one more step and an evaluation (4 s) still to fit: half spent
    assert fresh.progress() == pytest.approx(0.5)


class AfterToy(Toy):
    """A task that must still work `after` seconds once the loop ends (an index to encode)."""

    def __init__(self, after: float, **kw):
        super().__init__(**kw)
        self.after = after

    def seconds_after(self):
        return self.after


def test_epoch_budget_keeps_what_follows_the_loop_free(tmp_path):
    """An epoch takes well under an hour: a one-hour budget runs every epoch, unless the task
    still needs an hour after the loop, which leaves time for the first epoch only (it always runs)."""
    r = _run(AfterToy(0.0), tmp_path / "a.pt", max_seconds=3600.0)
    assert r.epochs_completed == 3 and r.stop_reason == "epochs"
    r = _run(AfterToy(3600.0), tmp_path / "b.pt", max_seconds=3600.0)
    assert r.epochs_completed == 1 and r.stop_reason == "max_seconds"


class OnceToy(TimedToy):
    """Its first epoch does 100 s of one-off work (a whole dictionary's first encoding), reported or not."""

    def __init__(self, clock: _Clock, report: bool, **kw) -> None:
        super().__init__(clock, **kw)
        self.report, self.first = report, True

    def end_epoch(self):
        extra = super().end_epoch()
        if self.first:
            self.first = False
            self.clock.now += 100.0
            if self.report:
                extra["seconds_once"] = 100.0
        return extra


def test_epoch_budget_does_not_expect_one_off_work_again(tmp_path, monkeypatch):
    """Epochs of 5 steps and an evaluation (8 s); the first also does 100 s once. In 130 s: reported
    as one-off, epochs 2 and 3 still fit (108, 116, 124 s); unreported, the first epoch's 108 s
    is taken for the next one's length and the run stops after it."""
    import kgnorm.training.loop as loop_module

    for report, epochs in ((True, 3), (False, 1)):
        clock = _Clock()
        monkeypatch.setattr(loop_module, "time", clock)
        loop = TrainingLoop(LoopConfig(epochs=3, progress=False, max_seconds=130.0), tmp_path / f"once-{report}")
        r = loop.run(OnceToy(clock, report), "fp")
        assert r.epochs_completed == epochs, report
        assert r.history[0]["seconds"] == 108.0    # the record keeps the epoch's whole time
