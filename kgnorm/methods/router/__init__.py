"""Mentions routed by their type to one linker each (issue 49): chemicals to a MeSH model, diseases
to a MEDIC one, in one run. ``annotate --model Disease=DIR --model Chemical=DIR``, or a directory
written by ``kgnorm train router``."""
