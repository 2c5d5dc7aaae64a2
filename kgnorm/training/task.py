"""The part of training a method writes: a :class:`TrainingTask` hands
:class:`~kgnorm.training.loop.TrainingLoop` its module, its optimizer and the loss of a batch
(``loss(step)``), plus what it really needs beyond that -- its samples per epoch, its dev metric,
its model directory; the loop does the rest (the optimizer step, epochs, seeding, checkpoints,
budgets, selection, progress), as PyKEEN's training loop does. To add a method, subclass it --
:mod:`kgnorm.methods.dilbert.train` is a short example."""
from __future__ import annotations

from typing import Any

__all__ = ["TrainingTask", "LOOP_KEYS"]


class TrainingTask:
    """What a method supplies to :class:`TrainingLoop`; override what applies.

    Attributes the loop reads: ``module`` (the ``torch.nn.Module`` trained: checkpointed, and
    the parameters ``clip_norm`` clips), ``optimizer``, ``scheduler`` (stepped after every
    batch, or None) and ``clip_norm`` (max gradient norm, or None)."""

    module: Any = None
    optimizer: Any = None
    scheduler: Any = None
    clip_norm: float | None = None

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        """Prepare epoch ``epoch`` (0-based): draw its samples, seeded by the epoch -- or, when
        resuming inside it, restore ``saved`` (what :meth:`epoch_state` returned). Returns the
        number of steps of the epoch."""
        raise NotImplementedError

    def loss(self, step: int) -> Any:
        """The loss tensor of batch ``step`` of the current epoch; the loop steps the optimizer.
        None: a batch with nothing to learn from (no step, not counted in the epoch's loss); a
        tensor without grad: counted, no step. Set the train mode here or in
        :meth:`start_epoch`: with ``eval_every_steps`` an evaluation may come between two steps."""
        raise NotImplementedError

    def after_step(self, step: int, loss: float) -> None:
        """After the optimizer step of batch ``step`` (logging)."""

    def epoch_state(self) -> dict:
        """What a checkpoint inside the epoch needs to replay its rest (tensors, lists,
        numbers); empty when :meth:`start_epoch` redraws the same samples from the epoch."""
        return {}

    def end_epoch(self) -> dict:
        """After the steps (and before the "epoch 0" evaluation): update what depends on the
        weights (e.g. the name index); extra fields for the history record. ``seconds_once``
        among them: one-off work of this epoch (a first encoding of a whole dictionary) that the
        epoch budget does not expect of the next."""
        return {}

    def evaluate(self) -> dict | None:
        """Dev metrics of the current weights, or None without dev data."""
        return None

    def seconds_after(self) -> float:
        """What the task still has to do once the loop ends, in seconds (an index encoded with the
        selected weights): a time budget keeps it free, so the command, not only its loop, ends
        within the budget. 0 when nothing follows or its length is not known yet."""
        return 0.0

    def save(self, record: dict, history: list[dict]) -> None:
        """Write the current weights as the selected model (called on every improvement)."""

    def state_dict(self) -> dict:
        """What a checkpoint holds of the task: the module, optimizer and scheduler states;
        extend it (keys beside the loop's, so avoid :data:`LOOP_KEYS`)."""
        state = {"model": self.module.state_dict(), "optimizer": self.optimizer.state_dict()}
        if self.scheduler is not None:
            state["scheduler"] = self.scheduler.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` gave (``state`` is the whole checkpoint)."""
        self.module.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])


LOOP_KEYS = ("fingerprint", "epoch", "step", "global_step", "history", "best", "since_best",
             "stopped", "stop_reason", "elapsed", "last_epoch_seconds", "losses", "epoch_state",
             "rng")
