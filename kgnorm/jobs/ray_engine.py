"""`--engine ray`: mentions are linked in blocks by a pool of Ray actors, each holding the model
once; the driver gets the blocks back in input order, so the TSV and the store's one staged Run
are written exactly as in-process (kgnorm.jobs.link does the writing either way).

Ray is an optional extra (``pip install "kgnorm[ray]"``). Without ``address`` a local Ray is
started on 127.0.0.1 with ``workers`` CPUs and no dashboard; with one, the existing cluster is
joined (and an address where nothing listens fails at once, in one line)."""
from __future__ import annotations

import logging
import os
import socket
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kgnorm.errors import KgnormError
from kgnorm.linking.candidates import LinkedMention
from kgnorm.mentions.types import Mention

ENGINES = ("local", "ray")


@dataclass
class RayOptions:
    """Where and how wide: `address` of a running cluster (None: a local Ray of `workers` CPUs),
    `workers` actors, `block` mentions per task."""

    workers: int = 2
    address: str | None = None
    block: int = 2048
    init_kwargs: dict[str, Any] = field(default_factory=dict)


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
    if not host or not port.isdigit():
        raise KgnormError(f"--ray-address {address!r}: expected HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise KgnormError(f"no Ray cluster at {address} ({e.strerror or e})") from None


def check_ray(opts: RayOptions) -> None:
    """Ray importable, `workers` sane, and the cluster listening (where an address is given)."""
    _ray()
    if opts.workers < 1 or opts.block < 1:
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


class _LinkWorker:
    """One actor: opens the model once, then links whole blocks with the in-process code."""

    def __init__(self, model_dir: str, pipeline: Any, link_kw: dict[str, Any], threads: int = 1) -> None:
        import torch

        from kgnorm.jobs.models import open_linker
        from kgnorm.linking.query_cache import with_cache

        torch.set_num_threads(threads)
        self.linker = with_cache(open_linker(model_dir)[0])
        self.pipeline = pipeline
        self.link_kw = link_kw

    def link(self, block: list[tuple[Mention, dict[str, str]]]) -> list[LinkedMention]:
        from kgnorm.linking.linker import link_stream

        return list(link_stream(self.linker, self.pipeline, block, **self.link_kw))


def ray_link_stream(model_dir: str, pipeline: Any, items: Iterable[tuple[Mention, dict[str, str]]],
                    opts: RayOptions, **link_kw: Any) -> Iterator[LinkedMention]:
    """What :func:`kgnorm.linking.linker.link_stream` yields, in the same order, computed by
    `opts.workers` actors; at most two blocks per actor are in flight, so the driver's memory
    follows the block size, not the corpus. A task whose worker dies is retried by Ray."""
    with ray_session(opts) as ray:
        actor = ray.remote(num_cpus=1, max_restarts=2, max_task_retries=2)(_LinkWorker)
        threads = int(os.environ.get("KGNORM_RAY_THREADS", "1"))
        pool = [actor.remote(str(model_dir), pipeline, link_kw, threads) for _ in range(opts.workers)]
        pending: deque = deque()
        block: list[tuple[Mention, dict[str, str]]] = []
        n = 0

        def submit() -> None:
            nonlocal n
            pending.append(pool[n % len(pool)].link.remote(list(block)))
            n += 1
            block.clear()

        try:
            for item in items:
                block.append(item)
                if len(block) >= opts.block:
                    submit()
                    if len(pending) >= 2 * len(pool):
                        yield from ray.get(pending.popleft())
            if block:
                submit()
            while pending:
                yield from ray.get(pending.popleft())
        finally:
            for a in pool:
                ray.kill(a)
