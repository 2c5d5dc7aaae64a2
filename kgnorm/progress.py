"""Progress bars that show on a terminal and stay quiet with --quiet or when piped."""
from __future__ import annotations

import sys
from typing import Any

from tqdm.auto import tqdm

_QUIET = False


def set_quiet(quiet: bool) -> None:
    global _QUIET
    _QUIET = quiet


def is_quiet() -> bool:
    return _QUIET or not sys.stderr.isatty()


def progress_bar(iterable: Any = None, total: float | None = None, desc: str = "",
                 unit: str = "it", **kw: Any) -> tqdm:
    """A tqdm bar on stderr, disabled when quiet; use as iterator or with .update(n)."""
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=is_quiet(),
                file=sys.stderr, dynamic_ncols=True, leave=False,
                unit_scale=(unit == "B"), **kw)


def note(message: str, quiet: bool = False) -> None:
    """A status line on stderr (stdout stays machine-readable); silent when ``quiet``.

    The library's recipes say what they did through this, so the CLI and a notebook print the
    same lines."""
    if not quiet:
        print(message, file=sys.stderr, flush=True)
