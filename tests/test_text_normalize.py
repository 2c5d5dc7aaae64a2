"""normalize(): BioSyn's TextPreprocess plus HTML-entity decoding."""
from __future__ import annotations

import time

import pytest

from kgnorm.text.normalize import normalize


@pytest.mark.parametrize("raw,expected", [
    ("Breast Cancer", "breast cancer"),
    ("  Duchenne/Becker  muscular dystrophy ", "duchenne becker muscular dystrophy"),
    ("Fictional&apos;s toe syndrome", "fictional s toe syndrome"),   # FORMATS.md §2.3
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


def test_normalize_is_fast() -> None:
    # 20k dictionary names (a fifth of MEDIC), 1 in 10 with an entity; a loose bound that
    # catches a pathological (per-call compiled or backtracking) regex, not a benchmark
    names = [f"Fictional{'&apos;s' if i % 10 == 0 else ''} Syndrome, Type {i} (FS-{i})"
             for i in range(20_000)]
    t = time.perf_counter()
    out = [normalize(n) for n in names]
    assert time.perf_counter() - t < 2.0
    assert out[10] == "fictional s syndrome type 10 fs 10"
    assert out[7] == "fictional syndrome type 7 fs 7"
