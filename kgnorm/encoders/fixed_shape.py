"""Query vectors that do not depend on the batch they were computed in.

A BLAS product's rounding depends on the shape of the call (the number of rows, the padded
width), so `DenseEncoder.encode` gives a text vectors that differ in the last bits from one
batch to another; a printed score then moves in its 4th decimal when the mentions around it
change (measured: 1,180 of 119,735 TSV score cells between two batchings of one corpus). Linking
must not depend on that: repeats answered from a cache, blocks sent to Ray workers and the
in-process run must write the same bytes. So a query is encoded only with texts of its own
token length (no padding), in calls of exactly `rows` rows (a call is filled with copies only
when a text is needed before its length group has `rows` members): every product a text goes
through has one shape, whatever else is in the batch. The products run on one torch thread (a
split over threads rounds differently too; a Ray worker has one): scale out with processes.

Bigger calls are faster per row (the trained MiniLM BioSyn encoder, 1 thread: 8 rows 416 q/s,
32 rows 536; bf16 32 rows 946), but a link batch's length groups rarely fill 32 rows. :class:`QueryVectors` therefore
takes texts ahead of need (`submit`, from the mentions a link stream has read ahead), encodes
each length group as soon as it fills a call, and hands the vectors out when the batch that
needs them is linked (`take`); only a group still short when its texts are needed (in practice
the stream's end) is filled with copies. Memory: the texts submitted and not yet taken.

`precision="bf16"` runs the calls under CPU bf16 autocast (native on AMX / AVX512-BF16 CPUs,
emulated and slow elsewhere); the vectors are float32 either way and batch-independent on each
path, but the two paths give different vectors: every process of one job must use one path.

`workers` > 1 runs the full calls of one encoding step on that many Python threads at once, each
call still on one torch thread (torch releases the GIL inside its kernels): the same calls, so the
same bits, on more cores. Opt-in (``KGNORM_QUERY_WORKERS``, default 1): with the MiniLM encoder on
this 2-core machine two workers gained nothing measurable (16.9 vs 17.1 s for 20k mentions,
benchmarks/LOG.md "throughput", 17:48): a call of 32 short texts spends much of its time in Python
between kernels, under the GIL. A larger encoder, whose calls are mostly kernel time, is where it
can pay.

The calls themselves are a backend's: :class:`TorchCalls` runs the torch model of a
:class:`~kgnorm.encoders.dense.DenseEncoder` (what ``QueryVectors(encoder)`` wraps by itself), and
:class:`kgnorm.encoders.onnx_query.OnnxQueryEncoder` runs an ONNX Runtime export of it (no torch
imported). A backend has ``dim``, ``token_ids(texts)`` (truncated ids, no padding), ``call(batch)``
(float32 pooled vectors of one call) and ``calls_context()`` (what one encoding step runs under).

``overlap`` sends the full calls `submit` finds to one background thread, so they run on the second
core while the caller searches; `take` waits for the ones it needs. The same calls, so the same bits.
Only for a backend that declares ``overlap_safe`` (ONNX Runtime: its session runs thread-safe and needs
no process-wide setting; torch's thread count is process-wide). ``overlap=None`` decides at every
`submit` from declared facts: ``KGNORM_QUERY_OVERLAP`` (0 or 1) where set, else whether query encoding
has two cores: the process's affinity mask, or what a caller declared with :func:`query_cores`
(annotate's overlapped linking stage and a Ray worker declare theirs, so a default taken from the
machine's cores does not put a third thread on two cores). Measured on a quiet 2-core machine: 16.2
against 17.9 s for 20k mentions (benchmarks/LOG.md, "The query overlap … on a quiet machine")."""
from __future__ import annotations

import contextlib
import os
from collections import OrderedDict, deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import islice

import numpy as np

from kgnorm.cpu_affinity import available_cores

ROWS = 8  # rows of a call when nothing else is said (encode_fixed_shape's former fixed value)
PRECISIONS = ("fp32", "bf16")
MAX_READY = 32_768  # vectors encoded ahead and not taken yet: beyond this the oldest are dropped
WORKERS_ENV = "KGNORM_QUERY_WORKERS"  # threads running fixed-shape calls at once (default 1)
OVERLAP_ENV = "KGNORM_QUERY_OVERLAP"  # 0 or 1: calls found ahead run beside the search (onnx engine)
_DECLARED_CORES: list[int] = []  # cores callers left to query encoding, innermost last (query_cores)


