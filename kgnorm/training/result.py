"""What every trainer returns: one :class:`TrainResult`, filled by the loop (the run) and the
trainer (its model and its own counts), so callers read the same names for every method."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["TrainResult"]


@dataclass
class TrainResult:
    out_dir: Path
    epochs_completed: int
    global_step: int
    best_epoch: float | None                 # the selected record's epoch (None: no epoch ran;
                                             # 0: the starting model; 1.5: inside epoch 2)
    best_value: float | None                 # its dev metric (None without dev)
    best_metrics: dict | None                # its dev metrics (None without dev)
    history: list[dict] = field(default_factory=list)   # one record per evaluated epoch
    resumed_from: dict | None = None         # {"epoch", "step"} of the checkpoint continued
    stop_reason: str = "epochs"              # epochs | patience | max_seconds | max_steps
    elapsed: float = 0.0                     # the budget clock, over resumptions
    train_seconds: float = 0.0               # this call, set-up included
    info: dict[str, Any] = field(default_factory=dict)   # the method's own counts
    model: Any = None                        # the selected model, loaded (where the trainer does)

    @property
    def resumed(self) -> bool:
        return self.resumed_from is not None

    @property
    def stopped_early(self) -> bool:
        """Patience ended the run."""
        return self.stop_reason == "patience"

    @property
    def complete(self) -> bool:
        """Every epoch ran (no budget, step limit or patience stopped it)."""
        return self.stop_reason == "epochs"
