"""Distilling a trained mention detector into a smaller one (`train ner --teacher DIR --layers N`):
the student starts from the teacher's own encoder cut to its first N layers and the teacher's
classification head, and learns from the gold BIO tags and the teacher's tag distribution on the
same windows (Hinton et al.'s soft targets at temperature T), so it keeps what the teacher learned
beyond the hard labels.

The teacher's emissions are computed once before training (one pass over the training windows on
the teacher's inference path), not at every step."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from kgnorm.errors import KgnormError

__all__ = ["load_teacher", "teacher_emissions", "distill_loss"]


def load_teacher(teacher_dir: str | Path, types: Sequence[str]) -> Any:
    """The teacher detector (its default inference path); its types must be the student's."""
    from kgnorm.methods.ner.model import load_ner

    teacher = load_ner(teacher_dir)
    if tuple(teacher.types) != tuple(types):
        raise KgnormError(f"--teacher {teacher_dir} detects {', '.join(teacher.types)}, not {', '.join(types)} "
                          "(the student learns the teacher's labels)")
    if teacher.net.match is not None or teacher.net.crf is not None:
        raise KgnormError(f"--teacher {teacher_dir}: only a plain detector (no CRF, no dictionary features) "
                          "can be distilled")
    return teacher


@torch.inference_mode()
def teacher_emissions(teacher: Any, windows: Sequence[Any], batch_size: int = 32) -> list[torch.Tensor]:
    """Per window, the teacher's float32 emissions of its tokens (tokens x tags), shortest windows
    batched together."""
    out: list[torch.Tensor] = [torch.empty(0)] * len(windows)
    order = sorted(range(len(windows)), key=lambda i: len(windows[i].input_ids))
    teacher.net.eval()
    for k in range(0, len(order), batch_size):
        rows = order[k:k + batch_size]
        batch = teacher.tensors(windows, None, rows)
        em = teacher.run(batch["input_ids"], batch["attention_mask"], None)
        for j, i in enumerate(rows):
            out[i] = em[j, :len(windows[i].input_ids)].float().clone()
    return out


def distill_loss(student: torch.Tensor, teacher: Sequence[torch.Tensor], tags: torch.Tensor,
                 alpha: float, temperature: float) -> torch.Tensor:
    """``alpha`` x token cross-entropy on the gold tags + (1 - alpha) x T² x KL(teacher || student)
    at temperature T, both over the content tokens (those whose gold tag is not -100)."""
    width, n_tags = student.shape[1], student.shape[2]
    soft = torch.zeros(len(teacher), width, n_tags)
    for i, t in enumerate(teacher):
        soft[i, :t.shape[0]] = t
    keep = tags.reshape(-1) != -100
    s = student.reshape(-1, n_tags)[keep]
    t = soft.to(student.device).reshape(-1, n_tags)[keep]
    hard = nn.functional.cross_entropy(s, tags.reshape(-1)[keep])
    kd = nn.functional.kl_div(nn.functional.log_softmax(s / temperature, -1),
                              nn.functional.log_softmax(t / temperature, -1), log_target=True,
                              reduction="batchmean") * temperature ** 2
    return alpha * hard + (1 - alpha) * kd
