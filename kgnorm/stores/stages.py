"""Staging Run nodes (kgnorm.stores.staged_run): their kinds, and the process that owns one, so
that a stage left by a process killed outright can be told from one still being written."""
from __future__ import annotations

import json
import os
import socket
from typing import Any

# kinds of a staging Run node (kgnorm.stores.staged_run): its rows are still being written, or
# published (only the bookkeeping is left to drop)
STAGING, PUBLISHED = "staging", "staged-published"


def stage_owner() -> dict[str, Any]:
    """Who writes a staging node: a process on a host. Recorded so that a later run can tell a
    stage whose process was killed outright (nothing cleaned up) from one still being written."""
    return {"pid": os.getpid(), "host": socket.gethostname()}


def owner_is_gone(metrics_json: str | None) -> bool:
    """True only when the stage was written on this host by a process that no longer exists;
    a stage of another host, or of a process that may still run, is left alone."""
    try:
        owner = json.loads(metrics_json or "{}").get("owner") or {}
        pid, host = int(owner["pid"]), owner["host"]
    except (ValueError, TypeError, KeyError, AttributeError):
        return False
    if host != socket.gethostname() or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False
