"""A memory-mapped name index gives its pages back once read (kgnorm.process_memory,
kgnorm.linking.name_index): the search and reconstruct answers are those of the same index in the
heap, and after them the file's map holds next to nothing resident."""
from __future__ import annotations

import numpy as np
import pytest

from kgnorm.linking import dense_topk, name_index
from kgnorm.linking.name_index import NameIndex
from kgnorm.process_memory import maps_file, release_mapped_pages

linux_only = pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="/proc/self/smaps")


def _resident_kb(path) -> int:
    """Rss of this process's maps of `path` (kB), from /proc/self/smaps."""
    import os

    inode, total, inside = str(os.stat(path).st_ino), 0, False
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = head[4] == inode
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total


def _saved(tmp_path, storage: str = "fp32"):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40_000, 128)).astype(np.float32)  # 20 MB: five 4 MB blocks
    heap = NameIndex.build(x, use_gpu=False, storage=storage)
    heap.engine = "onnx"
    heap.save(tmp_path / storage)
    mapped = NameIndex.load(tmp_path / storage, use_gpu=False)
    mapped.engine = "onnx"
    return heap, mapped, rng


@linux_only
@pytest.mark.parametrize("storage", ["fp32", "fp16", "sq8"])
def test_a_mapped_index_answers_as_the_heap_one_and_keeps_little_resident(tmp_path, monkeypatch, storage):
    # several blocks, each released once searched; 4 MB each, since the kernel maps a file's pages a
    # folio (up to 2 MB) at a time, a neighbour's pages and all
    monkeypatch.setattr(dense_topk, "NAME_BLOCK", 8192)
    monkeypatch.setattr(name_index, "RELEASE_ROWS", 8192)
    heap, mapped, rng = _saved(tmp_path, storage)
    assert mapped.mapped and mapped._file_pages and not heap._file_pages
    q = rng.standard_normal((50, 128)).astype(np.float32)
    s_heap, r_heap = heap.search(q, 20)
    s_map, r_map = mapped.search(q, 20)
    assert np.array_equal(r_heap, r_map) and np.array_equal(s_heap, s_map)
    file = tmp_path / storage / name_index.INDEX_FILE
    size_kb = file.stat().st_size // 1024
    assert _resident_kb(file) < size_kb // 3  # a scan left at most a block or so, not the file
    ids = rng.integers(0, 40_000, (40, 30))  # scattered, repeated rows
    ids[0, :5] = 39_999
    got = mapped.reconstruct(ids)
    assert got.shape == (40, 30, 128) and np.array_equal(got, heap.reconstruct(ids))
    assert _resident_kb(file) < size_kb // 3
    again = mapped.search(q, 20)  # pages given back read the same values again
    assert np.array_equal(again[0], s_map) and np.array_equal(again[1], r_map)


def test_only_a_view_of_the_files_map_may_be_released(tmp_path):
    heap, mapped, _ = _saved(tmp_path)
    file = tmp_path / "fp32" / name_index.INDEX_FILE
    assert maps_file(mapped._stored(), file)
    assert not maps_file(heap._stored(), file)  # the heap: releasing it would zero it
    assert not maps_file(np.ones(10_000, np.float32), file)
    assert not release_mapped_pages(np.ones((10, 10), np.float32)[:, ::2])  # not contiguous: refused
