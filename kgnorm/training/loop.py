"""One training loop for every method (after PyKEEN's training loops and
sentence-transformers' ``fit``): the method supplies a
:class:`~kgnorm.training.task.TrainingTask` -- its module, optimizer, the loss of a batch, its
sampler and dev metric --
and :class:`TrainingLoop` owns the machinery they all need, so that it is written (and
fixed) once:

* epochs of steps -- zero_grad, backward, gradient clipping, the optimizer and scheduler steps
  on the task's loss -- with ``max_steps_per_epoch`` for smoke runs and time-boxing;
* seeding: ``seed`` seeds Python, numpy and torch when the loop is made (make it where the
  run starts, before the model), ``epoch_seed`` reseeds torch before every epoch, ``step_seed``
  before every step (dropout then replays on resume without any saved state); the tasks seed
  their own samplers with the epoch they are given;
* checkpoints, one layout for every method (``<out>/checkpoints/last.pt``: task state, loop
  position, the epoch's samples, history, RNG states) after
  every epoch and, inside epochs, every ``checkpoint_every_steps`` global steps and/or
  ``checkpoint_every_seconds``; ``resume`` continues one, a checkpoint written for other data
  or settings (another fingerprint -- a dict of what must not change, hashed here -- or an
  older loop) is refused;
* the time budget ``max_seconds``, counted over resumptions. ``budget="epoch"``: no epoch
  starts that the last epoch's duration says would end past it (the clock counts
  everything, set-up included, and what the task says must still follow the loop:
  ``task.seconds_after()``; one-off work the task reports in an epoch, ``seconds_once`` in
  what ``end_epoch`` returns, is not read as part of the next epoch's length).
  ``budget="step"``: the clock counts the optimisation steps only, no step starts past the
  budget (nor past ``max_steps`` steps in all), and the stopped part of the epoch is evaluated
  like a finished one. ``budget="wall"``: the clock
  counts everything, as for "epoch", but the run stops inside an epoch like "step": no step
  starts once the clock plus what must still fit after it (one step and one dev evaluation,
  the last ones measured) reaches the budget, so the whole run, its last evaluation included,
  ends within it (a command's promised wall time; ``max_steps`` applies too); a run's first step
  always starts, so a budget shorter than the set-up still gives a model;
* dev selection: ``task.evaluate()`` after every ``eval_every`` epochs (and the last), after
  every ``eval_every_steps`` steps inside epochs when set, and on the starting model as
  "epoch 0" with ``eval_initial``; the best value of ``metric`` wins (ties: the earlier), and
  ``task.save`` writes the model directory each time it improves. Without dev metrics
  (``evaluate`` returns None) every evaluated epoch is the new selection. ``patience``
  evaluations without improvement stop the run;
* progress bars and one history record per epoch (``on_record`` receives each), and one
  :class:`~kgnorm.training.result.TrainResult` for every method.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from kgnorm.errors import KgnormError
from kgnorm.progress import progress_bar
from kgnorm.training.checkpoints import atomic_save, digest, rng_state, seed_all, set_rng_state
from kgnorm.training.result import TrainResult
from kgnorm.training.task import TrainingTask

__all__ = ["TrainingTask", "LoopConfig", "TrainResult", "TrainingLoop", "BUDGETS", "LOOP_FORMAT",
           "CHECKPOINT", "checkpoint_fingerprint", "run_fingerprint"]

CHECKPOINT = Path("checkpoints") / "last.pt"   # in the output directory, for every method

LOOP_FORMAT = "kgnorm-training-loop-1"   # part of every fingerprint: older checkpoints are refused
BUDGETS = ("epoch", "step", "wall")


def run_fingerprint(parts: dict | str) -> str:
    """A method's fingerprint: sha1 of the JSON of ``parts`` (its config's
    ``fingerprint_dict()``, digests of its data …), or a string it hashed itself."""
    if isinstance(parts, str):
        return parts
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def checkpoint_fingerprint(fingerprint: dict | str) -> str:
    """The fingerprint a checkpoint of this loop carries for a method's ``fingerprint``."""
    return digest([LOOP_FORMAT, run_fingerprint(fingerprint)])


