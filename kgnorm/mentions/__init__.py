"""Mentions: the unit every linker, trainer and evaluator works on, and the readers of mention
files."""

from kgnorm.mentions.types import Document, Mention

__all__ = ["Document", "Mention"]
