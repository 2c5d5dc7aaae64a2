"""Documents: raw text in (plain text, JSONL, PubTator, BioC XML) and annotated text out, with
character offsets that round-trip exactly (``text[start:end]`` is the mention)."""
