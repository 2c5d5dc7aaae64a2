"""Run identities: the same command on the same inputs gets the same run uid, so writing
its results again replaces them (one copy) instead of adding a second set."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from kgnorm.digests import update_with_file


def file_digest(path: str | Path | None) -> str:
    if path is None:
        return ""
    return update_with_file(hashlib.sha1(), path).hexdigest()


def run_uid(kind: str, **parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, default=str)
    return f"{kind}-{hashlib.sha1(blob.encode('utf-8')).hexdigest()[:12]}"


def mention_uid(source_digest: str, mention_id: str) -> str:
    """Graph identity of a mention read from a file: the file's digest plus the file's id, so
    two files that both say `m1` never share (and overwrite) a Mention node, and linking the
    same file again finds the same nodes."""
    return f"{source_digest[:12]}:{mention_id}"


def text_uid(text: str) -> str:
    """Mention uid for a free name without document offsets."""
    return "name:" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]
