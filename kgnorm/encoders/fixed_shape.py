"""Query vectors that do not depend on the batch they were computed in.

A BLAS product's rounding depends on the shape of the call (the number of rows, the padded
width), so `DenseEncoder.encode` gives a text vectors that differ in the last bits from one
batch to another; a printed score then moves in its 4th decimal when the mentions around it
change (measured: 1,180 of 119,735 TSV score cells between two batchings of one corpus). Linking
must not depend on that: repeats answered from a cache, blocks sent to Ray workers and the
in-process run must write the same bytes. So a query is encoded only with texts of its own
token length (no padding), in calls of exactly `rows` rows (the last filled with copies):
every product a text goes through has one shape, whatever else is in the batch. The products
run on one torch thread (a split over threads rounds differently too; a Ray worker has one):
scale out with processes (`--engine ray`)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

ROWS = 8


def encode_fixed_shape(encoder, texts: Sequence[str], rows: int = ROWS) -> np.ndarray:
    """float32 ``[len(texts), dim]`` pooled vectors of a :class:`~kgnorm.encoders.dense.DenseEncoder`,
    each independent of the other texts of the call (bit for bit)."""
    texts = list(texts)
    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    if not texts:
        return out
    enc = encoder.tokenizer(texts, max_length=encoder.max_length, truncation=True, padding=False)
    ids, typed = enc["input_ids"], "token_type_ids" in enc
    by_len: dict[int, list[int]] = {}
    for i, row in enumerate(ids):
        by_len.setdefault(len(row), []).append(i)
    was_training = encoder.model.training
    encoder.model.eval()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            for members in by_len.values():
                for s in range(0, len(members), rows):
                    sel = members[s:s + rows]
                    batch = [ids[i] for i in sel]
                    batch += [batch[0]] * (rows - len(batch))
                    t = torch.tensor(batch, dtype=torch.long, device=encoder.device)
                    mask = torch.ones_like(t)
                    extra = {"token_type_ids": torch.zeros_like(t)} if typed else {}
                    hidden = encoder.model(input_ids=t, attention_mask=mask, **extra).last_hidden_state
                    out[sel] = encoder.pool(hidden, mask)[:len(sel)].float().cpu().numpy()
    finally:
        torch.set_num_threads(threads)
        if was_training:
            encoder.model.train()
    return out