def default_workers() -> int:
    """``$KGNORM_QUERY_WORKERS``, else 1 (two gained nothing measurable here: module docstring)."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            from kgnorm.errors import KgnormError

            raise KgnormError(f"{WORKERS_ENV}={value!r}: expected a whole number of threads") from None
    return 1


def default_overlap() -> bool:
    """``$KGNORM_QUERY_OVERLAP`` (0 or 1), else whether query encoding has at least 2 cores
    (:func:`query_cores`; module docstring)."""
    value = os.environ.get(OVERLAP_ENV, "").strip()
    if value in ("0", "1"):
        return value == "1"
    if value:
        from kgnorm.errors import KgnormError

        raise KgnormError(f"{OVERLAP_ENV}={value!r}: expected 0 or 1")
    return cores_for_queries() >= 2


def cores_for_queries() -> int:
    """The innermost :func:`query_cores` declaration, else the CPUs this process may run on."""
    if _DECLARED_CORES:
        return _DECLARED_CORES[-1]
    return available_cores()


@contextlib.contextmanager
def query_cores(n: int):
    """Declare that query encoding has `n` cores inside the block (the overlap default follows it):
    a caller that keeps the other cores busy (annotate's detection beside linking) declares 1."""
    _DECLARED_CORES.append(max(1, int(n)))
    try:
        yield
    finally:
        _DECLARED_CORES.pop()


class TorchCalls:
    """The fixed-shape calls of a torch :class:`~kgnorm.encoders.dense.DenseEncoder`, fp32 or under
    CPU bf16 autocast, each call on one torch thread in eval mode."""

    def __init__(self, encoder, precision: str = "fp32") -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        self.encoder = encoder
        self.precision = precision
        self.typed = False

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        enc = self.encoder.tokenizer(texts, max_length=self.encoder.max_length, truncation=True,
                                     padding=False)
        self.typed = "token_type_ids" in enc
        return enc["input_ids"]

    @contextlib.contextmanager
    def calls_context(self):
        """One torch thread and eval mode for the calls of one step (restored afterwards)."""
        import torch

        model = self.encoder.model
        was_training = model.training
        model.eval()
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(threads)
            if was_training:
                model.train()

    def call(self, batch: list[list[int]]) -> np.ndarray:
        """One call under this thread's own inference mode and autocast (both are thread-local)."""
        import torch

        encoder = self.encoder
        autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if self.precision == "bf16"
                    else contextlib.nullcontext())
        with torch.inference_mode(), autocast:
            t = torch.tensor(batch, dtype=torch.long, device=encoder.device)
            mask = torch.ones_like(t)
            extra = {"token_type_ids": torch.zeros_like(t)} if self.typed else {}
            hidden = encoder.model(input_ids=t, attention_mask=mask, **extra).last_hidden_state
            return encoder.pool(hidden.float(), mask).float().cpu().numpy()


