"""Two stages of a block stream overlapped on two cores: while the second stage (linking) works on
block k, the first (detection) runs on block k+1 in a worker thread. torch's kernels release the
GIL, so the detector's matrix products run beside the linker; the blocks still come out in input
order and each stage sees them in the same order as the one-core path, so the results are the
same bytes (a block's detection does not depend on what runs beside it).

Whether to overlap is decided from declared facts only (the option, ``--threads``, the cores this
process may run on), never from a timing at run time."""
from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from kgnorm.cpu_affinity import available_cores

__all__ = ["OverlapPlan", "available_cores", "overlap_plan", "overlapped", "torch_threads", "SWITCH_INTERVAL",
           "DETECTORS_ENV"]

# blocks detected at once while one is linked (default: as many as the cores hold stages of --threads)
DETECTORS_ENV = "KGNORM_DETECT_WORKERS"

# The GIL's switch interval while the stages overlap. Every torch op releases the GIL and takes it
# back; while the other thread runs Python it gives the GIL up only after the switch interval
# (5 ms by default), so a stage of many short ops waits up to 5 ms per op (the "convoy"): the
# overlapped run measured slower than one core (benchmarks/LOG.md, 19:55). 0.1 ms bounds that wait.
SWITCH_INTERVAL = 1e-4

B = TypeVar("B")


@dataclass(frozen=True)
class OverlapPlan:
    """`overlap`: detection and linking on two threads; `threads`: torch's intra-op threads of each
    stage (None: left as they are); `detectors`: blocks detected at once, each on its own thread."""

    overlap: bool
    threads: int | None
    detectors: int = 1


def overlap_plan(overlap: bool | None, threads: int | None, cores: int | None = None) -> OverlapPlan:
    """Overlap by default when the cores cover both stages: ``--threads N`` given, at least 2N cores;
    not given, at least 2 cores, each stage then on half of them. ``overlap`` True/False forces it
    (forced on with no --threads: each stage on half the cores, at least 1).

    Overlapped, as many blocks are detected at once as the cores hold stages (2 on 2 cores): detection
    is the heavier stage (benchmarks/LOG.md: 20-28 s against 12 s of linking on BC5CDR dev, and a corpus
    that repeats its mentions links them once), so a core the linker leaves idle detects the block
    after next, and the linker shares a core with a detector when it runs. ``$KGNORM_DETECT_WORKERS``
    sets the number (1: the stage pair of before)."""
    cores = cores or available_cores()
    per_stage = threads or max(1, cores // 2)
    if overlap is None:
        overlap = cores >= 2 * per_stage and cores >= 2
    if not overlap:
        return OverlapPlan(False, threads)
    return OverlapPlan(True, per_stage, declared_detectors(max(1, cores // per_stage)))


def declared_detectors(default: int) -> int:
    """``$KGNORM_DETECT_WORKERS`` (a positive integer) if set, else `default`."""
    from kgnorm.errors import KgnormError

    value = os.environ.get(DETECTORS_ENV, "").strip()
    if not value:
        return default
    if not (value.isascii() and value.isdigit()) or int(value) < 1:
        raise KgnormError(f"{DETECTORS_ENV}={value!r}: expected a positive integer")
    return int(value)


def overlapped(blocks: Iterable[B], first: Callable[[B], Any], second: Callable[[Any], Any],
               threads: int | None = None, workers: int = 1) -> Iterator[tuple[B, Any]]:
    """``(block, second(first(block)))`` in input order, ``first`` of the next `workers` blocks
    running in as many worker threads while ``second`` handles this one (in the calling thread). The
    blocks are read in the calling thread; `threads`: torch's intra-op threads in each worker
    (OpenMP's setting is per thread). On an error or when the consumer stops early, the queued blocks
    are cancelled and those in flight are waited for (so no thread outlives the call)."""
    def init() -> None:
        if threads:
            import torch

            torch.set_num_threads(threads)

    source = iter(blocks)
    queue: deque[tuple[B, Future]] = deque()
    workers = max(1, int(workers))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kgnorm-detect", initializer=init)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(min(interval, SWITCH_INTERVAL))

    def submit() -> None:
        for block in source:
            queue.append((block, pool.submit(first, block)))
            if len(queue) >= workers:
                return

    try:
        submit()
        while queue:
            block, future = queue.popleft()
            middle = future.result()
            submit()   # the next blocks' first stage runs while this one's second stage does
            yield block, second(middle)
    finally:
        for _, future in queue:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        sys.setswitchinterval(interval)


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's intra-op threads set to `threads` (kgnorm.methods.recipes.set_threads) for the
    block, restored after it (None: left as they are)."""
    if not threads:
        yield
        return
    import torch

    from kgnorm.methods.recipes import set_threads

    before = torch.get_num_threads()
    set_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
