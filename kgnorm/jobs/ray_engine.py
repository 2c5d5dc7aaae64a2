"""`--engine ray` for `link`, `annotate` and `embed`: the input is cut into blocks, a pool of Ray
actors does each block's work (kgnorm.jobs.batch_work: the same code the in-process run calls), and
the driver gets the blocks back in input order, so output files and the store's one staged Run
are written exactly as in-process, by the driver. The driver never loads the model; each actor
loads it once.

Ray is an optional extra (``pip install "kgnorm[ray]"``). Without ``address`` a local Ray is
started on 127.0.0.1 with ``workers`` CPUs and no dashboard; with one, the existing cluster is
joined (and an address where nothing listens fails at once, in one line). A worker that dies is
restarted and its blocks retried by Ray (actor restarts, task retries); a block that still fails
fails the run, and the driver's StagedRun then leaves the store unchanged."""
from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import LinkedMention
from kgnorm.mentions.types import Mention

ENGINES = ("local", "ray")
RETRIES = 2  # actor restarts and task retries after a worker dies
# test-only: a marker path; the first block a worker sees kills that worker (os._exit) and creates
# the marker, so a test can watch Ray restart it and retry the block; a marker that cannot be
# created (its folder missing) kills every try, so the run fails
EXIT_ONCE_ENV = "KGNORM_RAY_TEST_EXIT_ONCE"


@dataclass
class RayOptions:
    """Where and how wide: `address` of a running cluster (None: a local Ray of `workers` CPUs),
    `workers` actors, `block` items per task (None: the command's own default)."""

    workers: int = 2
    address: str | None = None
    block: int | None = None
    init_kwargs: dict[str, Any] = field(default_factory=dict)


class BlockWork(Protocol):
    """What an actor holds: picklable settings; `open()` loads the models and returns the
    function that does one block's work (called in-process too)."""

    def open(self) -> Any: ...


def check_engine(engine: str, opts: RayOptions | None) -> None:
    """Before any work: a known engine; for ray, Ray installed and the cluster there."""
    if engine not in ENGINES:
        raise KgnormError(f"unknown --engine {engine!r} (choose from {', '.join(ENGINES)})")
    if engine == "ray":
        check_ray(opts or RayOptions())


def _ray():
    try:
        import ray
    except ImportError:
        raise KgnormError('--engine ray needs Ray: pip install "kgnorm[ray]"') from None
    return ray


def check_address(address: str, timeout: float = 5.0) -> None:
    """Fail in one line when nothing listens at `address` (host:port, ray://host:port)."""
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()):
        raise KgnormError(f"--ray-address {address!r}: expected HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise KgnormError(f"no Ray cluster at {address} ({e.strerror or e})") from None


def check_ray(opts: RayOptions) -> None:
    """Ray importable, `workers` sane, and the cluster listening (where an address is given)."""
    _ray()
    if opts.workers < 1 or (opts.block is not None and opts.block < 1):
        raise KgnormError("--workers and the block size must be >= 1")
    if opts.address:
        check_address(opts.address)


@contextmanager
def ray_session(opts: RayOptions) -> Iterator[Any]:
    """Ray, started (local) or joined (address); a session this call started is shut down after.
    One already running in this process (a test's, a notebook's) is used as it is."""
    ray = _ray()
    if ray.is_initialized():
        yield ray
        return
    check_ray(opts)
    if opts.address:
        ray.init(address=opts.address, log_to_driver=False, logging_level=logging.ERROR, **opts.init_kwargs)
    else:
        ray.init(num_cpus=opts.workers, include_dashboard=False, _node_ip_address="127.0.0.1",
                 log_to_driver=False, logging_level=logging.ERROR, **opts.init_kwargs)
    try:
        yield ray
    finally:
        ray.shutdown()


class _BlockWorker:
    """One actor: opens the work's models once, then does whole blocks with the in-process code."""

    def __init__(self, work: BlockWork, threads: int, exit_once: str | None) -> None:
        import torch

        from kgnorm.encoders.fixed_shape import query_cores

        torch.set_num_threads(threads)
        # an actor holds `threads` cores (num_cpus), whatever the machine has: the query overlap
        # default follows that (kgnorm.encoders.fixed_shape.default_overlap)
        self._declared = ExitStack()
        self._declared.enter_context(query_cores(threads))
        self.fn = work.open()
        self.exit_once = exit_once

    def run(self, block: list[Any]) -> Any:
        if self.exit_once and not os.path.exists(self.exit_once):
            try:
                open(self.exit_once, "w").close()
            except OSError:
                pass
            os._exit(1)  # test-only (EXIT_ONCE_ENV): a worker dying mid-job
        return self.fn(block)


def ray_map(work: BlockWork, blocks: Iterable[list[Any]], opts: RayOptions) -> Iterator[tuple[list[Any], Any]]:
    """(block, its result) for each block, in input order, computed by `opts.workers` actors; at
    most two blocks per actor are in flight, so the driver's memory follows the block size, not
    the corpus."""
    with ray_session(opts) as ray:
        actor = ray.remote(num_cpus=1, max_restarts=RETRIES, max_task_retries=RETRIES)(_BlockWorker)
        threads = int(os.environ.get("KGNORM_RAY_THREADS", "1"))
        pool = [actor.remote(work, threads, os.environ.get(EXIT_ONCE_ENV)) for _ in range(opts.workers)]
        pending: deque = deque()

        def done() -> tuple[list[Any], Any]:
            block, ref = pending.popleft()
            try:
                return block, ray.get(ref)
            except ray.exceptions.RayError as e:
                first = (str(e).strip().splitlines() or [""])[0]
                raise KgnormError(f"--engine ray: a block failed after {RETRIES} retries: "
                                  f"{type(e).__name__}: {first}") from None

        try:
            for n, block in enumerate(blocks):
                pending.append((block, pool[n % len(pool)].run.remote(block)))
                if len(pending) >= 2 * len(pool):
                    yield done()
            while pending:
                yield done()
        finally:
            for a in pool:
                ray.kill(a)


def ray_link_stream(model_dir: Any, pipeline: Any, items: Iterable[tuple[Mention, dict[str, str]]],
                    opts: RayOptions, **link_kw: Any) -> Iterator[LinkedMention]:
    """What :func:`kgnorm.linking.linker.link_stream` yields, in the same order, computed by
    `opts.workers` actors (blocks of `opts.block` mentions, default 2048)."""
    from kgnorm.jobs.batch_work import LinkBatchWork, batches_of

    work = LinkBatchWork(model_dir if isinstance(model_dir, dict) else str(model_dir), pipeline, link_kw)
    for _, linked in ray_map(work, batches_of(items, opts.block or 2048), opts):
        yield from linked