class QueryVectors:
    """Batch-independent float32 vectors of a query encoder, encoded in full calls of `rows`
    same-length texts where the texts come early enough. `encoder`: a backend (it has ``call``) or
    a :class:`~kgnorm.encoders.dense.DenseEncoder`, run by :class:`TorchCalls` at `precision`."""

    def __init__(self, encoder, rows: int = ROWS, precision: str = "fp32",
                 max_ready: int = MAX_READY, workers: int = 1, overlap: bool | None = False) -> None:
        self.backend = encoder if hasattr(encoder, "call") else TorchCalls(encoder, precision)
        # full calls found by `submit` run on a background thread while the caller goes on (its
        # search); only for a backend whose calls need no process-wide state (ONNX Runtime's).
        # None: default_overlap() at each submit (the cores may be declared later: query_cores)
        self._overlap = overlap
        self._background: ThreadPoolExecutor | None = None
        self.inflight: dict[str, Future] = {}
        self._jobs: deque[tuple[Future, list[tuple[list[str], list[list[int]]]]]] = deque()
        self.encoder = encoder
        self.rows = max(1, int(rows))
        self.precision = precision
        self.max_ready = max(1, int(max_ready))
        self.workers = max(1, int(workers))
        self._pool: ThreadPoolExecutor | None = None
        self.pending: dict[int, dict[str, list[int]]] = {}  # token length -> text -> token ids
        self.length: dict[str, int] = {}                     # pending text -> its token length
        self.ready: OrderedDict[str, np.ndarray] = OrderedDict()
        self._taking: set[str] = set()   # texts of the `take` in progress: never dropped from `ready`
        self.calls = self.padded_rows = 0                     # for benchmarks: model calls, copies

    @property
    def overlap(self) -> bool:
        if not getattr(self.backend, "overlap_safe", False):
            return False
        return default_overlap() if self._overlap is None else bool(self._overlap)

    def submit(self, texts: Sequence[str]) -> None:
        """Texts that will be asked for soon: every length group that fills a call is encoded."""
        new = list(dict.fromkeys(t for t in texts if t not in self.ready and t not in self.length))
        if not new:
            return
        full = set()
        for text, ids in zip(new, self.backend.token_ids(new)):
            group = self.pending.setdefault(len(ids), {})
            group[text] = ids
            self.length[text] = len(ids)
            if len(group) >= self.rows:
                full.add(len(ids))
        if full:
            self._encode({n: self.rows * (len(self.pending[n]) // self.rows) for n in full}, later=self.overlap)

    def take(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``[len(texts), dim]``; a text not encoded yet is encoded now with its length
        group (the last call filled with copies). Taken vectors are forgotten. The texts of a take
        are kept until it returns, however many (a whole dictionary may exceed `max_ready`)."""
        texts = list(texts)
        out = np.empty((len(texts), self.backend.dim), dtype=np.float32)
        if not texts:
            return out
        self._taking = set(texts)
        try:
            self.submit(texts)
            if self.inflight:
                self._collect(texts)
            short = {self.length[t] for t in texts if t not in self.ready}
            if short:
                self._encode({n: len(self.pending[n]) for n in short})
            for i, t in enumerate(texts):
                out[i] = self.ready[t]
        finally:
            self._taking = set()
        for t in set(texts):
            del self.ready[t]
        return out

    def _encode(self, counts: dict[int, int], later: bool = False) -> None:
        """Encode the first ``counts[n]`` pending texts of each length ``n``, `rows` at a time;
        `later`: on the background thread (the vectors are collected by `take`)."""
        calls: list[tuple[list[str], list[list[int]]]] = []
        for n, count in counts.items():
            group = self.pending[n]
            texts = list(group)[:count]
            for s in range(0, len(texts), self.rows):
                sel = texts[s:s + self.rows]
                batch = [group[t] for t in sel]
                self.padded_rows += self.rows - len(batch)
                calls.append((sel, batch + [batch[0]] * (self.rows - len(batch))))
            for t in texts:
                del group[t]
            if not group:
                del self.pending[n]
        self.calls += len(calls)
        if later:
            if self._background is None:
                self._background = ThreadPoolExecutor(1, thread_name_prefix="kgnorm-query-overlap")
            job = self._background.submit(self._run, [b for _, b in calls])
            self._jobs.append((job, calls))
            self.inflight.update((t, job) for sel, _ in calls for t in sel)
            return
        self._store(calls, self._run([b for _, b in calls]))

    def _run(self, batches: list[list[list[int]]]) -> list[np.ndarray]:
        call = self.backend.call
        with self.backend.calls_context():
            if self.workers > 1 and len(batches) > 1:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="kgnorm-query")
                return list(self._pool.map(call, batches))
            return [call(b) for b in batches]

    def _collect(self, texts: Sequence[str]) -> None:
        """Wait for the background calls that hold any of `texts` (oldest first), and store every
        finished one."""
        needed = {t for t in texts if t in self.inflight}
        while self._jobs and (needed or self._jobs[0][0].done()):
            job, calls = self._jobs.popleft()
            self._store(calls, job.result())
            for sel, _ in calls:
                for t in sel:
                    del self.inflight[t]
                    needed.discard(t)

    def _store(self, calls: list[tuple[list[str], list[list[int]]]], results: list[np.ndarray]) -> None:
        for (sel, _), vecs in zip(calls, results):
            for t, v in zip(sel, vecs):
                del self.length[t]
                self.ready[t] = v
        excess = len(self.ready) - self.max_ready
        if excess > 0:  # texts submitted but never taken, oldest first; not those being taken now
            for t in list(islice((t for t in self.ready if t not in self._taking), excess)):
                del self.ready[t]


def encode_fixed_shape(encoder, texts: Sequence[str], rows: int = ROWS,
                       precision: str = "fp32", workers: int = 1) -> np.ndarray:
    """float32 ``[len(texts), dim]`` pooled vectors of a :class:`~kgnorm.encoders.dense.DenseEncoder`
    (or a backend, see :class:`QueryVectors`), each independent of the other texts of the call (bit for bit)."""
    return QueryVectors(encoder, rows, precision, workers=workers).take(texts)
