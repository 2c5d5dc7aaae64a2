"""The part of training a method writes: a :class:`TrainingTask` hands
:class:`~kgnorm.training.loop.TrainingLoop` its samples, its optimisation step, its dev metric
and its model directory; the loop does the rest (epochs, seeding, checkpoints, budgets,
selection, progress). To add a method, subclass it -- :mod:`kgnorm.methods.dilbert.train` is
a short example."""
from __future__ import annotations

__all__ = ["TrainingTask", "LOOP_KEYS"]


class TrainingTask:
    """What a method supplies to :class:`TrainingLoop`; override what applies."""

    def start_epoch(self, epoch: int, saved: dict | None) -> int:
        """Prepare epoch ``epoch`` (0-based): draw its samples, seeded by the epoch -- or, when
        resuming inside it, restore ``saved`` (what :meth:`epoch_state` returned). Returns the
        number of steps of the epoch."""
        raise NotImplementedError

    def train_step(self, step: int) -> float | None:
        """One optimisation step on batch ``step`` of the current epoch; its loss, or None for
        a batch with nothing to learn from (not counted in the epoch's loss). Set the train
        mode here or in :meth:`start_epoch`: with ``eval_every_steps`` an evaluation may
        come between two steps."""
        raise NotImplementedError

    def epoch_state(self) -> dict:
        """What a checkpoint inside the epoch needs to replay its rest (tensors, lists,
        numbers); empty when :meth:`start_epoch` redraws the same samples from the epoch."""
        return {}

    def end_epoch(self) -> dict:
        """After the steps (and before the "epoch 0" evaluation): update what depends on the
        weights (e.g. the name index); extra fields for the history record."""
        return {}

    def evaluate(self) -> dict | None:
        """Dev metrics of the current weights, or None without dev data."""
        return None

    def save(self, record: dict, history: list[dict]) -> None:
        """Write the current weights as the selected model (called on every improvement)."""

    def state_dict(self) -> dict:
        """Weights, optimizer and anything else to checkpoint; its keys sit at the top level
        of the checkpoint beside the loop's (so avoid :data:`LOOP_KEYS`)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` gave (``state`` is the whole checkpoint)."""


LOOP_KEYS = ("fingerprint", "epoch", "step", "global_step", "history", "best", "since_best",
             "stopped", "stop_reason", "elapsed", "last_epoch_seconds", "losses", "epoch_state",
             "rng")
