"""Progress bars that show on a terminal and stay quiet with --quiet or when piped."""
from __future__ import annotations

import os
import sys
from typing import Any

from tqdm.auto import tqdm

_QUIET = False


def set_quiet(quiet: bool) -> None:
    """Quiet kgnorm's bars, and with them the Hugging Face libraries' own (transformers draws one
    when it saves a model, even under --quiet or into a pipe: a retrain's one error line came
    after a "Writing model shards" bar, found by the I/O-fault torture)."""
    global _QUIET
    _QUIET = quiet
    if is_quiet():
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read when huggingface_hub is imported
        if "huggingface_hub" in sys.modules:  # already imported (a notebook, the tests): their switches
            from huggingface_hub.utils import disable_progress_bars

            disable_progress_bars()
        if "transformers" in sys.modules:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()


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
