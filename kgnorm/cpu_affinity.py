"""The CPUs this process may run on: the declared fact that the overlap defaults follow
(kgnorm.jobs.overlap for detection beside linking, kgnorm.encoders.fixed_shape for the query calls)."""
from __future__ import annotations

import os


def available_cores() -> int:
    """The CPUs in this process's affinity mask (os.cpu_count() where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