@dataclass
class LoopConfig:
    epochs: int
    name: str = "training"                   # progress bars and messages
    metric: str = "acc@1"                    # the dev metric that selects (higher is better)
    max_seconds: float | None = None
    budget: str = "epoch"                    # "epoch" | "step" | "wall" (module doc)
    max_steps: int | None = None             # steps in all (budgets "step" and "wall")
    max_steps_per_epoch: int | None = None
    checkpoint_every_steps: int | None = None
    checkpoint_every_seconds: float | None = None
    eval_initial: bool = False               # evaluate the starting model as "epoch 0"
    eval_every: int = 1                      # epochs between evaluations (the last always)
    eval_every_steps: int | None = None      # also evaluate inside epochs
    patience: int | None = None              # evaluations without improvement before stopping
    epoch_seed: int | None = None            # torch.manual_seed(epoch_seed * 100_003 + epoch)
    step_seed: int | None = None             # torch.manual_seed(step_seed * 1_000_003 + step)
    progress: bool = True
    seed: int | None = None                  # seed_all(seed) when the loop is made

    def check(self) -> None:
        if self.budget not in BUDGETS:
            raise KgnormError(f"unknown budget {self.budget!r} (choose from {', '.join(BUDGETS)})")
        if self.max_seconds is not None and self.max_seconds < 0:
            raise KgnormError("the time budget must not be negative")


