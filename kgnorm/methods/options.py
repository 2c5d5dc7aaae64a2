"""A method's options, declared once: each field of a recipe's ``Options`` dataclass carries its
default and its help (``field(metadata={"help": ...})``, PyKEEN-style), and `kgnorm train <method>`
is generated from them. The options several recipes share are defined here."""
from __future__ import annotations

from dataclasses import MISSING, field
from typing import Any

__all__ = ["option", "flags_of", "out_option", "input_format", "seed", "resume", "threads",
           "keep_checkpoints", "max_minutes", "max_steps_per_epoch", "dev_mentions", "refit", "refit_minutes"]


def option(default: Any = MISSING, *flags: str, help: str | None = None) -> Any:
    """A dataclass field with its command-line ``flags`` (default ``--field-name``; on/off
    switches as ``--x/--no-x``) and ``help``; no ``default``: a required option."""
    return field(default=default, metadata={"flags": flags, "help": help})


def flags_of(f: Any) -> tuple[str, ...]:
    """The flags of an ``Options`` field (``--`` + its name with dashes by default)."""
    return tuple(f.metadata.get("flags") or ()) or ("--" + f.name.replace("_", "-"),)


def out_option(help: str = "Model directory to write.") -> Any:
    return option(MISSING, "--out", help=help)


def input_format() -> Any:
    return option(None, "--input-format", help="concept, pubtator or tsv (default: detected from the file).")


def seed() -> Any:
    return option(0, "--seed", help="Random seed (same seed and data: same run).")


def resume() -> Any:
    return option(True, "--resume/--no-resume", help="Continue an interrupted run in --out.")


def threads() -> Any:
    return option(None, "--threads", help="torch CPU threads.")


def keep_checkpoints() -> Any:
    return option(False, "--keep-checkpoints", help=(
        "Keep the training checkpoints in --out once the model is written (needed to --resume it later "
        "with a larger budget); by default they are deleted."))


def max_minutes(default: float | None) -> Any:
    return option(default, "--max-minutes", help=(
        "Time budget: no epoch starts that the last epoch's duration says would end past it, set-up "
        "counted (the best epoch is kept; --resume with a larger budget continues)."))


def max_steps_per_epoch() -> Any:
    return option(None, "--max-steps-per-epoch", help="Time-box each epoch.")


def dev_mentions() -> Any:
    return option(None, "--dev", help="Dev mentions for model selection (Acc@1).")


def refit(default: bool | None = None, why_default: str = "on when --train and --dev are both given") -> Any:
    return option(default, "--refit/--no-refit", help=(
        "After dev selection picks the epoch count E, train again from the same starting encoder and seed on "
        "train + dev mentions for E epochs (the last epoch is the model; the dictionary holds the dev mentions "
        f"too). Default: {why_default}; --no-refit keeps the dev-selected model."))


def refit_minutes(default: float | None = 30.0) -> Any:
    return option(default, "--refit-minutes", help=(
        "Time budget of the refit (--max-minutes is the selection's); if it ends before E epochs, the last "
        "finished epoch is the model and the metadata says so."))
