"""normalize(): BioSyn's TextPreprocess plus HTML-entity decoding."""
from __future__ import annotations

import pytest

from kgnorm.text.normalize import normalize


@pytest.mark.parametrize("raw,expected", [
    ("Breast Cancer", "breast cancer"),
    ("  Duchenne/Becker  muscular dystrophy ", "duchenne becker muscular dystrophy"),
    ("Fictional&apos;s toe syndrome", "fictional s toe syndrome"),   # MEDIC pipe file: &apos; entities
    ("AT&amp;T syndrome", "at t syndrome"),
    ("glucose-6-phosphate dehydrogenase (G6PD)", "glucose 6 phosphate dehydrogenase g6pd"),
    ('generalized epilepsy and febrile seizures " plus "  ',
     "generalized epilepsy and febrile seizures plus"),
    ("cancer_of__breast", "cancer of breast"),
    ("Sjögren’s syndrome", "sjögren s syndrome"),
    ("...", ""),
    ("", ""),
])
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


def test_normalize_keep_case() -> None:
    assert normalize("Cat-Eye  Syndrome", lowercase=False) == "Cat Eye Syndrome"


def test_normalize_idempotent() -> None:
    s = normalize("Type II (non-insulin-dependent) Diabetes, Mellitus!")
    assert normalize(s) == s == "type ii non insulin dependent diabetes mellitus"