class TrainingLoop:
    """Run a :class:`TrainingTask` (module doc) into ``out_dir``. Make the loop where the run
    starts: it seeds (``config.seed``) and starts the clock there, so the epoch budget counts
    the trainer's own set-up; then :meth:`run` the task with its ``fingerprint`` (what must
    not change across a resume)."""

    def __init__(self, config: LoopConfig, out_dir: str | Path, resume: bool = True,
                 on_record: Callable[[dict], None] | None = None) -> None:
        config.check()
        self._t0 = time.perf_counter()
        if config.seed is not None:
            seed_all(config.seed)
        self.cfg, self.out = config, Path(out_dir)
        self.path = self.out / CHECKPOINT
        self.task: TrainingTask | None = None
        self.fingerprint = ""
        self.resume, self.on_record = resume, on_record
        self.epoch = self.step = self.global_step = 0
        self.history: list[dict] = []
        self.best: dict | None = None            # {"value", "epoch", "metrics"}
        self.since_best = 0
        self.stopped = False
        self.stop_reason = "epochs"
        self._elapsed_before = 0.0               # budget clock of earlier calls
        self._step_seconds = 0.0                 # budget "step": optimisation time
        self._last_step_seconds = 0.0            # budget "wall": the last step's length
        self._epoch_steps = 0                    # steps of the current epoch (progress)
        self._step_t0: float | None = None       # start of the step in flight (progress)
        self.last_epoch_seconds: float | None = None
        self.losses: list[float] = []
        self._saved_epoch: dict | None = None
        self.resumed_from: dict | None = None
        self._begun = False

    # ------------------------------------------------------------------ checkpoints
    def _load(self) -> dict | None:
        if not self.path.is_file():
            return None
        if not self.resume:
            self.path.unlink()
            return None
        try:
            ck = torch.load(self.path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - corrupt file
            raise KgnormError(f"{self.path}: unreadable checkpoint ({e}); delete it or start over "
                              "with --no-resume (resume=False)") from None
        if not isinstance(ck, dict) or ck.get("fingerprint") != self.fingerprint:
            raise KgnormError(
                f"{self.path} was written for other data or settings (a different {self.cfg.name} "
                "run: different configuration, data or encoder, or an older kgnorm); use another "
                "output directory, or start over with --no-resume (resume=False)")
        return ck

    def _restore(self, ck: dict) -> None:
        self.task.load_state_dict(ck)
        self.epoch, self.step = int(ck["epoch"]), int(ck["step"])
        self.global_step = int(ck["global_step"])
        self.history = list(ck["history"])
        self.best = ck["best"]
        self.since_best, self.stopped = int(ck["since_best"]), bool(ck["stopped"])
        self.stop_reason = str(ck["stop_reason"])
        self._elapsed_before = float(ck["elapsed"])
        self._step_seconds = float(ck["elapsed"])
        self.last_epoch_seconds = ck["last_epoch_seconds"]
        self.losses = [float(x) for x in ck["losses"]]
        self._saved_epoch = (ck["epoch_state"] or None) if self.step > 0 else None
        set_rng_state(ck["rng"])

    def _checkpoint(self, epoch_state: dict | None = None, losses: list[float] | None = None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        state = self.task.state_dict()
        state.update({"fingerprint": self.fingerprint, "epoch": self.epoch, "step": self.step,
                      "global_step": self.global_step, "history": self.history,
                      "best": self.best, "since_best": self.since_best,
                      "stopped": self.stopped, "stop_reason": self.stop_reason,
                      "elapsed": self.elapsed(), "last_epoch_seconds": self.last_epoch_seconds,
                      "losses": list(losses or []),
                      "epoch_state": epoch_state or {}, "rng": rng_state()})
        atomic_save(state, self.path)

    # ------------------------------------------------------------------ budget
    def elapsed(self) -> float:
        if self.cfg.budget == "step":
            return self._step_seconds
        return self._elapsed_before + time.perf_counter() - self._t0

    def progress(self) -> float:
        """Share of the run done, in [0, 1], by the tightest of its bounds: the epochs (once an
        epoch's length is known), ``max_steps``, and the time budget (budgets "step" and "wall";
        "wall" counts what must still fit after a step as spent). What a
        schedule that ends with the run reads (kgnorm.methods.ner.train's linear decay). Read
        inside a step (the scheduler's), it counts that step as done."""
        c = self.cfg
        steps, seconds = self.global_step, self._step_seconds
        if self._step_t0 is not None:
            steps, seconds = steps + 1, seconds + time.perf_counter() - self._step_t0
        parts = [0.0]
        if self._epoch_steps:
            parts.append(steps / (c.epochs * self._epoch_steps))
        if c.max_steps:
            parts.append(steps / c.max_steps)
        if c.budget == "step" and c.max_seconds:
            parts.append(seconds / c.max_seconds)
        if c.budget == "wall" and c.max_seconds:
            parts.append((self.elapsed() + self._reserve()) / c.max_seconds)
        return min(1.0, max(parts))

    def _reserve(self) -> float:
        """Budget "wall": the time one more step and the evaluation after it take (the last
        ones measured; 0 before the first), and what the task does after the loop."""
        dev = next((r["seconds_dev"] for r in reversed(self.history) if "seconds_dev" in r), 0.0)
        return self._last_step_seconds + float(dev) + self._after()

    def _after(self) -> float:
        """What the task must still do once the loop ends (``task.seconds_after``), kept free."""
        return self.task.seconds_after() if self.task is not None else 0.0

    def _out_of_steps(self) -> bool:
        c = self.cfg
        if c.budget == "epoch":
            return False
        if c.max_steps is not None and self.global_step >= c.max_steps:
            self.stop_reason = "max_steps"
            return True
        if c.budget == "wall" and self.global_step == 0:
            return False  # a budget shorter than the set-up still trains a model (one step)
        spent = self._step_seconds if c.budget == "step" else self.elapsed() + self._reserve()
        if c.max_seconds is not None and spent >= c.max_seconds:
            self.stop_reason = "max_seconds"
            return True
        return False

    def _no_time_for_an_epoch(self, running: float | None = None) -> bool:
        """Epoch budget: the next epoch, as long as the last one (or the ``running`` one),
        would end past it."""
        c = self.cfg
        if c.budget != "epoch" or c.max_seconds is None:
            return False
        last = self.last_epoch_seconds if running is None else running
        if last is None:
            return False
        if self.elapsed() + last + self._after() > c.max_seconds:
            self.stop_reason = "max_seconds"
            return True
        return False

    # ------------------------------------------------------------------ selection
    def _select(self, rec: dict, metrics: dict | None, at: float) -> None:
        """Keep ``rec`` as the selection when its metric beats the best so far (or without
        dev metrics); count evaluations without improvement for ``patience``."""
        if metrics is None:
            improved, value = True, None
        else:
            value = float(metrics[self.cfg.metric])
            improved = self.best is None or self.best["value"] is None or value > self.best["value"]
        if improved:
            self.best = {"value": value, "epoch": at, "metrics": metrics}
            self.since_best = 0
            self.task.save(rec, self.history)
        else:
            self.since_best += 1
            if self.cfg.patience is not None and self.since_best >= self.cfg.patience:
                self.stopped, self.stop_reason = True, "patience"

    def _record(self, at: float, losses: list[float], extra: dict, evaluate: bool,
                seconds_train: float, t_ep: float) -> dict:
        rec: dict = {"epoch": at, "loss": float(np.mean(losses)) if losses else None,
                     "steps": len(losses), "seconds_train": round(seconds_train, 2), **extra}
        metrics = None
        if evaluate:
            t0 = time.perf_counter()
            metrics = self.task.evaluate()
            if metrics is not None:
                rec["dev"] = metrics
                rec["seconds_dev"] = round(time.perf_counter() - t0, 2)
        rec["seconds"] = round(time.perf_counter() - t_ep, 2)
        self.history.append(rec)
        if evaluate:
            self._select(rec, metrics, at)
        return rec

    def _emit(self, rec: dict) -> None:
        if self.on_record is not None:
            self.on_record(rec)

    # ------------------------------------------------------------------ run
    def begin(self, task: TrainingTask, fingerprint: dict | str) -> dict | None:
        """Load (or, without ``resume``, delete) the checkpoint; the {"epoch", "step"} resumed
        from, or None. :meth:`run` calls it; call it first to learn, before writing anything,
        whether a run is continued (a refused checkpoint raises here)."""
        if not self._begun:
            self._begun = True
            self.task, self.fingerprint = task, checkpoint_fingerprint(fingerprint)
            ck = self._load()
            if ck is not None:
                self._restore(ck)
                self.resumed_from = {"epoch": self.epoch, "step": self.step}
        return self.resumed_from

    def run(self, task: TrainingTask, fingerprint: dict | str) -> TrainResult:
        resumed_from = self.begin(task, fingerprint)
        c = self.cfg
        if c.eval_initial and self.epoch == 0 and self.step == 0 and not self.history:
            t_ep = time.perf_counter()
            extra = self.task.end_epoch()
            rec = self._record(0, [], extra, True, 0.0, t_ep)
            self._checkpoint()
            self._emit(rec)
        ebar = progress_bar(total=c.epochs, desc=f"{c.name} epochs", unit="epoch") \
            if c.progress else None
        if ebar is not None:
            ebar.update(min(self.epoch, c.epochs))
        try:
            while self.epoch < c.epochs and not self.stopped:
                if self._no_time_for_an_epoch() or self._out_of_steps():
                    break
                if not self._run_epoch(ebar):
                    break
            else:
                if not self.stopped:
                    self.stop_reason = "epochs"
        finally:
            if ebar is not None:
                ebar.close()
        best = self.best
        return TrainResult(
            out_dir=self.out, epochs_completed=self.epoch, global_step=self.global_step,
            best_epoch=None if best is None else best["epoch"],
            best_value=None if best is None else best["value"],
            best_metrics=None if best is None else best["metrics"],
            history=self.history, resumed_from=resumed_from, stop_reason=self.stop_reason,
            elapsed=self.elapsed(), train_seconds=time.perf_counter() - self._t0)

    def _optimise(self, step: int) -> float | None:
        """One batch: the task's loss, then backward, gradient clipping, the optimizer and
        scheduler steps (:meth:`TrainingTask.loss` says when a batch is skipped)."""
        task = self.task
        loss = task.loss(step)
        if loss is None:
            return None
        task.optimizer.zero_grad(set_to_none=True)
        if loss.requires_grad:
            loss.backward()
            if task.clip_norm:
                torch.nn.utils.clip_grad_norm_(task.module.parameters(), task.clip_norm)
            task.optimizer.step()
        if task.scheduler is not None:
            task.scheduler.step()
        value = float(loss.detach())
        task.after_step(step, value)
        return value

    def _run_epoch(self, ebar) -> bool:
        """One epoch (or its rest); False when a budget or patience stopped it inside."""
        c, task, epoch = self.cfg, self.task, self.epoch
        t_ep = time.perf_counter()
        saved, self._saved_epoch = self._saved_epoch, None
        if saved is None and self.step == 0 and c.epoch_seed is not None:
            torch.manual_seed(c.epoch_seed * 100_003 + epoch)
        n = task.start_epoch(epoch, saved)
        if c.max_steps_per_epoch:
            n = min(n, int(c.max_steps_per_epoch))
        self._epoch_steps = n
        losses, self.losses = self.losses, []
        ran, seconds_train, last_ck = 0, 0.0, time.perf_counter()
        sbar = progress_bar(total=n, desc=f"{c.name} epoch {epoch + 1}", unit="batch") \
            if c.progress else None
        if sbar is not None:
            sbar.update(self.step)
        stopped_inside = False
        try:
            for b in range(self.step, n):
                if self._out_of_steps():
                    stopped_inside = True
                    break
                loss, dt = self._timed_step(b)
                seconds_train += dt
                if loss is not None:
                    losses.append(float(loss))
                self.step, ran = b + 1, ran + 1
                self.global_step += 1
                if sbar is not None:
                    sbar.update(1)
                    if losses:
                        sbar.set_postfix(loss=f"{losses[-1]:.4f}")
                if self.step >= n:
                    break
                if c.eval_every_steps and self.step % c.eval_every_steps == 0:
                    rec = self._record(round(epoch + self.step / n, 4),
                                       losses[-c.eval_every_steps:], task.end_epoch(), True,
                                       seconds_train, t_ep)
                    self._checkpoint(task.epoch_state(), losses)
                    self._emit(rec)
                    if self.stopped:
                        stopped_inside = True
                        break
                    continue
                due = bool(c.checkpoint_every_steps
                           and self.global_step % c.checkpoint_every_steps == 0)
                if c.checkpoint_every_seconds is not None:
                    due = due or time.perf_counter() - last_ck >= c.checkpoint_every_seconds
                if due:
                    self._checkpoint(task.epoch_state(), losses)
                    last_ck = time.perf_counter()
        finally:
            if sbar is not None:
                sbar.close()
        if stopped_inside:
            if ran and not self.stopped:
                # a budget stopped the epoch: evaluate what it trained, keep the position
                rec = self._record(round(epoch + self.step / max(n, 1), 3), losses,
                                   {**task.end_epoch(), "partial": True}, True, seconds_train, t_ep)
                self._emit(rec)
            self._checkpoint(task.epoch_state(), losses)
            return False
        self._finish_epoch(ebar, losses, seconds_train, t_ep)
        return True

    def _timed_step(self, b: int) -> tuple[float | None, float]:
        """Step ``b`` of the epoch (seeded by ``step_seed``), its loss and seconds, counted for the
        budgets."""
        if self.cfg.step_seed is not None:
            torch.manual_seed(self.cfg.step_seed * 1_000_003 + self.global_step)
        t0 = self._step_t0 = time.perf_counter()
        try:
            loss = self._optimise(b)
        finally:
            self._step_t0 = None
        dt = time.perf_counter() - t0
        self._step_seconds += dt
        self._last_step_seconds = dt
        return loss, dt

    def _finish_epoch(self, ebar, losses: list[float], seconds_train: float, t_ep: float) -> None:
        """A whole epoch ran: its record (evaluated every ``eval_every`` epochs and on the last),
        the checkpoint at its end, the epoch bar."""
        c, epoch = self.cfg, self.epoch
        extra = self.task.end_epoch()
        once = float(extra.get("seconds_once", 0.0))  # one-off work in this epoch: the next has none
        last = (epoch + 1 >= c.epochs or self._out_of_steps()
                or self._no_time_for_an_epoch(running=time.perf_counter() - t_ep - once))
        evaluate = last or (epoch + 1) % max(c.eval_every, 1) == 0
        rec = self._record(epoch + 1, losses, extra, evaluate, seconds_train, t_ep)
        self.last_epoch_seconds = rec["seconds"] - once
        self.epoch, self.step = epoch + 1, 0
        self._checkpoint()
        if ebar is not None:
            ebar.update(1)
            ebar.set_postfix(loss=rec["loss"], dev=(rec.get("dev") or {}).get(c.metric))
        self._emit(rec)
